/* The exported decode step through ONNX Runtime against ember's native
 * step: one greedy run of N tokens (ember's choices fed to both), logits
 * compared at every position (SNR in dB) and the argmax of both at each.
 *
 *   onnx_parity MODEL_DIR EXPORT_DIR LIBONNXRUNTIME N [MIN_SNR_DB]
 *
 * Prints one summary line (and the worst positions); exits 1 when a
 * position falls below MIN_SNR_DB (default 100) or an argmax differs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ember.h"
#include "llm/spark.h"
#include "onnx/spark_ort.h"

static double snr_db(const float *ref, const float *x, int32_t n)
{
    double sig = 0, err = 0;
    for (int32_t i = 0; i < n; i++) {
        sig += (double)ref[i] * ref[i];
        err += ((double)x[i] - ref[i]) * ((double)x[i] - ref[i]);
    }
    return err == 0 ? 300.0 : 10.0 * log10(sig / err);
}

static int32_t argmax(const float *x, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: onnx_parity MODEL_DIR EXPORT_DIR LIBONNXRUNTIME N [MIN_SNR_DB]\n");
        return 2;
    }
    const int32_t n = atoi(argv[4]);
    const double min_db = argc > 5 ? atof(argv[5]) : 100.0;
    ember_model_params mp = ember_model_default_params();
    ember_model *model = NULL;
    ember_session *sess = NULL;
    spark_ort *ort = NULL;
    if (ember_model_load(argv[1], &mp, &model) != EMBER_OK ||
        spark_ort_open(&model->cfg, argv[2], argv[3], 1, &ort) != EMBER_OK) {
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
    int32_t token = model->cfg.bos_id >= 0 ? model->cfg.bos_id : 0;
    double worst = 1e9, sum = 0;
    int32_t worst_pos = -1, mismatches = 0, first_mismatch = -1;
    int failed = 0;
    for (int32_t pos = 0; pos < n && !failed; pos++) {
        const float *ours;
        if (ember_session_decode(sess, token) != EMBER_OK || spark_ort_step(ort, token, &ours) != EMBER_OK) {
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
    ember_session_free(sess);
    spark_ort_free(ort);
    ember_model_free(model);
    return failed || worst < min_db || mismatches ? 1 : 0;
}
