/* Resuming a session from another's cached prefix (the server's prefix
 * reuse across conversation turns).
 *
 * Full layers keep every position, so a prefix of n tokens is just their
 * first n rows. A sliding layer's ring keeps only the last window-1
 * positions and overwrites older ones, so once a session ran past n its
 * rings no longer hold the state at n: a snapshot taken at n (the rows of
 * the last window-1 positions before n, in position order) restores them.
 * Rows are copied position by position into the destination's own slots,
 * so the two sessions may have different capacities. */
#ifndef EMBER_LLM_PREFIX_H
#define EMBER_LLM_PREFIX_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

typedef struct llm_ring_snapshot {
    int64_t pos;   /* the session's position when taken */
    size_t bytes;
    void *rows;    /* per sliding layer, K then V: [kv_head][position][row] */
} llm_ring_snapshot;

/* Copies the sliding layers' rows at the session's current position. */
ember_status llm_ring_snapshot_take(const ember_session *s, llm_ring_snapshot *out);
void llm_ring_snapshot_free(llm_ring_snapshot *snap);

/* Makes dst (empty, same model and KV format, max_context > n) hold the
 * first n tokens src holds: n == src's position needs no snapshot; a
 * smaller n needs snap taken by src at position n. dst's logits are not
 * set: feed it at least one token next. */
ember_status llm_session_resume(ember_session *dst, const ember_session *src, int64_t n,
                                const llm_ring_snapshot *snap);

/* Takes s back to the first n tokens it holds, in place: full layers keep
 * their first n rows; sliding layers get their rings back from snap, taken
 * by s at position n (not needed when n is s's position). Logits are not
 * set: feed at least one token next. */
ember_status llm_session_rewind(ember_session *s, int64_t n, const llm_ring_snapshot *snap);

#endif
