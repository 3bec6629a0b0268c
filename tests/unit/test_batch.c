/* Batched decoding (src/llm/batch.c) on the committed tiny checkpoint: a
 * step of B sessions at different positions (rings wrapped or not) gives
 * each session the logits its own single-sequence decode gives, for fp32
 * and Q8_0 weights; so does a step of several rows per session
 * (llm_batch_run, every row's logits); a batch prefill equals a session
 * prefill; and a rejected step leaves every session as it was.
 * Tolerance, fp32 weights: relative L2 difference of the logits below 1e-5
 * (the rows go through the same kernels; only the attention split, per row
 * vs per chunk, differs, so the results agree to fp32 rounding). Q8_0: a
 * step of several rows runs the multi-token kernel, which adds a block's
 * products in another order than the one-token kernel; each layer then
 * quantizes its input to 8 bits again, where a value on a rounding edge
 * moves by a whole step, and the keys and values written from it keep the
 * difference for the rest of the sequence. Most steps still agree exactly
 * (measured: 0 at the median; the worst row drifts to 1.4e-2 after 19
 * steps), and the difference must stay below what the format itself costs:
 * the same session's difference to fp32 weights, step by step. A wrong
 * kernel is many times that. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember.h"
#include "llm/batch.h"

#define ROWS 5
#define STEPS 24
#define TOLERANCE 1e-5

static const char *model_dir(void)
{
    const char *d = getenv("EMBER_TEST_MODEL");
    return d && *d ? d : "models/tiny";
}

static ember_model *load(ember_type weights)
{
    ember_model_params mp = ember_model_default_params();
    mp.weight_type = weights;
    ember_model *m = NULL;
    if (ember_model_load(model_dir(), &mp, &m) != EMBER_OK)
        printf("     cannot load %s: %s\n", model_dir(), ember_last_error());
    return m;
}

static int32_t token(unsigned *state, int32_t vocab)
{
    *state = *state * 1103515245u + 12345u;
    return (int32_t)((*state >> 8) % (unsigned)vocab);
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

static ember_session *new_session(ember_model *m, int threads)
{
    ember_session_params sp = ember_session_default_params();
    sp.max_context = 256;
    sp.n_threads = threads;
    ember_session *s = NULL;
    return ember_session_create(m, &sp, &s) == EMBER_OK ? s : NULL;
}

/* ROWS sessions with prompts of different lengths (some past the sliding
 * window, one of a single token), stepped together for STEPS steps, against
 * twins stepped one by one. */
static void batch_matches_single(ember_type weights)
{
    static const int prompt_len[ROWS] = {1, 7, 15, 16, 40};
    ember_model *m = load(weights);
    /* quantized weights: fp32 twins measure what the format costs */
    ember_model *ref = weights == EMBER_TYPE_F32 ? NULL : load(EMBER_TYPE_F32);
    REQUIRE(m && (weights == EMBER_TYPE_F32 || ref));
    const int32_t vocab = ember_model_vocab_size(m);
    ember_session *batched[ROWS] = {0}, *single[ROWS] = {0}, *exact[ROWS] = {0};
    llm_batch *b = NULL;
    unsigned state = 11;
    int32_t ids[ROWS], prompt[64];
    double worst = 0;
    REQUIRE(llm_batch_create(m, ROWS, 2, &b) == EMBER_OK);
    for (int r = 0; r < ROWS; r++) {
        batched[r] = new_session(m, 1);
        single[r] = new_session(m, 2);
        REQUIRE(batched[r] && single[r]);
        if (ref) REQUIRE((exact[r] = new_session(ref, 2)) != NULL);
        for (int i = 0; i < prompt_len[r]; i++) prompt[i] = token(&state, vocab);
        CHECK(ember_session_prefill(batched[r], prompt, (size_t)prompt_len[r]) == EMBER_OK);
        CHECK(ember_session_prefill(single[r], prompt, (size_t)prompt_len[r]) == EMBER_OK);
        if (ref) CHECK(ember_session_prefill(exact[r], prompt, (size_t)prompt_len[r]) == EMBER_OK);
    }
    double worst_ratio = 0; /* quantized: batch-vs-single over format error */
    for (int step = 0; step < STEPS; step++) {
        /* a shrinking and growing row count: rows come and go between steps */
        int n = step % 3 == 2 ? ROWS - 2 : ROWS;
        for (int r = 0; r < n; r++) {
            ids[r] = token(&state, vocab);
            CHECK(ember_session_decode(single[r], ids[r]) == EMBER_OK);
            if (ref) CHECK(ember_session_decode(exact[r], ids[r]) == EMBER_OK);
        }
        CHECK(llm_batch_decode(b, batched, ids, n) == EMBER_OK);
        for (int r = 0; r < n; r++) {
            CHECK(ember_session_position(batched[r]) == ember_session_position(single[r]));
            double d = rel_diff(ember_session_logits(batched[r]), ember_session_logits(single[r]),
                                vocab);
            worst = d > worst ? d : worst;
            if (ref) {
                double q = rel_diff(ember_session_logits(single[r]), ember_session_logits(exact[r]),
                                    vocab);
                worst_ratio = d / q > worst_ratio ? d / q : worst_ratio;
            }
        }
    }
    if (ref)
        CHECK_MSG(worst_ratio < 1.0, "batch-vs-single difference %.3g of the format's own",
                  worst_ratio);
    else
        CHECK_MSG(worst < TOLERANCE, "worst relative difference %.3g", worst);
    printf("     weights %d: worst relative logits difference %.3g over %d steps of <= %d rows"
           " (%.3g of the format's own error)\n",
           (int)weights, worst, STEPS, ROWS, worst_ratio);
    for (int r = 0; r < ROWS; r++) {
        ember_session_free(batched[r]);
        ember_session_free(single[r]);
        ember_session_free(exact[r]);
    }
    llm_batch_free(b);
    ember_model_free(m);
    ember_model_free(ref);
}

static void batch_decode_matches_single_sequence_f32(void) { batch_matches_single(EMBER_TYPE_NONE); }
static void batch_decode_matches_single_sequence_q8_0(void) { batch_matches_single(EMBER_TYPE_Q8_0); }

static void batch_prefill_matches_session_prefill(void)
{
    ember_model *m = load(EMBER_TYPE_NONE);
    REQUIRE(m);
    const int32_t vocab = ember_model_vocab_size(m);
    int32_t prompt[150];
    unsigned state = 5;
    for (int i = 0; i < 150; i++) prompt[i] = token(&state, vocab);
    ember_session *a = new_session(m, 2), *c = new_session(m, 1);
    llm_batch *b = NULL;
    REQUIRE(a && c && llm_batch_create(m, 2, 2, &b) == EMBER_OK);
    CHECK(ember_session_prefill(a, prompt, 150) == EMBER_OK);
    CHECK(llm_batch_prefill(b, c, prompt, 150) == EMBER_OK);
    CHECK(ember_session_position(c) == 150);
    double d = rel_diff(ember_session_logits(c), ember_session_logits(a), vocab);
    CHECK_MSG(d < TOLERANCE, "relative difference %.3g", d);
    ember_session_free(a);
    ember_session_free(c);
    llm_batch_free(b);
    ember_model_free(m);
}

static void rejected_step_leaves_sessions_unchanged(void)
{
    ember_model *m = load(EMBER_TYPE_NONE);
    REQUIRE(m);
    const int32_t vocab = ember_model_vocab_size(m);
    ember_session *s[3] = {new_session(m, 1), new_session(m, 1), new_session(m, 1)};
    llm_batch *b = NULL;
    REQUIRE(s[0] && s[1] && s[2] && llm_batch_create(m, 2, 1, &b) == EMBER_OK);
    int32_t one = 3;
    for (int i = 0; i < 3; i++) CHECK(ember_session_prefill(s[i], &one, 1) == EMBER_OK);
    float before = ember_session_logits(s[0])[0];
    int32_t ids[3] = {1, vocab, 2};
    CHECK(llm_batch_decode(b, s, ids, 2) == EMBER_ERR_INVALID_ARG);
    CHECK(strstr(ember_last_error(), "row 1") != NULL);
    ids[1] = 2;
    CHECK(llm_batch_decode(b, s, ids, 3) == EMBER_ERR_INVALID_ARG); /* more rows than the batch */
    ember_session *same[2] = {s[0], s[0]};
    CHECK(llm_batch_decode(b, same, ids, 2) == EMBER_ERR_INVALID_ARG);
    CHECK(strstr(ember_last_error(), "same session") != NULL);
    for (int i = 0; i < 3; i++) CHECK(ember_session_position(s[i]) == 1);
    CHECK(ember_session_logits(s[0])[0] == before);
    for (int i = 0; i < 3; i++) ember_session_free(s[i]);
    llm_batch_free(b);
    ember_model_free(m);
}

/* llm_batch_run: three sessions at different positions (one past the
 * tiny model's window of 16) take 1, 4 and 6 rows in one step; every row of
 * a session that asks for its rows has the logits of a plain session fed
 * the same ids one by one, and a session with one row (or that does not
 * ask) gets its last row's logits as with llm_batch_decode. Attention by
 * chunk against the wrong positions or caches, or rows copied off by one,
 * differ by far more. A step of more rows than the batch's total is
 * refused. */
static void multi_row_step_matches_single_sequences(void)
{
    ember_model *m = load(EMBER_TYPE_NONE);
    REQUIRE(m);
    const int32_t vocab = ember_model_vocab_size(m);
    enum { N = 3 };
    const int32_t held[N] = {5, 30, 12}, counts[N] = {1, 4, 6};
    int32_t seq[N][64], step_ids[16];
    unsigned state = 17;
    ember_session *s[N], *twin[N];
    float *rows[N] = {NULL, malloc(4 * (size_t)vocab * sizeof(float)), NULL};
    float *const outs[N] = {NULL, rows[1], NULL}; /* session 2 leaves its rows: its last row only */
    int n_ids = 0;
    for (int i = 0; i < N; i++) {
        for (int t = 0; t < held[i] + counts[i]; t++) seq[i][t] = token(&state, vocab);
        s[i] = new_session(m, 1);
        twin[i] = new_session(m, 1);
        REQUIRE(s[i] && twin[i] && ember_session_prefill(s[i], seq[i], (size_t)held[i]) == EMBER_OK);
        memcpy(step_ids + n_ids, seq[i] + held[i], (size_t)counts[i] * sizeof *step_ids);
        n_ids += counts[i];
    }
    REQUIRE(rows[1]);
    llm_batch *b = NULL;
    REQUIRE(llm_batch_create(m, N, 2, &b) == EMBER_OK);
    CHECK(llm_batch_run(b, s, step_ids, counts, N, outs) == EMBER_OK);
    for (int i = 0; i < N; i++) {
        CHECK(ember_session_position(s[i]) == held[i] + counts[i]);
        for (int t = 0; t < held[i] + counts[i]; t++) {
            REQUIRE(ember_session_decode(twin[i], seq[i][t]) == EMBER_OK);
            if (t < held[i]) continue;
            const float *got = outs[i] ? outs[i] + (size_t)(t - held[i]) * (size_t)vocab
                             : t == held[i] + counts[i] - 1 ? ember_session_logits(s[i]) : NULL;
            if (!got) continue;
            double d = rel_diff(got, ember_session_logits(twin[i]), vocab);
            CHECK_MSG(d < TOLERANCE, "session %d row %d: relative difference %.3g", i, t - held[i], d);
        }
    }
    const int32_t too_many[N] = {1, 4, llm_batch_max_total_rows(b)};
    CHECK(llm_batch_run(b, s, step_ids, too_many, N, NULL) == EMBER_ERR_INVALID_ARG);
    for (int i = 0; i < N; i++) {
        ember_session_free(s[i]);
        ember_session_free(twin[i]);
    }
    free(rows[1]);
    llm_batch_free(b);
    ember_model_free(m);
}

int main(void)
{
    RUN(multi_row_step_matches_single_sequences);
    RUN(batch_decode_matches_single_sequence_f32);
    RUN(batch_decode_matches_single_sequence_q8_0);
    RUN(batch_prefill_matches_session_prefill);
    RUN(rejected_step_leaves_sessions_unchanged);
    return check_summary();
}
