/* Quantization mixes: which format each of a Spark model's weight matrices is
 * written in by `ember quantize --type NAME`.
 *
 * A plain format name ("q8_0", "q4_k", "bf16", ...) puts every matrix in that
 * format. The llama.cpp mix names ("q4_0", "q4_k_m", "q5_k_m", ...) apply
 * the rules of llama.cpp's quantizer (src/llama-quant.cpp, the spark2_5
 * release in node-llama-cpp 3.22.1) to Spark's tensors, so that a file made
 * here has the types a file made there has:
 *   - the output matrix, and the token embedding when it is tied to it, in
 *     Q6_K (Q8_0 when its rows are not a multiple of 256); for q4_0, q4_1,
 *     q5_0 and q5_1 that is the whole difference from every matrix in the
 *     base type (q8_0 is the same in both: llama.cpp keeps a Q8_0 output);
 *   - attn_qkv (fused) as llama.cpp's attn_v ("attn_v-like" there, ahead of
 *     its own attn_qkv rule, which it never reaches): Q4_K_M and Q5_K_M give
 *     Q6_K to the first and last eighth of the layers and every third in
 *     between; Q3_K_M Q5_K to the first two layers and Q4_K to the rest;
 *     Q3_K_L Q5_K; Q4_K_S Q5_K to the first four; Q2_K Q4_K where 4 or more
 *     query heads share a KV head (Q3_K where fewer); IQ4_NL/XS Q5_K where
 *     4 or more do;
 *   - ffn_down: Q4_K_M and Q5_K_M give Q6_K to the first and last eighth of
 *     the layers and every third in between; Q3_K_M gives Q5_K to the first
 *     sixteenth and Q4_K to the rest; Q3_K_L Q5_K; Q4_K_S and IQ4_NL/XS
 *     give Q5_K to the first eighth; Q2_K gives Q3_K;
 *   - attn_output: Q2_K -> Q3_K, Q3_K_M -> Q4_K, Q3_K_L -> Q5_K;
 *   - everything else in the mix's base type.
 * Where a row length is not a multiple of a K type's 256, llama.cpp falls
 * back: Q2_K and Q3_K to Q4_0, IQ4_XS to IQ4_NL, Q4_K to Q5_0, Q5_K to
 * Q5_1, Q6_K to Q8_0 (F16 where 32 does not divide the row either).
 * A plain format applies no fallback: such a matrix is an error to write. */
#ifndef EMBER_LLM_QUANT_MIX_H
#define EMBER_LLM_QUANT_MIX_H

#include <stdbool.h>
#include <stdint.h>

#include "io/tensor.h"

typedef enum qm_role {
    QM_NONE, /* not a weight matrix (norms, biases) */
    QM_TOKEN_EMBD,
    QM_OUTPUT,
    QM_ATTN_QKV,
    QM_ATTN_GATE,
    QM_ATTN_OUTPUT,
    QM_FFN_GATE,
    QM_FFN_UP,
    QM_FFN_DOWN
} qm_role;

typedef struct quant_mix quant_mix;

/* By name, lower case ("q4_k_m", "q8_0"); NULL if unknown. */
const quant_mix *quant_mix_by_name(const char *name);
/* The mix that writes every matrix as `dt`. */
const quant_mix *quant_mix_single(et_dtype dt);
/* By a format's name, always the every-matrix mix ("q4_0": every matrix in
 * Q4_0, where quant_mix_by_name gives llama.cpp's Q4_0 mix); NULL if none. */
const quant_mix *quant_mix_single_by_name(const char *name);

const char *quant_mix_name(const quant_mix *m);
/* llama.cpp's llama_ftype for general.file_type. */
uint32_t quant_mix_file_type(const quant_mix *m);
et_dtype quant_mix_base(const quant_mix *m);

/* What the rules read of the model. */
typedef struct qm_model {
    int n_layers;
    int n_gqa;  /* query heads per KV head (llama.cpp's n_gqa(): n_head / n_head_kv) */
    bool tied;  /* the token embedding is also the output matrix */
} qm_model;

/* The format of a matrix with `cols` columns in role `role` of layer `layer`
 * (ignored for the global roles) of model `mm`. */
et_dtype quant_mix_type(const quant_mix *m, qm_role role, int layer, int64_t cols, const qm_model *mm);

/* A comma-separated list of every name, for messages. */
const char *quant_mix_names(void);

#endif
