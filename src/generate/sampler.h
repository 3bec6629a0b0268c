/* The token sampler: logits in, one token id out.
 *
 * Per call, in the order Hugging Face `generate` and vLLM apply them:
 *   1. logit bias          l[id] += bias (OpenAI logit_bias)
 *   2. repetition penalty  over every id in prompt + generated text, once per
 *                          distinct id: l > 0 ? l / p : l * p (HF)
 *   3. presence/frequency  over generated ids only: l -= presence + frequency *
 *                          count, when count > 0 (OpenAI, vLLM)
 *   4. temperature         l / T; T = 0 is greedy: the first argmax, no draws
 *   5. top-k               keep l >= the k-th largest value (ties at the k-th
 *                          value are all kept, as HF and vLLM do)
 *   6. top-p               over the distribution renormalized to what top-k
 *                          kept: the smallest set, taken from the top, whose
 *                          mass reaches top_p (ties in order of id)
 *   7. min-p               keep p >= min_p * p_max, i.e. l >= l_max + log(min_p)
 *   8. the exponential race: every vocabulary entry i has its own Exp(1)
 *      draw q_i = -log(u_i) at every step, kept or not, and the id with the
 *      largest p_i / q_i among the kept ones is the sample (ties: lower id).
 *      Since P(argmax p_i/q_i = j) = p_j / sum p, this samples the filtered
 *      distribution exactly. The generator is counter-based (text/rng.h):
 *      entry i of a call uses draw number c + i, where c is the generator's
 *      counter at the call, and every call (greedy too) moves the counter on
 *      by vocab_size. So the same seed gives the same ids, and the draw an
 *      entry gets never depends on the filters: a filter changed at one step
 *      leaves the draws of every entry, at that step and later, alone. Draws
 *      are only computed where they can matter (kept entries that can still
 *      beat the best key), which changes nothing in the outcome.
 * Nothing is allocated per call: the history counts and the scratch are sized
 * to the vocabulary at creation. */
#ifndef EMBER_GENERATE_SAMPLER_H
#define EMBER_GENERATE_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "generate/rng.h"

typedef struct {
    int32_t id;
    float bias;
} et_logit_bias;

typedef struct {
    float temperature;        /* 0 = greedy (argmax, first on ties) */
    int32_t top_k;            /* 0 = off */
    float top_p;              /* 1 = off */
    float min_p;              /* 0 = off */
    float repetition_penalty; /* 1 = off; HF semantics: over prompt + generated ids, logit>0 ? l/p : l*p */
    float presence_penalty;   /* 0 = off; OpenAI semantics, over generated ids: l -= p if count>0 */
    float frequency_penalty;  /* 0 = off; l -= f * count (generated ids) */
    const et_logit_bias *logit_bias; /* added to logits first; copied at create */
    size_t n_logit_bias;
    uint64_t seed;
} et_sampler_params;

/* The neutral settings: temperature 1, every filter and penalty off, seed 0. */
void et_sampler_params_default(et_sampler_params *p);

typedef struct et_sampler et_sampler;

/* Checks every parameter (ranges, bias ids inside the vocabulary) and
 * allocates the per-vocabulary state once. */
ember_status et_sampler_create(const et_sampler_params *p, int32_t vocab_size, et_sampler **out);
void et_sampler_free(et_sampler *s);

/* Adds prompt ids to the repetition-penalty history. An id outside the
 * vocabulary is rejected before anything is recorded. */
ember_status et_sampler_add_prompt(et_sampler *s, const int32_t *ids, size_t n);

/* Records a generated id (repetition, presence and frequency history). Ids
 * outside the vocabulary are ignored. */
void et_sampler_accept(et_sampler *s, int32_t id);

/* logits (vocab_size of them) are modified in place (scratch); returns the
 * chosen id. NaN logits are never chosen; if no logit is a number, 0. */
int32_t et_sampler_sample(et_sampler *s, float *logits);

/* Forgets the prompt and generated history and reseeds the generator. */
void et_sampler_reset(et_sampler *s, uint64_t seed);

/* The generator's current state, so tests can check that every call moves
 * it on by exactly vocab_size draws, and recompute the race. */
const et_rng *et_sampler_rng(const et_sampler *s);

#endif
