/* The speech commands' shared options and load (cli_tts.h), over the
 * public API alone. */
#include "cli_tts.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_tts_usage[] =
    "  --dtype f32|bf16|q8_0          talker and predictor weights (default: the profile's)\n"
    "  --decoder-dtype f32|bf16       speech decoder arithmetic (default fp32, its weights kept\n"
    "                                 f16 where the file stores them so; f32 widens them)\n"
    "  --threads N                    generator threads (default: one per CPU)\n"
    "  --decoder-threads N            decoder threads while the generator runs (default: half\n"
    "                                 the CPUs); the generator takes the rest meanwhile\n"
    "  --chunks 2,4,8,16,25           frames per decoded chunk, the last size repeating (default:\n"
    "                                 this machine's calibration, adaptive when it says so)\n"
    "  --no-calibration               ignore the cached calibration: the default ramp\n"
    "  --profile auto|off|explain     the derived profile picks the weight format and pins\n"
    "                                 the threads (default auto; off: as stored, unpinned)\n"
    "  --alone-chunks N               the first N chunks (-1: all) decode on every core while\n"
    "                                 the generator waits; later ones beside it (default 1)\n"
    "  --kernels NAME                 scalar|generic|avx2|avx512|neon (default: the best)\n"
    "  --no-warm-up                   skip the short dropped request run at load that warms\n"
    "                                 caches and buffers for the first real one\n"
    "  --no-pin                       leave the threads unpinned (default: the generator on the\n"
    "                                 profile's decode CPUs, the audio decoder on its own)\n"
    "  --backend cpu|onnx:DIR         who runs the talker and predictor steps: ember's kernels\n"
    "                                 (default), or ONNX Runtime on the graphs `ember export\n"
    "                                 onnx -m DIR_OF_THIS_MODEL` wrote to DIR (the speech\n"
    "                                 decoder too where DIR has its graphs, else native)\n"
    "  --onnx-runtime PATH            the libonnxruntime.so for onnx:DIR (default:\n"
    "                                 $EMBER_ONNXRUNTIME, else libonnxruntime.so.1)\n"
    "  --onnx-provider NAME           ONNX Runtime's execution provider (cpu, qnn, coreml, ...)\n"
    "  --onnx-option KEY=VALUE        repeatable: a provider option or session.*/ep.* entry\n";

void cli_tts_opts_init(cli_tts_opts *o)
{
    memset(o, 0, sizeof *o);
    o->params = ember_tts_default_params();
    o->params.warm_up = 1;
    o->params.calibration = 1;
    o->pin = 1;
}

int cli_tts_option(int c, const char *arg, const char *cmd, cli_tts_opts *o)
{
    ember_tts_params *p = &o->params;
    int bad = 0;
    switch (c) {
    case CLI_OPT_PROFILE: return cli_profile_option(c, arg, cmd, &o->profile);
    case TTS_OPT_NO_CALIBRATION: p->calibration = 0; break;
    case TTS_OPT_DTYPE: bad = cli_parse_type(arg, &p->weight_type); break;
    case TTS_OPT_DECODER_DTYPE:
        bad = cli_parse_type(arg, &p->decoder_type) ||
              (p->decoder_type != EMBER_TYPE_F32 && p->decoder_type != EMBER_TYPE_BF16);
        break;
    case TTS_OPT_THREADS: bad = cli_parse_int(arg, 1, 1024, &p->n_threads); break;
    case TTS_OPT_DECODER_THREADS: bad = cli_parse_int(arg, 1, 1024, &p->decoder_threads); break;
    case TTS_OPT_ALONE_CHUNKS: bad = cli_parse_int(arg, -1, 1 << 20, &p->alone_chunks); break;
    case TTS_OPT_NO_WARM_UP: p->warm_up = 0; break;
    case TTS_OPT_NO_PIN: o->pin = 0; break;
    case TTS_OPT_KERNELS: p->kernels = arg; break;
    case TTS_OPT_BACKEND: bad = cli_parse_backend(arg, &p->backend, &p->onnx_runtime); break;
    case TTS_OPT_ONNX_RUNTIME: p->onnx_runtime = arg; break;
    case TTS_OPT_ONNX_PROVIDER: p->onnx_provider = arg; break;
    case TTS_OPT_ONNX_OPTION: bad = cli_add_onnx_option(arg, &p->onnx_options); break;
    case TTS_OPT_CHUNKS: o->chunks = arg; break;
    default: return 0;
    }
    if (bad) {
        fprintf(stderr, "ember %s: bad value '%s'\n", cmd, arg);
        return -1;
    }
    return 1;
}

int cli_tts_apply_profile(cli_tts_opts *o, const char *cmd)
{
    if (o->profile == CLI_PROFILE_OFF) return 0;
    ember_profile_params pp = ember_profile_default_params();
    pp.hardware = getenv("EMBER_HW_PROFILE");
    const int dtype_given = o->params.weight_type != EMBER_TYPE_NONE;
    const int explain = o->profile == CLI_PROFILE_EXPLAIN;
    int applied = 0;
    char *why = NULL;
    if (ember_profile_apply_tts(o->dir, &pp, &o->params, &applied, explain ? &why : NULL) != EMBER_OK)
        return cli_profile_error(cmd, pp.hardware);
    if (explain && !applied) fprintf(stderr, "ember %s: profile: %s; using the defaults\n", cmd, why ? why : "");
    for (const char *at = applied ? why : NULL; at && *at;) { /* a line per reason */
        const char *nl = strchr(at, '\n');
        int n = nl ? (int)(nl - at) : (int)strlen(at);
        /* unpinned, only the format's reason (the first) applies */
        if (o->pin || at == why) fprintf(stderr, "ember %s: profile: %.*s\n", cmd, n, at);
        at = nl ? nl + 1 : NULL;
    }
    if (explain && applied && dtype_given) fprintf(stderr, "ember %s: profile: --dtype given, it wins\n", cmd);
    ember_free(why);
    if (!o->pin) o->params.n_generator_cpus = o->params.n_decoder_cpus = 0;
    return 0;
}

static void copy_string(const cJSON *o, const char *key, char *out, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsArray(v)) v = cJSON_GetArrayItem(v, 0); /* the first speaker or language */
    snprintf(out, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static int32_t get_int(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (int32_t)v->valuedouble : 0;
}

/* The load's own account (ember_tts_info); with verbose, the calibration's. */
static int read_info(const ember_tts *tts, const cli_tts_opts *o, const char *cmd, int verbose, cli_tts_info *out)
{
    char *json = NULL;
    cJSON *root = NULL;
    if (ember_tts_info(tts, &json) != EMBER_OK || !(root = cJSON_Parse(json))) {
        fprintf(stderr, "ember %s: %s\n", cmd, json ? "ember_tts_info: bad JSON" : ember_last_error());
        ember_free(json);
        return -1;
    }
    memset(out, 0, sizeof *out);
    copy_string(root, "weights", out->weights, sizeof out->weights);
    copy_string(root, "decoder_weights", out->decoder_weights, sizeof out->decoder_weights);
    copy_string(root, "kernels", out->kernels, sizeof out->kernels);
    copy_string(root, "speakers", out->speaker, sizeof out->speaker);
    copy_string(root, "languages", out->language, sizeof out->language);
    copy_string(root, "model_type", out->model_type, sizeof out->model_type);
    out->small = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "small"));
    out->xvector_dim = get_int(root, "xvector_dim");
    out->generator_threads = get_int(root, "generator_threads");
    out->decoder_threads = get_int(root, "decoder_threads");
    out->samples_per_frame = get_int(root, "samples_per_frame");
    out->sample_rate = get_int(root, "sample_rate");
    const cJSON *chunking = cJSON_GetObjectItemCaseSensitive(root, "chunking");
    const int calibrated = cJSON_IsString(chunking) && strcmp(chunking->valuestring, "default") != 0;
    /* --chunks: a fixed schedule, neither calibrated nor adaptive */
    out->adaptive = !o->chunks && calibrated && !strcmp(chunking->valuestring, "adaptive");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "description");
    if (verbose && !o->chunks && calibrated && cJSON_IsString(text))
        fprintf(stderr, "ember %s: %s\n", cmd, text->valuestring);
    cJSON_Delete(root);
    ember_free(json);
    return 0;
}

ember_tts *cli_tts_load(cli_tts_opts *o, int32_t max_text_tokens, int32_t max_frames, const char *cmd,
                        int verbose, cli_tts_info *info)
{
    if (cli_tts_apply_profile(o, cmd)) return NULL;
    o->params.max_text_tokens = max_text_tokens;
    o->params.max_frames = max_frames;
    ember_tts *tts = NULL;
    if (ember_tts_load(o->dir, &o->params, &tts) != EMBER_OK) {
        fprintf(stderr, "ember %s: %s\n", cmd, ember_last_error());
        return NULL;
    }
    if (read_info(tts, o, cmd, verbose, info)) {
        ember_tts_free(tts);
        return NULL;
    }
    return tts;
}
