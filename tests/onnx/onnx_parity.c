/* The exported decode step through ONNX Runtime against ember's native
 * step: one greedy run of N tokens (ember's choices fed to both), logits
 * compared at every position (SNR in dB) and the argmax of both at each.
 *
 *   onnx_parity MODEL_DIR EXPORT_DIR LIBONNXRUNTIME N [MIN_SNR_DB [MIN_TOP1]]
 *
 * When the folder has a prefill graph, the same ids again from position 0
 * in a schedule of whole chunks and single steps (chunk, 5 steps, chunk,
 * chunk, steps: chunks that start mid-ring, after the rings wrapped): every
 * chunk row's logits and every later step's against the native step's.
 *
 * Then the same ids through a session whose model has the onnx backend
 * (ember_model_params.backend): a ring snapshot taken after the sliding
 * rings wrapped, a rewind to it from further on, and the tokens fed again
 * must give the first pass's logits bit for bit (what a conversation does).
 *
 * Prints one summary line (and the worst positions); exits 1 when a
 * position falls below MIN_SNR_DB (default 100), the share of positions
 * whose argmax agrees falls below MIN_TOP1 (default 1: every one; reduced
 * forms such as f16 set a floor) or the rewind does not reproduce the
 * logits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "llm/prefix.h"
#include "llm/spark.h"
#include "onnx/spark_ort.h"
#include "parity_math.h"

/* Feeds ids [from, to) and copies the last logits into out. */
static ember_status feed(ember_session *s, const int32_t *ids, int32_t from, int32_t to, float *out,
                         int32_t vocab)
{
    ember_status st = ember_session_prefill(s, ids + from, (size_t)(to - from));
    if (!st) memcpy(out, ember_session_logits(s), (size_t)vocab * sizeof *out);
    return st;
}

typedef struct tally {
    double worst, sum;
    int32_t worst_pos, rows, mismatches;
} tally;

static void count_row(tally *t, const float *ref, const float *ours, int32_t vocab, int32_t pos)
{
    double db = snr_db(ref, ours, vocab);
    t->sum += db;
    t->rows++;
    if (db < t->worst) {
        t->worst = db;
        t->worst_pos = pos;
    }
    if (argmax(ref, vocab) != argmax(ours, vocab)) t->mismatches++;
}

/* The prefill schedule above against native steps (the session reset);
 * returns 0 when every row is at or above min_db and the argmax agrees on
 * at least min_top1 of each kind of row. */
static int prefill_check(ember_session *sess, spark_ort *ort, const int32_t *ids, int32_t n,
                         int32_t vocab, double min_db, double min_top1)
{
    const int32_t T = spark_ort_chunk_tokens(ort);
    float *ref = malloc((size_t)T * (size_t)vocab * sizeof *ref);
    tally chunks = {1e9, 0, -1, 0, 0}, steps = {1e9, 0, -1, 0, 0};
    int32_t pos = 0, round = 0, failed = !ref;
    ember_session_reset(sess);
    spark_ort_reset(ort);
    while (pos < n && !failed) {
        /* chunk, 5 steps, then chunks while they fit, then steps */
        const int chunk = (round == 0 || round >= 6) && pos + T <= n;
        const int32_t rows = chunk ? T : 1;
        for (int32_t i = 0; i < rows && !failed; i++) {
            failed = ember_session_decode(sess, ids[pos + i]) != EMBER_OK;
            if (!failed) memcpy(ref + (size_t)i * vocab, ember_session_logits(sess), (size_t)vocab * sizeof *ref);
        }
        const float *ours = NULL;
        if (!failed)
            failed = (chunk ? spark_ort_chunk(ort, ids + pos, &ours) : spark_ort_step(ort, ids[pos], &ours)) != EMBER_OK;
        if (failed) {
            fprintf(stderr, "onnx_parity: prefill schedule at %d: %s\n", pos, ember_last_error());
            break;
        }
        for (int32_t i = 0; i < rows; i++)
            count_row(chunk ? &chunks : &steps, ref + (size_t)i * vocab, ours + (size_t)i * vocab, vocab, pos + i);
        pos += rows;
        round++;
    }
    printf("onnx_parity: prefill graph (%d tokens): %d chunk rows, logits SNR min %.1f dB (position %d), "
           "mean %.1f dB, argmax %d/%d identical; then %d steps: min %.1f dB, argmax %d/%d identical\n",
           T, chunks.rows, chunks.worst, chunks.worst_pos, chunks.sum / (chunks.rows ? chunks.rows : 1),
           chunks.rows - chunks.mismatches, chunks.rows, steps.rows, steps.worst,
           steps.rows - steps.mismatches, steps.rows);
    free(ref);
    return failed || chunks.rows < T || chunks.worst < min_db || steps.worst < min_db ||
           chunks.rows - chunks.mismatches < min_top1 * chunks.rows ||
           steps.rows - steps.mismatches < min_top1 * steps.rows;
}

/* The rewind check on the onnx backend; returns 0 when it holds. */
static int rewind_check(const char *model_dir, const char *export_dir, const char *lib,
                        const int32_t *ids, int32_t n, int32_t vocab)
{
    ember_model_params mp = ember_model_default_params();
    char backend[4200];
    snprintf(backend, sizeof backend, "onnx:%s", export_dir);
    mp.backend = backend;
    mp.onnx_runtime = lib;
    ember_model *m = NULL;
    ember_session *s = NULL;
    ember_session_params sp = ember_session_default_params();
    sp.n_threads = 1;
    llm_ring_snapshot snap = {0};
    const int32_t mark = n / 3, end = 2 * n / 3;
    float *first = malloc((size_t)vocab * sizeof *first), *again = malloc((size_t)vocab * sizeof *again);
    ember_status st = first && again ? ember_model_load(model_dir, &mp, &m) : EMBER_ERR_NO_MEMORY;
    if (!st) st = ember_session_create(m, &sp, &s);
    if (!st) st = feed(s, ids, 0, mark, again, vocab);
    if (!st) st = llm_ring_snapshot_take(s, &snap);
    if (!st) st = feed(s, ids, mark, end, first, vocab);
    if (!st) st = llm_session_rewind(s, mark, &snap);
    if (!st) st = feed(s, ids, mark, end, again, vocab);
    int same = !st && !memcmp(first, again, (size_t)vocab * sizeof *first);
    if (st) fprintf(stderr, "onnx_parity: rewind: %s\n", ember_last_error());
    printf("onnx_parity: onnx backend rewound from %d to %d and fed again: logits %s\n", end, mark,
           same ? "identical" : "DIFFER");
    llm_ring_snapshot_free(&snap);
    ember_session_free(s);
    ember_model_free(m);
    free(first);
    free(again);
    return !same;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: onnx_parity MODEL_DIR EXPORT_DIR LIBONNXRUNTIME N [MIN_SNR_DB [MIN_TOP1]]\n");
        return 2;
    }
    const int32_t n = atoi(argv[4]);
    const double min_db = argc > 5 ? atof(argv[5]) : 100.0;
    const double min_top1 = argc > 6 ? atof(argv[6]) : 1.0;
    ember_model_params mp = ember_model_default_params();
    ember_model *model = NULL;
    ember_session *sess = NULL;
    spark_ort *ort = NULL;
    if (ember_model_load(argv[1], &mp, &model) != EMBER_OK ||
        spark_ort_open(&model->cfg, argv[2], &(ort_choice){argv[3], NULL, NULL}, 1, &ort) != EMBER_OK) {
        fprintf(stderr, "onnx_parity: %s\n", ember_last_error());
        ember_model_free(model);
        return 1;
    }
    ember_session_params sp = ember_session_default_params();
    sp.max_context = spark_ort_context(ort);
    sp.n_threads = 1;
    if (n < 1 || n > sp.max_context || ember_session_create(model, &sp, &sess) != EMBER_OK) {
        fprintf(stderr, "onnx_parity: N must be in [1, %d]: %s\n", sp.max_context, ember_last_error());
        spark_ort_free(ort);
        ember_model_free(model);
        return 1;
    }
    const int32_t vocab = ember_model_vocab_size(model);
    int32_t *fed = malloc((size_t)n * sizeof *fed);
    int32_t token = model->cfg.bos_id >= 0 ? model->cfg.bos_id : 0;
    double worst = 1e9, sum = 0;
    int32_t worst_pos = -1, mismatches = 0, first_mismatch = -1;
    int failed = 0;
    for (int32_t pos = 0; pos < n && !failed; pos++) {
        const float *ours;
        if (fed) fed[pos] = token;
        if (!fed || ember_session_decode(sess, token) != EMBER_OK || spark_ort_step(ort, token, &ours) != EMBER_OK) {
            fprintf(stderr, "onnx_parity: position %d: %s\n", pos, ember_last_error());
            failed = 1;
            break;
        }
        const float *ref = ember_session_logits(sess);
        double db = snr_db(ref, ours, vocab);
        sum += db;
        if (db < worst) {
            worst = db;
            worst_pos = pos;
        }
        int32_t a = argmax(ref, vocab), b = argmax(ours, vocab);
        if (a != b && mismatches++ == 0) first_mismatch = pos;
        token = a;
    }
    printf("onnx_parity: %d positions (ring of %d slots wraps every %d), ORT %s: logits SNR min %.1f dB "
           "(position %d), mean %.1f dB; greedy tokens %d/%d identical\n",
           n, model->cfg.sliding_window - 1, model->cfg.sliding_window - 1,
           spark_ort_runtime_version(ort), worst, worst_pos, sum / (n > 0 ? n : 1), n - mismatches, n);
    if (mismatches) printf("onnx_parity: first argmax difference at position %d\n", first_mismatch);
    if (!failed && spark_ort_chunk_tokens(ort) && fed)
        failed = prefill_check(sess, ort, fed, n, vocab, min_db, min_top1);
    if (!failed && n >= 3) failed = rewind_check(argv[1], argv[2], argv[3], fed, n, vocab);
    free(fed);
    ember_session_free(sess);
    spark_ort_free(ort);
    ember_model_free(model);
    return failed || worst < min_db || n - mismatches < min_top1 * n ? 1 : 0;
}
