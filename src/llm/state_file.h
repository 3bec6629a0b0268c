/* Prompt-cache files: a session's state on disk, so that a prefix survives
 * the process (a phone app killed and restarted, a server restarted).
 *
 * A file holds what an in-memory prefix-cache entry holds (prefix.h): the
 * tokens the session holds, every full layer's rows for them, the sliding
 * layers' rings at the end (in the order of a ring snapshot), ring
 * snapshots at earlier positions (the points a diverging prompt can resume
 * at), the caller's own bytes (a conversation's messages), and what makes
 * the rows meaningful: the model's fingerprint, its weight format and the
 * KV format. Layout, version 1, integers little-endian:
 *
 *   "EMBERKV\n"  u32 version  u32 kv_type (ember_type)
 *   u64 config fingerprint  u64 weights fingerprint  char weight_format[16]
 *   u32 n_layers  u32 kv_heads  u32 head_dim  u32 0
 *   u64 n_tokens  u64 n_snapshots  u64 app_bytes
 *   u32 window[n_layers]          (0: a full layer)
 *   u64 snapshot_pos[n_snapshots] (increasing, in 1..n_tokens)
 *   i32 tokens[n_tokens]
 *   app bytes
 *   per full layer: K then V, [kv_head][position 0..n_tokens) rows
 *   the ring snapshot at n_tokens, then each earlier snapshot's rows
 *   u64 checksum of everything before it (base/checksum.h)
 *
 * Rows are the KV format's bytes (fp32, fp16 or GGUF's Q8_0 blocks). */
#ifndef EMBER_LLM_STATE_FILE_H
#define EMBER_LLM_STATE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "llm/prefix.h"

enum { LLM_STATE_VERSION = 1 };

/* What a file holds besides the caches' rows. */
typedef struct llm_saved {
    int32_t *tokens;
    size_t n_tokens;
    llm_ring_snapshot *snaps; /* by increasing position */
    size_t n_snaps;
    char *app;                /* NUL-terminated copy; NULL when none */
    size_t app_bytes;
} llm_saved;

void llm_saved_free(llm_saved *saved);

/* Writes s (holding tokens[0..s's position)), the n_snaps snapshots s took
 * (increasing positions <= its position) and app_bytes of app to path:
 * to a temporary file beside it, flushed and renamed over it, so that a
 * crash leaves the previous file whole. */
ember_status llm_state_save(const ember_session *s, const int32_t *tokens, const llm_ring_snapshot *snaps,
                            size_t n_snaps, const void *app, size_t app_bytes, const char *path);

/* Reads path into s: on success s holds the file's tokens (its marks and
 * logits are not touched: the caller places out->snaps) and out the rest.
 * Refused, naming what differs, with s left as it was: not a prompt-cache
 * file, another version, a damaged file (checksum), another model, weight
 * format or KV format, more tokens than s's max_context. */
ember_status llm_state_load(ember_session *s, const char *path, llm_saved *out);

/* The number of tokens path holds, from its header alone (to size the
 * session to load it into); nothing else is checked but the magic and
 * version. */
ember_status llm_state_peek(const char *path, size_t *n_tokens);

/* The same over len bytes in memory; label names them in messages. */
ember_status llm_state_parse(ember_session *s, const void *data, size_t len, const char *label,
                             llm_saved *out);

#endif
