/* The endpoints: each turns a complete request into an sv_response. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm/spark.h"
#include "onnx/backend.h"
#include "serve/prefix_cache.h"
#include "serve/server_internal.h"
#include "serve/ui_assets.h"

static const char json_type[] = "application/json";

static void respond_json(sv_response *out, int status, cJSON *o)
{
    out->status = status;
    out->content_type = json_type;
    out->body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!out->body) {
        out->status = 500;
        out->body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\","
                           "\"param\":null,\"code\":null}}");
    }
    out->len = out->body ? strlen(out->body) : 0;
}

void sv_respond_error(sv_response *out, const sv_error *e)
{
    out->status = e->status;
    out->content_type = json_type;
    out->body = sv_error_json(e);
    out->len = out->body ? strlen(out->body) : 0;
    if (e->status == 503) out->retry_after = 1;
    if (e->status == 401) out->www_authenticate = 1;
}

void sv_respond_too_large(sv_server *s, sv_response *out)
{
    sv_error e;
    sv_error_set(&e, 413, "invalid_request_error", NULL, "request_too_large",
                 "the request body is larger than %zu bytes", s->p.max_body);
    sv_respond_error(out, &e);
}

/* Constant-time comparison of the Authorization header with the key. */
static int authorized(const sv_server *s, const char *auth)
{
    if (!s->api_key) return 1;
    static const char bearer[] = "Bearer ";
    if (!auth || strncmp(auth, bearer, sizeof bearer - 1)) return 0;
    const char *given = auth + sizeof bearer - 1;
    size_t n = strlen(given), k = strlen(s->api_key);
    unsigned diff = (unsigned)(n ^ k);
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)given[i] ^ (unsigned char)s->api_key[i % (k ? k : 1)];
    return diff == 0;
}

static cJSON *model_object(const sv_server *s)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", s->model_name);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)s->started);
    cJSON_AddStringToObject(m, "owned_by", "ember");
    cJSON_AddNumberToObject(m, "max_model_len", s->p.ctx);
    return m;
}

static void list_models(sv_server *s, sv_response *out)
{
    cJSON *o = cJSON_CreateObject(), *data = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddItemToArray(data, model_object(s));
    if (s->speech) { /* the speech model, with what it can do: voices, instructions */
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "id", sv_speech_model_name(s->speech));
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddNumberToObject(m, "created", (double)s->started);
        cJSON_AddStringToObject(m, "owned_by", "ember");
        cJSON *caps = sv_speech_capabilities(s->speech);
        if (caps) cJSON_AddItemToObject(m, "speech", caps);
        cJSON_AddItemToArray(data, m);
    }
    cJSON_AddItemToObject(o, "data", data);
    respond_json(out, 200, o);
}

/* What the UI adapts to: the model, its context and sampling defaults,
 * and the speech model's voices when there is one. */
static void capabilities(sv_server *s, sv_response *out)
{
    cJSON *o = cJSON_CreateObject(), *d = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", s->model_name);
    cJSON_AddNumberToObject(o, "max_model_len", s->p.ctx);
    cJSON_AddNumberToObject(o, "max_seqs", s->p.max_seqs);
    cJSON_AddBoolToObject(o, "auth", s->api_key != NULL);
    cJSON_AddBoolToObject(o, "tools", 1);
    cJSON_AddNumberToObject(d, "temperature", s->sampling.temperature);
    cJSON_AddNumberToObject(d, "top_p", s->sampling.top_p);
    cJSON_AddNumberToObject(d, "top_k", s->sampling.top_k);
    cJSON_AddItemToObject(o, "sampling", d);
    cJSON *speech = s->speech ? sv_speech_capabilities(s->speech) : cJSON_CreateNull();
    if (speech) cJSON_AddItemToObject(o, "speech", speech);
    else cJSON_AddNullToObject(o, "speech");
    respond_json(out, 200, o);
}

/* A file of the browser UI, under its Content-Security-Policy. */
static void respond_asset(sv_response *out, const sv_asset *a)
{
    out->status = 200;
    out->content_type = a->content_type;
    out->csp = SV_UI_CSP;
    out->body = malloc(a->len ? a->len : 1);
    if (!out->body) {
        out->status = 500;
        return;
    }
    memcpy(out->body, a->data, a->len);
    out->len = a->len;
}

static uint64_t next_id(sv_server *s)
{
    pthread_mutex_lock(&s->id_mu);
    uint64_t id = ++s->next_id;
    pthread_mutex_unlock(&s->id_mu);
    return id;
}

/* The sampling of a job: the model's defaults, then what the request set. */
static void job_params(sv_server *s, sv_job *j)
{
    const sv_request *r = &j->req;
    et_textgen_params *gp = &j->gp;
    const int in_reasoning = gp->start_in_reasoning; /* tokenize_prompt's */
    et_textgen_params_default(gp);
    gp->start_in_reasoning = in_reasoning;
    gp->sampling = s->sampling;
    if (r->set.temperature) gp->sampling.temperature = r->temperature;
    if (r->set.top_p) gp->sampling.top_p = r->top_p;
    if (r->set.top_k) gp->sampling.top_k = r->top_k;
    gp->sampling.presence_penalty = r->presence_penalty;
    gp->sampling.frequency_penalty = r->frequency_penalty;
    /* no seed: a different one per request, as OpenAI samples */
    gp->sampling.seed = r->set.seed ? r->seed : next_id(s) * 0x9e3779b97f4a7c15ull;
    gp->sampling.logit_bias = r->bias;
    gp->sampling.n_logit_bias = r->n_bias;
    gp->stop = (const char *const *)r->stop;
    gp->n_stop = r->n_stop;
    gp->stop_ids = s->stop_ids;
    gp->n_stop_ids = s->n_stop_ids;
    gp->max_tokens = j->max_tokens;
    gp->parse_tools = r->kind == SV_CHAT;
    gp->force_tools = r->force_tools;
    gp->n_force_tools = r->n_force_tools;
    gp->single_call = r->single_call;
}

/* The job's speculative decoding: the request's choice, else the server's
 * flag; a draft model only when the server loaded one. */
static int job_speculate(const sv_server *s, sv_job *j, sv_error *e)
{
    const sv_request *r = &j->req;
    const sv_speculate server = !s->p.draft_max ? SV_SPECULATE_OFF
                              : s->draft ? SV_SPECULATE_DRAFT : SV_SPECULATE_NGRAM;
    j->speculate = r->speculate ? r->speculate : server;
    if (j->speculate != SV_SPECULATE_OFF && s->model->onnx)
        return sv_error_set(e, 400, "invalid_request_error", "speculate", NULL,
                            "speculative decoding is not available with the onnx backend (its graph runs one "
                            "token per step)");
    if (j->speculate == SV_SPECULATE_DRAFT && !s->draft)
        return sv_error_set(e, 400, "invalid_request_error", "speculate", "drafter_not_loaded",
                            "speculate \"draft\": this server has no draft model (start it with "
                            "--speculate draft:DIR); \"ngram\" and \"off\" are available");
    j->draft_max = r->draft_max ? r->draft_max : s->p.draft_max ? s->p.draft_max : SV_DEFAULT_DRAFT_MAX;
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !memcmp(s + n - k, suffix, k);
}

/* Chat with the prefix cache on: the prompt positions where its messages
 * start (the boundaries the engine snapshots). Each segment between two
 * boundaries of the rendered text is tokenized alone; a boundary counts
 * while the segments' ids agree with the whole prompt's (a template puts a
 * special token there, so they do), and the first disagreement ends the
 * list. Best effort: without memory there are no boundaries. */
static void message_bounds(sv_server *s, sv_job *j, const et_chat_input *in, const char *text)
{
    size_t *ends = NULL, n_ends = 0, from = 0, pos = 0;
    if (!s->p.prefix_cache_bytes ||
        et_chat_message_ends(s->tmpl, in, text, SV_PREFIX_MAX_SNAPSHOTS, &ends, &n_ends) || !n_ends ||
        !(j->bounds = malloc(n_ends * sizeof *j->bounds))) {
        free(ends);
        return;
    }
    for (size_t k = 0; k < n_ends; k++) {
        int32_t *ids = NULL;
        size_t n = 0;
        int agree = et_tokenizer_encode(s->tok, text + from, ends[k] - from, 0, &ids, &n) == EMBER_OK &&
                    n > 0 && pos + n < j->n_prompt && !memcmp(ids, j->prompt + pos, n * sizeof *ids);
        free(ids);
        if (!agree) break;
        pos += n;
        from = ends[k];
        j->bounds[j->n_bounds++] = (int32_t)pos;
    }
    free(ends);
}

/* The prompt ids of a request (chat: the rendered template). */
static int tokenize_prompt(sv_server *s, sv_job *j, sv_error *e)
{
    sv_request *r = &j->req;
    char *text = NULL;
    int add_special = 1;
    const et_chat_input in = {r->messages, r->tools, true, -1, NULL};
    if (r->kind == SV_CHAT) {
        if (et_chat_render(s->tmpl, &in, &text))
            return sv_error_set(e, 400, "invalid_request_error", "messages", NULL,
                                "the chat template rejected the messages: %s", ember_last_error());
        add_special = 0; /* the template writes its own special tokens */
        j->gp.start_in_reasoning = ends_with(text, "<think>\n") || ends_with(text, "<think>");
    } else if (r->prompt_ids) {
        j->prompt = r->prompt_ids;
        j->n_prompt = r->n_prompt_ids;
        r->prompt_ids = NULL;
        r->n_prompt_ids = 0;
        return 0;
    }
    const char *src = text ? text : r->prompt;
    ember_status st = et_tokenizer_encode(s->tok, src, strlen(src), add_special, &j->prompt, &j->n_prompt);
    if (!st && text) message_bounds(s, j, &in, text);
    free(text);
    if (st)
        return sv_error_set(e, 400, "invalid_request_error", r->kind == SV_CHAT ? "messages" : "prompt",
                            NULL, "cannot tokenize the prompt: %s", ember_last_error());
    if (j->n_prompt == 0)
        return sv_error_set(e, 400, "invalid_request_error", "prompt", NULL, "the prompt is empty");
    return 0;
}

/* Builds a job from a body; NULL with *e set on a bad request. */
static sv_job *make_job(sv_server *s, sv_kind kind, const char *body, size_t len, sv_error *e)
{
    sv_job *j = sv_job_create();
    if (!j) {
        sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        return NULL;
    }
    if (sv_request_parse(kind, body, len, ember_model_vocab_size(s->model), &j->req, e)) goto bad;
    if (strcmp(j->req.model, s->model_name)) {
        sv_error_set(e, 404, "invalid_request_error", "model", "model_not_found",
                     "the model '%.200s' does not exist; this server runs '%s'", j->req.model,
                     s->model_name);
        goto bad;
    }
    if (tokenize_prompt(s, j, e)) goto bad;
    if (j->n_prompt >= (size_t)s->p.ctx) {
        sv_error_set(e, 400, "invalid_request_error", kind == SV_CHAT ? "messages" : "prompt",
                     "context_length_exceeded",
                     "the prompt has %zu tokens; this server's context is %d tokens", j->n_prompt,
                     s->p.ctx);
        goto bad;
    }
    const int32_t room = s->p.ctx - (int32_t)j->n_prompt;
    j->max_tokens = j->req.max_tokens ? j->req.max_tokens : room;
    if (j->max_tokens > room) {
        sv_error_set(e, 400, "invalid_request_error", "max_tokens", "context_length_exceeded",
                     "the prompt (%zu tokens) and max_tokens (%d) exceed this server's context of "
                     "%d tokens",
                     j->n_prompt, j->max_tokens, s->p.ctx);
        goto bad;
    }
    job_params(s, j);
    if (job_speculate(s, j, e)) goto bad;
    snprintf(j->id, sizeof j->id, "%s-%llx", kind == SV_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)next_id(s));
    j->model_name = s->model_name;
    j->created = (long long)time(NULL);
    j->t_submit = sv_now();
    j->deadline = j->t_submit + s->p.timeout_s;
    pthread_mutex_lock(&s->metrics.mu);
    s->metrics.prompt_tokens += j->n_prompt;
    s->metrics.prompt_tokens_run += j->n_prompt;
    pthread_mutex_unlock(&s->metrics.mu);
    return j;
bad:
    sv_job_unref(j);
    return NULL;
}

static void completion(sv_server *s, sv_kind kind, const char *body, size_t len, sv_response *out)
{
    sv_error e;
    sv_job *j = make_job(s, kind, body, len, &e);
    if (!j || sv_engine_submit(s->engine, j, &e)) {
        sv_job_unref(j);
        sv_respond_error(out, &e);
        return;
    }
    if (j->req.stream) {
        out->status = 200;
        out->content_type = "text/event-stream";
        out->stream = j; /* the caller's reference now */
        return;
    }
    sv_respond_job(out, j, json_type);
    sv_job_unref(j);
}

void sv_respond_job(sv_response *out, sv_job *j, const char *type)
{
    sv_error e;
    /* the engines end every job by its deadline; the margin covers a step */
    if (sv_job_wait_done(j, j->deadline + 60)) {
        sv_job_cancel(j);
        sv_error_set(&e, 504, "timeout_error", NULL, "timeout", "the request timed out");
        sv_respond_error(out, &e);
        return;
    }
    pthread_mutex_lock(&j->mu);
    out->status = j->status;
    out->content_type = j->status == 200 ? type : json_type;
    out->body = malloc(j->n_out + 1);
    if (out->body) {
        memcpy(out->body, j->out, j->n_out);
        out->body[j->n_out] = '\0';
        out->len = j->n_out;
    } else {
        out->status = 500;
    }
    pthread_mutex_unlock(&j->mu);
}

void sv_handle(sv_server *s, const char *method, const char *path, const char *auth,
               const char *body, size_t len, sv_response *out)
{
    memset(out, 0, sizeof *out);
    sv_error e;
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    if (get && !strcmp(path, "/health")) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status", "ok");
        respond_json(out, 200, o);
        return;
    }
    sv_asset asset;
    if (get && sv_ui_asset(path, &asset)) {
        respond_asset(out, &asset);
        return;
    }
    if (!authorized(s, auth)) {
        sv_error_set(&e, 401, "authentication_error", NULL, "invalid_api_key",
                     "a valid API key is required: Authorization: Bearer KEY");
        sv_respond_error(out, &e);
        return;
    }
    if (get && !strcmp(path, "/metrics")) {
        out->status = 200;
        out->content_type = "text/plain; version=0.0.4";
        out->body = sv_metrics_render(&s->metrics);
        out->len = out->body ? strlen(out->body) : 0;
        if (!out->body) out->status = 500;
        return;
    }
    if (get && !strcmp(path, "/capabilities")) {
        capabilities(s, out);
        return;
    }
    if (get && !strcmp(path, "/v1/models")) {
        list_models(s, out);
        return;
    }
    if (get && !strncmp(path, "/v1/models/", 11)) {
        if (!strcmp(path + 11, s->model_name)) {
            respond_json(out, 200, model_object(s));
        } else {
            sv_error_set(&e, 404, "invalid_request_error", "model", "model_not_found",
                         "the model '%.200s' does not exist", path + 11);
            sv_respond_error(out, &e);
        }
        return;
    }
    if (post && !strcmp(path, "/v1/chat/completions")) {
        completion(s, SV_CHAT, body, len, out);
        return;
    }
    if (post && !strcmp(path, "/v1/completions")) {
        completion(s, SV_COMPLETION, body, len, out);
        return;
    }
    if (post && !strcmp(path, "/v1/audio/speech")) {
        if (s->speech) {
            sv_speech_handle(s->speech, body, len, out);
            return;
        }
        sv_error_set(&e, 501, "invalid_request_error", NULL, "not_implemented",
                     "this server has no speech model: start it with --tts DIR");
        sv_respond_error(out, &e);
        return;
    }
    sv_error_set(&e, 404, "invalid_request_error", NULL, "not_found", "no route %.16s %.200s",
                 method, path);
    sv_respond_error(out, &e);
}
