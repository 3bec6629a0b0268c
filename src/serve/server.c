#include "serve/server_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "llm/spark.h"
#include "onnx/backend.h"
#include "speculate/draft_model.h"

void sv_server_params_default(sv_server_params *p)
{
    memset(p, 0, sizeof *p);
    p->host = "127.0.0.1";
    p->port = 8080;
    p->max_seqs = 8;
    p->ctx = 4096;
    p->max_body = (size_t)4 << 20;
    p->timeout_s = 600;
    p->prefix_cache_bytes = (size_t)256 << 20;
    p->model = ember_model_default_params();
    p->kv_type = EMBER_TYPE_F32;
}

/* The model's id: its directory's (or file's) last path component. */
static void name_model(const char *dir, char *out, size_t cap)
{
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/') start--;
    size_t n = end - start < cap - 1 ? end - start : cap - 1;
    memcpy(out, dir + start, n);
    out[n] = '\0';
}

/* The draft model, once for every sequence that drafts with it: the same
 * weight format as the model's, and its vocabulary. */
static ember_status load_draft(sv_server *s, const sv_server_params *p)
{
    ember_status st = ember_model_load(p->draft_dir, &p->model, &s->draft);
    if (st) return ember_fail_prefix(st, "the draft model %s", p->draft_dir);
    return spec_draft_model_check(s->draft, s->model);
}

ember_status sv_server_start(const sv_server_params *p, sv_server **out)
{
    *out = NULL;
    if (!p->model_dir) return ember_fail(EMBER_ERR_INVALID_ARG, "serve: no model directory");
    if (p->timeout_s <= 0 || p->max_body < 1024)
        return ember_fail(EMBER_ERR_INVALID_ARG, "serve: timeout must be > 0 and the body cap >= 1 KiB");
    sv_server *s = calloc(1, sizeof *s);
    if (!s) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory starting the server");
    s->p = *p;
    s->started = (long long)time(NULL);
    s->next_id = (uint64_t)time(NULL) << 20;
    pthread_mutex_init(&s->id_mu, NULL);
    sv_metrics_init(&s->metrics);
    name_model(p->model_dir, s->model_name, sizeof s->model_name);
    if (p->api_key && !(s->api_key = strdup(p->api_key))) {
        sv_server_stop(s);
        return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory starting the server");
    }
    s->p.api_key = NULL;
    et_sampler_params_default(&s->sampling);
    s->sampling.temperature = 0; /* greedy unless the model's generation_config samples */
    ember_status st = et_tokenizer_load(p->model_dir, &s->tok);
    if (!st) st = et_chat_template_load(p->model_dir, &s->tmpl);
    if (!st) st = et_model_stop_ids(p->model_dir, s->tok, s->stop_ids, SV_MAX_STOP_IDS, &s->n_stop_ids);
    if (!st) st = et_model_sampling_defaults(p->model_dir, &s->sampling);
    if (!st) st = ember_model_load(p->model_dir, &p->model, &s->model);
    if (!st && s->model->onnx && p->draft_max)
        st = ember_fail(EMBER_ERR_UNSUPPORTED, "speculative decoding is not available with the onnx backend (its "
                        "graph runs one token per step)");
    if (!st && p->draft_dir) st = load_draft(s, p);
    if (!st) {
        sv_engine_params ep = {p->max_seqs, p->ctx, p->n_threads,
                               p->max_queue ? p->max_queue : 4 * p->max_seqs,
                               p->kv_budget, p->kv_type, 256, p->prefix_cache_bytes, p->stats,
                               p->prefix_cache_dir, s->draft};
        if (ep.ctx > ember_model_max_positions(s->model)) ep.ctx = ember_model_max_positions(s->model);
        /* an exported graph's context bucket is as far as its sessions go */
        if (s->model->onnx && ep.ctx > s->model->onnx->context) ep.ctx = s->model->onnx->context;
        s->p.ctx = ep.ctx;
        st = sv_engine_create(s->model, s->tok, &ep, &s->metrics, &s->engine);
    }
    if (!st && p->tts_dir) {
        sv_speech_params sp = {p->tts_dir, p->tts_weight_type, p->n_threads, 0, p->timeout_s, 0,
                               p->tts_max_frames, p->tts_calibration, p->tts_voices, NULL,
                               p->model.onnx_runtime, p->model.onnx_provider, p->model.onnx_options};
        if (p->tts_backend && strcmp(p->tts_backend, "cpu")) {
            if (strncmp(p->tts_backend, "onnx:", 5) || !p->tts_backend[5])
                st = ember_fail(EMBER_ERR_INVALID_ARG, "tts backend '%s': expected cpu or onnx:DIR", p->tts_backend);
            sp.onnx_dir = p->tts_backend + 5;
            /* the calibration timed this machine's native steps */
            sp.calibration = NULL;
        }
        if (!st) st = sv_speech_create(&sp, &s->metrics, &s->speech);
    }
    if (!st) st = sv_http_start(s);
    if (st) {
        sv_server_stop(s);
        return st;
    }
    *out = s;
    return EMBER_OK;
}

int sv_server_port(const sv_server *s) { return s->port; }

size_t sv_server_max_body(const sv_server *s) { return s->p.max_body; }

void sv_server_stop(sv_server *s)
{
    if (!s) return;
    /* the engine's thread first: it ends every job, so streams finish and
     * the connection threads the listener joins can return; the engine
     * itself lives on (refusing jobs) until no HTTP thread can reach it */
    sv_engine_shutdown(s->engine);
    sv_http_stop(s);
    sv_engine_free(s->engine);
    sv_speech_free(s->speech);
    ember_model_free(s->model);
    ember_model_free(s->draft);
    et_chat_template_free(s->tmpl);
    et_tokenizer_free(s->tok);
    sv_metrics_destroy(&s->metrics);
    pthread_mutex_destroy(&s->id_mu);
    free(s->api_key);
    free(s);
}
