/* The Qwen3-TTS 12 Hz speech decoder ("Code2Wav"): codec frames of
 * n_quantizers codes in, samples_per_frame (1920) samples of 24 kHz audio
 * out per frame, as the official decoder computes them:
 *
 *   codes -> RVQ dequantisation (codebook = embedding_sum / usage, first and
 *   rest output projections) -> causal pre_conv (k3) -> transformer (input
 *   projection, sliding-window layers with LayerScale, norm, output
 *   projection) -> upsample stages (transposed conv x2 + ConvNeXt) ->
 *   decoder.0 conv (k7) -> decoder blocks (SnakeBeta, transposed conv with
 *   the right trim, residual units with dilations 1/3/9) -> SnakeBeta ->
 *   conv (k7) to one channel -> clamp to [-1, 1].
 *
 * Every stage is causal, so the decoder is a stream: a c2w_stream keeps each
 * convolution's input history, each transposed conv's previous input and a
 * window-1 key ring per attention layer, and pushing frames in any chunking
 * yields the samples a one-shot decode of the whole utterance would. A
 * c2w_model is immutable after load and shared by any number of streams. */
#ifndef EMBER_TTS_CODE2WAV_H
#define EMBER_TTS_CODE2WAV_H

#include <stdint.h>

#include "ember.h"
#include "io/checkpoint.h"
#include "kernels/conv.h"
#include "kernels/conv_winograd.h"
#include "kernels/matmul.h"
#include "tts/code2wav_config.h"
#include "tts/qwen3_tts_load.h"

/* A causal conv (or a transposed conv rewritten as one) with its bias
 * (expanded to every phase of a transposed conv). */
typedef struct c2w_conv {
    ek_conv_weights w;
    const float *bias; /* w.cout floats, or NULL */
    int32_t dilation;
} c2w_conv;

/* SnakeBeta's parameters as the kernel takes them: a = exp(alpha),
 * inv_b = 1 / (exp(beta) + 1e-9). */
typedef struct c2w_snake {
    const float *a, *inv_b;
} c2w_snake;

typedef struct c2w_convnext {
    const float *dw;   /* depthwise k7 weights, tap-major [7][channels] */
    const float *dw_b, *ln_w, *ln_b, *gamma;
    c2w_conv pw1, pw2; /* 1x1: channels -> 4 channels -> channels */
} c2w_convnext;

typedef struct c2w_upsample {
    int32_t ratio;
    c2w_conv up; /* transposed, k = stride = ratio */
    c2w_convnext block;
} c2w_upsample;

typedef struct c2w_resunit {
    c2w_snake act1, act2;
    c2w_conv conv1; /* k7, dilated */
    ek_winograd conv1_fast; /* the same as Winograd F(2,7), when enabled (n > 0) */
    c2w_conv conv2; /* k1 */
} c2w_resunit;

typedef struct c2w_block {
    int32_t rate, cin, cout;
    c2w_snake act;
    c2w_conv up; /* transposed, k = 2 rate, stride rate */
    c2w_resunit units[3];
} c2w_block;

typedef struct c2w_model {
    c2w_config cfg;
    ck_dir *ck;
    const ek_kernel_set *kernels;
    ek_conv_format conv_format;
    int winograd;
    const float *codebooks[C2W_MAX_QUANTIZERS]; /* [codebook_size][vq_dim], divided by usage */
    c2w_conv proj_first, proj_rest;             /* 1x1, vq_dim -> codebook_dim, no bias */
    c2w_conv pre_conv;                          /* k3, codebook_dim -> latent */
    ek_matrix in_proj, out_proj;                /* latent -> hidden -> latent */
    const float *in_proj_b, *out_proj_b;
    tts_stack transformer;
    c2w_upsample upsample[C2W_MAX_UPSAMPLE];
    c2w_conv dec0; /* k7, latent -> decoder_dim */
    c2w_block blocks[C2W_MAX_BLOCKS];
    c2w_snake final_act;
    c2w_conv final_conv; /* k7, last channels -> 1 */

    int32_t n_unconverted;
    float *vectors;   /* fp32 norm weights, biases, scales, codebooks */
    void **converted; /* converted matrices (weight loader blocks) */
    size_t n_converted;
    ek_conv_weights *packed[256]; /* every packed conv, freed with the model */
    int32_t n_packed;
} c2w_model;

typedef struct c2w_model_params {
    /* F32: fp32 throughout (the parity path); NONE: the same arithmetic, but
     * weights a file stores as f16 stay f16 (convs and transformer matrices
     * at half the memory of fp32); BF16: conv products in bf16 (VDPBF16PS
     * where the CPU has it) and bf16 transformer matrices */
    ember_type weight_type;
    const char *kernels; /* NULL: the best set this CPU runs */
    /* fp32 residual-unit convs by Winograd F(2,7): 8 products per output
     * pair instead of 14, ~1.4x faster decoding, rounding within fp32's
     * (tests/unit/test_conv.c); 0 keeps the direct convs */
    int winograd;
} c2w_model_params;

/* Loads the decoder from DIR/speech_tokenizer (config.json and
 * model.safetensors; `encoder.*` tensors are ignored), or from DIR itself
 * when it holds them directly. Errors name the file and tensor. */
ember_status c2w_model_load(const char *dir, const c2w_model_params *p, c2w_model **out);
/* The decoder's weight format as it runs: "f32", "f16" or "bf16". */
const char *c2w_weights_name(const c2w_model *m);
void c2w_model_free(c2w_model *m);

typedef struct c2w_stream c2w_stream;

typedef struct c2w_stream_params {
    int32_t n_threads;       /* incl. the caller; 0 = one per online CPU */
    int32_t frames_per_pass; /* frames the front stages take at once; 0 = 25 */
    /* an `ember export onnx` folder whose speech decoder graphs ONNX
     * Runtime (the library at onnx_runtime, NULL: libonnxruntime.so.1,
     * with the execution provider and options named as in
     * ember_model_params) runs instead of the native stages, n_threads intra-op threads (the
     * stream's thread controls then do nothing); a folder without decoder
     * graphs keeps the native decoder. NULL: native. */
    const char *onnx_dir;
    const char *onnx_runtime;
    const char *onnx_provider, *onnx_options;
} c2w_stream_params;

c2w_stream_params c2w_stream_default_params(void);
ember_status c2w_stream_create(const c2w_model *m, const c2w_stream_params *p, c2w_stream **out);
void c2w_stream_free(c2w_stream *s);
/* Forgets the utterance: the next push starts a new one. */
void c2w_stream_reset(c2w_stream *s);
/* Decodes n_frames frames (codes frame-major, n_quantizers each, every code
 * in [0, codebook_size)) into pcm (n_frames x samples_per_frame floats). */
ember_status c2w_stream_push(c2w_stream *s, const int32_t *codes, int32_t n_frames, float *pcm);
/* Pushes n_frames frames whose audio nobody hears (an in-context clone's
 * reference): the state afterwards is the one c2w_stream_push leaves, within
 * fp32 rounding as for any chunking, but only the front (dequantisation,
 * pre_conv, transformer) sees every frame; the convolution stages after it
 * see only the last few (their receptive field, ~11 frames), so priming with
 * a 10 s reference costs about a tenth of decoding it. */
ember_status c2w_stream_prime(c2w_stream *s, const int32_t *codes, int32_t n_frames);
const c2w_model *c2w_stream_model(const c2w_stream *s);
/* The stream's threads, and how many of them the next pushes use. */
int32_t c2w_stream_threads(const c2w_stream *s);
void c2w_stream_use_threads(c2w_stream *s, int32_t n);
/* Pins the stream's worker threads to cpus[0..n) (pool_pin). */
ember_status c2w_stream_pin(c2w_stream *s, const int32_t *cpus, int32_t n);
/* The approximate alternative, for comparison: decode n_ctx frames of left
 * context and then the n_new frames of the chunk from a fresh state, keeping
 * only the chunk's samples (what a server does that re-decodes a window of
 * N previous frames per chunk instead of keeping state). codes holds the
 * n_ctx + n_new frames; pcm receives n_new x samples_per_frame. Resets s. */
ember_status c2w_stream_push_windowed(c2w_stream *s, const int32_t *codes, int32_t n_ctx,
                                      int32_t n_new, float *pcm);
/* Frames pushed since the start of the utterance. */
int64_t c2w_stream_frames(const c2w_stream *s);
/* 1 when the stream runs the onnx folder's decoder graphs; their chunk
 * sizes, largest first (returns the count, 0 when native). */
int c2w_stream_on_onnx(const c2w_stream *s);
int c2w_stream_onnx_sizes(const c2w_stream *s, int32_t *sizes, int max);

#endif
