/* What the public API's wrappers (src/api) share. Not public API. */
#ifndef EMBER_API_API_INTERNAL_H
#define EMBER_API_API_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ember_text.h"
#include "llm/prefix.h"
#include "generate/toolcall.h"

/* A growing list of token ids. */
typedef struct api_ids {
    int32_t *ids;
    size_t n, cap;
} api_ids;
ember_status api_ids_push(api_ids *a, int32_t id);

/* o (a cJSON object; NULL: out of memory) as JSON text in *json
 * (ember_free); o is consumed. Errors name `what`. */
struct cJSON;
ember_status api_json_out(struct cJSON *o, const char *what, char **json);

/* Sees every textgen event before the caller's callbacks; non-zero cancels. */
typedef int (*api_event_fn)(void *user, const et_toolcall_event *e);

/* What a conversation adds to a generation (each member may be NULL). */
typedef struct api_hooks {
    api_event_fn also;          /* sees every event first (the reply's collector) */
    void *also_user;
    api_ids *fed;               /* ids fed to the session after the prompt are appended */
    llm_ring_snapshot *snapshot[2]; /* each replaced by one taken at position */
    size_t snapshot_at[2];          /* snapshot_at[i] (increasing) when that is
                                       within (n_cached, n]; NULL: none */
} api_hooks;

/* ember_session_generate over ids[0..n), of which the session already holds
 * the first n_cached. h: NULL for none. */
ember_status api_generate(ember_session *s, const ember_tokenizer *tok, const int32_t *ids, size_t n,
                          size_t n_cached, const ember_generate_params *p, const api_hooks *h,
                          ember_generate_result *res);

#endif
