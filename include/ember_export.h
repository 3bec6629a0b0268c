/* ember's public API: exporting a model's decode step as ONNX for NPU and GPU
 * runtimes (ONNX Runtime with its QNN, CUDA, CoreML... providers, Qualcomm AI
 * Hub), and auditing exported graphs against what those compilers accept.
 *
 * The exported step keeps everything around it in the host's loop: KV rings,
 * masks, rotary tables, sampling. manifest.json in the exported folder names
 * every input and output, its shape, type and meaning. */
#ifndef EMBER_EXPORT_H
#define EMBER_EXPORT_H

#include <stdint.h>

#include "ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The form of the exported graphs. */
typedef enum {
    EMBER_EXPORT_F32 = 0, /* f32 weights, activations and I/O */
    EMBER_EXPORT_F16,     /* f16 weights, activations and I/O (the NPU's form) */
    EMBER_EXPORT_QDQ8,    /* int8 weights per output channel behind
                             DequantizeLinear; f32 activations and I/O */
    EMBER_EXPORT_QDQ4,    /* int4 weights in blocks of 64 along the input
                             axis (symmetric, int4 zero points) behind
                             DequantizeLinear; f32 activations and I/O;
                             opset 21, IR 10; every weight's input size a
                             multiple of 64 */
    EMBER_EXPORT_QDQ8A16, /* QDQ8's weights, and the input activation of
                             every weight MatMul (and the lm head) through a
                             uint16 QuantizeLinear/DequantizeLinear pair
                             whose per-tensor scale covers the range a
                             calibration run of the native model recorded
                             (calib_ids); f32 graph I/O; opset 21, IR 10.
                             Spark models only */
    EMBER_EXPORT_QDQ4A16, /* the same over QDQ4's weights */
    EMBER_EXPORT_LPBQ4A16 /* QDQ4A16 with QNN's low-power block quantization:
                             each 64-block's scale an uint8 integer times an
                             f32 scale per output channel (a DequantizeLinear
                             whose output is the int4 weight's scale) */
} ember_export_form;

typedef struct ember_export_params {
    int32_t context; /* the context bucket: positions 0..context-1 fit; the
                        full-attention caches hold context-1 past entries.
                        default 1024 */
    int32_t prefill_chunk; /* tokens per run of the prefill graph, in
                              [2, context]; 0 writes no prefill graph.
                              default 128 */
    ember_export_form form; /* default EMBER_EXPORT_F32 */
    int32_t per_layer; /* 1: a Qwen3-TTS export also writes one graph per
                          speech-decoder stage (code2wav_25_<stage>.onnx,
                          its state as the whole graph's), for profiling.
                          default 0 */
    const int32_t *calib_ids; /* the a16 forms: token ids the native model
                                 runs to record each quantized activation's
                                 min and max (sample prompts, one after the
                                 other; restarted at the context's end);
                                 required there, ignored otherwise */
    size_t n_calib_ids;
} ember_export_params;

ember_export_params ember_export_default_params(void);

/* Writes into the folder `dir` (created if missing): decode.onnx (the
 * decode step, opset 17, IR 8, static shapes), decode.onnx.data (its weights,
 * 4096-aligned external data), prefill.onnx and prefill.onnx.data (a chunk
 * of prefill_chunk tokens, the same caches as inputs, its new keys and
 * values as outputs) and manifest.json. Files are written whole or
 * removed. Errors: INVALID_ARG (context), UNSUPPORTED (a model option the
 * graph cannot express), IO, NO_MEMORY. Reads the model only. */
ember_status ember_export_onnx(const ember_model *model, const char *dir,
                               const ember_export_params *params);

/* A Qwen3-TTS model (ember_speech.h; loaded with codes_only or whole):
 * writes into `dir` talker.onnx (one talker position: the embedded row in;
 * the codec head's logits and the normed state out; per-layer caches of
 * context-1 slots), predictor.onnx (one code-predictor position; an int32
 * input chooses the codebook's lm head, so one static graph serves all 15),
 * weights.onnx.data (both graphs' weights) and manifest.json (every input
 * and output: shape, type, meaning). params->context is the talker's
 * bucket (prompt plus frames); a prefill_chunk of N adds
 * talker_prefill.onnx (N prompt rows per run, the talker's caches; 0:
 * none, prompts run as talker steps). A model loaded whole (not
 * codes_only) adds its speech decoder as code2wav_N.onnx for chunks of N =
 * 1, 2, 4, 8, 16, 25 frames: the streaming decoder with its conv
 * histories, transposed-conv carries and attention rings as state inputs
 * X and outputs next_X (docs/ONNX.md). Forms as above; the int4 form needs
 * widths in multiples of 64. Errors as ember_export_onnx. */
ember_status ember_export_onnx_tts(const ember_tts *tts, const char *dir,
                                   const ember_export_params *params);

/* One line of an audit report (no newline), for the caller to print. */
typedef void (*ember_line_fn)(void *user, const char *line);

/* Audits every graph the manifest in `dir` lists: its ops, opset, IR
 * version, input/output ranks and shapes go to `line` (may be NULL), then
 * one line per finding. Fails (EMBER_ERR_UNSUPPORTED, the first finding in
 * ember_last_error) on an op outside the QNN HTP allow-list, a dynamic or
 * missing dim, an int64 graph input or Gather index, an IsNaN/Where guard,
 * Reshape allowzero=1, a rank-0 axes initializer, non-constant Slice or
 * Reshape parameters, or a lone Erf (one QNN cannot fuse into GELU);
 * EMBER_ERR_FORMAT when a file is not a readable ONNX model. */
ember_status ember_export_onnx_check(const char *dir, ember_line_fn line, void *user);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_EXPORT_H */
