/* The draft model's session kept across generate calls (issue 22): a new
 * prompt runs through it only past what it already holds, and what it then
 * holds is exact. The demo model at f32 is the target and the demo at q4_0
 * its draft (sliding window 64: rings of 63 slots). After a first prompt
 * and a "reply" of proposals, some rejected (rolled back through the ring
 * undo), a second prompt that extends what the draft session holds runs
 * only its new tokens; one that diverges 80 tokens after a mark (past a
 * whole ring) runs from the mark, its rings put back from the mark's
 * snapshot; one that diverges before any mark starts over. Each time the
 * draft session's logits equal those of a fresh session of the draft model
 * fed the same prompt in one go (relative L2 below 1e-5, the chunk-split
 * tolerance of test_session); a resume without the snapshot gives other
 * logits, so the comparison sees the rings. The decoder leaves its draft
 * session with the target session, and the next decoder with the same
 * draft model and draft_max takes it (draft_prefill counts only the new
 * tokens); another draft_max starts a new one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember.h"
#include "speculate/decoder.h"
#include "speculate/draft_model.h"

enum { CTX = 512, K = 4 };
static int32_t ids[CTX];

static ember_session *session(const ember_model *m)
{
    ember_session_params sp = ember_session_default_params();
    sp.max_context = CTX;
    sp.n_threads = 1;
    ember_session *s = NULL;
    if (ember_session_create(m, &sp, &s) != EMBER_OK) printf("     session: %s\n", ember_last_error());
    return s;
}

/* The draft session's logits against a fresh draft session fed seq[0..n). */
static double distance_to_fresh(const ember_model *draft, const spec_draft_model *dm, const int32_t *seq,
                                 size_t n)
{
    ember_session *ref = session(draft);
    const float *got = spec_draft_model_logits(dm);
    double d = 1e9;
    if (ref && got && ember_session_prefill(ref, seq, n) == EMBER_OK)
        d = check_rel_l2(got, ember_session_logits(ref), ember_model_vocab_size(draft));
    ember_session_free(ref);
    return d;
}

/* A reply of `steps` proposals after held[0..*n): the target "accepts" a
 * varying share (some all, some none), as a verify would; the accepted ids
 * are appended to held. */
static int reply(spec_draft_model *dm, int32_t *held, size_t *n, int steps)
{
    for (int i = 0; i < steps; i++) {
        int32_t drafts[K];
        const int32_t next = held[*n - 1] ^ 5; /* any id the target "picked" */
        if (spec_draft_model_propose(dm, next, K, drafts) != EMBER_OK) return -1;
        const int32_t keep = 1 + i % (K + 1); /* 1..K+1 of next and the drafts */
        held[(*n)++] = next;
        for (int32_t j = 0; j + 1 < keep; j++) held[(*n)++] = drafts[j];
        if (spec_draft_model_accept(dm, keep) != EMBER_OK) return -1;
    }
    return 0;
}

static void kept_session_runs_only_new_tokens_and_stays_exact(void)
{
    ember_model *target = check_load_model("models/demo", EMBER_TYPE_NONE);
    ember_model *draft = check_load_model("models/demo", EMBER_TYPE_Q4_0);
    ember_session *t = target ? session(target) : NULL;
    spec_draft_model *dm = NULL;
    REQUIRE(target && draft && t);
    REQUIRE(spec_draft_model_create(draft, t, NULL, K, &dm) == EMBER_OK);
    const int32_t vocab = ember_model_vocab_size(draft);
    check_random_ids(ids, CTX, vocab, 7);
    int32_t held[CTX], prompt[CTX];
    size_t n = 100, ran = 0;
    memcpy(held, ids, n * sizeof *held);
    const size_t marks[] = {40, 100};
    CHECK(spec_draft_model_begin(dm, held, n, marks, 2, &ran) == EMBER_OK && ran == 100);
    REQUIRE(reply(dm, held, &n, 30) == 0);
    REQUIRE(n > 100 + 80);
    /* extends everything it holds: only the new tokens run */
    const size_t grown = n + 25;
    memcpy(prompt, held, n * sizeof *prompt);
    memcpy(prompt + n, ids + 300, 25 * sizeof *prompt);
    CHECK(spec_draft_model_begin(dm, prompt, grown, NULL, 0, &ran) == EMBER_OK);
    CHECK_MSG(ran == 25, "ran %zu of %zu, not the 25 new", ran, grown);
    double d = distance_to_fresh(draft, dm, prompt, grown);
    CHECK_MSG(d < 1e-5, "extended: rel L2 %.3g", d);
    /* diverges at 180: back to the mark at 100 (the rings have turned over since) */
    memcpy(prompt + 180, ids + 400, 40 * sizeof *prompt);
    CHECK(spec_draft_model_begin(dm, prompt, 220, NULL, 0, &ran) == EMBER_OK);
    CHECK_MSG(ran == 120, "ran %zu, not the 120 after the mark at 100", ran);
    d = distance_to_fresh(draft, dm, prompt, 220);
    CHECK_MSG(d < 1e-5, "resumed at a mark: rel L2 %.3g", d);
    /* diverges at 20, before every mark: from scratch */
    prompt[20] ^= 1;
    CHECK(spec_draft_model_begin(dm, prompt, 60, NULL, 0, &ran) == EMBER_OK && ran == 60);
    d = distance_to_fresh(draft, dm, prompt, 60);
    CHECK_MSG(d < 1e-5, "started over: rel L2 %.3g", d);
    spec_draft_model_free(dm);
    ember_session_free(t);
    ember_model_free(draft);
    ember_model_free(target);
}

/* A decoder on t over its n tokens: the draft model's prompt tokens. */
static int64_t decoder_draft_prefill(ember_session *t, const ember_model *draft, int32_t draft_max, size_t n)
{
    spec_decoder *d = NULL;
    int64_t ran = -1;
    if (spec_decoder_create(t, draft_max, draft, &d) == EMBER_OK && spec_decoder_begin(d, ids, n, NULL, 0) == EMBER_OK)
        ran = spec_decoder_counts(d)->draft_prefill;
    spec_decoder_free(d);
    return ran;
}

static void decoders_on_a_session_share_its_draft_session(void)
{
    ember_model *target = check_load_model("models/demo", EMBER_TYPE_NONE);
    ember_model *draft = check_load_model("models/demo", EMBER_TYPE_Q4_0);
    ember_session *t = target ? session(target) : NULL;
    REQUIRE(target && draft && t);
    check_random_ids(ids, CTX, ember_model_vocab_size(draft), 9);
    REQUIRE(ember_session_prefill(t, ids, 50) == EMBER_OK);
    CHECK(decoder_draft_prefill(t, draft, K, 50) == 50);
    REQUIRE(ember_session_prefill(t, ids + 50, 30) == EMBER_OK);
    CHECK(decoder_draft_prefill(t, draft, K, 80) == 30);  /* kept: the 30 new */
    CHECK(decoder_draft_prefill(t, draft, K, 80) == 0);   /* nothing new */
    CHECK(decoder_draft_prefill(t, draft, K + 1, 80) == 80); /* another draft_max: a new one */
    ember_session_free(t); /* frees the kept draft session too (ASan sees a leak otherwise) */
    ember_model_free(draft);
    ember_model_free(target);
}

int main(void)
{
    RUN(kept_session_runs_only_new_tokens_and_stays_exact);
    RUN(decoders_on_a_session_share_its_draft_session);
    return check_summary();
}
