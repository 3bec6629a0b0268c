/* The forward pass of a Qwen3 decoder stack (the talker's 28 layers or the
 * code predictor's 5) over a chunk of rows already embedded: per layer,
 * RMSNorm, Q/K/V, per-head q/k RMSNorm, NeoX RoPE over the whole head,
 * GQA attention over a linear KV cache (llm/attention.h), the output
 * projection, then a SwiGLU MLP; the residual stream is fp32. */
#ifndef EMBER_TTS_TTS_STACK_H
#define EMBER_TTS_TTS_STACK_H

#include "kernels/exec.h"
#include "nn/kv.h"
#include "tts/qwen3_tts_load.h"

typedef struct tts_stack_state {
    const tts_stack *w;
    const ek_exec *exec; /* the session's kernels and pool */
    void *qbuf;          /* the session's activation buffer (ek_exec_qbuf_bytes) */
    kv_cache kv;
    int32_t max_chunk, max_context;
    float *h, *q, *k, *v, *attn, *ffn_g, *ffn_u; /* max_chunk rows each */
    float *scores;                               /* per worker */
    size_t scores_stride;
    float *inv_freq, *cos_t, *sin_t;
    float *block; /* owns every buffer above */
} tts_stack_state;

/* Sizes the cache for max_context positions and the scratch for chunks of up
 * to max_chunk rows; n_workers is the pool's size. */
ember_status tts_stack_state_init(tts_stack_state *s, const tts_stack *w, const ek_exec *exec,
                                  void *qbuf, int n_workers, int32_t max_context,
                                  int32_t max_chunk);
void tts_stack_state_free(tts_stack_state *s);

/* The largest matrix input the stack has (for sizing qbuf). */
int64_t tts_stack_max_cols(const tts_stack_config *c);

/* Runs n <= max_chunk rows x (n x hidden, updated in place) at positions
 * p0..p0+n-1 through every layer; p0 + n <= max_context (the caller checks).
 * The final norm is not applied. */
void tts_stack_forward(tts_stack_state *s, float *x, int64_t p0, int32_t n);

#endif
