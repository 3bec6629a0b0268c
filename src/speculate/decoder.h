/* Speculative decoding of one sequence: draft, verify, keep what agrees.
 *
 * The session's logits chose `next` (not fed yet). A step drafts up to K
 * tokens after the sequence plus next (the n-gram drafter), runs next and
 * the drafts as one verify chunk, and then picks a token from each row in
 * order with the caller's own sampler, exactly as plain decoding would pick
 * after the same tokens: row 0 picks what follows next; while the pick
 * equals the draft in that place, the draft was right and the next row
 * picks on; the first pick that differs (or the one after the last draft)
 * is the new `next`. The session keeps the rows up to the last one picked
 * from. So the ids that come out are the ids plain decoding gives, greedy
 * or sampled (the sampler is called once per id with the same logits up to
 * float summation order): for a draft that is a single proposed token,
 * "sample from the target row and accept iff it equals the draft" is the
 * standard speculative rule (accept with probability p(draft), otherwise a
 * sample of p without the draft, renormalised). */
#ifndef EMBER_SPECULATE_DECODER_H
#define EMBER_SPECULATE_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

typedef struct spec_decoder spec_decoder;

/* What the decoder did so far. */
typedef struct spec_counts {
    int64_t steps;    /* verify passes */
    int64_t drafted;  /* drafted tokens run through them */
    int64_t accepted; /* drafted tokens the target agreed with */
    int64_t draft_prefill; /* prompt tokens the draft model's session ran */
} spec_counts;

/* Picks the id that follows a row's logits (vocab floats, the caller's to
 * read only) when the session would hold `held` tokens; *end set when the
 * response ends with this pick (the id is not fed) or before it (a cancel:
 * no id). A failing status aborts the step. */
typedef ember_status (*spec_pick_fn)(void *user, const float *logits, int64_t held, int32_t *id,
                                     int *end);

/* A decoder for session s (which must outlive it): drafts of up to
 * draft_max tokens, fewer when a sliding ring is shorter (see verify.h),
 * from the n-gram drafter, or with `draft` (non-NULL: a model with the same
 * vocabulary, which must outlive the decoder) from its greedy steps. The
 * draft model's session stays with s when the decoder is freed, and the
 * next decoder on s with the same draft model and draft_max takes it up:
 * its begin then runs only what the draft session does not hold yet. */
ember_status spec_decoder_create(ember_session *s, int32_t draft_max, const ember_model *draft,
                                 spec_decoder **out);
/* The same with its verify passes and the draft model's passes on exec's
 * threads (llm_verifier_create_on; NULL: the session's). */
struct ek_exec;
ember_status spec_decoder_create_on(ember_session *s, const struct ek_exec *exec, int32_t draft_max,
                                    const ember_model *draft, spec_decoder **out);
void spec_decoder_free(spec_decoder *d);

/* The last n tokens the session holds now (all of them, or the ones the
 * caller knows; the drafter looks them up); copied. A draft model needs all
 * of them: its session resumes what it holds of them and runs the rest,
 * marking its rings at marks[0..n_marks) (increasing positions where a
 * later prompt may diverge: see spec_draft_model_begin; NULL, 0: none). */
ember_status spec_decoder_begin(spec_decoder *d, const int32_t *ids, size_t n, const size_t *marks,
                                size_t n_marks);

/* One step after *next was picked (see above). On return *next is the last
 * id picked (unless *end), the session holds the ids in fed[0..n_fed)
 * after what it held (the old *next first), and *end says a pick ended the
 * response. */
ember_status spec_decoder_step(spec_decoder *d, int32_t *next, spec_pick_fn pick, void *user,
                               const int32_t **fed, int32_t *n_fed, int *end);

/* The first half of a step, for a caller that batches sequences: drafts
 * after next (the session's pending pick) and says how many in *n_draft.
 * spec_decoder_step then verifies those. With none, the caller may
 * instead feed next to the session itself (one row of a batched decode
 * step, llm/batch.h: a one-row verify pass of its own would read the
 * weights again) and then call spec_decoder_fed(d, next), which keeps the
 * drafter in step; the session's logits then pick as after any step. */
ember_status spec_decoder_draft(spec_decoder *d, int32_t next, int32_t *n_draft);
ember_status spec_decoder_fed(spec_decoder *d, int32_t next);

/* spec_decoder_step with the verify pass left to the caller, so that it
 * can run several sequences' chunks in one pass (llm/batch.h:
 * llm_batch_run): prepare drafts (unless spec_decoder_draft did) and
 * gives the chunk, ids[0..*n) (next, then the drafts), and where its *n
 * rows of logits go; the caller runs exactly those ids through the
 * session, writing rows, then finish picks and keeps as step does. */
ember_status spec_decoder_prepare(spec_decoder *d, int32_t next, const int32_t **ids, int32_t *n,
                                  float **rows);
ember_status spec_decoder_finish(spec_decoder *d, const float *rows, int32_t *next, spec_pick_fn pick,
                                 void *user, const int32_t **fed, int32_t *n_fed, int *end);

const spec_counts *spec_decoder_counts(const spec_decoder *d);

#endif
