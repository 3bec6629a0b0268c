/* Prefix resume (src/llm/prefix.c) on the committed tiny checkpoint: a
 * session resumed from another's first n tokens (with a ring snapshot taken
 * at n, after the source ran past n and its rings wrapped; or at the
 * source's own position without one) continues with the logits of a
 * session that ran the whole prompt from scratch (relative L2 below 1e-5,
 * the chunk-split tolerance of test_session); so does a session taken back
 * in place to a snapshot's position (llm_session_rewind). The server's prefix cache
 * (src/serve/prefix_cache.c) keeps snapshots at several message
 * boundaries: a prompt diverging anywhere resumes from the nearest one
 * before the divergence, with the logits of a from-scratch run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember.h"
#include "llm/prefix.h"
#include "serve/prefix_cache.h"

static ember_model *load(void)
{
    const char *d = getenv("EMBER_TEST_MODEL");
    ember_model *m = NULL;
    if (ember_model_load(d && *d ? d : "models/tiny", NULL, &m) != EMBER_OK)
        printf("     cannot load: %s\n", ember_last_error());
    return m;
}

static ember_session *session(ember_model *m, int32_t ctx)
{
    ember_session_params sp = ember_session_default_params();
    sp.max_context = ctx;
    sp.n_threads = 1;
    ember_session *s = NULL;
    return ember_session_create(m, &sp, &s) == EMBER_OK ? s : NULL;
}

static double rel_diff(const float *a, const float *b, int32_t n)
{
    double num = 0, den = 0;
    for (int32_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / den);
}

#define TOTAL 90
static int32_t ids[TOTAL];

/* Source runs `ran` tokens with a snapshot at `at`; the resumed session
 * (context ctx) takes the first `at` and runs ids[at..TOTAL). */
static void resume_case(ember_model *m, int at, int ran, int32_t ctx)
{
    const int32_t vocab = ember_model_vocab_size(m);
    ember_session *src = session(m, ran + 1), *dst = session(m, ctx), *ref = session(m, TOTAL);
    llm_ring_snapshot snap = {0};
    REQUIRE(src && dst && ref);
    CHECK(ember_session_prefill(src, ids, (size_t)at) == EMBER_OK);
    CHECK(llm_ring_snapshot_take(src, &snap) == EMBER_OK && snap.pos == at);
    if (ran > at) CHECK(ember_session_prefill(src, ids + at, (size_t)(ran - at)) == EMBER_OK);
    CHECK(llm_session_resume(dst, src, at, ran > at ? &snap : NULL) == EMBER_OK);
    CHECK(ember_session_position(dst) == at && ember_session_logits(dst) == NULL);
    CHECK(ember_session_prefill(dst, ids + at, (size_t)(TOTAL - at)) == EMBER_OK);
    CHECK(ember_session_prefill(ref, ids, TOTAL) == EMBER_OK);
    double d = rel_diff(ember_session_logits(dst), ember_session_logits(ref), vocab);
    CHECK_MSG(d < 1e-5, "at %d ran %d ctx %d: relative difference %.3g", at, ran, ctx, d);
    llm_ring_snapshot_free(&snap);
    ember_session_free(src);
    ember_session_free(dst);
    ember_session_free(ref);
}

static void resumed_session_matches_scratch(void)
{
    ember_model *m = load();
    REQUIRE(m);
    unsigned s = 3;
    for (int i = 0; i < TOTAL; i++) {
        s = s * 1103515245u + 12345u;
        ids[i] = (int32_t)((s >> 8) % (unsigned)ember_model_vocab_size(m));
    }
    resume_case(m, 40, 40, TOTAL);   /* the source's own position */
    resume_case(m, 40, 75, TOTAL);   /* past n: the rings wrapped, the snapshot restores */
    resume_case(m, 7, 60, 200);      /* fewer than window-1 tokens, a larger context */
    resume_case(m, 33, 50, TOTAL + 5);
    ember_model_free(m);
}

/* The same in place (a conversation taking its session back to a mark):
 * the session runs `ran` tokens of other ids past `at` (its rings wrap),
 * goes back to `at` with the snapshot, and runs ids[at..TOTAL). */
static void rewind_case(ember_model *m, int at, int ran)
{
    const int32_t vocab = ember_model_vocab_size(m);
    ember_session *s = session(m, TOTAL + ran), *ref = session(m, TOTAL);
    llm_ring_snapshot snap = {0};
    int32_t other[TOTAL];
    for (int i = 0; i < TOTAL; i++) other[i] = (ids[i] + 7) % vocab;
    REQUIRE(s && ref);
    CHECK(ember_session_prefill(s, ids, (size_t)at) == EMBER_OK);
    CHECK(llm_ring_snapshot_take(s, &snap) == EMBER_OK);
    CHECK(ember_session_prefill(s, other, (size_t)ran) == EMBER_OK);
    CHECK(llm_session_rewind(s, at, NULL) == EMBER_ERR_INVALID_ARG); /* a snapshot is needed */
    CHECK(llm_session_rewind(s, at, &snap) == EMBER_OK);
    CHECK(ember_session_position(s) == at && ember_session_logits(s) == NULL);
    CHECK(ember_session_prefill(s, ids + at, (size_t)(TOTAL - at)) == EMBER_OK);
    CHECK(ember_session_prefill(ref, ids, TOTAL) == EMBER_OK);
    double d = rel_diff(ember_session_logits(s), ember_session_logits(ref), vocab);
    CHECK_MSG(d < 1e-5, "rewind to %d after %d more: relative difference %.3g", at, ran, d);
    llm_ring_snapshot_free(&snap);
    ember_session_free(s);
    ember_session_free(ref);
}

static void rewound_session_matches_scratch(void)
{
    ember_model *m = load();
    REQUIRE(m);
    rewind_case(m, 40, 35); /* the rings wrapped past 40: restored from the snapshot */
    rewind_case(m, 7, 3);   /* fewer than window-1 tokens */
    rewind_case(m, 60, 1);
    ember_model_free(m);
}

static void resume_without_snapshot_is_refused(void)
{
    ember_model *m = load();
    REQUIRE(m);
    ember_session *src = session(m, 64), *dst = session(m, 64);
    REQUIRE(src && dst);
    int32_t few[30] = {0};
    CHECK(ember_session_prefill(src, few, 30) == EMBER_OK);
    CHECK(llm_session_resume(dst, src, 20, NULL) == EMBER_ERR_INVALID_ARG);
    CHECK(llm_session_resume(dst, src, 31, NULL) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_session_position(dst) == 0);
    ember_session_free(src);
    ember_session_free(dst);
    ember_model_free(m);
}

/* A cached conversation of `n` ids, prefilled in pieces that end at the
 * boundaries bounds[0..n_bounds), each snapshotted, and at its end. */
static void put_conversation(sv_prefix_cache *c, ember_model *m, const int32_t *conv, size_t n,
                             const int *bounds, size_t n_bounds)
{
    ember_session *s = session(m, TOTAL + 8);
    llm_ring_snapshot snaps[8] = {{0}};
    int32_t *held = malloc(n * sizeof *held);
    size_t done = 0, k = 0;
    if (!s || !held) {
        CHECK_MSG(0, "out of memory");
        free(held);
        ember_session_free(s);
        return;
    }
    memcpy(held, conv, n * sizeof *held);
    for (; k <= n_bounds; k++) {
        size_t to = k < n_bounds ? (size_t)bounds[k] : n;
        CHECK(ember_session_prefill(s, conv + done, to - done) == EMBER_OK);
        CHECK(llm_ring_snapshot_take(s, &snaps[k]) == EMBER_OK);
        done = to;
    }
    sv_prefix_cache_put(c, s, held, n, snaps, k);
    for (size_t i = 0; i < k; i++) CHECK(snaps[i].rows == NULL); /* the cache took them */
}

/* Resumes `prompt` (n ids) from the cache: the position it resumed at, and
 * whether its next logits equal a from-scratch run's. */
static size_t resume_and_compare(sv_prefix_cache *c, ember_model *m, const int32_t *prompt, size_t n)
{
    ember_session *dst = session(m, TOTAL + 8), *ref = session(m, TOTAL + 8);
    size_t at = 0;
    if (!dst || !ref) CHECK_MSG(0, "out of memory");
    else {
        at = sv_prefix_cache_resume(c, dst, prompt, n);
        CHECK(ember_session_prefill(dst, prompt + at, n - at) == EMBER_OK);
        CHECK(ember_session_prefill(ref, prompt, n) == EMBER_OK);
        double d = rel_diff(ember_session_logits(dst), ember_session_logits(ref), ember_model_vocab_size(m));
        CHECK_MSG(d < 1e-5, "resumed at %zu: relative difference %.3g", at, d);
    }
    ember_session_free(dst);
    ember_session_free(ref);
    return at;
}

static void cache_resumes_at_the_nearest_boundary(void)
{
    ember_model *m = load();
    REQUIRE(m);
    sv_metrics metrics;
    sv_metrics_init(&metrics);
    sv_prefix_cache *c = sv_prefix_cache_create((size_t)64 << 20, 4, &metrics);
    REQUIRE(c);
    static const int bounds[] = {12, 30, 47};
    int32_t conv[60], prompt[TOTAL];
    for (int i = 0; i < 60; i++) conv[i] = ids[i];
    put_conversation(c, m, conv, 60, bounds, 3);
    CHECK(metrics.prefix_entries == 1 && metrics.prefix_snapshots == 4);
    /* diverging at d resumes from the latest boundary at or before d (the
     * rings wrapped past every one of them: window 16) */
    static const struct { int diverge; size_t want; } cases[] = {
        {5, 0}, {12, 12}, {29, 12}, {30, 30}, {46, 30}, {55, 47}, {60, 60},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        memcpy(prompt, conv, sizeof conv);
        for (int i = 60; i < 70; i++) prompt[i] = ids[i];
        if (cases[k].diverge < 60) prompt[cases[k].diverge] = (conv[cases[k].diverge] + 1) % 500;
        size_t at = resume_and_compare(c, m, prompt, 70);
        CHECK_MSG(at == cases[k].want, "diverging at %d: resumed at %zu, want %zu", cases[k].diverge, at,
                  cases[k].want);
    }
    /* the next turn extends the conversation: it supersedes the entry and
     * keeps its boundaries besides its own */
    static const int later[] = {66};
    int32_t longer[75];
    for (int i = 0; i < 75; i++) longer[i] = ids[i];
    put_conversation(c, m, longer, 75, later, 1);
    CHECK_MSG(metrics.prefix_entries == 1 && metrics.prefix_snapshots == 6, "entries %lld snapshots %lld",
              (long long)metrics.prefix_entries, (long long)metrics.prefix_snapshots);
    memcpy(prompt, longer, sizeof longer);
    prompt[35] = (prompt[35] + 1) % 500;
    CHECK(resume_and_compare(c, m, prompt, 75) == 30);
    memcpy(prompt, longer, sizeof longer);
    prompt[70] = (prompt[70] + 1) % 500;
    CHECK(resume_and_compare(c, m, prompt, 75) == 66);
    sv_prefix_cache_free(c);
    sv_metrics_destroy(&metrics);
    ember_model_free(m);
}

int main(void)
{
    RUN(resumed_session_matches_scratch);
    RUN(rewound_session_matches_scratch);
    RUN(resume_without_snapshot_is_refused);
    RUN(cache_resumes_at_the_nearest_boundary);
    return check_summary();
}
