/* The verify step of speculative decoding: the token the session's logits
 * chose plus up to K drafted tokens run as one chunk of K+1 rows (every
 * weight read once for all of them), with the logits of every row kept, so
 * the caller can see how many drafts the model agrees with; then the
 * session keeps only the accepted rows. Keeping fewer rows than ran moves
 * the position back and puts back the sliding-ring slots the rejected rows
 * overwrote (kv_undo, see nn/kv.h), so the session is exactly as if only
 * the accepted tokens had been fed. */
#ifndef EMBER_LLM_VERIFY_H
#define EMBER_LLM_VERIFY_H

#include <stdint.h>

#include "ember.h"

typedef struct llm_verifier llm_verifier;

/* A verifier for session s (which must outlive it), for steps of up to
 * max_draft drafted tokens (>= 1): its own scratch of max_draft+1 rows, the
 * rows' logits, and the ring undo. Not for the onnx backend. */
ember_status llm_verifier_create(ember_session *s, int32_t max_draft, llm_verifier **out);
/* The same on another thread pool and kernels (exec, copied; its pool must
 * outlive the verifier): a server's sessions are single-threaded and its
 * batch owns the threads (llm/batch.h). NULL exec: the session's. */
struct ek_exec;
ember_status llm_verifier_create_on(ember_session *s, const struct ek_exec *exec, int32_t max_draft,
                                    llm_verifier **out);
void llm_verifier_free(llm_verifier *v);

/* The most drafts one step can verify: max_draft, less when a sliding ring
 * holds fewer than max_draft+1 slots. */
int32_t llm_verifier_max_draft(const llm_verifier *v);

/* Feeds ids[0..n) (1 <= n <= max_draft+1) as one chunk: *rows gets n rows
 * of vocab logits, row i predicting the token after ids[i]. Inputs are
 * checked first: a rejected call leaves the session as it was. Until
 * llm_verify_accept the session holds all n tokens. */
ember_status llm_verify(llm_verifier *v, const int32_t *ids, int32_t n, const float **rows);

/* llm_verify with the pass left to the caller (a batched step that runs
 * several sessions' rows at once, llm/batch.h: llm_batch_run): checks ids
 * as llm_verify does and keeps what the rows will overwrite, then the
 * caller runs exactly ids[0..n) through the session and writes their n
 * rows of logits to *rows (the verifier's), before llm_verify_accept. */
ember_status llm_verify_prepare(llm_verifier *v, const int32_t *ids, int32_t n, float **rows);

/* Keeps the first `keep` (1..n) rows of the last llm_verify: the session's
 * position becomes what it was before plus keep, the rejected rows' ring
 * entries are undone, and its logits are row keep-1's. */
ember_status llm_verify_accept(llm_verifier *v, int32_t keep);

#endif
