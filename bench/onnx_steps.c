/* One exported folder's steps on ONNX Runtime's CPU provider against
 * ember's native steps on the same model (issue 21's timing table; not a
 * target: the CPU provider is not where these graphs are meant to run).
 * Prints one JSON object:
 *
 *   build/bench/onnx_steps -m MODEL -x EXPORT_DIR --ort LIBONNXRUNTIME
 *       [--at 200] [--reps 10] [--threads 1]
 *
 * decode_ms: the median of reps consecutive single-token steps after `at`
 * tokens (rings wrapped when at exceeds the window); prefill_chunk_ms: the
 * median of reps runs of one prefill chunk (the folder's chunk size) from
 * position 0, native as one ember_session_prefill of the same tokens.
 * Native runs the model's weights as stored. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "ember.h"
#include "llm/spark.h"
#include "onnx/spark_ort.h"

typedef struct opts {
    const char *model, *dir, *ort;
    int at, reps, threads;
} opts;

static int parse(int argc, char **argv, opts *o)
{
    static const struct option lo[] = {{"ort", required_argument, 0, 'l'},
                                       {"at", required_argument, 0, 'a'},
                                       {"reps", required_argument, 0, 'r'},
                                       {"threads", required_argument, 0, 't'},
                                       {0, 0, 0, 0}};
    *o = (opts){NULL, NULL, NULL, 200, 10, 1};
    int c;
    while ((c = getopt_long(argc, argv, "m:x:", lo, NULL)) != -1) {
        switch (c) {
        case 'm': o->model = optarg; break;
        case 'x': o->dir = optarg; break;
        case 'l': o->ort = optarg; break;
        case 'a': o->at = atoi(optarg); break;
        case 'r': o->reps = atoi(optarg); break;
        case 't': o->threads = atoi(optarg); break;
        default: return 1;
        }
    }
    return !o->model || !o->dir || !o->ort || o->at < 0 || o->reps < 1 || o->threads < 1;
}

/* Token ids a text would give: varied, inside the vocabulary. */
static void fill_ids(int32_t *ids, int n, int32_t vocab)
{
    uint32_t x = 2026;
    for (int i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        ids[i] = (int32_t)((x >> 8) % (uint32_t)vocab);
    }
}

static int fail(const char *what)
{
    fprintf(stderr, "onnx_steps: %s: %s\n", what, ember_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o)) {
        fprintf(stderr, "usage: onnx_steps -m MODEL -x EXPORT_DIR --ort LIB [--at 200] [--reps 10] "
                        "[--threads 1]\n");
        return 2;
    }
    ember_model *m = NULL;
    ember_session *s = NULL;
    spark_ort *ort = NULL;
    if (ember_model_load(o.model, NULL, &m)) return fail(o.model);
    if (spark_ort_open(&m->cfg, o.dir, &(ort_choice){o.ort, NULL, NULL}, o.threads, &ort)) return fail(o.dir);
    const int32_t ctx = spark_ort_context(ort), T = spark_ort_chunk_tokens(ort);
    ember_session_params sp = ember_session_default_params();
    sp.max_context = ctx;
    sp.n_threads = o.threads;
    if (ember_session_create(m, &sp, &s)) return fail("session");
    const int n = o.at + o.reps > T ? o.at + o.reps : T;
    if (n > ctx) {
        fprintf(stderr, "onnx_steps: --at %d plus %d reps passes the context %d\n", o.at, o.reps, ctx);
        return 2;
    }
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    double *native = malloc((size_t)o.reps * sizeof *native), *onnx = malloc((size_t)o.reps * sizeof *onnx);
    if (!ids || !native || !onnx) return 1;
    fill_ids(ids, n, m->cfg.vocab);
    const float *logits;
    if (o.at && ember_session_prefill(s, ids, (size_t)o.at)) return fail("native prefill");
    for (int i = 0; i < o.at; i++)
        if (spark_ort_step(ort, ids[i], &logits)) return fail("onnx steps");
    for (int r = 0; r < o.reps; r++) {
        double t0 = bench_now_s();
        if (ember_session_decode(s, ids[o.at + r])) return fail("native decode");
        double t1 = bench_now_s();
        if (spark_ort_step(ort, ids[o.at + r], &logits)) return fail("onnx decode");
        double t2 = bench_now_s();
        native[r] = 1e3 * (t1 - t0);
        onnx[r] = 1e3 * (t2 - t1);
    }
    const double dn = bench_quantile(native, o.reps, 0.5), dx = bench_quantile(onnx, o.reps, 0.5);
    double pn = 0, px = 0;
    for (int r = 0; T && r < o.reps; r++) {
        ember_session_reset(s);
        spark_ort_reset(ort);
        double t0 = bench_now_s();
        if (ember_session_prefill(s, ids, (size_t)T)) return fail("native prefill");
        double t1 = bench_now_s();
        if (spark_ort_chunk(ort, ids, &logits)) return fail("onnx chunk");
        double t2 = bench_now_s();
        native[r] = 1e3 * (t1 - t0);
        onnx[r] = 1e3 * (t2 - t1);
    }
    if (T) {
        pn = bench_quantile(native, o.reps, 0.5);
        px = bench_quantile(onnx, o.reps, 0.5);
    }
    printf("{\"model\": \"%s\", \"form\": \"%s\", \"context\": %d, \"ort_version\": \"%s\", "
           "\"threads\": %d, \"reps\": %d, \"decode_at\": %d, "
           "\"decode_ms\": {\"native\": %.3f, \"ort_cpu\": %.3f}, \"prefill_chunk\": %d, "
           "\"prefill_chunk_ms\": {\"native\": %.3f, \"ort_cpu\": %.3f}}\n",
           o.model, spark_onnx_form_name(spark_ort_form(ort)), ctx, spark_ort_runtime_version(ort),
           o.threads, o.reps, o.at, dn, dx, T, pn, px);
    free(ids);
    free(native);
    free(onnx);
    ember_session_free(s);
    spark_ort_free(ort);
    ember_model_free(m);
    return 0;
}
