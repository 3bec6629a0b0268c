/* The public speech API (include/ember_speech.h), the request half: a
 * request's prompt, sampling and chunking resolved against the loaded
 * engine (speech.c), spoken through the TTS pipeline (src/tts/
 * tts_pipeline.h) or generated as codes alone. */
#include <stdlib.h>
#include <string.h>

#include "api/speech_internal.h"
#include "base/stats.h"
#include "base/status.h"
#include "io/wav.h"
#include "tts/tts_internal.h"
#include "tts/tts_text.h"

/* A request resolved: the prompt's ids (owned when made from text), the
 * sampling, and the frame limit. */
typedef struct resolved {
    tts_request r;
    tts_gen_config sampling;
    int32_t *owned_ids, *instruct_ids, *ref_ids;
} resolved;

static void resolved_free(resolved *rs)
{
    free(rs->owned_ids);
    free(rs->instruct_ids);
    free(rs->ref_ids);
    rs->owned_ids = rs->instruct_ids = rs->ref_ids = NULL;
}

/* A text of the prompt in its frame (tts_text.h), with the model's tokenizer. */
static ember_status encode_framed(ember_tts *t, tts_text_kind kind, const char *text, int32_t **ids, size_t *n)
{
    if (!t->tok)
        return ember_fail(EMBER_ERR_INVALID_ARG, "speech text needs the model's tokenizer: %s (or pass text_ids)",
                          t->tok_error);
    return tts_text_encode(t->tok, kind, text, ids, n);
}

/* The voice: the instruction's block and the x-vector, checked against
 * the model's kind (the session refuses what the model cannot take). */
static ember_status resolve_voice(ember_tts *t, const ember_speech_request *rq, resolved *out)
{
    const tts_config *c = &t->m->cfg;
    const int32_t takes = c->type == TTS_BASE ? c->talker.hidden : 0;
    if (rq->voice && rq->xvector)
        return ember_fail(EMBER_ERR_INVALID_ARG, "a speech request takes a saved voice or an x-vector, not both");
    if (rq->voice && rq->voice->d.xvector_dim != takes)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "the voice was made with %s (a %d-value x-vector); this model %s",
                          rq->voice->d.model, rq->voice->d.xvector_dim,
                          takes ? (takes < rq->voice->d.xvector_dim ? "is a smaller Base model"
                                                                    : "is a larger Base model")
                                : "is not a Base model: only those clone voices");
    if (rq->xvector && rq->n_xvector != takes)
        return ember_fail(EMBER_ERR_INVALID_ARG, "an x-vector of %d floats; this model takes %d", rq->n_xvector,
                          takes);
    out->r.xvector = rq->voice ? rq->voice->d.xvector : rq->xvector;
    /* in-context: the request's reference, else a saved voice's transcript and codes */
    const voice_data *vd = rq->voice ? &rq->voice->d : NULL;
    const char *ref_text = rq->ref_text;
    const int32_t *ref_codes = rq->ref_codes;
    int32_t n_ref = rq->n_ref_frames;
    if (!ref_text && vd && vd->ref_text && vd->n_frames) {
        ref_text = vd->ref_text, ref_codes = vd->codes, n_ref = vd->n_frames;
        if (vd->codebooks != c->n_groups)
            return ember_fail(EMBER_ERR_INVALID_ARG, "the voice's codes have %d codebooks; this model %d",
                              vd->codebooks, c->n_groups);
    }
    if (ref_text && !rq->xvector_only) {
        if (!out->r.xvector || !ref_codes || n_ref < 1)
            return ember_fail(EMBER_ERR_INVALID_ARG, "in-context cloning takes an x-vector (or a saved voice), "
                                                     "ref_text and the reference's codes");
        size_t n_ids = 0;
        ember_status st = encode_framed(t, TTS_TEXT_REFERENCE, ref_text, &out->ref_ids, &n_ids);
        if (st) return st;
        out->r.ref_ids = out->ref_ids;
        out->r.n_ref_ids = n_ids;
        out->r.ref_codes = ref_codes;
        out->r.n_ref_frames = n_ref;
    }
    if (!rq->instruct || !rq->instruct[0]) return EMBER_OK; /* an empty instruction is none */
    return encode_framed(t, TTS_TEXT_INSTRUCT, rq->instruct, &out->instruct_ids, &out->r.n_instruct_ids);
}

/* Negative: generation_config's; otherwise the value for both models. */
static ember_status apply_sampling(const ember_speech_request *rq, tts_gen_config *g)
{
    const float temp = rq->temperature, top_p = rq->top_p, penalty = rq->repetition_penalty;
    if (temp > 100 || top_p == 0 || top_p > 1 || penalty == 0 || penalty > 100)
        return ember_fail(EMBER_ERR_INVALID_ARG, "speech sampling: temperature in [0, 100], top_p in (0, 1], "
                                                 "repetition_penalty in (0, 100] (negative: the model's)");
    tts_sampling *both[2] = {&g->talker, &g->subtalker};
    for (int i = 0; i < 2; i++) {
        if (temp >= 0) both[i]->temperature = temp, both[i]->do_sample = temp > 0;
        if (rq->top_k >= 0) both[i]->top_k = rq->top_k;
        if (top_p > 0) both[i]->top_p = top_p;
    }
    if (penalty > 0) g->repetition_penalty = penalty;
    return EMBER_OK;
}

static ember_status resolve(ember_tts *t, const ember_speech_request *rq, resolved *out)
{
    memset(out, 0, sizeof *out);
    if (!rq->text == !rq->text_ids)
        return ember_fail(EMBER_ERR_INVALID_ARG, "a speech request needs text or text_ids (one of them)");
    if (rq->max_frames < 0 || rq->min_frames < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "a speech request's max_frames and min_frames are not negative");
    out->sampling = t->m->gen;
    ember_status st = apply_sampling(rq, &out->sampling);
    if (st) return st;
    if (rq->text) {
        st = encode_framed(t, TTS_TEXT_TARGET, rq->text, &out->owned_ids, &out->r.n_text_ids);
        out->r.text_ids = out->owned_ids;
    } else {
        out->r.text_ids = rq->text_ids;
        out->r.n_text_ids = rq->n_text_ids;
    }
    if (!st) st = resolve_voice(t, rq, out);
    out->r.instruct_ids = out->instruct_ids;
    const size_t prompt = out->r.n_text_ids + out->r.n_instruct_ids + out->r.n_ref_ids + (size_t)out->r.n_ref_frames;
    if (!st && prompt > (size_t)t->p.max_text_tokens + 8)
        st = ember_fail(EMBER_ERR_INVALID_ARG,
                        "the text, instruction and reference are %zu prompt rows, over max_text_tokens %d", prompt,
                        t->p.max_text_tokens);
    if (st) {
        resolved_free(out);
        return st;
    }
    out->r.speaker = rq->speaker;
    out->r.language = rq->language;
    /* the official defaults: a clone streams its text, the others do not */
    out->r.streaming = rq->streaming_text >= 0 ? rq->streaming_text : t->m->cfg.type == TTS_BASE;
    out->r.greedy = rq->greedy;
    out->r.seed = rq->seed;
    out->r.sampling = &out->sampling;
    /* as documented: the request's, else the model's max_new_tokens, capped by the load's */
    int32_t want = rq->max_frames > 0 ? rq->max_frames : t->m->gen.max_new_tokens;
    out->r.max_frames = want > 0 && want < t->p.max_frames ? want : t->p.max_frames;
    out->r.min_frames = rq->min_frames < out->r.max_frames ? rq->min_frames : out->r.max_frames;
    return EMBER_OK;
}

static void fill_timings(ember_speech_timings *out, const tts_synth_stats *ss, const ember_tts *t,
                         int32_t max_frames)
{
    if (!out) return;
    out->frames = ss->frames;
    out->chunks = ss->chunks;
    out->prefill_ms = ss->prefill_ms;
    out->talker_ms = ss->talker_ms;
    out->predictor_ms = ss->predictor_ms;
    out->decoder_ms = ss->decoder_ms;
    out->first_audio_ms = ss->first_audio_ms;
    out->total_ms = ss->total_ms;
    out->prompt_tokens = tts_session_prompt_length(t->gen);
    out->stopped_at_eos = ss->frames < max_frames;
}

/* ---- speak: frames decoded to PCM chunk by chunk ---- */

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
    if (t->arrivals && t->n_arrivals < t->cap_arrivals) /* for the calibration */
        t->arrivals[t->n_arrivals++] = (edge_chunk_time){info->ready_ms, (int64_t)n};
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

/* The chunking: the request's chunks, else the calibration's ramp, run by
 * the adaptive controller when it says so, else the default ramp. */
static ember_status pipeline_params(ember_tts *t, const ember_speech_request *rq, tts_pipeline_params *pp)
{
    *pp = tts_pipeline_default_params();
    pp->decoder_threads = t->p.decoder_threads;
    pp->alone_chunks = t->p.alone_chunks;
    pp->decoder_cpus = t->p.decoder_cpus;
    pp->n_decoder_cpus = t->p.n_decoder_cpus;
    if (rq->chunks) return tts_schedule_parse(rq->chunks, &pp->schedule);
    if (t->chunking == SPEECH_CHUNKS_DEFAULT) return EMBER_OK;
    pp->schedule.n = edge_calibration_schedule(&t->cal, pp->schedule.sizes, TTS_MAX_SCHEDULE);
    if (t->chunking == SPEECH_CHUNKS_ADAPTIVE) {
        edge_chunk_ctl_init(&t->ctl, &t->cal);
        pp->controller = (tts_chunk_controller){edge_chunk_ctl_callback, &t->ctl, EDGE_CAL_STEADY};
    }
    return EMBER_OK;
}

/* params.calibration: the finished request's arrivals become the cached
 * calibration, read at the next load. A cache that cannot be written is
 * not the request's failure. */
static void refresh_calibration(ember_tts *t)
{
    edge_calibration cal;
    if (t->cal_path[0] && !edge_calibrate(t->arrivals, t->n_arrivals, t->dm->cfg.sample_rate, &cal) &&
        cal.measured)
        (void)edge_calibration_save(t->cal_path, &cal);
}

ember_status ember_tts_speak(ember_tts *t, const ember_speech_request *rq, ember_pcm_f32_fn on_f32,
                             ember_pcm_s16_fn on_s16, void *user, ember_speech_timings *timings)
{
    if (timings) memset(timings, 0, sizeof *timings);
    if (!t || !rq) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_speak: a NULL argument");
    if (!t->dec) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_speak: loaded codes_only (no speech decoder)");
    resolved rs;
    tts_pipeline_params pp;
    ember_status st = pipeline_params(t, rq, &pp);
    if (!st) st = resolve(t, rq, &rs);
    if (st) return st;
    ember_stats *dec_stats = NULL;
    if (rq->stats && ember_stats_create("tts_decoder", &dec_stats) != EMBER_OK) {
        resolved_free(&rs);
        return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    }
    pp.gen_stats = rq->stats;
    pp.dec_stats = dec_stats;
    t->n_arrivals = 0;
    speak_ctx k = {t, on_f32, on_s16, user, 0};
    tts_synth_stats ss;
    memset(&ss, 0, sizeof ss);
    st = tts_synthesize(t->gen, t->dec, &rs.r, &pp, on_pcm, &k, &ss);
    resolved_free(&rs);
    if (k.oom) st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    if (!st && rq->stats) st = ember_stats_merge(rq->stats, dec_stats);
    ember_stats_free(dec_stats);
    if (!st && t->arrivals) refresh_calibration(t);
    fill_timings(timings, &ss, t, rs.r.max_frames);
    return st;
}

/* ---- codes: the frames alone ---- */

ember_status ember_tts_codes(ember_tts *t, const ember_speech_request *rq, ember_codes_fn on_codes, void *user,
                             ember_speech_timings *timings)
{
    if (timings) memset(timings, 0, sizeof *timings);
    if (!t || !rq || !on_codes) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_codes: a NULL argument");
    resolved rs;
    ember_status st = resolve(t, rq, &rs);
    if (st) return st;
    const int32_t groups = t->m->cfg.n_groups;
    int32_t codes[TTS_MAX_GROUPS];
    tts_synth_stats ss;
    memset(&ss, 0, sizeof ss);
    const double t0 = tts_now_ms();
    st = tts_session_start(t->gen, &rs.r);
    ss.prefill_ms = tts_now_ms() - t0;
    for (int done = 0; !st;) {
        const double talker0 = tts_session_talker_ms(t->gen), pred0 = tts_session_predictor_ms(t->gen);
        st = tts_session_step(t->gen, NULL, codes, &done);
        if (st || done) break;
        ember_stats_record(rq->stats, EMBER_STAT_TALKER, tts_session_talker_ms(t->gen) - talker0);
        ember_stats_record(rq->stats, EMBER_STAT_PREDICTOR, tts_session_predictor_ms(t->gen) - pred0);
        if (atomic_exchange(&t->cancel, 0) || on_codes(user, codes, groups, tts_session_frames(t->gen) - 1))
            st = ember_fail(EMBER_ERR_CANCELLED, "ember_tts_codes: cancelled");
    }
    resolved_free(&rs);
    ss.frames = tts_session_frames(t->gen);
    ss.talker_ms = tts_session_talker_ms(t->gen);
    ss.predictor_ms = tts_session_predictor_ms(t->gen);
    ss.total_ms = tts_now_ms() - t0;
    fill_timings(timings, &ss, t, rs.r.max_frames);
    return st;
}
