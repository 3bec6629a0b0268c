/* What a weight format costs in output quality (issue 19's table per
 * format): each model's next-token logits, teacher-forced over one token
 * sequence, against a reference model's (the unquantized checkpoint).
 *
 *   build/bench/quant_quality --ref MODEL[@dtype] [--tokens 128] [--prefix 8]
 *       [--text FILE] [--seed S] [--threads N] MODEL[@dtype] ...
 *
 * MODEL is a directory or a GGUF file; @dtype converts at load (f32, bf16,
 * q8_0, q4_0, q4_k, ...). The sequence is --text tokenized by the
 * reference's tokenizer, else --tokens pseudo-random ids (seeded: the same
 * for every model). Positions prefix..tokens-1 are scored; per model, one
 * JSON line on stdout:
 *   snr_db       mean over positions of 10 log10(sum ref^2 / sum (ref - x)^2)
 *   top1         fraction of positions whose argmax is the reference's
 *   kld_mean, kld_median, kld_p99, kld_max
 *                KL(P_ref || P_model) of the softmaxed logits in nats, as
 *                llama.cpp's `perplexity --kl-divergence` reports it
 * and a table row on stderr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "ember.h"
#include "../tools/cli_public.h" /* the weight type names the CLI takes */

typedef struct spec {
    char path[1024];
    ember_type type; /* NONE: as stored */
    const char *type_name;
} spec;

static int parse_spec(const char *arg, spec *s)
{
    const char *at = strrchr(arg, '@');
    size_t n = at ? (size_t)(at - arg) : strlen(arg);
    if (n >= sizeof s->path) return 1;
    memcpy(s->path, arg, n);
    s->path[n] = '\0';
    s->type = EMBER_TYPE_NONE;
    s->type_name = "as stored";
    if (!at) return 0;
    if (cli_parse_type(at + 1, &s->type)) return 1;
    s->type_name = cli_type_name(s->type);
    return 0;
}

/* log-softmax of x into out (doubles: the KL sums are small differences) */
static void log_softmax(const float *x, int32_t n, double *out)
{
    double mx = x[0], sum = 0.0;
    for (int32_t i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (int32_t i = 0; i < n; i++) sum += exp((double)x[i] - mx);
    const double lse = mx + log(sum);
    for (int32_t i = 0; i < n; i++) out[i] = (double)x[i] - lse;
}

static int32_t argmax(const float *x, int32_t n)
{
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Teacher-forced logits of rows prefix-1 .. n-2 (each predicts the next id)
 * into out, rows x vocab. */
static ember_status run(const spec *sp, int n_threads, const int32_t *ids, int32_t n, int32_t prefix,
                        float *out, int32_t *vocab_out, double *load_s)
{
    ember_model_params mp = ember_model_default_params();
    mp.weight_type = sp->type;
    ember_session_params ssp = ember_session_default_params();
    ssp.n_threads = n_threads;
    ssp.max_context = n + 8;
    ember_model *m = NULL;
    ember_session *s = NULL;
    double t0 = bench_now_s();
    ember_status st = ember_model_load(sp->path, &mp, &m);
    *load_s = bench_now_s() - t0;
    if (!st && *vocab_out && ember_model_vocab_size(m) != *vocab_out) {
        fprintf(stderr, "%s: vocab %d differs from the reference's %d\n", sp->path, ember_model_vocab_size(m),
                *vocab_out);
        st = EMBER_ERR_INVALID_ARG;
    }
    if (!st) *vocab_out = ember_model_vocab_size(m);
    if (!st && out) st = ember_session_create(m, &ssp, &s);
    if (!st && out) st = ember_session_prefill(s, ids, (size_t)prefix);
    for (int32_t i = prefix; !st && out && i < n; i++) {
        memcpy(out + (size_t)(i - prefix) * (size_t)*vocab_out, ember_session_logits(s),
               (size_t)*vocab_out * sizeof *out);
        if (i + 1 < n) st = ember_session_decode(s, ids[i]);
    }
    ember_session_free(s);
    ember_model_free(m);
    return st;
}

static int usage(void)
{
    fprintf(stderr, "usage: quant_quality --ref MODEL[@dtype] [--tokens 128] [--prefix 8] [--text FILE]\n"
                    "                     [--seed S] [--threads N] MODEL[@dtype] ...\n");
    return 2;
}

/* The sequence: the text file through the reference's tokenizer, else
 * pseudo-random ids below vocab. */
static int32_t *sequence(const char *ref, const char *text_file, int32_t vocab, int32_t *n, unsigned seed)
{
    if (text_file) {
        FILE *f = fopen(text_file, "rb");
        ember_tokenizer *tok = NULL;
        char buf[65536];
        size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        int32_t *ids = NULL;
        size_t n_ids = 0;
        if (!len || ember_tokenizer_load(ref, &tok) || ember_tokenizer_encode(tok, buf, len, 0, &ids, &n_ids)) {
            fprintf(stderr, "quant_quality: cannot tokenize %s: %s\n", text_file, ember_last_error());
            ember_tokenizer_free(tok);
            return NULL;
        }
        ember_tokenizer_free(tok);
        if ((int32_t)n_ids < *n) *n = (int32_t)n_ids;
        int32_t *copy = malloc((size_t)*n * sizeof *copy + 1);
        if (copy) memcpy(copy, ids, (size_t)*n * sizeof *copy);
        ember_free(ids);
        return copy;
    }
    int32_t *ids = malloc((size_t)*n * sizeof *ids);
    unsigned long long x = 0x9E3779B97F4A7C15ull ^ seed;
    for (int32_t i = 0; ids && i < *n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((x >> 33) % (unsigned long long)vocab);
    }
    return ids;
}

int main(int argc, char **argv)
{
    spec ref;
    const char *ref_arg = NULL, *text_file = NULL;
    int32_t n = 128, prefix = 8;
    int threads = 0;
    unsigned seed = 1;
    int first_model = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            first_model = i;
            break;
        }
        if (!v) return usage();
        if (!strcmp(a, "--ref")) ref_arg = v;
        else if (!strcmp(a, "--tokens")) n = atoi(v);
        else if (!strcmp(a, "--prefix")) prefix = atoi(v);
        else if (!strcmp(a, "--text")) text_file = v;
        else if (!strcmp(a, "--seed")) seed = (unsigned)atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else return usage();
        i++;
    }
    if (!ref_arg || parse_spec(ref_arg, &ref) || first_model >= argc || prefix < 1 || n <= prefix || threads < 0)
        return usage();
    int32_t vocab = 0;
    double load_s;
    if (run(&ref, threads, NULL, 0, 0, NULL, &vocab, &load_s)) { /* the vocab, for the ids */
        fprintf(stderr, "quant_quality: %s: %s\n", ref.path, ember_last_error());
        return 1;
    }
    int32_t *ids = sequence(ref.path, text_file, vocab, &n, seed);
    if (!ids || n <= prefix) {
        fprintf(stderr, "quant_quality: the sequence is shorter than --prefix %d\n", prefix);
        return 1;
    }
    const int32_t rows = n - prefix;
    float *ref_logits = malloc((size_t)rows * (size_t)vocab * sizeof(float));
    float *logits = malloc((size_t)rows * (size_t)vocab * sizeof(float));
    double *lp_ref = malloc((size_t)vocab * sizeof(double)), *lp = malloc((size_t)vocab * sizeof(double));
    double *kld = malloc((size_t)rows * sizeof(double));
    if (!ref_logits || !logits || !lp_ref || !lp || !kld) {
        fprintf(stderr, "quant_quality: out of memory\n");
        return 1;
    }
    if (run(&ref, threads, ids, n, prefix, ref_logits, &vocab, &load_s)) {
        fprintf(stderr, "quant_quality: %s: %s\n", ref.path, ember_last_error());
        return 1;
    }
    fprintf(stderr, "reference %s (%s), %d positions scored\n", ref.path, ref.type_name, rows);
    fprintf(stderr, "%-48s %-9s %8s %6s %10s %10s %10s\n", "model", "load as", "SNR dB", "top-1", "KLD mean",
            "KLD p99", "KLD max");
    int rc = 0;
    for (int k = first_model; k < argc; k++) {
        spec sp;
        if (parse_spec(argv[k], &sp)) return usage();
        if (run(&sp, threads, ids, n, prefix, logits, &vocab, &load_s)) {
            fprintf(stderr, "quant_quality: %s: %s\n", sp.path, ember_last_error());
            rc = 1;
            continue;
        }
        double snr = 0.0;
        int agree = 0;
        for (int32_t r = 0; r < rows; r++) {
            const float *a = ref_logits + (size_t)r * (size_t)vocab, *b = logits + (size_t)r * (size_t)vocab;
            double sig = 0.0, err = 0.0, d = 0.0;
            for (int32_t i = 0; i < vocab; i++) {
                sig += (double)a[i] * a[i];
                err += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
            }
            snr += err > 0.0 ? 10.0 * log10(sig / err) : 300.0;
            agree += argmax(a, vocab) == argmax(b, vocab);
            log_softmax(a, vocab, lp_ref);
            log_softmax(b, vocab, lp);
            for (int32_t i = 0; i < vocab; i++) d += exp(lp_ref[i]) * (lp_ref[i] - lp[i]);
            kld[r] = d;
        }
        double mean = 0.0, mx = 0.0;
        for (int32_t r = 0; r < rows; r++) {
            mean += kld[r];
            mx = kld[r] > mx ? kld[r] : mx;
        }
        mean /= rows;
        const double median = bench_quantile(kld, rows, 0.5), p99 = bench_quantile(kld, rows, 0.99);
        printf("{\"model\": \"%s\", \"load_as\": \"%s\", \"reference\": \"%s\", \"positions\": %d, "
               "\"snr_db\": %.2f, \"top1\": %.4f, \"kld_mean\": %.4g, \"kld_median\": %.4g, "
               "\"kld_p99\": %.4g, \"kld_max\": %.4g, \"load_s\": %.2f}\n",
               sp.path, sp.type_name, ref.path, rows, snr / rows, (double)agree / rows, mean, median, p99, mx,
               load_s);
        fflush(stdout);
        fprintf(stderr, "%-48s %-9s %8.2f %6.3f %10.3g %10.3g %10.3g\n", sp.path, sp.type_name, snr / rows,
                (double)agree / rows, mean, p99, mx);
    }
    free(ref_logits);
    free(logits);
    free(lp_ref);
    free(lp);
    free(kld);
    free(ids);
    return rc;
}
