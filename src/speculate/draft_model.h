/* The draft-model drafter of speculative decoding: a smaller checkpoint
 * with the same tokenizer guesses the next tokens greedily, one cheap step
 * each. Its own session is kept in step with the target's: it holds the same
 * tokens, and after a verify it is taken back to the accepted ones (its
 * rings through the same kv_undo as the target's, see nn/kv.h) or fed the
 * last draft when all were accepted. */
#ifndef EMBER_SPECULATE_DRAFT_MODEL_H
#define EMBER_SPECULATE_DRAFT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

/* next and up to 64 drafts */
enum { SPEC_DRAFT_CHUNK_MAX = 65 };

typedef struct spec_draft_model spec_draft_model;

/* Whether `draft` can draft for `target`: the same vocabulary (an error
 * naming both sizes otherwise). */
ember_status spec_draft_model_check(const ember_model *draft, const ember_model *target);

/* A draft session on `draft` (the same vocabulary as target's model) with
 * target's context and KV format, for up to max_draft drafts per step. Its
 * passes run on exec's thread pool (the draft's own kernels), NULL: on the
 * target session's; the pool must outlive the drafter. Both models run in
 * turn on one thread's behalf, so they share the threads instead of each
 * holding a pool (a server's sessions have none: its batch does). */
struct ek_exec;
ember_status spec_draft_model_create(const ember_model *draft, const ember_session *target,
                                     const struct ek_exec *exec, int32_t max_draft,
                                     spec_draft_model **out);
void spec_draft_model_free(spec_draft_model *m);

/* The most drafts a step can take (its rings bound the undo). */
int32_t spec_draft_model_limit(const spec_draft_model *m);

/* The draft session takes ids[0..n): every token the target holds. It runs
 * only what it lacks: the longest common prefix of ids and the tokens it
 * holds (an earlier call's prompt and reply) stays, back to the latest of
 * its marks at or before the first difference when it diverges (from
 * scratch without one), like the target's own prefix reuse. It marks the
 * rings at marks[0..n_marks) (increasing positions, the caller's resume
 * points: where a later prompt may diverge), keeping its earliest mark and
 * the latest two. *n_run: the tokens it ran. */
ember_status spec_draft_model_begin(spec_draft_model *m, const int32_t *ids, size_t n,
                                    const size_t *marks, size_t n_marks, size_t *n_run);

/* The draft session's logits after its last pass (NULL when none since a
 * rollback or a begin that ran nothing): what its next draft is picked from. */
const float *spec_draft_model_logits(const spec_draft_model *m);

/* A drafter kept across calls: the one that spec_draft_model_keep left on
 * session `target`, when it drafts with `draft` for max_draft on exec's
 * threads (NULL: the target's); NULL otherwise (another one is freed).
 * The session keeps it no longer: the caller owns it. */
spec_draft_model *spec_draft_model_take(ember_session *target, const ember_model *draft,
                                        const struct ek_exec *exec, int32_t max_draft);
/* Leaves m with its target session (replacing and freeing one kept before),
 * for the next call to take; freed with the session. */
void spec_draft_model_keep(ember_session *target, spec_draft_model *m);

/* Drafts k tokens after next (not yet fed to either model) into out: next
 * and each greedy pick but the last are fed to the draft session. */
ember_status spec_draft_model_propose(spec_draft_model *m, int32_t next, int32_t k, int32_t *out);

/* The target kept the first `keep` (1..k+1) of next and the k drafts: the
 * draft session is made to hold the same. */
ember_status spec_draft_model_accept(spec_draft_model *m, int32_t keep);

#endif
