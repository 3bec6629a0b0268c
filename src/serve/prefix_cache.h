/* Finished conversations kept for the next turn (engine thread only).
 *
 * Agents resend the whole conversation every turn. An entry keeps a
 * finished sequence's session (its KV), the tokens it holds, and ring
 * snapshots taken at the message boundaries of its prompt (where each
 * message started, and where the prompt ended: the boundary before the
 * reply). A new prompt that starts with an entry's tokens resumes from its
 * end; one that diverges inside a message (a template that re-renders the
 * last reply differently, an edited or regenerated turn) resumes from the
 * nearest snapshot before the divergence. An entry that extends an older
 * one (the same conversation, a turn later) supersedes it and inherits its
 * snapshots, so the boundaries of earlier turns stay resumable. Entries
 * (snapshots included) are bounded in bytes and count, evicted least
 * recently used first; an entry keeps at most SV_PREFIX_MAX_SNAPSHOTS
 * snapshots, the latest positions.
 *
 * With a directory (sv_prefix_cache_persist) the entries are kept on disk
 * too, one prompt-cache file each (llm/state_file.h): written when the
 * entry is put, removed when it is evicted or superseded, its time touched
 * when it is resumed; a restarted server takes the files back in, most
 * recently used first, within the same bounds, and removes the rest (the
 * least recently used). Files that do not load here (another model, KV
 * format, a damaged file) are left alone. */
#ifndef EMBER_SERVE_PREFIX_CACHE_H
#define EMBER_SERVE_PREFIX_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "llm/prefix.h"
#include "serve/metrics.h"

enum { SV_PREFIX_MAX_SNAPSHOTS = 64 };

typedef struct sv_prefix_cache sv_prefix_cache;

/* max_bytes 0: disabled (every call is a no-op / miss). */
sv_prefix_cache *sv_prefix_cache_create(size_t max_bytes, int max_entries, sv_metrics *metrics);
void sv_prefix_cache_free(sv_prefix_cache *c);

/* Takes ownership of s, tokens (n of them: what s holds) and the n_snaps
 * snapshots in snaps (each taken by s at a position <= n, in increasing
 * order; empty ones, pos 0, are skipped), or frees them when they do not
 * fit. snaps itself stays the caller's; its snapshots are left empty. */
void sv_prefix_cache_put(sv_prefix_cache *c, ember_session *s, int32_t *tokens, size_t n,
                         llm_ring_snapshot *snaps, size_t n_snaps);

/* Keeps the entries in dir from now on (created if missing), after taking
 * in the files a previous run left there: each into a session of model m
 * in kv_type. *loaded / *skipped (may be NULL): the files taken in / left
 * alone because they do not load. Errors: IO (the directory). */
ember_status sv_prefix_cache_persist(sv_prefix_cache *c, const char *dir, const ember_model *m, ember_type kv_type,
                                     int *loaded, int *skipped);

/* Makes dst (empty) hold the longest cached prefix of prompt it can, at
 * most n_prompt - 1 tokens (one is left to produce logits). Returns the
 * tokens resumed (0: nothing usable). */
size_t sv_prefix_cache_resume(sv_prefix_cache *c, ember_session *dst, const int32_t *prompt,
                              size_t n_prompt);

#endif
