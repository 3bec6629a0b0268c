/* Options every model-running command takes: weight format, threads,
 * kernel set, GELU form, prefill chunk, KV cache format. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_public.h"

const char cli_common_usage[] =
    "  --dtype f32|f16|bf16|q8_0|q4_0|q4_k|q5_k|q6_k|...   convert the weights at load (default: as stored)\n"
    "  --threads N                      worker threads (default: one per CPU)\n"
    "  --kernels scalar|avx2|avx512|neon  force a kernel set (default: the best this CPU runs)\n"
    "  --gelu erf|tanh                  MLP GELU form (default erf, the model's own)\n"
    "  --chunk N                        prefill chunk in tokens (default 128)\n"
    "  --kv-type f32|f16|q8_0           KV cache format (default f32)\n"
    "  --backend cpu|onnx:DIR           who runs each step: ember's kernels (default), or the\n"
    "                                   graph `ember export onnx` wrote to DIR on ONNX Runtime\n"
    "  --onnx-runtime PATH              the libonnxruntime.so for onnx:DIR (default:\n"
    "                                   $EMBER_ONNXRUNTIME, else the loader's search path)\n"
    "  --onnx-provider NAME             ONNX Runtime's execution provider: cpu (default), qnn,\n"
    "                                   coreml, xnnpack, ... (the library must have it)\n"
    "  --onnx-option KEY=VALUE          repeatable: a provider option (backend_path=libQnnHtp.so)\n"
    "                                   or, for session.* and ep.* keys, a session config entry\n";

static const struct {
    const char *name;
    ember_type type;
} weight_types[] = {{"f32", EMBER_TYPE_F32},     {"f16", EMBER_TYPE_F16},       {"bf16", EMBER_TYPE_BF16},
                    {"q8_0", EMBER_TYPE_Q8_0},   {"q4_0", EMBER_TYPE_Q4_0},     {"q2_k", EMBER_TYPE_Q2_K},
                    {"q3_k", EMBER_TYPE_Q3_K},   {"q4_k", EMBER_TYPE_Q4_K},     {"q5_k", EMBER_TYPE_Q5_K},
                    {"q6_k", EMBER_TYPE_Q6_K},   {"iq4_nl", EMBER_TYPE_IQ4_NL}, {"iq4_xs", EMBER_TYPE_IQ4_XS},
                    {"q4_1", EMBER_TYPE_Q4_1},   {"q5_0", EMBER_TYPE_Q5_0},     {"q5_1", EMBER_TYPE_Q5_1}};

int cli_parse_type(const char *arg, ember_type *out)
{
    for (size_t i = 0; i < sizeof weight_types / sizeof *weight_types; i++)
        if (!strcmp(arg, weight_types[i].name)) {
            *out = weight_types[i].type;
            return 0;
        }
    return -1;
}

const char *cli_type_name(ember_type t)
{
    for (size_t i = 0; i < sizeof weight_types / sizeof *weight_types; i++)
        if (weight_types[i].type == t) return weight_types[i].name;
    return t == EMBER_TYPE_NONE ? "as stored" : "?";
}

int cli_parse_int(const char *arg, long lo, long hi, int32_t *out)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end || v < lo || v > hi) return -1;
    *out = (int32_t)v;
    return 0;
}

int cli_parse_backend(const char *arg, const char **backend, const char **runtime)
{
    *backend = arg;
    if (!*runtime) *runtime = getenv("EMBER_ONNXRUNTIME");
    return strcmp(arg, "cpu") && strncmp(arg, "onnx:", 5);
}

int cli_add_onnx_option(const char *arg, const char **list)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) return -1;
    if (!*list) {
        *list = arg;
        return 0;
    }
    /* the joined list lives as long as the process: options are parsed once */
    size_t n = strlen(*list) + strlen(arg) + 2;
    char *joined = malloc(n);
    if (!joined) return -1;
    snprintf(joined, n, "%s;%s", *list, arg);
    *list = joined;
    return 0;
}

int cli_common_option(int c, const char *arg, const char *cmd, ember_model_params *mp,
                      ember_session_params *sp)
{
    int bad = 0;
    switch (c) {
    case CLI_OPT_DTYPE: bad = cli_parse_type(arg, &mp->weight_type); break;
    case CLI_OPT_THREADS: bad = cli_parse_int(arg, 1, 1024, &sp->n_threads); break;
    case CLI_OPT_KERNELS: mp->kernels = arg; break;
    case CLI_OPT_GELU:
        if (!strcmp(arg, "erf")) mp->gelu = EMBER_GELU_ERF;
        else if (!strcmp(arg, "tanh")) mp->gelu = EMBER_GELU_TANH;
        else bad = 1;
        break;
    case CLI_OPT_CHUNK: bad = cli_parse_int(arg, 1, 65536, &sp->prefill_chunk); break;
    case CLI_OPT_BACKEND: bad = cli_parse_backend(arg, &mp->backend, &mp->onnx_runtime); break;
    case CLI_OPT_ONNX_RUNTIME: mp->onnx_runtime = arg; break;
    case CLI_OPT_ONNX_PROVIDER: mp->onnx_provider = arg; break;
    case CLI_OPT_ONNX_OPTION: bad = cli_add_onnx_option(arg, &mp->onnx_options); break;
    case CLI_OPT_KV_TYPE:
        bad = cli_parse_type(arg, &sp->kv_type) || sp->kv_type == EMBER_TYPE_BF16 ||
              sp->kv_type == EMBER_TYPE_Q4_0;
        break;
    default: return 0;
    }
    if (bad) {
        fprintf(stderr, "ember %s: bad value '%s' for an option; the options are:\n%s", cmd, arg,
                cli_common_usage);
        return -1;
    }
    return 1;
}

int cli_is_model(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return 0;
    if (S_ISDIR(sb.st_mode)) return 1;
    char magic[4];
    FILE *f = fopen(path, "rb");
    int gguf = f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "GGUF", 4);
    if (f) fclose(f);
    return gguf;
}

char *cli_read_text(const char *path, const char *cmd)
{
    errno = 0;
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t cap = 4096, n = 0;
    char *buf = f ? malloc(cap) : NULL;
    while (buf) {
        n += fread(buf + n, 1, cap - 1 - n, f);
        if (n < cap - 1) break;
        char *grown = realloc(buf, cap * 2);
        if (!grown) free(buf);
        buf = grown;
        cap *= 2;
    }
    if (buf && f && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    if (!buf) fprintf(stderr, "ember %s: cannot read %s%s%s\n", cmd, path, errno ? ": " : "", errno ? strerror(errno) : "");
    else buf[n] = '\0';
    if (f && f != stdin) fclose(f);
    return buf;
}
