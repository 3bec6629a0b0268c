/* `ember quantize IN OUT.gguf --type T`: writes a Spark-X2.5 checkpoint (a
 * Hugging Face directory or a GGUF file) as a llama.cpp spark2_5 GGUF with
 * every weight matrix in format T, or a Qwen3-TTS checkpoint directory (one
 * with a speech_tokenizer/) as one qwen3_tts GGUF. A progress bar goes to
 * stderr when it is a terminal; a summary line is always printed. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_public.h"
#include "ember.h"
#include "ember_speech.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: ember quantize IN OUT.gguf [--type q8_0|q4_k_m|...] [--threads N]\n"
               "                     [--speech-type f32|f16|bf16]\n"
               "  IN: a Hugging Face checkpoint directory or a GGUF file, or a Qwen3-TTS\n"
               "      checkpoint directory (with speech_tokenizer/): its talker and code\n"
               "      predictor in --type (one format, not a mix), its speech decoder and\n"
               "      encoder in --speech-type (default f32)\n"
               "  --type: a format for every weight matrix, or one of llama.cpp's mixes\n"
               "          (default q8_0): %s.\n"
               "          Norms and biases stay f32. OUT is written whole or not at all.\n"
               "  --threads: threads converting rows (default: one per CPU; speech models: one)\n",
            ember_quantize_types());
}

typedef struct bar {
    int tty;
    int last; /* last permille drawn */
} bar;

static int on_progress(void *ctx, size_t done, size_t total)
{
    bar *b = ctx;
    if (!b->tty || total == 0) return 0;
    int permille = (int)((double)done * 1000.0 / (double)total);
    if (permille == b->last) return 0;
    b->last = permille;
    char fill[31];
    int n = permille * 30 / 1000;
    memset(fill, '#', (size_t)n);
    memset(fill + n, ' ', (size_t)(30 - n));
    fill[30] = '\0';
    fprintf(stderr, "\rquantizing [%s] %5.1f%%  %.1f / %.1f MiB", fill, permille / 10.0,
            (double)done / 1048576.0, (double)total / 1048576.0);
    fflush(stderr);
    return 0;
}

/* A Qwen3-TTS checkpoint: a directory with the speech decoder's
 * speech_tokenizer/ beside its config.json. */
static int is_speech_dir(const char *path)
{
    char sub[4096];
    struct stat sb;
    snprintf(sub, sizeof sub, "%s/speech_tokenizer", path);
    return stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int finish(ember_status st, const bar *b, const char *out, size_t n_tensors, const char *type,
                  double t0)
{
    if (b->tty && b->last >= 0) fprintf(stderr, "\r\033[K");
    if (st != EMBER_OK) {
        fprintf(stderr, "ember quantize: %s\n", ember_last_error());
        return 1;
    }
    struct stat sb;
    long long bytes = stat(out, &sb) == 0 ? (long long)sb.st_size : -1;
    fprintf(stderr, "ember quantize: wrote %s: %zu tensors, %lld bytes (%s), %.2f s\n", out, n_tensors,
            bytes, type, cli_now_s() - t0);
    return 0;
}

int cmd_quantize(int argc, char **argv)
{
    static const struct option opts[] = {{"type", required_argument, 0, 't'},
                                         {"threads", required_argument, 0, 'j'},
                                         {"speech-type", required_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *type = "q8_0", *speech_type = NULL;
    int threads = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:j:s:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': type = optarg; break;
        case 's': speech_type = optarg; break;
        case 'j': {
            char *end = NULL;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 4096) {
                fprintf(stderr, "ember quantize: --threads must be a positive integer\n");
                return 2;
            }
            threads = (int)v;
            break;
        }
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (argc - optind != 2) {
        usage(stderr);
        return 2;
    }
    const char *in = argv[optind], *out = argv[optind + 1];
    /* the name first: a typo should not wait for a large model to load */
    char *names = strdup(ember_quantize_types()), *save = NULL;
    int known = 0;
    for (char *t = names ? strtok_r(names, ", ", &save) : NULL; t && !known; t = strtok_r(NULL, ", ", &save))
        known = !strcmp(t, type);
    free(names);
    if (!known) {
        fprintf(stderr, "ember quantize: unknown --type '%s' (expected %s)\n", type, ember_quantize_types());
        return 2;
    }

    double t0 = cli_now_s();
    bar b = {isatty(STDERR_FILENO), -1};
    size_t n_tensors = 0;
    ember_status st;
    if (is_speech_dir(in)) {
        st = ember_tts_quantize(in, out, type, speech_type, on_progress, &b, &n_tensors);
        return finish(st, &b, out, n_tensors, type, t0);
    }
    if (speech_type) {
        fprintf(stderr, "ember quantize: --speech-type is for Qwen3-TTS checkpoints (%s has no "
                        "speech_tokenizer/)\n", in);
        return 2;
    }
    ember_model_params mp = ember_model_default_params(); /* keep the file's types */
    ember_model *model = NULL;
    if (ember_model_load(in, &mp, &model) != EMBER_OK) {
        fprintf(stderr, "ember quantize: %s\n", ember_last_error());
        return 1;
    }
    st = ember_model_quantize(model, out, type, threads, on_progress, &b, &n_tensors);
    ember_model_free(model);
    return finish(st, &b, out, n_tensors, type, t0);
}
