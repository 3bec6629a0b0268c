/* Finished conversations kept for the next turn (engine thread only).
 *
 * Agents resend the whole conversation every turn. An entry keeps a
 * finished sequence's session (its KV), the tokens it holds, and a ring
 * snapshot taken where its prompt ended (the message boundary before the
 * reply). A new prompt that starts with an entry's tokens resumes from its
 * end; one that diverges inside the last reply (a template that re-renders
 * it differently, an edited message) resumes from the snapshot. Entries are
 * bounded in bytes and count and evicted least recently used first. */
#ifndef EMBER_SERVE_PREFIX_CACHE_H
#define EMBER_SERVE_PREFIX_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "llm/prefix.h"
#include "serve/metrics.h"

typedef struct sv_prefix_cache sv_prefix_cache;

/* max_bytes 0: disabled (every call is a no-op / miss). */
sv_prefix_cache *sv_prefix_cache_create(size_t max_bytes, int max_entries, sv_metrics *metrics);
void sv_prefix_cache_free(sv_prefix_cache *c);

/* Takes ownership of s, tokens (n of them: what s holds) and snap (taken at
 * snap->pos <= n; may be empty), or frees them when they do not fit. */
void sv_prefix_cache_put(sv_prefix_cache *c, ember_session *s, int32_t *tokens, size_t n,
                         llm_ring_snapshot *snap);

/* Makes dst (empty) hold the longest cached prefix of prompt it can, at
 * most n_prompt - 1 tokens (one is left to produce logits). Returns the
 * tokens resumed (0: nothing usable). */
size_t sv_prefix_cache_resume(sv_prefix_cache *c, ember_session *dst, const int32_t *prompt,
                              size_t n_prompt);

#endif
