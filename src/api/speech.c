/* The public speech API (include/ember_speech.h), the engine half: loading
 * the talker and predictor, the speech decoder and the tokenizer, placing
 * their threads, warming them up, reading the machine's calibration, and
 * describing all of that. Requests are in speech_request.c. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "api/speech_internal.h"
#include "base/pool.h"
#include "base/status.h"
#include "edge/profile.h"

ember_tts_params ember_tts_default_params(void)
{
    ember_tts_params p;
    memset(&p, 0, sizeof p);
    p.max_frames = 1000;
    p.max_text_tokens = 512;
    p.alone_chunks = tts_pipeline_default_params().alone_chunks;
    return p;
}

ember_speech_request ember_speech_default_request(void)
{
    ember_speech_request r;
    memset(&r, 0, sizeof r);
    r.temperature = r.top_p = r.repetition_penalty = -1.0f;
    r.top_k = -1;
    r.streaming_text = -1;
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
    free(t->arrivals);
    free(t);
}

/* One short request whose audio is dropped: the first real request then
 * finds the caches, the session's buffers and the decoder's weights warm,
 * as a server's would after its first request (a cold first request is
 * ~100 ms later to first audio). "Hello" (id 9707) in the prompt's frame. */
static ember_status warm_up(ember_tts *t)
{
    const tts_config *c = &t->m->cfg;
    const int32_t ids[] = {c->im_start, c->assistant, 198, 9707, c->im_end, 198, c->im_start, c->assistant, 198};
    tts_pipeline_params pp = tts_pipeline_default_params();
    pp.decoder_threads = t->p.decoder_threads;
    pp.decoder_cpus = t->p.decoder_cpus;
    pp.n_decoder_cpus = t->p.n_decoder_cpus;
    tts_request rq;
    memset(&rq, 0, sizeof rq);
    rq.text_ids = ids;
    rq.n_text_ids = sizeof ids / sizeof *ids;
    rq.greedy = 1;
    rq.max_frames = rq.min_frames = tts_schedule_size(&pp.schedule, 0);
    /* a Base model speaks only in a voice: any one warms it (zeros) */
    float *voice = c->type == TTS_BASE ? calloc((size_t)c->talker.hidden, sizeof *voice) : NULL;
    if (c->type == TTS_BASE && !voice) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    rq.xvector = voice;
    ember_status st;
    if (!t->dec) { /* codes only: the talker and predictor alone */
        int32_t codes[TTS_MAX_GROUPS];
        int done = 0;
        st = tts_session_start(t->gen, &rq);
        while (!st && !done) st = tts_session_step(t->gen, NULL, codes, &done);
    } else {
        st = tts_synthesize(t->gen, t->dec, &rq, &pp, NULL, NULL, NULL);
    }
    free(voice);
    return st;
}

/* The generator runs on the caller's thread and the session's workers; the
 * decoder's workers and its thread are pinned per request (the pipeline). */
static ember_status place(ember_tts *t)
{
    const ember_tts_params *p = &t->p;
    ember_status st = EMBER_OK;
    if (p->n_generator_cpus) {
        st = pool_pin_self(p->generator_cpus, p->n_generator_cpus);
        if (!st) st = tts_session_pin(t->gen, p->generator_cpus, p->n_generator_cpus);
    }
    if (!st && p->n_decoder_cpus && t->dec) st = c2w_stream_pin(t->dec, p->decoder_cpus, p->n_decoder_cpus);
    return st;
}

/* params.calibration: what the cache holds for this model on this machine
 * (nothing, an unreadable file or an unmeasured one: the default ramp). */
static void read_calibration(ember_tts *t, const char *dir)
{
    bool found = false;
    if (edge_calibration_path_for(dir, t->cal_path, sizeof t->cal_path) ||
        edge_calibration_load(t->cal_path, &t->cal, &found) || !found || !t->cal.measured)
        return;
    t->chunking = t->cal.adaptive ? SPEECH_CHUNKS_ADAPTIVE : SPEECH_CHUNKS_CALIBRATED;
}

static ember_status check_params(const ember_tts_params *p)
{
    if (p->max_frames < 1 || p->max_text_tokens < 1 || p->n_threads < 0 || p->decoder_threads < 0 ||
        p->alone_chunks < -1)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_load: max_frames, max_text_tokens must be "
                                                 "positive, thread counts not negative, alone_chunks >= -1");
    if (p->n_generator_cpus < 0 || p->n_generator_cpus > 256 || p->n_decoder_cpus < 0 || p->n_decoder_cpus > 256)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_load: CPU counts must be in 0..256");
    if (p->backend && strcmp(p->backend, "cpu") && (strncmp(p->backend, "onnx:", 5) || !p->backend[5]))
        return ember_fail(EMBER_ERR_INVALID_ARG, "backend '%s': expected cpu or onnx:DIR", p->backend);
    return EMBER_OK;
}

ember_status ember_tts_load(const char *dir, const ember_tts_params *p, ember_tts **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_load: out is NULL");
    *out = NULL;
    if (!dir) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_load: dir is NULL");
    ember_tts_params dp = ember_tts_default_params();
    if (!p) p = &dp;
    ember_status st = check_params(p);
    if (st) return st;
    ember_tts *t = calloc(1, sizeof *t);
    if (!t) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    t->p = *p;
    /* the caller's strings need not outlive the load */
    t->p.kernels = t->p.backend = t->p.onnx_runtime = t->p.onnx_provider = t->p.onnx_options = NULL;
    /* Both pools can span the machine; the pipeline decides how many of
     * their threads run at each moment (tts_pipeline.h). */
    const int cpus = pool_cpu_count();
    t->gen_threads = p->n_threads ? p->n_threads : cpus;
    t->dec_threads = p->decoder_threads > cpus ? p->decoder_threads : cpus;
    tts_model_params mp = {p->weight_type, p->kernels};
    c2w_model_params dmp = {p->decoder_type, p->kernels, 1};
    tts_session_params sp = tts_session_default_params();
    sp.n_threads = t->gen_threads;
    sp.max_context = p->max_text_tokens + p->max_frames + 16;
    if (p->backend && strcmp(p->backend, "cpu")) {
        sp.onnx_dir = p->backend + 5;
        /* the cached calibration times this machine's native steps: a run
         * on the onnx backend neither follows nor refreshes it */
        t->p.calibration = 0;
    }
    sp.onnx_runtime = p->onnx_runtime;
    sp.onnx_provider = p->onnx_provider;
    sp.onnx_options = p->onnx_options;
    c2w_stream_params cp = c2w_stream_default_params();
    cp.n_threads = t->dec_threads;
    /* the folder's speech decoder graphs, where it has them */
    cp.onnx_dir = sp.onnx_dir;
    cp.onnx_runtime = sp.onnx_runtime;
    cp.onnx_provider = sp.onnx_provider;
    cp.onnx_options = sp.onnx_options;
    /* a directory without a tokenizer still speaks text_ids */
    if (et_tokenizer_load(dir, &t->tok) != EMBER_OK)
        snprintf(t->tok_error, sizeof t->tok_error, "%s", ember_last_error());
    st = tts_model_load(dir, &mp, &t->m);
    if (!st && sp.max_context > t->m->cfg.talker.max_positions) sp.max_context = t->m->cfg.talker.max_positions;
    if (!st && !p->codes_only) st = c2w_model_load(dir, &dmp, &t->dm);
    if (!st) st = tts_session_create(t->m, &sp, &t->gen);
    if (!st && !p->codes_only) st = c2w_stream_create(t->dm, &cp, &t->dec);
    if (!st) st = place(t);
    if (!st && p->warm_up) st = warm_up(t);
    if (!st && t->p.calibration) read_calibration(t, dir);
    if (!st && t->p.calibration) {
        t->cap_arrivals = p->max_frames;
        t->arrivals = malloc((size_t)t->cap_arrivals * sizeof *t->arrivals);
        if (!t->arrivals) st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    }
    if (st) {
        ember_tts_free(t);
        return st;
    }
    *out = t;
    return EMBER_OK;
}

int32_t ember_tts_sample_rate(const ember_tts *t)
{
    return t && t->dm ? t->dm->cfg.sample_rate : 0;
}

int32_t ember_tts_codebooks(const ember_tts *t)
{
    return t ? t->m->cfg.n_groups : 0;
}

void ember_tts_cancel(ember_tts *t)
{
    if (t) atomic_store(&t->cancel, 1);
}

static cJSON *int_array(const int32_t *v, int32_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; a && i < n; i++)
        if (!cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

static cJSON *names(const tts_named_id *v, int32_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; a && i < n; i++)
        if (!cJSON_AddItemToArray(a, cJSON_CreateString(v[i].name))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

/* The calibration's part of ember_tts_info. */
static bool add_chunking(cJSON *o, const ember_tts *t)
{
    static const char *const kind[] = {"default", "calibrated", "adaptive"};
    if (!cJSON_AddStringToObject(o, "chunking", kind[t->chunking])) return false;
    if (t->chunking == SPEECH_CHUNKS_DEFAULT) return true;
    char text[1536];
    edge_calibration_describe(&t->cal, t->cal_path, text, sizeof text);
    bool ok = cJSON_AddItemToObject(o, "ramp", int_array(t->cal.ramp, t->cal.n_ramp)) &&
              cJSON_AddNumberToObject(o, "rate_fps", t->cal.rate_fps) &&
              cJSON_AddStringToObject(o, "path", t->cal_path) && cJSON_AddStringToObject(o, "description", text);
    return ok;
}

ember_status ember_tts_info(const ember_tts *t, char **json)
{
    if (json) *json = NULL;
    if (!t || !json) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tts_info: a NULL argument");
    const tts_config *c = &t->m->cfg;
    static const char *const types[] = {[TTS_CUSTOM_VOICE] = "custom_voice", [TTS_BASE] = "base",
                                        [TTS_VOICE_DESIGN] = "voice_design"};
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddStringToObject(o, "model_type", types[c->type]) &&
              cJSON_AddBoolToObject(o, "small", c->small) &&
              cJSON_AddNumberToObject(o, "xvector_dim", c->type == TTS_BASE ? c->talker.hidden : 0) &&
              cJSON_AddStringToObject(o, "weights", edge_type_name(t->m->weight_type)) &&
              cJSON_AddStringToObject(o, "decoder_weights", t->dm ? c2w_weights_name(t->dm) : "") &&
              cJSON_AddStringToObject(o, "kernels", t->m->kernels->name) &&
              cJSON_AddNumberToObject(o, "generator_threads", t->gen_threads) &&
              cJSON_AddNumberToObject(o, "decoder_threads", t->dec ? t->dec_threads : 0) &&
              cJSON_AddItemToObject(o, "generator_cpus", int_array(t->p.generator_cpus, t->p.n_generator_cpus)) &&
              cJSON_AddItemToObject(o, "decoder_cpus", int_array(t->p.decoder_cpus, t->p.n_decoder_cpus)) &&
              cJSON_AddNumberToObject(o, "samples_per_frame", t->dm ? t->dm->cfg.samples_per_frame : 0) &&
              cJSON_AddNumberToObject(o, "sample_rate", ember_tts_sample_rate(t)) &&
              cJSON_AddNumberToObject(o, "codebooks", c->n_groups) &&
              cJSON_AddItemToObject(o, "speakers", names(c->speakers, c->n_speakers)) &&
              cJSON_AddItemToObject(o, "languages", names(c->languages, c->n_languages)) && add_chunking(o, t);
    if (!ok) {
        cJSON_Delete(o);
        o = NULL;
    }
    return api_json_out(o, "ember_tts_info", json);
}
