/* `ember serve`: an OpenAI-compatible HTTP server on libmicrohttpd.
 *
 *   GET  /health                 {"status":"ok"}
 *   GET  /metrics                Prometheus text (metrics.h)
 *   GET  /v1/models[/{id}]       the one model, named after its directory
 *   POST /v1/chat/completions    chat with tools; SSE when "stream": true
 *   POST /v1/completions         a prompt string or token ids; SSE too
 *   POST /v1/audio/speech        with --tts: speech (speech.h)
 *   GET  /capabilities           what this server runs, for the UI
 *   GET  /, /ui.js, /ui.css      the browser UI (ui_assets.h), no key needed
 *
 * HTTP threads (one per connection) parse and check the request, render
 * the chat template, tokenize and queue a job; the engine thread (engine.h)
 * owns the model state. Errors are OpenAI error objects. */
#ifndef EMBER_SERVE_SERVER_H
#define EMBER_SERVE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "base/stats.h"
#include "ember.h"
#include "serve/job.h"

typedef struct sv_server_params {
    const char *model_dir;
    const char *host;        /* an IPv4 address or "localhost"; default 127.0.0.1 */
    int port;                /* 0: any free port (sv_server_port tells which) */
    const char *api_key;     /* NULL: no authentication */
    int max_seqs;            /* default 8 */
    int32_t ctx;             /* tokens per sequence; default 4096 (capped by the model) */
    int n_threads;           /* default 0: one per online CPU */
    int max_queue;           /* default 4 x max_seqs */
    size_t max_body;         /* request body cap in bytes; default 4 MiB */
    double timeout_s;        /* per request, queueing included; default 600 */
    size_t kv_budget;        /* 0: max_seqs sequences of ctx tokens */
    size_t prefix_cache_bytes; /* finished conversations kept for the next
                                  turn; default 256 MiB, 0: off */
    const char *prefix_cache_dir; /* and kept on disk here, so they survive a
                                     restart (within the same bytes); NULL: off */
    ember_model_params model;
    ember_type kv_type;      /* default F32 */
    const char *tts_dir;     /* a Qwen3-TTS directory: serves /v1/audio/speech; NULL: 501 */
    ember_type tts_weight_type; /* its talker and predictor (NONE: as stored) */
    const struct edge_calibration *tts_calibration; /* its chunking (NULL: the default ramp) */
    int32_t tts_max_frames;  /* audio frames per speech request; 0: 4096 */
    const char *tts_voices;  /* a directory of saved voices (a Base model's); NULL: none */
    const char *tts_backend; /* "onnx:DIR": its talker and predictor steps on ONNX
                                Runtime (model.onnx_runtime's library); NULL: native */
    ember_stats *stats;      /* the text engine's step statistics (engine.h); NULL:
                                off. The caller's: read it after sv_server_stop. */
    int32_t draft_max;       /* > 0: requests speculate unless they say otherwise
                                ("speculate": "off"), with drafts of up to this
                                many ids per verify pass; 0: only those that ask */
    const char *draft_dir;   /* a draft model (the same vocabulary), loaded with
                                `model`'s params: the default drafter when
                                draft_max > 0, else prompt lookup; NULL: none */
} sv_server_params;

void sv_server_params_default(sv_server_params *p);

typedef struct sv_server sv_server;

/* Loads the model, its tokenizer and chat template, starts the engine and
 * the listener. */
ember_status sv_server_start(const sv_server_params *p, sv_server **out);
int sv_server_port(const sv_server *s);
/* Stops listening, ends every job (503) and frees everything. */
void sv_server_stop(sv_server *s);

/* One answered request, independent of the HTTP library: a body with its
 * status and type, or a job whose bytes stream as server-sent events. */
typedef struct sv_response {
    int status;
    const char *content_type;
    char *body;              /* malloc'd (NULL for a stream) */
    size_t len;
    sv_job *stream;          /* a reference the caller releases */
    int retry_after;         /* seconds, 0: no header */
    int www_authenticate;
    const char *csp;         /* the UI's files: a Content-Security-Policy (and
                                nosniff, no-referrer, no-cache); NULL: none */
} sv_response;

/* Routes a complete request. auth: the Authorization header or NULL. */
void sv_handle(sv_server *s, const char *method, const char *path, const char *auth,
               const char *body, size_t len, sv_response *out);

/* Answers with an error when a body is over the cap (sent before reading it). */
void sv_respond_too_large(sv_server *s, sv_response *out);
size_t sv_server_max_body(const sv_server *s);

#endif
