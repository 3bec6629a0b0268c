/* The server's state, shared by its lifecycle (server.c), its routes
 * (routes.c) and the HTTP glue (http.c). */
#ifndef EMBER_SERVE_SERVER_INTERNAL_H
#define EMBER_SERVE_SERVER_INTERNAL_H

#include <pthread.h>

#include "serve/engine.h"
#include "serve/metrics.h"
#include "serve/server.h"
#include "serve/speech.h"
#include "template/chat.h"
#include "generate/textgen.h"
#include "tokenizer/tokenizer.h"

struct MHD_Daemon;

enum { SV_MAX_STOP_IDS = 16 };
/* Drafts per verify pass of a request that speculates on a server started
 * without --speculate (as generate's default). */
enum { SV_DEFAULT_DRAFT_MAX = 8 };

struct sv_server {
    sv_server_params p;
    char *api_key;
    char model_name[256];
    long long started;          /* unix seconds */
    ember_model *model;
    ember_model *draft;         /* --speculate draft:DIR; NULL: none */
    et_tokenizer *tok;
    et_chat_template *tmpl;
    int32_t stop_ids[SV_MAX_STOP_IDS];
    size_t n_stop_ids;
    et_sampler_params sampling; /* the model's generation_config defaults */
    sv_metrics metrics;
    sv_engine *engine;
    sv_speech *speech;          /* NULL without --tts */
    struct MHD_Daemon *daemon;
    int port;
    pthread_mutex_t id_mu;      /* response ids and default seeds */
    uint64_t next_id;
};

/* Responses shared by the routes and the speech endpoint (routes.c): an
 * OpenAI error object, and a finished job's bytes (waiting up to its
 * deadline, 504 after) with `type` as the content type of a 200. */
void sv_respond_error(sv_response *out, const sv_error *e);
void sv_respond_job(sv_response *out, sv_job *j, const char *type);

/* Starts / stops the libmicrohttpd listener (http.c). */
ember_status sv_http_start(sv_server *s);
void sv_http_stop(sv_server *s);

#endif
