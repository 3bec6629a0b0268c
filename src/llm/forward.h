/* The pieces of a forward pass over rows of tokens, shared by a session
 * (the rows are one sequence's chunk) and a batch (one row per sequence):
 * the per-row work (norms, projections, RoPE, MLP) does not care whose row
 * it is; only attention reads a cache, and the caller runs it between
 * llm_attn_in and llm_attn_out. Every matrix is multiplied once for all
 * rows, so its weights are read once per step whatever the row count. */
#ifndef EMBER_LLM_FORWARD_H
#define EMBER_LLM_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "kernels/exec.h"
#include "llm/spark.h"

/* Scratch for up to `rows` rows, all from one allocation. */
typedef struct llm_work {
    const ember_model *m;
    ek_exec exec;
    int32_t rows;
    float *x;        /* rows x hidden: the fp32 residual stream */
    float *h;        /* rows x hidden: normed input / projection output */
    float *qkv;      /* rows x (heads + 2 kv_heads) * head_dim */
    float *gate;     /* rows x heads */
    float *attn;     /* rows x heads * head_dim */
    float *ffn_g, *ffn_u; /* rows x intermediate */
    float *scores;   /* per worker: attention scratch for a chunk of `rows` */
    size_t scores_stride;
    void *qbuf;      /* activations quantized for Q8_0/Q4_0 weights */
    float *inv_freq[SPARK_LAYER_TYPES];       /* rot/2 */
    float *cos_t[SPARK_LAYER_TYPES], *sin_t[SPARK_LAYER_TYPES]; /* rows x rot/2 */
    float *block;
    /* NULL, or a calibration run's ranges (onnx/calibrate.h): every weight
     * MatMul's input min and max per layer, widened as rows pass */
    float *act_range;
} llm_work;

/* Calibration slots per layer: the inputs of q/k/v/gate, of the output
 * projection, of ffn gate/up, of ffn down (the lm head's input after the
 * last layer), the order onnx/spark_decode_graph.h quantizes. */
#define LLM_RANGES_PER_LAYER 4

/* exec's pool (may be NULL) must outlive the work. */
ember_status llm_work_init(llm_work *w, const ember_model *m, const ek_exec *exec, int32_t rows);
void llm_work_free(llm_work *w);

/* Embeds ids[0..n) into x and computes each row's rotary table at its
 * position: pos[t], or p0 + t when pos is NULL (a chunk of one sequence). */
void llm_embed(llm_work *w, const int32_t *ids, int64_t p0, const int64_t *pos, int32_t n);

/* Layer li, before attention: h = norm(x); q, k, v (rotated) and the gate
 * in qkv and gate. Row t's q is at qkv + t*llm_qkv_stride, k after heads*d
 * floats, v after kv_heads*d more. */
void llm_attn_in(llm_work *w, int32_t li, int32_t n);
int64_t llm_qkv_stride(const spark_config *c);

/* Layer li, after attention wrote attn: gate, output projection, residual. */
void llm_attn_out(llm_work *w, int32_t li, int32_t n);

/* Layer li's MLP: x += down(gelu(gate(norm(x))) * up(norm(x))). */
void llm_mlp(llm_work *w, int32_t li, int32_t n);

/* Logits of rows [first, first + n): final norm and lm_head, row r into
 * out + (r - first) * vocab. */
void llm_logits(llm_work *w, int32_t first, int32_t n, float *out);

#endif
