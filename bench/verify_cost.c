/* The cost of a speculative verify pass over K+1 rows relative to a plain
 * one-row decode step, and the acceptance it needs to break even.
 *
 *   build/bench/verify_cost -m MODEL [--dtype q8_0] [--context 1024] [--k 2,3,4,5,6,7,8]
 *       [--iters 20] [--reps 5] [--threads N]
 *
 * The session is filled to --context tokens (ember_session_bench_fill), then
 * per repetition each variant (the 1-row step, then each K) runs --iters
 * passes in turn, alternating; a verify keeps its first row only
 * (llm_verify_accept(1)), so every pass of every variant moves the position
 * by one and they all see about the same context. The JSON gives per variant the median ms per pass
 * over repetitions and its ratio to the 1-row step, and the break-even
 * acceptance: with K drafts at per-draft acceptance a, a pass yields
 * 1 + a + ... + a^K ids, so the rate a at which that equals the ratio
 * (found by bisection; null: never). The same from CPU time (cpu_*),
 * steadier than wall time on a shared machine with --threads 1. Never
 * asserts time. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "bench_stats.h"
#include "ember.h"
#include "llm/verify.h"

enum { MAX_K = 16, MAX_REPS = 32 };

/* ids per pass with k drafts at acceptance a */
static double yield(double a, int k)
{
    double t = 0, term = 1;
    for (int i = 0; i <= k; i++, term *= a) t += term;
    return t;
}

static double break_even(double ratio, int k)
{
    if (yield(1.0, k) < ratio) return 2; /* not even all accepted pays */
    double lo = 0, hi = 1;
    for (int i = 0; i < 60; i++) {
        double mid = (lo + hi) / 2;
        if (yield(mid, k) < ratio) lo = mid;
        else hi = mid;
    }
    return hi;
}

int main(int argc, char **argv)
{
    const char *model_dir = NULL, *ks = "2,3,4,5,6,7,8", *dtype = "q8_0";
    int context = 1024, iters = 20, reps = 5, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "-m") && more) model_dir = argv[++i];
        else if (!strcmp(a, "--dtype") && more) dtype = argv[++i];
        else if (!strcmp(a, "--context") && more) context = atoi(argv[++i]);
        else if (!strcmp(a, "--k") && more) ks = argv[++i];
        else if (!strcmp(a, "--iters") && more) iters = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && more) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--threads") && more) threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: verify_cost -m MODEL [--dtype q8_0] [--context 1024] "
                            "[--k 2,3,...] [--iters 20] [--reps 5] [--threads N]\n");
            return 2;
        }
    }
    int k_list[MAX_K], n_k = bench_int_list(ks, 1, 64, k_list, MAX_K);
    if (n_k < 1) {
        fprintf(stderr, "verify_cost: bad --k list '%s'\n", ks);
        return 2;
    }
    ember_model_params mp = ember_model_default_params();
    if (!model_dir || bench_parse_dtype(dtype, &mp.weight_type) || reps < 1 || reps > MAX_REPS || iters < 1 ||
        context < 1) {
        fprintf(stderr, "verify_cost: -m MODEL needed; --dtype f32|bf16|q8_0|q4_0|none; --reps 1..%d\n",
                MAX_REPS);
        return 2;
    }
    int k_max = 0;
    for (int i = 0; i < n_k; i++) k_max = k_list[i] > k_max ? k_list[i] : k_max;
    ember_model *m = NULL;
    ember_session *s = NULL;
    llm_verifier *v = NULL;
    ember_session_params sp = ember_session_default_params();
    sp.max_context = context + reps * (n_k + 1) * iters + k_max + 2;
    sp.n_threads = threads;
    if (ember_model_load(model_dir, &mp, &m) || ember_session_create(m, &sp, &s) ||
        ember_session_bench_fill(s, context) || llm_verifier_create(s, k_max, &v)) {
        fprintf(stderr, "verify_cost: %s\n", ember_last_error());
        return 1;
    }
    if (llm_verifier_max_draft(v) < k_max) {
        fprintf(stderr, "verify_cost: K %d does not fit the sliding rings\n", k_max);
        return 1;
    }
    const int32_t vocab = ember_model_vocab_size(m);
    int32_t ids[MAX_K + 65];
    for (int i = 0; i < k_max + 1; i++) ids[i] = (int32_t)((i * 7919 + 13) % vocab);
    static double ms[MAX_K + 1][MAX_REPS], cpu_ms[MAX_K + 1][MAX_REPS];
    for (int r = 0; r < reps; r++)
        for (int var = 0; var <= n_k; var++) {
            double t0 = bench_now_s(), c0 = bench_cpu_s();
            for (int it = 0; it < iters; it++) {
                const float *rows;
                ember_status st = var == 0 ? ember_session_decode(s, ids[0])
                                           : llm_verify(v, ids, k_list[var - 1] + 1, &rows);
                if (!st && var) st = llm_verify_accept(v, 1);
                if (st) {
                    fprintf(stderr, "verify_cost: %s\n", ember_last_error());
                    return 1;
                }
            }
            ms[var][r] = (bench_now_s() - t0) * 1e3 / iters;
            cpu_ms[var][r] = (bench_cpu_s() - c0) * 1e3 / iters;
        }
    cJSON *out = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(out, "verify");
    cJSON_AddStringToObject(out, "model", model_dir);
    cJSON_AddStringToObject(out, "dtype", dtype);
    cJSON_AddNumberToObject(out, "context", context);
    cJSON_AddNumberToObject(out, "iters", iters);
    cJSON_AddNumberToObject(out, "reps", reps);
    const double step = bench_quantile(ms[0], reps, 0.5);
    cJSON_AddNumberToObject(out, "step_ms", step);
    cJSON_AddItemToObject(out, "step_ms_runs", cJSON_CreateDoubleArray(ms[0], reps));
    const double step_cpu = bench_quantile(cpu_ms[0], reps, 0.5);
    cJSON_AddNumberToObject(out, "step_cpu_ms", step_cpu);
    for (int i = 0; i < n_k; i++) {
        double med = bench_quantile(ms[i + 1], reps, 0.5), ratio = med / step;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "k", k_list[i]);
        cJSON_AddNumberToObject(o, "rows", k_list[i] + 1);
        cJSON_AddNumberToObject(o, "ms", med);
        cJSON_AddNumberToObject(o, "ratio_to_step", ratio);
        double be = break_even(ratio, k_list[i]);
        if (be <= 1) cJSON_AddNumberToObject(o, "break_even_acceptance", be);
        else cJSON_AddNullToObject(o, "break_even_acceptance");
        cJSON_AddItemToObject(o, "ms_runs", cJSON_CreateDoubleArray(ms[i + 1], reps));
        /* CPU time: steadier on a shared machine, meaningful for --threads 1 */
        const double cpu = bench_quantile(cpu_ms[i + 1], reps, 0.5);
        cJSON_AddNumberToObject(o, "cpu_ms", cpu);
        cJSON_AddNumberToObject(o, "cpu_ratio_to_step", cpu / step_cpu);
        double be_cpu = break_even(cpu / step_cpu, k_list[i]);
        if (be_cpu <= 1) cJSON_AddNumberToObject(o, "cpu_break_even_acceptance", be_cpu);
        else cJSON_AddNullToObject(o, "cpu_break_even_acceptance");
        cJSON_AddItemToArray(list, o);
    }
    char *json = cJSON_Print(out);
    printf("%s\n", json);
    free(json);
    cJSON_Delete(out);
    llm_verifier_free(v);
    ember_session_free(s);
    ember_model_free(m);
    return 0;
}
