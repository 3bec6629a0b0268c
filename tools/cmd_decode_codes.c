/* `ember decode-codes`: codec frames (a JSON list of 16-code frames, as
 * `ember tts-codes --json` prints them) -> 24 kHz audio with the speech
 * decoder, in one shot or pushed in chunks (the streaming path). */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_public.h"
#include "ember_speech.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: ember decode-codes -m DIR --codes FILE.json [-o OUT.wav] [--f32 OUT.f32]\n"
               "                          [--chunks 2,4,8] [--dtype f32|bf16] [--threads N]\n"
               "                          [--kernels NAME] [--frames-per-pass N] [--direct-convs]\n"
               "                          [--window N]\n"
               "                          [--json]\n"
               "  DIR holds speech_tokenizer/ (or is it). FILE.json: a list of frames, each a\n"
               "  list of n_quantizers codes, or an object with such a \"frames\" list.\n"
               "  --chunks pushes the frames in chunks of these sizes (the last repeats),\n"
               "  as a streaming caller would; the output must not depend on it.\n"
               "  --direct-convs: no Winograd for the residual convs (slower, for comparison).\n"
               "  --window N: decode each chunk afresh after N frames of left context, the\n"
               "  approximate re-decoding scheme, instead of streaming with state.\n");
}

/* Frames from the JSON file into a frame-major array. */
static int read_codes(const char *path, int32_t q, int32_t **codes, int32_t *n_frames)
{
    char *text = cli_read_text(path, "decode-codes");
    if (!text) return -1;
    size_t len = strlen(text);
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *frames = cJSON_IsObject(root) ? cJSON_GetObjectItem(root, "frames") : root;
    int rc = -1;
    if (!cJSON_IsArray(frames)) {
        fprintf(stderr, "ember decode-codes: %s: expected a JSON list of frames\n", path);
        goto done;
    }
    int32_t n = cJSON_GetArraySize(frames), t = 0;
    *codes = malloc(sizeof(int32_t) * (size_t)(n ? n : 1) * (size_t)q);
    if (!*codes) goto done;
    const cJSON *f;
    cJSON_ArrayForEach(f, frames) {
        if (!cJSON_IsArray(f) || cJSON_GetArraySize(f) != q) {
            fprintf(stderr, "ember decode-codes: %s: frame %d must be a list of %d codes\n", path,
                    t, q);
            goto done;
        }
        int32_t g = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, f) {
            if (!cJSON_IsNumber(v) || !(fabs(v->valuedouble) < 2147483648.0) ||
                v->valuedouble != (double)(int32_t)v->valuedouble) {
                fprintf(stderr, "ember decode-codes: %s: frame %d code %d is not an integer\n",
                        path, t, g);
                goto done;
            }
            (*codes)[(size_t)t * q + g++] = (int32_t)v->valuedouble;
        }
        t++;
    }
    *n_frames = n;
    rc = 0;
done:
    if (rc) {
        free(*codes);
        *codes = NULL;
    }
    cJSON_Delete(root);
    return rc;
}

static int write_f32(const char *path, const float *x, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(x, sizeof *x, n, f) == n;
    if (f && fclose(f)) ok = 0;
    if (!ok) fprintf(stderr, "ember decode-codes: cannot write %s\n", path);
    return ok ? 0 : -1;
}

int cmd_decode_codes(int argc, char **argv)
{
    enum { O_CODES = 1, O_F32, O_CHUNKS, O_FPP, O_JSON, O_DIRECT, O_WINDOW };
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},  {"codes", required_argument, 0, O_CODES},
        {"out", required_argument, 0, 'o'},    {"f32", required_argument, 0, O_F32},
        {"chunks", required_argument, 0, O_CHUNKS}, {"frames-per-pass", required_argument, 0, O_FPP},
        {"json", no_argument, 0, O_JSON},      {"direct-convs", no_argument, 0, O_DIRECT},
        {"window", required_argument, 0, O_WINDOW},
        {"help", no_argument, 0, 'h'},
        CLI_COMMON_OPTIONS,                    {0, 0, 0, 0}};
    const char *dir = NULL, *codes_path = NULL, *wav_path = NULL, *f32_path = NULL;
    const char *chunks_text = NULL;
    int json = 0, c, fpp = 0, direct = 0, window = -1;
    ember_model_params mp = ember_model_default_params();
    ember_session_params esp = ember_session_default_params();
    esp.n_threads = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': dir = optarg; break;
        case O_CODES: codes_path = optarg; break;
        case 'o': wav_path = optarg; break;
        case O_F32: f32_path = optarg; break;
        case O_CHUNKS: chunks_text = optarg; break;
        case O_FPP: fpp = atoi(optarg); break;
        case O_JSON: json = 1; break;
        case O_DIRECT: direct = 1; break;
        case O_WINDOW:
            window = atoi(optarg);
            if (window < 0) {
                fprintf(stderr, "ember decode-codes: --window must be >= 0\n");
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: {
            int r = cli_common_option(c, optarg, "decode-codes", &mp, &esp);
            if (r == 1) break;
            if (r == 0) usage(stderr);
            return 2;
        }
        }
    }
    if (!dir || !codes_path) {
        usage(stderr);
        return 2;
    }
    int32_t *chunks = NULL;
    size_t n_chunks = 0;
    if (chunks_text && cli_parse_ids(chunks_text, &chunks, &n_chunks)) return 2;
    for (size_t i = 0; i < n_chunks; i++)
        if (chunks[i] < 1) {
            fprintf(stderr, "ember decode-codes: --chunks entries must be positive\n");
            free(chunks);
            return 2;
        }

    ember_codec_params p = ember_codec_default_params();
    p.weight_type = mp.weight_type;
    p.kernels = mp.kernels;
    p.winograd = !direct;
    p.n_threads = esp.n_threads;
    p.frames_per_pass = fpp;
    ember_codec *codec = NULL;
    int32_t *codes = NULL, n_frames = 0;
    float *pcm = NULL;
    int rc = 1;
    double t0 = cli_now_s();
    if (ember_codec_load(dir, &p, &codec)) {
        fprintf(stderr, "ember decode-codes: %s\n", ember_last_error());
        goto done;
    }
    double t_load = cli_now_s() - t0;
    const int32_t q = ember_codec_codebooks(codec), rate = ember_codec_sample_rate(codec);
    if (read_codes(codes_path, q, &codes, &n_frames)) goto done;
    const size_t spf = (size_t)ember_codec_samples_per_frame(codec), n_samples = (size_t)n_frames * spf;
    pcm = malloc(sizeof(float) * (n_samples ? n_samples : 1));
    if (!pcm) goto done;
    t0 = cli_now_s();
    for (int32_t off = 0, i = 0; off < n_frames; i++) {
        int32_t k = n_chunks ? chunks[(size_t)i < n_chunks ? (size_t)i : n_chunks - 1] : n_frames;
        if (k > n_frames - off) k = n_frames - off;
        int32_t ctx = window < 0 ? 0 : (off < window ? off : window);
        ember_status st =
            window < 0 ? ember_codec_push(codec, codes + (size_t)off * q, k, pcm + off * spf)
                       : ember_codec_push_windowed(codec, codes + (size_t)(off - ctx) * q, ctx, k, pcm + off * spf);
        if (st) {
            fprintf(stderr, "ember decode-codes: %s\n", ember_last_error());
            goto done;
        }
        off += k;
    }
    double t_dec = cli_now_s() - t0;
    if (f32_path && write_f32(f32_path, pcm, n_samples)) goto done;
    if (wav_path) {
        ember_wav *w = NULL;
        ember_status st = ember_wav_open(wav_path, rate, &w);
        if (!st && (st = ember_wav_write(w, pcm, n_samples))) ember_wav_abort(w);
        else if (!st) st = ember_wav_close(w);
        if (st) {
            fprintf(stderr, "ember decode-codes: %s\n", ember_last_error());
            goto done;
        }
    }
    double sum = 0, peak = 0;
    size_t clipped = 0;
    for (size_t i = 0; i < n_samples; i++) {
        sum += (double)pcm[i] * pcm[i];
        if (fabs(pcm[i]) > peak) peak = fabs(pcm[i]);
        clipped += fabs(pcm[i]) >= 1.0f;
    }
    printf(json ? "{\"frames\": %d, \"samples\": %zu, \"sample_rate\": %d, \"load_s\": %.3f, "
                  "\"decode_ms\": %.2f, \"decoder_ms_per_frame\": %.3f, \"rms\": %.6f, "
                  "\"peak\": %.6f, \"clipped\": %zu, \"kernels\": \"%s\"}\n"
                : "frames %d  samples %zu  rate %d  load %.3f s  decode %.2f ms  (%.3f ms/frame)  "
                  "rms %.6f  peak %.6f  clipped %zu  kernels %s\n",
           n_frames, n_samples, rate, t_load, t_dec * 1e3, n_frames ? t_dec * 1e3 / n_frames : 0.0,
           n_samples ? sqrt(sum / n_samples) : 0.0, peak, clipped, ember_codec_kernels(codec));
    rc = 0;
done:
    free(pcm);
    free(codes);
    free(chunks);
    ember_codec_free(codec);
    return rc;
}
