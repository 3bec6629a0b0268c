/* Restoring a prompt from a prompt-cache file against running it again
 * (issue: an agent's ~2k-token system prompt and tools, after the app was
 * killed). Prints one JSON object:
 *
 *   build/bench/prompt_cache -m MODEL [--tokens 2048] [--weights none|q8_0|...]
 *       [--kv f32|f16|q8_0] [--reps 5] [--threads N] [--file PATH]
 *
 * prefill_s: one prefill of the tokens from scratch; save_s: one
 * ember_session_save; restore_warm_s: the median ember_session_load with the
 * file in the page cache; restore_cold_s: the median after its pages were
 * dropped (posix_fadvise DONTNEED), so the bytes come from the disk;
 * speedup_*: prefill_s over those. identical_logits: the restored session's
 * next-token logits equal the prefilled session's, bit for bit. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_stats.h"
#include "ember.h"

static ember_type type_named(const char *s)
{
    static const struct { const char *name; ember_type t; } names[] = {
        {"none", EMBER_TYPE_NONE}, {"f32", EMBER_TYPE_F32}, {"f16", EMBER_TYPE_F16},
        {"bf16", EMBER_TYPE_BF16}, {"q8_0", EMBER_TYPE_Q8_0}, {"q4_0", EMBER_TYPE_Q4_0}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i].name)) return names[i].t;
    fprintf(stderr, "prompt_cache: unknown type %s\n", s);
    exit(2);
}

/* Peak resident memory so far, anonymous and file-backed, in bytes. */
static void rss_peak(size_t *anon, size_t *file)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long kb;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "RssAnon: %lu kB", &kb) == 1 && kb * 1024 > *anon) *anon = kb * 1024;
        if (sscanf(line, "RssFile: %lu kB", &kb) == 1 && kb * 1024 > *file) *file = kb * 1024;
    }
    if (f) fclose(f);
}

static void drop_from_page_cache(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static int die(const char *what)
{
    fprintf(stderr, "prompt_cache: %s: %s\n", what, ember_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *path = "/tmp/ember-bench-prompt-cache", *weights = "none", *kv = "f32";
    int tokens = 2048, reps = 5;
    ember_model_params mp = ember_model_default_params();
    ember_session_params sp = ember_session_default_params();
    static const struct option opts[] = {
        {"model", 1, 0, 'm'}, {"tokens", 1, 0, 'n'}, {"weights", 1, 0, 'w'}, {"kv", 1, 0, 'k'},
        {"reps", 1, 0, 'r'},  {"threads", 1, 0, 't'}, {"file", 1, 0, 'f'}, {0, 0, 0, 0}};
    for (int c; (c = getopt_long(argc, argv, "m:n:w:k:r:t:f:", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': dir = optarg; break;
        case 'n': tokens = atoi(optarg); break;
        case 'w': mp.weight_type = type_named(weights = optarg); break;
        case 'k': sp.kv_type = type_named(kv = optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 't': sp.n_threads = atoi(optarg); break;
        case 'f': path = optarg; break;
        default: return 2;
        }
    }
    if (!dir || tokens < 1 || reps < 1) {
        fprintf(stderr, "usage: prompt_cache -m MODEL [--tokens N] [--weights T] [--kv T] [--reps N] "
                        "[--threads N] [--file PATH]\n");
        return 2;
    }
    sp.max_context = tokens + 1;
    sp.prefill_chunk = 64;
    ember_model *m = NULL;
    ember_session *a = NULL, *b = NULL;
    if (ember_model_load(dir, &mp, &m)) return die(dir);
    if (ember_session_create(m, &sp, &a) || ember_session_create(m, &sp, &b)) return die("session");
    const int32_t vocab = ember_model_vocab_size(m);
    int32_t *ids = malloc((size_t)tokens * sizeof *ids);
    double *warm = malloc((size_t)reps * sizeof *warm), *cold = malloc((size_t)reps * sizeof *cold);
    if (!ids || !warm || !cold) return 1;
    unsigned x = 1;
    for (int i = 0; i < tokens; i++) {
        x = x * 1103515245u + 12345u;
        ids[i] = (int32_t)((x >> 8) % (unsigned)vocab);
    }
    double t = bench_now_s();
    if (ember_session_prefill(a, ids, (size_t)tokens)) return die("prefill");
    const double prefill_s = bench_now_s() - t;
    t = bench_now_s();
    if (ember_session_save(a, ids, (size_t)tokens, path)) return die("save");
    const double save_s = bench_now_s() - t;
    for (int r = 0; r < 2 * reps; r++) {
        int is_cold = r % 2;
        if (is_cold) drop_from_page_cache(path);
        size_t restored = 0;
        t = bench_now_s();
        if (ember_session_load(b, path, NULL, 0, &restored) || restored != (size_t)tokens) return die("load");
        (is_cold ? cold : warm)[r / 2] = bench_now_s() - t;
    }
    /* the next token from both: the restored state is the prefilled one */
    const int32_t next = ids[0];
    if (ember_session_decode(a, next) || ember_session_decode(b, next)) return die("decode");
    const int identical = !memcmp(ember_session_logits(a), ember_session_logits(b), (size_t)vocab * sizeof(float));
    FILE *f = fopen(path, "rb");
    long file_bytes = -1;
    if (f && !fseek(f, 0, SEEK_END)) file_bytes = ftell(f);
    if (f) fclose(f);
    size_t anon = 0, filed = 0;
    rss_peak(&anon, &filed);
    const double w = bench_median(warm, reps), c = bench_median(cold, reps);
    printf("{\"model\": \"%s\", \"kernels\": \"%s\", \"weights\": \"%s\", \"kv\": \"%s\", \"tokens\": %d, "
           "\"threads\": %d, \"file_bytes\": %ld, \"prefill_s\": %.4f, \"save_s\": %.4f, "
           "\"restore_warm_s\": %.5f, \"restore_cold_s\": %.5f, \"speedup_warm\": %.1f, "
           "\"speedup_cold\": %.1f, \"restore_warm_gb_s\": %.2f, \"identical_logits\": %s, "
           "\"rss_anon_bytes\": %zu, \"rss_file_bytes\": %zu, \"reps\": %d}\n",
           dir, ember_model_kernels(m), weights, kv, tokens,
           sp.n_threads, file_bytes, prefill_s, save_s, w, c, prefill_s / w, prefill_s / c,
           (double)file_bytes / w / 1e9, identical ? "true" : "false", anon, filed, reps);
    unlink(path);
    free(ids);
    free(warm);
    free(cold);
    ember_session_free(a);
    ember_session_free(b);
    ember_model_free(m);
    return identical ? 0 : 1;
}
