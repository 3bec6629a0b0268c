/* Which model a saved session belongs to: a cache written by one model is
 * meaningless to another (other weights give other keys and values) even
 * when the shapes agree, so a prompt-cache file carries this and is refused
 * by a model whose fingerprint differs. */
#ifndef EMBER_LLM_FINGERPRINT_H
#define EMBER_LLM_FINGERPRINT_H

#include <stdint.h>

#include "ember.h"
#include "io/tensor.h"

typedef struct llm_fingerprint {
    uint64_t config;        /* the hyper-parameters and what else shapes the
                               cache's values (the GELU form, all-full) */
    uint64_t weights;       /* each matrix's format and shape, its first,
                               middle and last rows as fp32, every norm */
    et_dtype weight_format; /* the MLP up projection's: the bulk of the bytes */
} llm_fingerprint;

/* Reads a few rows per matrix (milliseconds even at 1.7B). Rows are hashed
 * as fp32, so the kernel set's interleaved layouts do not change it; a
 * weight converted to another format does. */
ember_status llm_fingerprint_of(const ember_model *m, llm_fingerprint *out);

#endif
