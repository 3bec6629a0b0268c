/* `ember voice xvector` and `ember voice codes`: what voice cloning takes
 * from a reference recording, printed as JSON so each can be checked
 * against the reference on its own: the speaker x-vector (a Qwen3-TTS Base
 * model's speaker encoder) and the reference codes (the speech tokenizer's
 * encoder, in every model). (The voice itself is not in the public API yet:
 * this command uses the internals, like tts-codes.) */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "cli.h"
#include "io/wav_read.h"
#include "kernels/matmul.h"
#include "tts/mel.h"
#include "tts/speaker_encoder.h"
#include "tts/speech_encoder.h"

#define DEFAULT_MAX_SECONDS 60.0

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember voice xvector -m BASE_DIR --ref-audio A.wav [--threads N]\n"
            "                           [--kernels NAME] [--max-seconds S]\n"
            "       ember voice codes -m DIR --ref-audio A.wav [same options]\n"
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

/* The result as one JSON object (cJSON escapes the paths). */
static int print_json(const char *dir, const char *wav, const wav_info *info, size_t n,
                      int64_t frames, const float *x, int32_t dim, const char *kernels,
                      const double seconds[2])
{
    double norm = 0;
    for (int32_t i = 0; i < dim; i++) norm += (double)x[i] * x[i];
    cJSON *o = cJSON_CreateObject(), *v = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "model", dir);
    cJSON_AddStringToObject(o, "ref_audio", wav);
    cJSON_AddNumberToObject(o, "file_sample_rate", info->sample_rate);
    cJSON_AddNumberToObject(o, "channels", info->channels);
    cJSON_AddNumberToObject(o, "bits", info->bits);
    cJSON_AddStringToObject(o, "encoding", info->encoding == WAV_PCM_FLOAT ? "float" : "pcm");
    cJSON_AddNumberToObject(o, "seconds", (double)info->frames / info->sample_rate);
    cJSON_AddNumberToObject(o, "samples_24k", (double)n);
    cJSON_AddBoolToObject(o, "resampled", info->sample_rate != MEL_SAMPLE_RATE);
    cJSON_AddNumberToObject(o, "peak", info->peak);
    cJSON_AddNumberToObject(o, "full_scale_samples", (double)info->n_full_scale);
    cJSON_AddNumberToObject(o, "mel_frames", (double)frames);
    cJSON_AddStringToObject(o, "kernels", kernels);
    /* wall time: reading the file and loading the encoder; mel + encoder */
    cJSON_AddNumberToObject(o, "load_s", seconds[0]);
    cJSON_AddNumberToObject(o, "encode_s", seconds[1]);
    cJSON_AddNumberToObject(o, "enc_dim", dim);
    cJSON_AddNumberToObject(o, "norm", sqrt(norm));
    for (int32_t i = 0; i < dim; i++) cJSON_AddItemToArray(v, cJSON_CreateNumber(x[i]));
    cJSON_AddItemToObject(o, "xvector", v);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return -1;
    printf("%s\n", text);
    cJSON_free(text);
    return 0;
}

typedef struct voice_args {
    const char *dir, *wav;
    int threads;
    double max_seconds;
    const ek_kernel_set *kernels;
} voice_args;

/* 0: parsed; else the exit status (--help: 0 after the usage, -1 -> 0). */
static int parse_args(int argc, char **argv, voice_args *a)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"ref-audio", required_argument, 0, 'a'},
        {"threads", required_argument, 0, 't'}, {"kernels", required_argument, 0, 'k'},
        {"max-seconds", required_argument, 0, 's'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *kname = NULL;
    int c;
    *a = (voice_args){NULL, NULL, 1, DEFAULT_MAX_SECONDS, NULL};
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': a->dir = optarg; break;
        case 'a': a->wav = optarg; break;
        case 't': a->threads = atoi(optarg); break;
        case 'k': kname = optarg; break;
        case 's': a->max_seconds = atof(optarg); break;
        case 'h': usage(stdout); return -1;
        default: usage(stderr); return 2;
        }
    }
    if (!a->dir || !a->wav || a->threads < 1 || a->threads > 256 || !(a->max_seconds > 0)) {
        usage(stderr);
        return 2;
    }
    a->kernels = kname ? ek_kernels_by_name(kname) : ek_kernels_best();
    if (!a->kernels) {
        fprintf(stderr, "ember voice: unknown or unsupported --kernels '%s'\n", kname);
        return 2;
    }
    return 0;
}

static int xvector(const voice_args *a)
{
    const char *dir = a->dir, *wav = a->wav;
    const ek_kernel_set *kernels = a->kernels;
    wav_info info;
    float *wave = NULL, *mel = NULL, *x = NULL;
    size_t n = 0;
    spk_encoder *enc = NULL;
    mel_frontend *front = NULL;
    ember_pool *pool = NULL;
    int rc = 1;
    double t0 = cli_now_s(), seconds[2];
    if (wav_load(wav, MEL_SAMPLE_RATE, a->max_seconds, &info, &wave, &n) ||
        spk_encoder_load(dir, kernels, &enc) || mel_frontend_create(&front) ||
        (a->threads > 1 && pool_create(a->threads, &pool))) {
        fprintf(stderr, "ember voice: %s\n", ember_last_error());
        goto done;
    }
    const int64_t frames = mel_frames(n), need = spk_encoder_min_frames(enc);
    if (frames < need) {
        fprintf(stderr,
                "ember voice: %s: %.3f s of audio is too short: the speaker encoder needs at "
                "least %lld samples at 24 kHz (%.3f s)\n",
                wav, (double)n / MEL_SAMPLE_RATE, (long long)need * MEL_HOP,
                (double)need * MEL_HOP / MEL_SAMPLE_RATE);
        goto done;
    }
    if (info.peak == 0.0f)
        fprintf(stderr, "ember voice: warning: %s is silent: its x-vector describes no voice\n", wav);
    else if (info.n_full_scale)
        fprintf(stderr, "ember voice: warning: %s has %llu samples at full scale (clipped)\n", wav,
                (unsigned long long)info.n_full_scale);
    const int32_t dim = spk_encoder_config(enc)->enc_dim;
    mel = malloc(sizeof(float) * (size_t)frames * MEL_BINS);
    x = malloc(sizeof(float) * (size_t)dim);
    if (!mel || !x) {
        fprintf(stderr, "ember voice: out of memory\n");
        goto done;
    }
    const double t1 = cli_now_s();
    seconds[0] = t1 - t0;
    if (mel_compute(front, wave, n, mel) || spk_encoder_xvector(enc, pool, mel, frames, x)) {
        fprintf(stderr, "ember voice: %s\n", ember_last_error());
        goto done;
    }
    seconds[1] = cli_now_s() - t1;
    if (print_json(dir, wav, &info, n, frames, x, dim, kernels->name, seconds)) {
        fprintf(stderr, "ember voice: out of memory\n");
        goto done;
    }
    rc = 0;
done:
    free(wave);
    free(mel);
    free(x);
    pool_free(pool);
    mel_frontend_free(front);
    spk_encoder_free(enc);
    return rc;
}

static int codes(const voice_args *a)
{
    wav_info info;
    float *wave = NULL, *gaps = NULL;
    int32_t *out = NULL;
    size_t n = 0;
    se_encoder *enc = NULL;
    ember_pool *pool = NULL;
    cJSON *o = NULL;
    int rc = 1;
    if (wav_load(a->wav, MEL_SAMPLE_RATE, a->max_seconds, &info, &wave, &n) ||
        se_encoder_load(a->dir, a->kernels, &enc) ||
        (a->threads > 1 && pool_create(a->threads, &pool))) {
        fprintf(stderr, "ember voice: %s\n", ember_last_error());
        goto done;
    }
    const se_config *c = se_encoder_config(enc);
    const int64_t frames = se_encoder_frames(enc, n);
    out = malloc(sizeof(int32_t) * (size_t)(frames * c->n_codes));
    gaps = malloc(sizeof(float) * (size_t)(frames * c->n_codes));
    const double t0 = cli_now_s();
    if (!out || !gaps || se_encoder_encode(enc, pool, wave, n, out, gaps, NULL)) {
        fprintf(stderr, "ember voice: %s\n", out && gaps ? ember_last_error() : "out of memory");
        goto done;
    }
    const double seconds = cli_now_s() - t0;
    float min_gap = INFINITY;
    o = cJSON_CreateObject();
    cJSON *list = cJSON_AddArrayToObject(o, "frames");
    for (int64_t f = 0; f < frames; f++) {
        cJSON *fr = cJSON_CreateArray();
        for (int32_t q = 0; q < c->n_codes; q++) {
            cJSON_AddItemToArray(fr, cJSON_CreateNumber(out[f * c->n_codes + q]));
            min_gap = fminf(min_gap, gaps[f * c->n_codes + q]);
        }
        cJSON_AddItemToArray(list, fr);
    }
    /* the smallest margin of a nearest-codebook choice: a near tie that
     * another float computation may decide the other way */
    cJSON_AddNumberToObject(o, "min_gap", min_gap);
    cJSON_AddNumberToObject(o, "encode_s", seconds);
    cJSON_AddStringToObject(o, "kernels", a->kernels->name);
    char *text = cJSON_PrintUnformatted(o);
    if (!text) {
        fprintf(stderr, "ember voice: out of memory\n");
        goto done;
    }
    printf("%s\n", text);
    cJSON_free(text);
    rc = 0;
done:
    cJSON_Delete(o);
    free(wave);
    free(out);
    free(gaps);
    pool_free(pool);
    se_encoder_free(enc);
    return rc;
}

int cmd_voice(int argc, char **argv)
{
    const int is_x = argc >= 2 && !strcmp(argv[1], "xvector"), is_c = argc >= 2 && !strcmp(argv[1], "codes");
    if (is_x || is_c) {
        voice_args a;
        const int r = parse_args(argc - 1, argv + 1, &a);
        if (r) return r < 0 ? 0 : r;
        return is_x ? xvector(&a) : codes(&a);
    }
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return 2;
}
