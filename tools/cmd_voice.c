/* `ember voice xvector` and `ember voice codes`: what voice cloning takes
 * from a reference recording, printed as JSON so each can be checked
 * against the reference on its own: the speaker x-vector (a Qwen3-TTS Base
 * model's speaker encoder) and the reference codes (the speech tokenizer's
 * encoder, in every model), through the public voice API. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_public.h"
#include "ember_speech.h"

#define DEFAULT_MAX_SECONDS 60.0

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember voice create -m BASE_DIR --ref-audio A.wav [--ref-text TEXT] -o V.voice\n"
            "       ember voice xvector -m BASE_DIR --ref-audio A.wav [--threads N]\n"
            "                           [--kernels NAME] [--max-seconds S]\n"
            "       ember voice codes -m DIR --ref-audio A.wav [same options]\n"
            "  create: a saved voice for `ember tts --voice` and the server's --voices: the\n"
            "  x-vector, and with --ref-text (what the recording says) its codes too.\n"
            "  xvector: BASE_DIR is a Qwen3-TTS Base checkpoint (its speaker encoder).\n"
            "  codes: the reference codes of the speech tokenizer's encoder (DIR or\n"
            "  DIR/speech_tokenizer), 16 per 1920 samples, as {\"frames\": [[...], ...]}.\n"
            "  A.wav: PCM 8/16/24/32-bit or float, any channel count (averaged), any\n"
            "  rate from 1 to 768 kHz (resampled to 24 kHz with libsoxr). At least 1280\n"
            "  samples at 24 kHz (53 ms); longer than --max-seconds (default %.0f) is\n"
            "  refused rather than cut. Silent or clipped audio is used as it is, with a\n"
            "  warning. Prints {\"xvector\": [...], ...} on stdout.\n",
            DEFAULT_MAX_SECONDS);
}

/* The file's account, as both subcommands print it. */
static void add_audio(cJSON *o, const char *dir, const char *wav, const ember_audio_info *info, size_t n)
{
    cJSON_AddStringToObject(o, "model", dir);
    cJSON_AddStringToObject(o, "ref_audio", wav);
    cJSON_AddNumberToObject(o, "file_sample_rate", info->file_sample_rate);
    cJSON_AddNumberToObject(o, "channels", info->channels);
    cJSON_AddNumberToObject(o, "bits", info->bits);
    cJSON_AddStringToObject(o, "encoding", info->is_float ? "float" : "pcm");
    cJSON_AddNumberToObject(o, "seconds", info->seconds);
    cJSON_AddNumberToObject(o, "samples_24k", (double)n);
    cJSON_AddBoolToObject(o, "resampled", info->file_sample_rate != 24000);
    cJSON_AddNumberToObject(o, "peak", info->peak);
    cJSON_AddNumberToObject(o, "full_scale_samples", (double)info->full_scale_samples);
}

/* Prints o as one line and frees it; -1 when it could not be built. */
static int print_json(cJSON *o)
{
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) {
        fprintf(stderr, "ember voice: out of memory\n");
        return -1;
    }
    printf("%s\n", text);
    cJSON_free(text);
    return 0;
}

typedef struct voice_args {
    const char *dir, *wav, *kernels, *out, *ref_text;
    int threads;
    double max_seconds;
} voice_args;

/* 0: parsed; else the exit status (--help: 0 after the usage, -1 -> 0). */
static int parse_args(int argc, char **argv, voice_args *a)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"ref-audio", required_argument, 0, 'a'},
        {"threads", required_argument, 0, 't'}, {"kernels", required_argument, 0, 'k'},
        {"max-seconds", required_argument, 0, 's'}, {"help", no_argument, 0, 'h'},
        {"out", required_argument, 0, 'o'},   {"ref-text", required_argument, 0, 'r'}, {0, 0, 0, 0}};
    int c;
    *a = (voice_args){NULL, NULL, NULL, NULL, NULL, 1, DEFAULT_MAX_SECONDS};
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': a->dir = optarg; break;
        case 'a': a->wav = optarg; break;
        case 't': a->threads = atoi(optarg); break;
        case 'k': a->kernels = optarg; break;
        case 's': a->max_seconds = atof(optarg); break;
        case 'o': a->out = optarg; break;
        case 'r': a->ref_text = optarg; break;
        case 'h': usage(stdout); return -1;
        default: usage(stderr); return 2;
        }
    }
    if (!a->dir || !a->wav || a->threads < 1 || a->threads > 256 || !(a->max_seconds > 0)) {
        usage(stderr);
        return 2;
    }
    return 0;
}

/* Reads the clip and loads the encoder asked for; 0, or -1 with a message. */
static int open_voice(const voice_args *a, int speaker, int codes, ember_audio_info *info, float **wave,
                      size_t *n, ember_voice_encoder **enc)
{
    ember_voice_params p = ember_voice_default_params();
    p.kernels = a->kernels;
    p.n_threads = a->threads;
    p.speaker = speaker;
    p.codes = codes;
    if (ember_audio_read(a->wav, 24000, a->max_seconds, wave, n, info) ||
        ember_voice_encoder_load(a->dir, &p, enc)) {
        fprintf(stderr, "ember voice: %s%s%s\n", *wave ? "" : a->wav, *wave ? "" : ": ", ember_last_error());
        return -1;
    }
    if (info->peak == 0.0f)
        fprintf(stderr, "ember voice: warning: %s is silent: its x-vector describes no voice\n", a->wav);
    else if (info->full_scale_samples)
        fprintf(stderr, "ember voice: warning: %s has %lld samples at full scale (clipped)\n", a->wav,
                (long long)info->full_scale_samples);
    return 0;
}

static int xvector(const voice_args *a)
{
    ember_audio_info info;
    float *wave = NULL, *x = NULL;
    size_t n = 0;
    ember_voice_encoder *enc = NULL;
    int rc = 1;
    const double t0 = cli_now_s();
    if (open_voice(a, 1, 0, &info, &wave, &n, &enc)) goto done;
    const int32_t dim = ember_voice_xvector_dim(enc);
    if (!(x = malloc(sizeof *x * (size_t)dim))) goto done;
    const double t1 = cli_now_s();
    if (ember_voice_xvector(enc, wave, n, x)) {
        fprintf(stderr, "ember voice: %s: %s\n", a->wav, ember_last_error());
        goto done;
    }
    const double t2 = cli_now_s();
    double norm = 0;
    for (int32_t i = 0; i < dim; i++) norm += (double)x[i] * x[i];
    cJSON *o = cJSON_CreateObject(), *v = cJSON_CreateArray();
    add_audio(o, a->dir, a->wav, &info, n);
    /* wall time: reading the file and loading the encoder; mel + encoder */
    cJSON_AddNumberToObject(o, "load_s", t1 - t0);
    cJSON_AddNumberToObject(o, "encode_s", t2 - t1);
    cJSON_AddNumberToObject(o, "enc_dim", dim);
    cJSON_AddNumberToObject(o, "norm", sqrt(norm));
    for (int32_t i = 0; i < dim; i++) cJSON_AddItemToArray(v, cJSON_CreateNumber(x[i]));
    cJSON_AddItemToObject(o, "xvector", v);
    rc = print_json(o) ? 1 : 0;
done:
    ember_free(wave);
    free(x);
    ember_voice_encoder_free(enc);
    return rc;
}

static int codes(const voice_args *a)
{
    ember_audio_info info;
    float *wave = NULL, *gaps = NULL;
    int32_t *out = NULL;
    size_t n = 0;
    ember_voice_encoder *enc = NULL;
    int rc = 1;
    if (open_voice(a, 0, 1, &info, &wave, &n, &enc)) goto done;
    const int32_t q = ember_voice_codebooks(enc);
    const int64_t frames = ember_voice_code_frames(enc, n);
    out = malloc(sizeof(int32_t) * (size_t)(frames * q));
    gaps = malloc(sizeof(float) * (size_t)(frames * q));
    const double t0 = cli_now_s();
    if (!out || !gaps || ember_voice_codes(enc, wave, n, out, gaps)) {
        fprintf(stderr, "ember voice: %s\n", out && gaps ? ember_last_error() : "out of memory");
        goto done;
    }
    const double seconds = cli_now_s() - t0;
    float min_gap = INFINITY;
    cJSON *o = cJSON_CreateObject();
    cJSON *list = cJSON_AddArrayToObject(o, "frames");
    for (int64_t f = 0; f < frames; f++) {
        cJSON *fr = cJSON_CreateArray();
        for (int32_t k = 0; k < q; k++) {
            cJSON_AddItemToArray(fr, cJSON_CreateNumber(out[f * q + k]));
            min_gap = fminf(min_gap, gaps[f * q + k]);
        }
        cJSON_AddItemToArray(list, fr);
    }
    /* the smallest margin of a nearest-codebook choice: a near tie that
     * another float computation may decide the other way */
    cJSON_AddNumberToObject(o, "min_gap", min_gap);
    cJSON_AddNumberToObject(o, "encode_s", seconds);
    add_audio(o, a->dir, a->wav, &info, n);
    rc = print_json(o) ? 1 : 0;
done:
    ember_free(wave);
    free(out);
    free(gaps);
    ember_voice_encoder_free(enc);
    return rc;
}

/* `voice create`: a saved voice: the x-vector, and with --ref-text the
 * reference codes too (what in-context cloning takes). */
static int create(const voice_args *a)
{
    if (!a->out) {
        usage(stderr);
        return 2;
    }
    ember_audio_info info;
    float *wave = NULL;
    size_t n = 0;
    ember_voice_encoder *enc = NULL;
    ember_voice *voice = NULL;
    char *json = NULL;
    int rc = 1;
    const double t0 = cli_now_s();
    if (open_voice(a, 1, a->ref_text != NULL, &info, &wave, &n, &enc)) goto done;
    if (ember_voice_create(enc, wave, n, a->ref_text, &voice) || ember_voice_save(voice, a->out) ||
        ember_voice_info(voice, &json)) {
        fprintf(stderr, "ember voice: %s\n", ember_last_error());
        goto done;
    }
    fprintf(stderr, "ember voice: %s: %s in %.3f s\n", a->out, json, cli_now_s() - t0);
    rc = 0;
done:
    ember_free(json);
    ember_free(wave);
    ember_voice_free(voice);
    ember_voice_encoder_free(enc);
    return rc;
}

int cmd_voice(int argc, char **argv)
{
    const int is_x = argc >= 2 && !strcmp(argv[1], "xvector"), is_c = argc >= 2 && !strcmp(argv[1], "codes");
    const int is_create = argc >= 2 && !strcmp(argv[1], "create");
    if (is_x || is_c || is_create) {
        voice_args a;
        const int r = parse_args(argc - 1, argv + 1, &a);
        if (r) return r < 0 ? 0 : r;
        return is_create ? create(&a) : is_x ? xvector(&a) : codes(&a);
    }
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return 2;
}
