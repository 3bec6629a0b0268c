/* OpenAI request bodies -> validated requests. Everything a client sends is
 * checked here, on the HTTP thread, before the engine sees it: the body is
 * untrusted, so every field has a type, a range and a cap, and a violation
 * becomes an OpenAI error object naming the field (sv_error). */
#ifndef EMBER_SERVE_REQUEST_H
#define EMBER_SERVE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "generate/sampler.h"

/* An OpenAI error: HTTP status, message, type, param (the field) and code. */
typedef struct sv_error {
    int status;         /* 400, 401, 404, 413, 503, ... */
    char message[512];
    const char *type;   /* "invalid_request_error", "authentication_error", ... */
    char param[96];     /* the field at fault, "" for none */
    const char *code;   /* NULL or a short code ("model_not_found", ...) */
} sv_error;

/* Fills e (status, type and code; param may be NULL) and returns -1. */
int sv_error_set(sv_error *e, int status, const char *type, const char *param, const char *code,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* {"error":{"message","type","param","code"}}, malloc'd; NULL when out of memory. */
char *sv_error_json(const sv_error *e);

enum { SV_MAX_STOP = 4, SV_MAX_BIAS = 300, SV_MAX_NESTING = 64 };

typedef enum sv_kind { SV_CHAT, SV_COMPLETION } sv_kind;

/* A request's speculative decoding (an extension: "speculate"): as the
 * server was started, none, prompt lookup, or the server's draft model. */
typedef enum sv_speculate {
    SV_SPECULATE_DEFAULT = 0,
    SV_SPECULATE_OFF,
    SV_SPECULATE_NGRAM,
    SV_SPECULATE_DRAFT
} sv_speculate;

typedef struct sv_request {
    sv_kind kind;
    char *model;              /* as the client named it */
    cJSON *messages;          /* chat: a clean copy (role, content as text, tool_calls, ...) */
    cJSON *tools;             /* chat: the tools array, NULL when none (or tool_choice none) */
    /* tool_choice "required": every tool's name; a named function: its
     * name, with single_call set (exactly that one call). Pointers into
     * tools; NULL when the model may answer without a call (auto). */
    const char **force_tools;
    size_t n_force_tools;
    int single_call;
    char *prompt;             /* completion: text, or NULL when prompt_ids */
    int32_t *prompt_ids;      /* completion: token ids */
    size_t n_prompt_ids;
    int32_t max_tokens;       /* 0: not given (up to the context) */
    int stream, include_usage;
    char *stop[SV_MAX_STOP];
    size_t n_stop;
    /* sampling fields as given; `set` says which were present */
    float temperature, top_p, presence_penalty, frequency_penalty;
    int32_t top_k;
    uint64_t seed;
    struct { int temperature, top_p, top_k, seed; } set;
    et_logit_bias bias[SV_MAX_BIAS];
    size_t n_bias;
    /* extensions: speculative decoding within what the server loaded */
    sv_speculate speculate;   /* "speculate": "off" | "ngram" | "draft"; DEFAULT: absent */
    int32_t draft_max;        /* "draft_max": 1..64; 0: absent */
} sv_request;

/* Parses and checks a body of len bytes (not NUL-terminated). On failure
 * *e says why and nothing is left allocated. vocab bounds token ids and
 * logit_bias keys. */
int sv_request_parse(sv_kind kind, const char *body, size_t len, int32_t vocab, sv_request *r,
                     sv_error *e);
void sv_request_free(sv_request *r);

#endif
