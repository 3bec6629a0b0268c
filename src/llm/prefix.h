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

/* Marks a session keeps (ember_session_mark): the earliest goes first. */
enum { LLM_SESSION_MAX_MARKS = 64 };

/* Copies the sliding layers' rows at the session's current position. */
ember_status llm_ring_snapshot_take(const ember_session *s, llm_ring_snapshot *out);
void llm_ring_snapshot_free(llm_ring_snapshot *snap);

/* The bytes of a snapshot s would take at position pos (s's KV format and
 * windows): what a saved snapshot must measure. */
size_t llm_ring_snapshot_bytes(const ember_session *s, int64_t pos);

/* Writes the rows of snap (taken at snap->pos by a session of the same model
 * and KV format) into s's sliding layers; s's position is not changed. */
void llm_ring_snapshot_restore(ember_session *s, const llm_ring_snapshot *snap);

/* Where a prompt agreeing with the first `same` of the n tokens a session
 * holds can resume it: n when it agrees with all of them, else the latest
 * of snaps (n_snaps, by increasing position) at or before `same`, returned
 * in *snap (NULL at n); 0 for nowhere. */
size_t llm_resume_point(size_t n, const llm_ring_snapshot *snaps, size_t n_snaps, size_t same,
                        const llm_ring_snapshot **snap);

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

/* Adds snap (taken by s at a position past its last mark's) to s's marks,
 * taking its rows; the earliest mark goes when they are full. */
void llm_session_add_mark(ember_session *s, llm_ring_snapshot *snap);
/* Frees s's marks after position `after` (all of them for -1). */
void llm_session_drop_marks(ember_session *s, int64_t after);

#endif
