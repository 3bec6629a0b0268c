/* The speech decoder alone and WAV files (include/ember_speech.h): thin
 * wrappers over src/tts/code2wav and src/io/wav. */
#include <stdlib.h>

#include "base/status.h"
#include "ember_speech.h"
#include "io/wav.h"
#include "tts/code2wav.h"

struct ember_codec {
    c2w_model *m;
    c2w_stream *s;
};

ember_codec_params ember_codec_default_params(void)
{
    ember_codec_params p = {EMBER_TYPE_NONE, NULL, 0, 0, 1};
    return p;
}

ember_status ember_codec_load(const char *dir, const ember_codec_params *p, ember_codec **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_codec_load: out is NULL");
    *out = NULL;
    if (!dir) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_codec_load: dir is NULL");
    ember_codec_params dp = ember_codec_default_params();
    if (!p) p = &dp;
    if (p->n_threads < 0 || p->frames_per_pass < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_codec_load: negative threads or frames per pass");
    ember_codec *c = calloc(1, sizeof *c);
    if (!c) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    c2w_model_params mp = {p->weight_type, p->kernels, p->winograd != 0};
    c2w_stream_params sp = c2w_stream_default_params();
    sp.n_threads = p->n_threads;
    sp.frames_per_pass = p->frames_per_pass;
    ember_status st = c2w_model_load(dir, &mp, &c->m);
    if (!st) st = c2w_stream_create(c->m, &sp, &c->s);
    if (st) {
        ember_codec_free(c);
        return st;
    }
    *out = c;
    return EMBER_OK;
}

void ember_codec_free(ember_codec *codec)
{
    if (!codec) return;
    c2w_stream_free(codec->s);
    c2w_model_free(codec->m);
    free(codec);
}

int32_t ember_codec_sample_rate(const ember_codec *codec) { return codec ? codec->m->cfg.sample_rate : 0; }
int32_t ember_codec_samples_per_frame(const ember_codec *codec)
{
    return codec ? codec->m->cfg.samples_per_frame : 0;
}
int32_t ember_codec_codebooks(const ember_codec *codec) { return codec ? codec->m->cfg.n_quantizers : 0; }
const char *ember_codec_kernels(const ember_codec *codec) { return codec ? codec->m->kernels->name : ""; }

ember_status ember_codec_push(ember_codec *codec, const int32_t *codes, int32_t n_frames, float *pcm)
{
    if (!codec) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_codec_push: codec is NULL");
    return c2w_stream_push(codec->s, codes, n_frames, pcm);
}

void ember_codec_reset(ember_codec *codec)
{
    if (codec) c2w_stream_reset(codec->s);
}

ember_status ember_codec_push_windowed(ember_codec *codec, const int32_t *codes, int32_t n_ctx,
                                       int32_t n_new, float *pcm)
{
    if (!codec) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_codec_push_windowed: codec is NULL");
    return c2w_stream_push_windowed(codec->s, codes, n_ctx, n_new, pcm);
}

struct ember_wav {
    wav_writer w;
};

ember_status ember_wav_open(const char *path, int32_t sample_rate, ember_wav **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_wav_open: out is NULL");
    *out = NULL;
    if (!path || sample_rate <= 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_wav_open: a NULL path or a rate of %d", sample_rate);
    ember_wav *w = calloc(1, sizeof *w);
    if (!w) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    ember_status st = wav_open(&w->w, path, (uint32_t)sample_rate);
    if (st) {
        free(w);
        return st;
    }
    *out = w;
    return EMBER_OK;
}

ember_status ember_wav_write(ember_wav *wav, const float *pcm, size_t n)
{
    if (!wav || (!pcm && n)) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_wav_write: a NULL argument");
    return wav_append(&wav->w, pcm, n);
}

ember_status ember_wav_close(ember_wav *wav)
{
    if (!wav) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_wav_close: wav is NULL");
    ember_status st = wav_close(&wav->w);
    free(wav);
    return st;
}

void ember_wav_abort(ember_wav *wav)
{
    if (!wav) return;
    wav_abort(&wav->w);
    free(wav);
}
