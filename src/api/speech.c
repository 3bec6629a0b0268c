/* The public speech API (include/ember_speech.h): a thin wrapper over the
 * TTS pipeline (src/tts/tts_pipeline.h): the talker and predictor session,
 * the speech decoder stream, and the prompt's tokenizer. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "ember_speech.h"
#include "io/wav.h"
#include "tokenizer/tokenizer.h"
#include "tts/code2wav.h"
#include "tts/tts_pipeline.h"

struct ember_tts {
    tts_model *m;
    c2w_model *dm;
    tts_session *gen;
    c2w_stream *dec;
    et_tokenizer *tok;
    ember_tts_params p;
    atomic_int cancel;
    int16_t *s16; /* the s16 copy of a chunk */
    size_t s16_cap;
};

ember_tts_params ember_tts_default_params(void)
{
    ember_tts_params p;
    memset(&p, 0, sizeof p);
    p.max_frames = 1000;
    p.max_text_tokens = 512;
    return p;
}

ember_speech_request ember_speech_default_request(void)
{
    ember_speech_request r;
    memset(&r, 0, sizeof r);
    return r;
}

void ember_tts_free(ember_tts *t)
{
    if (!t) return;
    c2w_stream_free(t->dec);
    tts_session_free(t->gen);
    c2w_model_free(t->dm);
    tts_model_free(t->m);
    et_tokenizer_free(t->tok);
    free(t->s16);
    free(t);
}

ember_status ember_tts_load(const char *dir, const ember_tts_params *p, ember_tts **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_load: out is NULL");
    *out = NULL;
    if (!dir) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_load: dir is NULL");
    ember_tts_params dp = ember_tts_default_params();
    if (!p) p = &dp;
    if (p->max_frames < 1 || p->max_text_tokens < 1 || p->n_threads < 0 || p->decoder_threads < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_load: max_frames, max_text_tokens must be "
                                                 "positive and thread counts not negative");
    ember_tts *t = calloc(1, sizeof *t);
    if (!t) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    t->p = *p;
    tts_model_params mp = {p->weight_type, p->kernels};
    c2w_model_params dmp = {p->decoder_type, p->kernels, 1};
    tts_session_params sp = tts_session_default_params();
    sp.n_threads = p->n_threads;
    sp.max_context = p->max_text_tokens + p->max_frames + 16;
    c2w_stream_params cp = c2w_stream_default_params();
    cp.n_threads = p->decoder_threads;
    ember_status st = et_tokenizer_load(dir, &t->tok);
    if (!st) st = tts_model_load(dir, &mp, &t->m);
    if (!st) st = c2w_model_load(dir, &dmp, &t->dm);
    if (!st) st = tts_session_create(t->m, &sp, &t->gen);
    if (!st) st = c2w_stream_create(t->dm, &cp, &t->dec);
    if (st) {
        ember_tts_free(t);
        return st;
    }
    *out = t;
    return EMBER_OK;
}

int32_t ember_tts_sample_rate(const ember_tts *t)
{
    return t ? t->dm->cfg.sample_rate : 0;
}

void ember_tts_cancel(ember_tts *t)
{
    if (t) atomic_store(&t->cancel, 1);
}

typedef struct speak_ctx {
    ember_tts *t;
    ember_pcm_f32_fn on_f32;
    ember_pcm_s16_fn on_s16;
    void *user;
    int oom;
} speak_ctx;

static int on_pcm(void *user, const float *pcm, size_t n, const tts_chunk_info *info)
{
    speak_ctx *k = user;
    ember_tts *t = k->t;
    if (atomic_exchange(&t->cancel, 0)) return 1;
    ember_speech_chunk c = {info->index, info->first_frame, info->n_frames, info->ready_ms, info->decode_ms};
    if (k->on_f32 && k->on_f32(k->user, pcm, n, &c)) return 1;
    if (!k->on_s16) return 0;
    if (n > t->s16_cap) {
        int16_t *grown = realloc(t->s16, n * sizeof *grown);
        if (!grown) {
            k->oom = 1;
            return 1;
        }
        t->s16 = grown;
        t->s16_cap = n;
    }
    wav_f32_to_s16(pcm, t->s16, n);
    return k->on_s16(k->user, t->s16, n, &c);
}

ember_status ember_tts_speak(ember_tts *t, const ember_speech_request *rq, ember_pcm_f32_fn on_f32,
                             ember_pcm_s16_fn on_s16, void *user, ember_speech_timings *timings)
{
    if (timings) memset(timings, 0, sizeof *timings);
    if (!t || !rq || !rq->text) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_speak: a NULL argument");
    static const char head[] = "<|im_start|>assistant\n", tail[] = "<|im_end|>\n<|im_start|>assistant\n";
    size_t len = strlen(head) + strlen(rq->text) + strlen(tail);
    char *full = malloc(len + 1);
    if (!full) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    strcpy(full, head);
    strcat(full, rq->text);
    strcat(full, tail);
    int32_t *ids = NULL;
    size_t n_ids = 0;
    ember_status st = et_tokenizer_encode(t->tok, full, len, false, &ids, &n_ids);
    free(full);
    if (!st && n_ids > (size_t)t->p.max_text_tokens + 8)
        st = ember_fail(EMBER_ERR_INVALID_ARG, "the text is %zu tokens, over max_text_tokens %d", n_ids,
                        t->p.max_text_tokens);
    tts_pipeline_params pp = tts_pipeline_default_params();
    if (!st && rq->chunks) st = tts_schedule_parse(rq->chunks, &pp.schedule);
    if (st) {
        free(ids);
        return st;
    }
    tts_request r;
    memset(&r, 0, sizeof r);
    r.text_ids = ids;
    r.n_text_ids = n_ids;
    r.speaker = rq->speaker;
    r.language = rq->language;
    r.greedy = rq->greedy;
    r.seed = rq->seed;
    /* as documented: the request's, else the model's max_new_tokens, capped by the load's */
    int32_t want = rq->max_frames > 0 ? rq->max_frames : t->m->gen.max_new_tokens;
    r.max_frames = want > 0 && want < t->p.max_frames ? want : t->p.max_frames;
    speak_ctx k = {t, on_f32, on_s16, user, 0};
    tts_synth_stats ss;
    memset(&ss, 0, sizeof ss);
    st = tts_synthesize(t->gen, t->dec, &r, &pp, on_pcm, &k, &ss);
    free(ids);
    if (k.oom) st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    if (timings) {
        timings->frames = ss.frames;
        timings->chunks = ss.chunks;
        timings->prefill_ms = ss.prefill_ms;
        timings->talker_ms = ss.talker_ms;
        timings->predictor_ms = ss.predictor_ms;
        timings->decoder_ms = ss.decoder_ms;
        timings->first_audio_ms = ss.first_audio_ms;
        timings->total_ms = ss.total_ms;
    }
    return st;
}
