#include "serve/speech.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "io/wav.h"
#include "serve/job.h"
#include "serve/server_internal.h"
#include "serve/speech_voices.h"
#include "tokenizer/tokenizer.h"
#include "tts/tts_pipeline.h"
#include "tts/tts_text.h"

enum speech_format { FORMAT_WAV, FORMAT_PCM };

/* One queued request: what the engine needs, and the job whose bytes the
 * HTTP side reads. */
typedef struct speech_job {
    sv_job *job;
    int32_t *ids;
    size_t n_ids;
    int32_t *instruct_ids; /* "instructions" as the prompt's block; NULL: none */
    size_t n_instruct_ids;
    const float *xvector;  /* a saved voice's (the server's, immutable) */
    int32_t *ref_ids;      /* its transcript's ids (in-context cloning); NULL: x-vector alone */
    size_t n_ref_ids;
    const int32_t *ref_codes; /* its frames (the server's) */
    int32_t n_ref_frames;
    char voice[TTS_NAME_MAX], language[TTS_NAME_MAX];
    enum speech_format format;
    int stream;
    uint64_t seed;
    int32_t max_frames;
    double deadline;
    struct speech_job *next;
} speech_job;

struct sv_speech {
    sv_speech_params p;
    char name[256];
    sv_metrics *metrics;
    tts_model *m;
    c2w_model *dm;
    tts_session *gen;
    c2w_stream *dec;
    et_tokenizer *tok;
    bool calibrated;
    edge_calibration calibration;
    sv_voices voices;
    int32_t ref_rows; /* the most prompt rows a saved voice's reference adds */
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    speech_job *head, *tail;
    int queued, stop;
};

static void speech_job_free(speech_job *q)
{
    if (!q) return;
    if (q->job) sv_job_unref(q->job);
    free(q->ids);
    free(q->instruct_ids);
    free(q->ref_ids);
    free(q);
}

/* ---- the engine thread ---------------------------------------------------- */

typedef struct run_ctx {
    sv_speech *s;
    speech_job *q;
    double t_submit;
    int first;
    char *body; /* the non-streamed response being assembled */
    size_t n_body, cap_body;
    int failed;
} run_ctx;

static int append(run_ctx *c, const void *bytes, size_t n)
{
    if (c->q->stream) return sv_job_write(c->q->job, bytes, n);
    if (c->n_body + n > c->cap_body) {
        size_t cap = c->cap_body ? 2 * c->cap_body : 1 << 20;
        while (cap < c->n_body + n) cap *= 2;
        char *p = realloc(c->body, cap);
        if (!p) return -1;
        c->body = p;
        c->cap_body = cap;
    }
    memcpy(c->body + c->n_body, bytes, n);
    c->n_body += n;
    return 0;
}

static int on_pcm(void *user, const float *pcm, size_t n, const tts_chunk_info *info)
{
    run_ctx *c = user;
    (void)info;
    if (sv_job_cancelled(c->q->job) || sv_now() > c->q->deadline) return 1;
    if (c->first) {
        c->first = 0;
        sv_metrics_observe(c->s->metrics, &c->s->metrics->ttfa, sv_now() - c->t_submit);
        if (c->q->format == FORMAT_WAV) {
            /* streamed: sizes unknown, so the largest (players read to the end);
             * assembled: patched when the length is known */
            uint8_t h[44];
            wav_header(h, (uint32_t)c->s->dm->cfg.sample_rate, 1, (UINT32_MAX - 36) / 2);
            if (append(c, h, sizeof h)) return c->failed = 1;
        }
    }
    int16_t buf[4096];
    for (size_t off = 0; off < n;) {
        size_t k = n - off < 4096 ? n - off : 4096;
        wav_f32_to_s16(pcm + off, buf, k);
        if (append(c, buf, k * sizeof *buf)) return c->failed = 1;
        off += k;
    }
    return 0;
}

static void run(sv_speech *s, speech_job *q)
{
    run_ctx c = {s, q, q->job->t_submit, 1, NULL, 0, 0, 0};
    tts_request rq;
    memset(&rq, 0, sizeof rq);
    rq.text_ids = q->ids;
    rq.n_text_ids = q->n_ids;
    rq.speaker = q->voice[0] && !q->xvector ? q->voice : NULL;
    rq.language = q->language[0] ? q->language : NULL;
    rq.instruct_ids = q->instruct_ids;
    rq.n_instruct_ids = q->n_instruct_ids;
    rq.xvector = q->xvector;
    rq.ref_ids = q->ref_ids;
    rq.n_ref_ids = q->n_ref_ids;
    rq.ref_codes = q->ref_codes;
    rq.n_ref_frames = q->n_ref_frames;
    rq.streaming = q->xvector != NULL; /* the official default of a clone */
    rq.seed = q->seed;
    rq.max_frames = q->max_frames;
    /* the calibrated schedule; adaptive: a controller that starts from it */
    tts_pipeline_params pp = tts_pipeline_default_params();
    edge_chunk_ctl ctl;
    if (s->calibrated) {
        pp.schedule.n = edge_calibration_schedule(&s->calibration, pp.schedule.sizes, TTS_MAX_SCHEDULE);
        edge_chunk_ctl_init(&ctl, &s->calibration);
        if (s->calibration.adaptive)
            pp.controller = (tts_chunk_controller){edge_chunk_ctl_callback, &ctl, EDGE_CAL_STEADY};
    }
    ember_status st = tts_synthesize(s->gen, s->dec, &rq, &pp, on_pcm, &c, NULL);
    sv_error e;
    if (st && !c.failed && st != EMBER_ERR_CANCELLED) {
        sv_error_set(&e, 500, "server_error", NULL, NULL, "speech failed: %s", ember_last_error());
    } else if (c.failed) {
        sv_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
    } else if (st == EMBER_ERR_CANCELLED && sv_now() > q->deadline) {
        sv_error_set(&e, 504, "timeout_error", NULL, "timeout", "the request timed out");
    } else {
        e.status = 0;
    }
    if (q->stream) {
        sv_job_finish(q->job, e.status ? e.status : 200, NULL, 0);
    } else if (e.status) {
        char *json = sv_error_json(&e);
        sv_job_finish(q->job, e.status, json, json ? strlen(json) : 0);
        free(json);
    } else {
        if (q->format == FORMAT_WAV && c.n_body >= 44)
            wav_header((uint8_t *)c.body, (uint32_t)s->dm->cfg.sample_rate, 1,
                       (uint32_t)((c.n_body - 44) / 2));
        sv_job_finish(q->job, 200, c.body, c.n_body);
    }
    free(c.body);
}

static void *engine_main(void *arg)
{
    sv_speech *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->head && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
        speech_job *q = s->head;
        if (q) {
            s->head = q->next;
            if (!s->head) s->tail = NULL;
            s->queued--;
        }
        int stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (!q) break;
        if (stop || sv_job_cancelled(q->job)) {
            sv_job_finish(q->job, 503, NULL, 0);
        } else {
            run(s, q);
        }
        speech_job_free(q);
    }
    return NULL;
}

/* ---- creation ------------------------------------------------------------- */

ember_status sv_speech_create(const sv_speech_params *p, sv_metrics *metrics, sv_speech **out)
{
    *out = NULL;
    if (!p || !p->dir) return ember_fail(EMBER_ERR_INVALID_ARG, "speech: no model directory");
    sv_speech *s = calloc(1, sizeof *s);
    if (!s) return ember_fail(EMBER_ERR_NO_MEMORY, "speech: out of memory");
    s->p = *p;
    s->calibrated = p->calibration != NULL;
    if (p->calibration) s->calibration = *p->calibration;
    s->p.calibration = NULL; /* the copy above is the engine's */
    if (!s->p.max_queue) s->p.max_queue = 8;
    if (!s->p.timeout_s) s->p.timeout_s = 600;
    if (!s->p.max_input_bytes) s->p.max_input_bytes = 4096;
    if (!s->p.max_frames) s->p.max_frames = 4096;
    s->metrics = metrics;
    const char *base = strrchr(p->dir, '/');
    base = base && base[1] ? base + 1 : p->dir;
    snprintf(s->name, sizeof s->name, "%s", base);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    tts_model_params mp = {p->weight_type, NULL};
    c2w_model_params dp = {EMBER_TYPE_F32, NULL, 1};
    tts_session_params sp = tts_session_default_params();
    sp.n_threads = p->n_threads;
    sp.onnx_dir = p->onnx_dir;
    sp.onnx_runtime = p->onnx_runtime;
    sp.onnx_provider = p->onnx_provider;
    sp.onnx_options = p->onnx_options;
    /* the prompt (the input's tokens and ~20 more) and every frame */
    sp.max_context = s->p.max_frames + 2 * (int32_t)s->p.max_input_bytes + 64; /* input and instructions */
    c2w_stream_params cp = c2w_stream_default_params();
    cp.n_threads = p->n_threads;
    ember_status st;
    if ((st = tts_model_load(p->dir, &mp, &s->m)) || (st = c2w_model_load(p->dir, &dp, &s->dm)) ||
        (st = et_tokenizer_load(p->dir, &s->tok)) ||
        (p->voices_dir && (st = sv_voices_load(p->voices_dir, s->m->cfg.type == TTS_BASE ? s->m->cfg.talker.hidden : 0,
                                               &s->voices)))) {
        sv_speech_free(s);
        return st;
    }
    /* a saved voice with a transcript puts its frames and text in the prompt */
    for (int32_t i = 0; i < s->voices.n; i++) {
        const voice_data *v = &s->voices.voices[i];
        const int32_t rows = v->ref_text ? v->n_frames + (int32_t)strlen(v->ref_text) + 8 : 0;
        if (rows > s->ref_rows) s->ref_rows = rows;
    }
    sp.max_context += s->ref_rows;
    if ((st = tts_session_create(s->m, &sp, &s->gen)) || (st = c2w_stream_create(s->dm, &cp, &s->dec))) {
        sv_speech_free(s);
        return st;
    }
    if (pthread_create(&s->thread, NULL, engine_main, s) != 0) {
        sv_speech_free(s);
        return ember_fail(EMBER_ERR_NO_MEMORY, "speech: cannot start the engine thread");
    }
    s->started = 1;
    *out = s;
    return EMBER_OK;
}

void sv_speech_free(sv_speech *s)
{
    if (!s) return;
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
    }
    for (speech_job *q = s->head, *n; q; q = n) {
        n = q->next;
        sv_job_finish(q->job, 503, NULL, 0);
        speech_job_free(q);
    }
    c2w_stream_free(s->dec);
    tts_session_free(s->gen);
    et_tokenizer_free(s->tok);
    sv_voices_free(&s->voices);
    c2w_model_free(s->dm);
    tts_model_free(s->m);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

const char *sv_speech_model_name(const sv_speech *s) { return s->name; }

cJSON *sv_speech_capabilities(const sv_speech *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *voices = cJSON_AddArrayToObject(o, "voices");
    cJSON *languages = cJSON_AddArrayToObject(o, "languages");
    cJSON *formats = cJSON_AddArrayToObject(o, "formats");
    if (!voices || !languages || !formats) {
        cJSON_Delete(o);
        return NULL;
    }
    static const char *const types[] = {[TTS_CUSTOM_VOICE] = "custom_voice", [TTS_BASE] = "base",
                                        [TTS_VOICE_DESIGN] = "voice_design"};
    const tts_config *c = &s->m->cfg;
    cJSON_AddStringToObject(o, "model", s->name);
    cJSON_AddStringToObject(o, "model_type", types[c->type]);
    cJSON_AddBoolToObject(o, "instructions", c->type != TTS_BASE && !c->small);
    for (int32_t i = 0; i < s->m->cfg.n_speakers; i++)
        cJSON_AddItemToArray(voices, cJSON_CreateString(s->m->cfg.speakers[i].name));
    for (int32_t i = 0; i < s->voices.n; i++) cJSON_AddItemToArray(voices, cJSON_CreateString(s->voices.names[i]));
    for (int32_t i = 0; i < s->m->cfg.n_languages; i++)
        cJSON_AddItemToArray(languages, cJSON_CreateString(s->m->cfg.languages[i].name));
    cJSON_AddItemToArray(formats, cJSON_CreateString("wav"));
    cJSON_AddItemToArray(formats, cJSON_CreateString("pcm"));
    const int32_t rate = s->dm->cfg.sample_rate;
    cJSON_AddNumberToObject(o, "sample_rate", rate);
    cJSON_AddNumberToObject(o, "max_frames", s->p.max_frames);
    cJSON_AddNumberToObject(o, "frame_ms", 80);
    cJSON_AddNumberToObject(o, "max_input_bytes", (double)s->p.max_input_bytes);
    return o;
}

/* ---- the request ---------------------------------------------------------- */


/* A string field: absent gives def (NULL when required and then an error). */
static int get_string(const cJSON *o, const char *key, int required, const char **out,
                      sv_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        *out = NULL;
        return required ? sv_error_set(e, 400, "invalid_request_error", key, NULL,
                                       "%s is required", key)
                        : 0;
    }
    if (!cJSON_IsString(v))
        return sv_error_set(e, 400, "invalid_request_error", key, NULL, "%s must be a string", key);
    *out = v->valuestring;
    return 0;
}

/* "voice" and "instructions" against what the model is: a built-in
 * speaker or a saved voice (a Base model's), and an instruction for a model
 * that takes one (a 0.6B model drops it, as the official code does). */
static int parse_voice(sv_speech *s, const char *voice, const char *instructions, speech_job *q, sv_error *e)
{
    const tts_config *c = &s->m->cfg;
    const voice_data *saved = sv_voices_find(&s->voices, voice);
    if (c->type == TTS_BASE && !saved)
        return sv_error_set(e, 400, "invalid_request_error", "voice", NULL,
                            voice ? "voice '%.60s' is not one of the server's saved voices (--voices)"
                                  : "this model clones voices: name one of the server's saved voices (--voices)%.0s",
                            voice ? voice : "");
    if (c->type != TTS_BASE && voice && tts_config_speaker(c, voice) < 0)
        return sv_error_set(e, 400, "invalid_request_error", "voice", NULL,
                            "voice '%.60s' is not one of this model's speakers", voice);
    if (instructions && instructions[0] && c->type == TTS_BASE)
        return sv_error_set(e, 400, "invalid_request_error", "instructions", NULL,
                            "a Base model (voice cloning) takes no instructions");
    q->xvector = saved ? saved->xvector : NULL;
    if (saved && saved->ref_text && saved->n_frames) { /* in context: its transcript and frames too */
        if (tts_text_encode(s->tok, TTS_TEXT_REFERENCE, saved->ref_text, &q->ref_ids, &q->n_ref_ids))
            return sv_error_set(e, 500, "server_error", NULL, NULL, "voice: %s", ember_last_error());
        q->ref_codes = saved->codes;
        q->n_ref_frames = saved->n_frames;
    }
    if (!instructions || !instructions[0] || c->small) return 0;
    return tts_text_encode(s->tok, TTS_TEXT_INSTRUCT, instructions, &q->instruct_ids, &q->n_instruct_ids)
               ? sv_error_set(e, 400, "invalid_request_error", "instructions", NULL, "instructions: %s",
                              ember_last_error())
               : 0;
}

/* The request fields into q (ids tokenized here, on the HTTP thread). */
static int parse(sv_speech *s, const char *body, size_t len, speech_job *q, sv_error *e)
{
    cJSON *o = cJSON_ParseWithLength(body, len);
    const char *input, *voice, *language, *format, *model, *instructions;
    int rc = -1;
    if (!cJSON_IsObject(o)) {
        sv_error_set(e, 400, "invalid_request_error", NULL, NULL,
                     "the body must be a JSON object");
        goto done;
    }
    if (get_string(o, "input", 1, &input, e) || get_string(o, "voice", 0, &voice, e) ||
        get_string(o, "language", 0, &language, e) ||
        get_string(o, "response_format", 0, &format, e) || get_string(o, "model", 0, &model, e) ||
        get_string(o, "instructions", 0, &instructions, e))
        goto done;
    size_t n_in = strlen(input);
    if (!n_in || n_in > s->p.max_input_bytes) {
        sv_error_set(e, 400, "invalid_request_error", "input", NULL,
                     "input must have 1 to %zu bytes", s->p.max_input_bytes);
        goto done;
    }
    if (instructions && strlen(instructions) > s->p.max_input_bytes) {
        sv_error_set(e, 400, "invalid_request_error", "instructions", NULL,
                     "instructions must have at most %zu bytes", s->p.max_input_bytes);
        goto done;
    }
    if (parse_voice(s, voice, instructions, q, e)) goto done;
    if (language && strcmp(language, "auto") && tts_config_language(&s->m->cfg, language) < 0) {
        sv_error_set(e, 400, "invalid_request_error", "language", NULL,
                     "language '%.60s' is not one this model knows", language);
        goto done;
    }
    if (format && strcmp(format, "wav") && strcmp(format, "pcm")) {
        sv_error_set(e, 400, "invalid_request_error", "response_format", NULL,
                     "response_format '%.30s' is not supported (wav or pcm)", format);
        goto done;
    }
    const cJSON *stream = cJSON_GetObjectItemCaseSensitive(o, "stream");
    const cJSON *stream_format = cJSON_GetObjectItemCaseSensitive(o, "stream_format");
    if (stream && !cJSON_IsBool(stream) && !cJSON_IsNull(stream)) {
        sv_error_set(e, 400, "invalid_request_error", "stream", NULL, "stream must be a boolean");
        goto done;
    }
    if (stream_format && (!cJSON_IsString(stream_format) ||
                          strcmp(stream_format->valuestring, "audio"))) {
        sv_error_set(e, 400, "invalid_request_error", "stream_format", NULL,
                     "stream_format must be \"audio\"");
        goto done;
    }
    q->stream = cJSON_IsTrue(stream) || stream_format;
    /* extensions: the same input, voice and seed give the same audio;
     * max_frames bounds the audio (80 ms a frame) below the server's cap */
    q->max_frames = s->p.max_frames;
    const cJSON *mf = cJSON_GetObjectItemCaseSensitive(o, "max_frames");
    if (mf && !cJSON_IsNull(mf)) {
        if (!cJSON_IsNumber(mf) || mf->valuedouble < 1 || mf->valuedouble > s->p.max_frames ||
            mf->valuedouble != (double)(int32_t)mf->valuedouble) {
            sv_error_set(e, 400, "invalid_request_error", "max_frames", NULL,
                         "max_frames must be an integer in [1, %d]", s->p.max_frames);
            goto done;
        }
        q->max_frames = (int32_t)mf->valuedouble;
    }
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(o, "seed");
    if (seed && !cJSON_IsNull(seed)) {
        if (!cJSON_IsNumber(seed) || seed->valuedouble < 0 || seed->valuedouble > 9007199254740991.0 ||
            seed->valuedouble != (double)(uint64_t)seed->valuedouble) {
            sv_error_set(e, 400, "invalid_request_error", "seed", NULL,
                         "seed must be a non-negative integer");
            goto done;
        }
        q->seed = (uint64_t)seed->valuedouble;
    }
    q->format = format && !strcmp(format, "pcm") ? FORMAT_PCM : FORMAT_WAV;
    snprintf(q->voice, sizeof q->voice, "%s", voice ? voice : "");
    snprintf(q->language, sizeof q->language, "%s", language ? language : "");
    /* the text template the TTS prompt takes (tts_session.h) */
    if (tts_text_encode(s->tok, TTS_TEXT_TARGET, input, &q->ids, &q->n_ids)) {
        sv_error_set(e, 400, "invalid_request_error", "input", NULL, "input: %s", ember_last_error());
        goto done;
    }
    rc = 0;
done:
    cJSON_Delete(o);
    return rc;
}

static int submit(sv_speech *s, speech_job *q, sv_error *e)
{
    pthread_mutex_lock(&s->mu);
    int full = s->queued >= s->p.max_queue || s->stop;
    if (!full) {
        q->next = NULL;
        if (s->tail) s->tail->next = q;
        else s->head = q;
        s->tail = q;
        s->queued++;
        pthread_cond_signal(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    if (full)
        return sv_error_set(e, 503, "server_error", NULL, "overloaded",
                            "the speech queue is full; retry later");
    return 0;
}

void sv_speech_handle(sv_speech *s, const char *body, size_t len, sv_response *out)
{
    memset(out, 0, sizeof *out);
    sv_error e;
    speech_job *q = calloc(1, sizeof *q);
    sv_job *j = q ? sv_job_create() : NULL;
    if (!q || !j) {
        free(q);
        sv_error_set(&e, 500, "server_error", NULL, NULL, "out of memory");
        sv_respond_error(out, &e);
        return;
    }
    q->job = j;
    j->t_submit = sv_now();
    j->created = (long long)time(NULL);
    q->deadline = j->t_submit + s->p.timeout_s;
    j->deadline = q->deadline;
    if (parse(s, body, len, q, &e)) {
        speech_job_free(q);
        sv_respond_error(out, &e);
        return;
    }
    sv_job_ref(j); /* the engine's */
    const int stream = q->stream, format = q->format;
    if (submit(s, q, &e)) {
        sv_job_unref(j);
        speech_job_free(q);
        sv_respond_error(out, &e);
        return;
    }
    const char *type = format == FORMAT_PCM ? "audio/pcm" : "audio/wav";
    if (stream) {
        out->status = 200;
        out->content_type = type;
        out->stream = j; /* the caller's reference */
        return;
    }
    sv_respond_job(out, j, type);
    sv_job_unref(j);
}
