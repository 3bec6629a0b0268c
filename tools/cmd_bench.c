/* `ember bench llm`: prefill and decode speed per context length, with the
 * bytes a decoded token reads, this machine's read bandwidth measured in the
 * same run, the fraction of that roofline, KV bytes and peak RSS.
 *
 * Long contexts are reached with ember_session_bench_fill (the cache is
 * filled with synthetic keys and values) rather than by prefilling them:
 * what a decode step costs depends on how much cache it reads, not on what
 * the cache holds. Times are medians over --reps runs. With --batch the
 * rows of a batched decode step are measured instead (cmd_bench_batch.c). */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/large_alloc.h"
#include "cli.h"
#include "ember.h"
#include "kernels/cpu.h"
#include "llm/spark.h"

/* ---- the benchmark ------------------------------------------------------ */

/* Multiply-adds per prompt token in the layers' matrices (prefill computes
 * the output matrix for the last token only), times 2: the ops the prefill
 * GOP/s figure counts. */
static double prefill_ops_per_token(const ember_model *m)
{
    double macs = 0;
    for (int32_t i = 0; i < m->cfg.n_layers; i++) {
        const spark_layer *L = &m->layers[i];
        const ek_matrix *w[] = {&L->wq, &L->wk, &L->wv, &L->wg, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t j = 0; j < sizeof w / sizeof *w; j++) macs += (double)w[j]->rows * (double)w[j]->cols;
    }
    return 2 * macs;
}

typedef struct result {
    int32_t ctx;
    double prefill_tok_s, decode_tok_s, bytes_per_token, read_bw_gbs, roofline;
    size_t kv_bytes;
    cli_rss peak;
} result;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember bench llm -m MODEL [--ctx 0,4096,32768] [--prompt 512] [--gen 64]\n"
            "                       [--reps 3] [--all-full] [--json] [options]\n"
            "       ember bench llm -m MODEL --batch 1,4,8 [--prompt 512] [--gen 64] [--reps 3]\n"
            "                       [--json] [options]   (aggregate tok/s of batched decode)\n"
            "  options:\n%s",
            cli_common_usage);
}

static int run_context(ember_model *model, const ember_session_params *base, int32_t ctx,
                       const int32_t *prompt, int n_prompt, int n_gen, int reps, int threads,
                       result *out)
{
    ember_session_params sp = *base;
    sp.max_context = ctx + n_prompt + n_gen + 1; /* + the warm-up decode step */
    ember_session *s = NULL;
    double pre[16], dec[16];
    memset(out, 0, sizeof *out);
    out->ctx = ctx;
    if (ember_session_create(model, &sp, &s) != EMBER_OK) return -1;
    out->kv_bytes = ember_session_cache_bytes(s);
    /* The memory bandwidth of a shared machine drifts, sometimes by 2x within
     * a minute: each rep's decode is paired with a probe read right after it,
     * and the roofline fraction is the median of the reps' own fractions. */
    double bw[16], roof[16];
    size_t kv_read = 0;
    for (int r = 0; r < reps; r++) {
        if (ember_session_bench_fill(s, ctx) != EMBER_OK) goto fail;
        double t0 = cli_now_s();
        if (n_prompt && ember_session_prefill(s, prompt, (size_t)n_prompt) != EMBER_OK) goto fail;
        double t1 = cli_now_s();
        /* decode at (about) the requested context: restart from ctx */
        if (ember_session_bench_fill(s, ctx) != EMBER_OK) goto fail;
        int32_t tok = prompt[0];
        if (ember_session_decode(s, tok) != EMBER_OK) goto fail; /* warm-up step */
        kv_read = ember_session_cache_read_bytes(s);
        double t2 = cli_now_s();
        for (int i = 0; i < n_gen; i++) {
            tok = (tok * 31 + 7) % ember_model_vocab_size(model);
            if (ember_session_decode(s, tok) != EMBER_OK) goto fail;
        }
        double t3 = cli_now_s();
        pre[r] = n_prompt ? n_prompt / (t1 - t0) : 0.0;
        dec[r] = n_gen / (t3 - t2);
        cli_rss_peak(&out->peak);
        /* a decode step reads every weight matrix once, one embedding row,
         * and the cache it attends over (taken mid-run) */
        out->bytes_per_token = (double)ember_model_weight_bytes(model) + (double)kv_read;
        bw[r] = cli_read_bandwidth_gbs((size_t)1 << 30, threads);
        roof[r] = bw[r] > 0 ? dec[r] * out->bytes_per_token / (bw[r] * 1e9) : 0.0;
    }
    out->prefill_tok_s = cli_median(pre, reps);
    out->decode_tok_s = cli_median(dec, reps);
    out->read_bw_gbs = cli_median(bw, reps);
    out->roofline = cli_median(roof, reps);
    ember_session_free(s);
    return 0;
fail:
    ember_session_free(s);
    return -1;
}

static int valid_rows(const int32_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i] < 1 || rows[i] > 256) return 0;
    return n > 0;
}

/* --batch: one line per row count, or one JSON object with the speedup of
 * each row count over the first (pass 1 first for the batching speedup). */
static int run_batches(ember_model *model, const ember_session_params *sp, int threads,
                       const int32_t *rows, size_t n_rows, int n_prompt, int n_gen, int reps,
                       int json, const char *dir, ember_type dtype)
{
    cli_batch_result res[64];
    if (n_rows > 64) n_rows = 64;
    for (size_t i = 0; i < n_rows; i++)
        if (cli_bench_batch(model, sp, threads, rows[i], n_prompt, n_gen, reps, &res[i])) {
            fprintf(stderr, "ember bench: batch of %d: %s\n", rows[i], ember_last_error());
            return 1;
        }
    if (!json) {
        for (size_t i = 0; i < n_rows; i++)
            fprintf(stderr, "rows %3d: step %8.2f ms, %8.2f tok/s, %.2fx the first\n", res[i].rows,
                    res[i].step_ms, res[i].tok_s, res[i].tok_s / res[0].tok_s);
        return 0;
    }
    printf("{\"model\": \"%s\", \"kernels\": \"%s\", \"dtype\": \"%s\", \"threads\": %d, "
           "\"prompt\": %d, \"gen\": %d, \"reps\": %d, \"batch\": [",
           dir, ember_model_kernels(model), cli_type_name(dtype), threads, n_prompt, n_gen, reps);
    for (size_t i = 0; i < n_rows; i++)
        printf("%s{\"rows\": %d, \"step_ms\": %.3f, \"aggregate_tok_s\": %.3f, "
               "\"speedup\": %.3f}",
               i ? ", " : "", res[i].rows, res[i].step_ms, res[i].tok_s, res[i].tok_s / res[0].tok_s);
    printf("]}\n");
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "tts-codes")) return cmd_bench_tts(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "tts")) return cmd_bench_speech(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "llm")) {
        usage(stderr);
        return 2;
    }
    argc--;
    argv++;
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},   {"ctx", required_argument, 0, 'c'},
        {"prompt", required_argument, 0, 'p'},  {"gen", required_argument, 0, 'g'},
        {"reps", required_argument, 0, 'r'},    {"all-full", no_argument, 0, 'a'},
        {"json", no_argument, 0, 'j'},          {"help", no_argument, 0, 'h'},
        {"batch", required_argument, 0, 'b'},
        CLI_COMMON_OPTIONS,                     {0, 0, 0, 0}};
    const char *dir = NULL, *ctx_text = "0", *batch_text = NULL;
    int n_prompt = 512, n_gen = 64, reps = 3, json = 0, c;
    ember_model_params mp = ember_model_default_params();
    ember_session_params sp = ember_session_default_params();
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': dir = optarg; break;
        case 'c': ctx_text = optarg; break;
        case 'p': n_prompt = atoi(optarg); break;
        case 'g': n_gen = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'a': mp.all_full_attention = 1; break;
        case 'j': json = 1; break;
        case 'b': batch_text = optarg; break;
        case 'h': usage(stdout); return 0;
        default: {
            int r = cli_common_option(c, optarg, "bench", &mp, &sp);
            if (r == 1) break;
            if (r == 0) usage(stderr);
            return 2;
        }
        }
    }
    int32_t *ctxs = NULL, *rows = NULL;
    size_t n_ctx = 0, n_rows = 0;
    if (!dir || n_prompt < 0 || n_gen < 1 || reps < 1 || reps > 16 ||
        cli_parse_ids(ctx_text, &ctxs, &n_ctx) ||
        (batch_text && (cli_parse_ids(batch_text, &rows, &n_rows) || !valid_rows(rows, n_rows)))) {
        usage(stderr);
        free(ctxs);
        free(rows);
        return 2;
    }
    int rc = 1;
    ember_model *model = NULL;
    int32_t *prompt = calloc((size_t)n_prompt + 1, sizeof *prompt);
    result *res = calloc(n_ctx, sizeof *res);
    double t0 = cli_now_s();
    if (!prompt || !res) goto done;
    if (ember_model_load(dir, &mp, &model) != EMBER_OK) {
        fprintf(stderr, "ember bench: %s\n", ember_last_error());
        goto done;
    }
    double load_s = cli_now_s() - t0;
    for (int i = 0; i <= n_prompt; i++) prompt[i] = (i * 7919 + 13) % ember_model_vocab_size(model);
    /* the thread count the sessions use (0 means one per online CPU) */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = sp.n_threads ? sp.n_threads : (online > 0 ? (int)online : 1);
    if (rows) {
        rc = run_batches(model, &sp, threads, rows, n_rows, n_prompt, n_gen, reps, json, dir,
                         mp.weight_type);
        goto done;
    }
    double bw = 0.0; /* the best any context saw */
    for (size_t i = 0; i < n_ctx; i++) {
        if (run_context(model, &sp, ctxs[i], prompt, n_prompt, n_gen, reps, threads, &res[i])) {
            fprintf(stderr, "ember bench: context %d: %s\n", ctxs[i], ember_last_error());
            goto done;
        }
        if (res[i].read_bw_gbs > bw) bw = res[i].read_bw_gbs;
    }
    for (size_t i = 0; i < n_ctx && !json; i++)
        fprintf(stderr, "ctx %6d: prefill %8.2f tok/s, decode %7.2f tok/s, %.1f MB/token, "
                        "%.0f%% of %.1f GB/s, KV %.1f MB, RSS anon %.1f MB file %.1f MB\n",
                res[i].ctx, res[i].prefill_tok_s, res[i].decode_tok_s,
                res[i].bytes_per_token / 1e6, 100 * res[i].roofline, res[i].read_bw_gbs,
                (double)res[i].kv_bytes / 1e6, (double)res[i].peak.anon / 1e6,
                (double)res[i].peak.file / 1e6);
    /* prefill against the cores' int8 peak (measured: one core's x threads) */
    const double ops_tok = prefill_ops_per_token(model), peak = ek_cpu_int8_peak_gops() * threads;
    if (json) {
        printf("{\"model\": \"%s\", \"kernels\": \"%s\", \"dtype\": \"%s\", \"threads\": %d, "
               "\"all_full\": %s, \"prompt\": %d, \"gen\": %d, \"reps\": %d, \"load_s\": %.3f, "
               "\"weight_bytes\": %zu, \"read_bw_gbs\": %.3f, \"prefill_ops_per_token\": %.0f, "
               "\"int8_peak_gops\": %.0f, \"results\": [",
               dir, ember_model_kernels(model), cli_type_name(mp.weight_type),
               threads, mp.all_full_attention ? "true" : "false", n_prompt, n_gen, reps, load_s,
               ember_model_weight_bytes(model), bw, ops_tok, peak);
        for (size_t i = 0; i < n_ctx; i++)
            printf("%s{\"ctx\": %d, \"prefill_tok_s\": %.3f, \"prefill_gops\": %.1f, "
                   "\"prefill_peak_fraction\": %.4f, \"decode_tok_s\": %.3f, "
                   "\"bytes_per_token\": %.0f, \"read_bw_gbs\": %.3f, \"roofline_fraction\": %.4f, "
                   "\"kv_bytes\": %zu, \"rss_anon_bytes\": %zu, \"rss_file_bytes\": %zu}",
                   i ? ", " : "", res[i].ctx, res[i].prefill_tok_s,
                   res[i].prefill_tok_s * ops_tok / 1e9,
                   peak > 0 ? res[i].prefill_tok_s * ops_tok / 1e9 / peak : 0.0, res[i].decode_tok_s,
                   res[i].bytes_per_token, res[i].read_bw_gbs, res[i].roofline, res[i].kv_bytes,
                   res[i].peak.anon, res[i].peak.file);
        printf("]}\n");
    }
    rc = 0;
done:
    ember_model_free(model);
    free(prompt);
    free(res);
    free(ctxs);
    free(rows);
    return rc;
}
