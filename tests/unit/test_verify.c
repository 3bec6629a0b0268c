/* The verify step of speculative decoding (src/llm/verify.c) on the
 * committed tiny checkpoint (sliding window 16: rings of 15 slots) and the
 * demo model (window 64: 63 slots). Every row of a K+1-row verify has the
 * logits a plain session gets after the same tokens; after accepting only
 * some rows, at and across the ring's wrap, the session continues with the
 * logits of a plain session that was fed only the accepted tokens (relative
 * L2 below 1e-5, the chunk-split tolerance of test_session). Moving the
 * position back without the ring undo gives different logits in the same
 * cases, so the comparison does see the entries a rejected row overwrites. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember.h"
#include "llm/session_internal.h"
#include "llm/verify.h"

enum { TOTAL = 200, MAX_DRAFT = 8, AFTER = 12 };
static int32_t ids[TOTAL], drafts[TOTAL];

static ember_session *session(ember_model *m)
{
    ember_session_params sp = ember_session_default_params();
    sp.max_context = TOTAL + MAX_DRAFT + AFTER;
    sp.n_threads = 1;
    ember_session *s = NULL;
    if (ember_session_create(m, &sp, &s) != EMBER_OK) printf("     session: %s\n", ember_last_error());
    return s;
}

/* ids[0..n) run plainly (one chunk) into a fresh session: its logits. */
static float *plain_logits(ember_model *m, const int32_t *seq, int n)
{
    const int32_t vocab = ember_model_vocab_size(m);
    ember_session *s = session(m);
    float *out = malloc((size_t)vocab * sizeof *out);
    if (s && out && ember_session_prefill(s, seq, (size_t)n) == EMBER_OK)
        memcpy(out, ember_session_logits(s), (size_t)vocab * sizeof *out);
    else {
        free(out);
        out = NULL;
    }
    ember_session_free(s);
    return out;
}

static void make_ids(ember_model *m, unsigned seed)
{
    const int32_t vocab = ember_model_vocab_size(m);
    check_random_ids(ids, TOTAL, vocab, seed);
    check_random_ids(drafts, TOTAL, vocab, seed + 1000);
}

/* The session held p tokens; row i of a verify of ids[p..p+n) must have the
 * logits of a plain run of ids[0..p+i]. */
static void rows_match_plain(ember_model *m, int p, int n)
{
    const int32_t vocab = ember_model_vocab_size(m);
    ember_session *s = session(m);
    llm_verifier *v = NULL;
    REQUIRE(s && llm_verifier_create(s, MAX_DRAFT, &v) == EMBER_OK);
    const float *rows = NULL;
    if (p) CHECK(ember_session_prefill(s, ids, (size_t)p) == EMBER_OK);
    CHECK(llm_verify(v, ids + p, n, &rows) == EMBER_OK);
    for (int i = 0; i < n && rows; i++) {
        float *want = plain_logits(m, ids, p + i + 1);
        REQUIRE(want);
        double d = check_rel_l2(rows + (size_t)i * (size_t)vocab, want, vocab);
        CHECK_MSG(d < 1e-5, "at %d row %d of %d: relative difference %.3g", p, i, n, d);
        free(want);
    }
    llm_verifier_free(v);
    ember_session_free(s);
}

/* The session holds p tokens; it verifies ids[p] then n-1 wrong drafts,
 * keeps `keep` rows (so the accepted tokens are ids[p], drafts[p+1..]) and
 * then takes AFTER more tokens one by one. With undo, its logits after the
 * accept and after each later token equal a plain run of the same accepted
 * sequence. Returns the worst relative difference seen. */
static double rejection_case(ember_model *m, int p, int n, int keep, int undo)
{
    const int32_t vocab = ember_model_vocab_size(m);
    int32_t seq[TOTAL + MAX_DRAFT + AFTER], feed[MAX_DRAFT + 1];
    memcpy(seq, ids, (size_t)p * sizeof *seq);
    feed[0] = ids[p];
    for (int i = 1; i < n; i++) feed[i] = drafts[p + i];
    memcpy(seq + p, feed, (size_t)keep * sizeof *seq);
    for (int i = 0; i < AFTER; i++) seq[p + keep + i] = ids[(p + 50 + i) % TOTAL];

    ember_session *s = session(m), *ref = session(m);
    llm_verifier *v = NULL;
    double worst = -1;
    if (!s || !ref || llm_verifier_create(s, MAX_DRAFT, &v) != EMBER_OK) goto done;
    const float *rows = NULL;
    if (ember_session_prefill(s, ids, (size_t)p) || llm_verify(v, feed, n, &rows)) goto done;
    if (undo) {
        if (llm_verify_accept(v, keep)) goto done;
    } else { /* the naive rollback: the position alone goes back */
        s->pos = p + keep;
        memcpy(s->logits, rows + (size_t)(keep - 1) * (size_t)vocab, (size_t)vocab * sizeof(float));
    }
    if (ember_session_prefill(ref, seq, (size_t)(p + keep))) goto done;
    worst = 0;
    for (int i = 0; i <= AFTER; i++) {
        if (i && (ember_session_decode(s, seq[p + keep + i - 1]) ||
                  ember_session_decode(ref, seq[p + keep + i - 1]))) {
            worst = -1;
            goto done;
        }
        double d = check_rel_l2(ember_session_logits(s), ember_session_logits(ref), vocab);
        worst = d > worst ? d : worst;
    }
done:
    llm_verifier_free(v);
    ember_session_free(s);
    ember_session_free(ref);
    return worst;
}

/* The first ring wrap of the model's sliding layers: window-1. */
static int ring_slots(ember_model *m)
{
    ember_session *s = session(m);
    int slots = 0;
    for (int32_t i = 0; s && i < s->kv.n_layers; i++)
        if (s->kv.layers[i].window) slots = s->kv.layers[i].capacity;
    ember_session_free(s);
    return slots;
}

static void rejections_across_the_wrap(ember_model *m, unsigned seed)
{
    make_ids(m, seed);
    const int slots = ring_slots(m);
    REQUIRE(slots > MAX_DRAFT);
    /* chunks that end before, straddle and start at the first and second wraps */
    const int starts[] = {slots - MAX_DRAFT - 1, slots - 4, slots, 2 * slots - 2, 2 * slots + 3};
    int sensitive = 0;
    for (size_t a = 0; a < sizeof starts / sizeof *starts; a++) {
        static const int keeps[] = {1, 2, 5, MAX_DRAFT, MAX_DRAFT + 1};
        for (size_t k = 0; k < sizeof keeps / sizeof *keeps; k++) {
            const int keep = keeps[k];
            double d = rejection_case(m, starts[a], MAX_DRAFT + 1, keep, 1);
            CHECK_MSG(d >= 0 && d < 1e-5, "verify at %d keep %d of %d: relative difference %.3g",
                      starts[a], keep, MAX_DRAFT + 1, d);
            if (keep <= 2 && starts[a] + MAX_DRAFT + 1 > slots) {
                /* the rejected rows overwrote slots the kept path still sees */
                double naive = rejection_case(m, starts[a], MAX_DRAFT + 1, keep, 0);
                CHECK_MSG(naive > 1e-3, "verify at %d keep %d: position-only rollback differs by %.3g",
                          starts[a], keep, naive);
                sensitive++;
            }
        }
    }
    CHECK(sensitive > 0);
}

static void tiny_rows_match_plain_decoding(void)
{
    ember_model *m = check_load_model(check_model_dir(), EMBER_TYPE_NONE);
    REQUIRE(m);
    make_ids(m, 11);
    rows_match_plain(m, 5, MAX_DRAFT + 1);
    rows_match_plain(m, 10, MAX_DRAFT + 1); /* straddles the first wrap (15) */
    rows_match_plain(m, 40, 3);
    rows_match_plain(m, 0, 1);
    ember_model_free(m);
}

static void tiny_rejections_keep_rings_exact(void)
{
    ember_model *m = check_load_model(check_model_dir(), EMBER_TYPE_NONE);
    REQUIRE(m);
    rejections_across_the_wrap(m, 21);
    ember_model_free(m);
}

static void demo_rejections_keep_rings_exact(void)
{
    ember_model *m = check_load_model("models/demo", EMBER_TYPE_NONE);
    REQUIRE(m);
    make_ids(m, 31);
    rows_match_plain(m, 60, MAX_DRAFT + 1); /* straddles 63 */
    rejections_across_the_wrap(m, 31);
    ember_model_free(m);
}

static void bad_calls_are_refused(void)
{
    ember_model *m = check_load_model(check_model_dir(), EMBER_TYPE_NONE);
    REQUIRE(m);
    make_ids(m, 41);
    ember_session *s = session(m);
    llm_verifier *v = NULL;
    REQUIRE(s);
    EXPECT_FAIL(llm_verifier_create(s, 0, &v), EMBER_ERR_INVALID_ARG, "draft_max");
    REQUIRE(llm_verifier_create(s, 20, &v) == EMBER_OK);
    CHECK(llm_verifier_max_draft(v) == 14); /* the tiny model's rings hold 15 */
    const float *rows = NULL;
    CHECK(ember_session_prefill(s, ids, 10) == EMBER_OK);
    EXPECT_FAIL(llm_verify_accept(v, 1), EMBER_ERR_INVALID_ARG, "keep");
    EXPECT_FAIL(llm_verify(v, ids, 16, &rows), EMBER_ERR_INVALID_ARG, "rows");
    int32_t bad[3] = {ids[0], ember_model_vocab_size(m), ids[1]};
    EXPECT_FAIL(llm_verify(v, bad, 3, &rows), EMBER_ERR_INVALID_ARG, "outside");
    CHECK(ember_session_position(s) == 10);
    CHECK(llm_verify(v, ids + 10, 4, &rows) == EMBER_OK && ember_session_position(s) == 14);
    EXPECT_FAIL(llm_verify_accept(v, 5), EMBER_ERR_INVALID_ARG, "keep 5 of 4");
    CHECK(llm_verify_accept(v, 2) == EMBER_OK && ember_session_position(s) == 12);
    EXPECT_FAIL(llm_verify_accept(v, 1), EMBER_ERR_INVALID_ARG, "keep"); /* once per verify */
    llm_verifier_free(v);
    ember_session_free(s);
    ember_model_free(m);
}

int main(void)
{
    RUN(tiny_rows_match_plain_decoding);
    RUN(tiny_rejections_keep_rings_exact);
    RUN(demo_rejections_keep_rings_exact);
    RUN(bad_calls_are_refused);
    return check_summary();
}
