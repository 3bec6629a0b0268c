/* Batched decoding: one step of several sessions at once. Each session
 * contributes one row; every weight matrix is multiplied once for all rows
 * (its weights read once per step), and only attention runs per row, each
 * against its own session's cache at its own position. The batch owns the
 * thread pool and the scratch; the sessions keep only their caches, their
 * position and their logits, so a server creates them single-threaded with
 * a one-token prefill chunk and runs their prefills here too. */
#ifndef EMBER_LLM_BATCH_H
#define EMBER_LLM_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "base/stats.h"
#include "ember.h"

typedef struct llm_batch llm_batch;

/* max_rows: the most sessions per step (>= 1); n_threads as in
 * ember_session_params (0: one per online CPU). */
ember_status llm_batch_create(const ember_model *model, int32_t max_rows, int n_threads,
                              llm_batch **out);
void llm_batch_free(llm_batch *b);

/* Session sessions[i] takes ids[i]; afterwards each session's logits predict
 * its next token, exactly as ember_session_decode would leave them (up to
 * float summation order). Every input is checked before anything runs: a
 * rejected call leaves every session as it was. The sessions must be
 * distinct and of the batch's model. */
ember_status llm_batch_decode(llm_batch *b, ember_session *const *sessions, const int32_t *ids,
                              int32_t n);

/* A step of several rows per session (a speculative verify's next and
 * drafts beside other sessions' single rows): session i takes
 * counts[i] >= 1 ids, ids holding them session after session, and every
 * weight matrix (lm_head too) is still read once for all rows, attention
 * running each session's rows as one chunk against its own cache. With
 * rows_out[i] non-NULL, the logits of session i's counts[i] rows go there
 * (counts[i] x vocab; the session's own logits are left alone: a verifier
 * takes them, llm/verify.h), else its last row's go to the session's
 * logits. At most llm_batch_max_total_rows rows in all; checked first as
 * llm_batch_decode is. */
ember_status llm_batch_run(llm_batch *b, ember_session *const *sessions, const int32_t *ids,
                           const int32_t *counts, int32_t n, float *const *rows_out);
int32_t llm_batch_max_total_rows(const llm_batch *b);

/* Records each decode step's time in sliding-window and in full-attention
 * layers (EMBER_STAT_DECODE_SLIDING / _FULL) into stats, as a session
 * does (ember_session_set_stats); NULL: off (a branch per layer). The
 * recorder belongs to the thread that runs the batch. */
void llm_batch_set_stats(llm_batch *b, ember_stats *stats);

/* The batch's kernels and thread pool (valid while the batch is): other
 * passes over its sessions, such as a verify step, run on them too. */
struct ek_exec;
const struct ek_exec *llm_batch_exec(const llm_batch *b);

/* ember_session_prefill on the batch's threads and scratch. */
ember_status llm_batch_prefill(llm_batch *b, ember_session *session, const int32_t *ids,
                               size_t n_ids);

/* The KV cache bytes a session of max_context tokens allocates (sliding
 * layers hold at most window-1 tokens, full layers max_context), known
 * before creating it; 0 for an invalid kv_type. */
size_t llm_session_kv_bytes(const ember_model *model, int32_t max_context, ember_type kv_type);

#endif
