/* The public voice encoders and audio reading (include/ember_speech.h):
 * thin wrappers over the WAV reader (src/io/wav_read.h), the mel front end
 * and speaker encoder (src/tts/mel.h, speaker_encoder.h) and the speech
 * tokenizer's encoder (src/tts/speech_encoder.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/api_internal.h"
#include "api/speech_internal.h"
#include "base/pool.h"
#include "base/status.h"
#include "ember_speech.h"
#include "io/read_file.h"
#include "io/wav_read.h"
#include "io/write_file.h"
#include "kernels/matmul.h"
#include "tts/mel.h"
#include "tts/speaker_encoder.h"
#include "tts/speech_encoder.h"
#include "tts/voice_file.h"

struct ember_voice_encoder {
    spk_encoder *speaker; /* NULL unless params.speaker */
    mel_frontend *mel;
    se_encoder *codes;    /* NULL unless params.codes */
    ember_pool *pool;     /* NULL: single-threaded */
    char model[256];      /* the directory's name, recorded in voices */
};

ember_status ember_audio_read(const char *path, int32_t sample_rate, double max_seconds, float **pcm, size_t *n,
                              ember_audio_info *info)
{
    if (pcm) *pcm = NULL;
    if (n) *n = 0;
    if (!path || !pcm || !n || sample_rate < 1)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_audio_read: a NULL argument or a bad sample rate");
    wav_info w;
    ember_status st = wav_load(path, (uint32_t)sample_rate, max_seconds, &w, pcm, n);
    if (!st && info)
        *info = (ember_audio_info){(int32_t)w.sample_rate, w.channels, w.bits, w.encoding == WAV_PCM_FLOAT,
                                   (double)w.frames / w.sample_rate, w.peak, (int64_t)w.n_full_scale};
    return st;
}

ember_voice_params ember_voice_default_params(void)
{
    ember_voice_params p;
    memset(&p, 0, sizeof p);
    p.speaker = 1;
    return p;
}

void ember_voice_encoder_free(ember_voice_encoder *v)
{
    if (!v) return;
    spk_encoder_free(v->speaker);
    mel_frontend_free(v->mel);
    se_encoder_free(v->codes);
    pool_free(v->pool);
    free(v);
}

ember_status ember_voice_encoder_load(const char *dir, const ember_voice_params *p, ember_voice_encoder **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_encoder_load: out is NULL");
    *out = NULL;
    ember_voice_params dp = ember_voice_default_params();
    if (!p) p = &dp;
    if (!dir || p->n_threads < 0 || p->n_threads > 1024 || (!p->speaker && !p->codes))
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "ember_voice_encoder_load: a directory, 0..1024 threads and an encoder to load");
    const ek_kernel_set *kernels = p->kernels ? ek_kernels_by_name(p->kernels) : ek_kernels_best();
    if (!kernels) return ember_fail(EMBER_ERR_INVALID_ARG, "unknown or unsupported kernels '%s'", p->kernels);
    ember_voice_encoder *v = calloc(1, sizeof *v);
    if (!v) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    const char *base = strrchr(dir, '/');
    snprintf(v->model, sizeof v->model, "%s", base && base[1] ? base + 1 : dir);
    ember_status st = EMBER_OK;
    if (p->speaker) st = spk_encoder_load(dir, kernels, &v->speaker);
    if (!st && p->speaker) st = mel_frontend_create(&v->mel);
    if (!st && p->codes) st = se_encoder_load(dir, kernels, &v->codes);
    if (!st && p->n_threads > 1) st = pool_create(p->n_threads, &v->pool);
    if (st) {
        ember_voice_encoder_free(v);
        return st;
    }
    *out = v;
    return EMBER_OK;
}

int32_t ember_voice_xvector_dim(const ember_voice_encoder *v)
{
    return v && v->speaker ? spk_encoder_config(v->speaker)->enc_dim : 0;
}

size_t ember_voice_min_samples(const ember_voice_encoder *v)
{
    if (!v || !v->speaker) return 1;
    /* mel_frames(n) = n / hop for n past the reflect pad (1280 samples: 5 frames) */
    size_t need = (size_t)spk_encoder_min_frames(v->speaker) * MEL_HOP;
    return need > MEL_PAD ? need : MEL_PAD + 1;
}

ember_status ember_voice_xvector(const ember_voice_encoder *v, const float *pcm, size_t n, float *xvector)
{
    if (!v || !pcm || !xvector) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_xvector: a NULL argument");
    if (!v->speaker) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_xvector: no speaker encoder loaded");
    const size_t need = ember_voice_min_samples(v);
    if (n < need)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "%.3f s of audio is too short: the speaker encoder needs at least %zu samples at 24 kHz "
                          "(%.3f s)",
                          (double)n / MEL_SAMPLE_RATE, need, (double)need / MEL_SAMPLE_RATE);
    const int64_t frames = mel_frames(n);
    float *mel = malloc(sizeof *mel * (size_t)frames * MEL_BINS);
    if (!mel) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    ember_status st = mel_compute(v->mel, pcm, n, mel);
    if (!st) st = spk_encoder_xvector(v->speaker, v->pool, mel, frames, xvector);
    free(mel);
    return st;
}

int32_t ember_voice_codebooks(const ember_voice_encoder *v)
{
    return v && v->codes ? se_encoder_config(v->codes)->n_codes : 0;
}

int64_t ember_voice_code_frames(const ember_voice_encoder *v, size_t n)
{
    return v && v->codes ? se_encoder_frames(v->codes, n) : 0;
}

ember_status ember_voice_codes(const ember_voice_encoder *v, const float *pcm, size_t n, int32_t *codes,
                               float *gaps)
{
    if (!v || !pcm || !codes || !n) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_codes: a NULL argument");
    if (!v->codes) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_codes: no speech encoder loaded");
    return se_encoder_encode(v->codes, v->pool, pcm, n, codes, gaps, NULL);
}

/* ---- saved voices ---- */

ember_status ember_voice_create(const ember_voice_encoder *enc, const float *pcm, size_t n, const char *ref_text,
                                ember_voice **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_create: out is NULL");
    *out = NULL;
    if (!enc || !pcm) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_create: a NULL argument");
    if (!enc->speaker) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_create: no speaker encoder loaded");
    ember_voice *v = calloc(1, sizeof *v);
    if (!v) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    voice_data *d = &v->d;
    d->xvector_dim = ember_voice_xvector_dim(enc);
    d->codebooks = ember_voice_codebooks(enc);
    d->n_frames = d->codebooks ? (int32_t)ember_voice_code_frames(enc, n) : 0;
    d->xvector = malloc(sizeof *d->xvector * (size_t)d->xvector_dim);
    d->codes = d->n_frames ? malloc(sizeof *d->codes * (size_t)d->n_frames * (size_t)d->codebooks) : NULL;
    d->ref_text = ref_text ? strdup(ref_text) : NULL;
    d->model = strdup(enc->model);
    ember_status st = EMBER_OK;
    if (!d->xvector || (d->n_frames && !d->codes) || (ref_text && !d->ref_text) || !d->model)
        st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    if (!st) st = ember_voice_xvector(enc, pcm, n, d->xvector);
    if (!st && d->n_frames) st = ember_voice_codes(enc, pcm, n, d->codes, NULL);
    if (st) {
        ember_voice_free(v);
        return st;
    }
    *out = v;
    return EMBER_OK;
}

ember_status ember_voice_save(const ember_voice *v, const char *path)
{
    if (!v || !path) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_save: a NULL argument");
    uint8_t *bytes = NULL;
    size_t len = 0;
    ember_status st = voice_serialize(&v->d, &bytes, &len);
    if (!st) st = io_write_file_atomic(path, bytes, len);
    free(bytes);
    return st;
}

ember_status ember_voice_load(const char *path, ember_voice **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_load: out is NULL");
    *out = NULL;
    if (!path) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_load: path is NULL");
    char *bytes = NULL;
    size_t len = 0;
    ember_status st = io_read_text_file(path, (size_t)64 << 20, &bytes, &len);
    if (st) return st;
    ember_voice *v = calloc(1, sizeof *v);
    if (!v) st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    if (!st) st = voice_parse((const uint8_t *)bytes, len, path, &v->d);
    free(bytes);
    if (st) {
        free(v);
        return st;
    }
    *out = v;
    return EMBER_OK;
}

void ember_voice_free(ember_voice *v)
{
    if (!v) return;
    voice_data_free(&v->d);
    free(v);
}

ember_status ember_voice_info(const ember_voice *v, char **json)
{
    if (json) *json = NULL;
    if (!v || !json) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_voice_info: a NULL argument");
    cJSON *o = cJSON_CreateObject();
    const int ok = o && cJSON_AddNumberToObject(o, "xvector_dim", v->d.xvector_dim) &&
                   cJSON_AddNumberToObject(o, "frames", v->d.n_frames) &&
                   cJSON_AddNumberToObject(o, "codebooks", v->d.codebooks) &&
                   (v->d.ref_text ? cJSON_AddStringToObject(o, "ref_text", v->d.ref_text) != NULL
                                  : cJSON_AddNullToObject(o, "ref_text") != NULL) &&
                   cJSON_AddStringToObject(o, "model", v->d.model);
    if (!ok) {
        cJSON_Delete(o);
        o = NULL;
    }
    return api_json_out(o, "ember_voice_info", json);
}
