/* Prefix resume (src/llm/prefix.c) on the committed tiny checkpoint: a
 * session resumed from another's first n tokens (with a ring snapshot taken
 * at n, after the source ran past n and its rings wrapped; or at the
 * source's own position without one) continues with the logits of a
 * session that ran the whole prompt from scratch (relative L2 below 1e-5,
 * the chunk-split tolerance of test_session). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "ember.h"
#include "llm/prefix.h"

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

int main(void)
{
    RUN(resumed_session_matches_scratch);
    RUN(resume_without_snapshot_is_refused);
    return check_summary();
}
