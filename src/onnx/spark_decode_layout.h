/* The shapes of the exported Spark decode step for one context bucket: how
 * many cache slots each layer type gets and how wide its rotary tables are.
 * Shared by the graph writer and the ONNX Runtime host loop (which must not
 * need the writer). */
#ifndef EMBER_ONNX_SPARK_DECODE_LAYOUT_H
#define EMBER_ONNX_SPARK_DECODE_LAYOUT_H

#include <stdint.h>

#include "ember.h"
#include "llm/spark_config.h"

/* What an additive mask holds for a slot the query must not see: finite, so
 * 16-bit activations and compilers that reject inf stay exact (exp of it
 * times the softmax scale underflows to 0 in f32 and f16). */
#define SPARK_ONNX_MASK_OFF (-65504.0f)

/* The forms a graph is exported in: f32; f16 weights, activations and I/O
 * (what the NPU runs, spec onnx-export.md 1.3); int8 weights per output
 * channel, or int4 weights in blocks of 64 along the input axis, behind
 * DequantizeLinear with f32 activations and I/O (QDQ); the same weights
 * with each weight MatMul's input activation through a uint16
 * QuantizeLinear/DequantizeLinear pair whose scale a calibration run of the
 * native model set (a16: what QNN HTP calls w8a16 / w4a16). */
typedef enum {
    SPARK_ONNX_F32 = 0,
    SPARK_ONNX_F16,
    SPARK_ONNX_QDQ8,
    SPARK_ONNX_QDQ4,
    SPARK_ONNX_QDQ8A16,
    SPARK_ONNX_QDQ4A16,
    SPARK_ONNX_LPBQ4A16 /* int4 blocks whose scales are uint8 integers under
                           an f32 scale per output channel (QNN's LPBQ), a16 */
} spark_onnx_form;

/* The bits of the form's quantized weights: 8, 4, or 0 (float). */
static inline int spark_onnx_weight_bits(spark_onnx_form form)
{
    return form == SPARK_ONNX_QDQ8 || form == SPARK_ONNX_QDQ8A16                                    ? 8
           : form == SPARK_ONNX_QDQ4 || form == SPARK_ONNX_QDQ4A16 || form == SPARK_ONNX_LPBQ4A16 ? 4
                                                                                                    : 0;
}
/* Whether the form quantizes activations to uint16 (needs calibration). */
static inline int spark_onnx_a16(spark_onnx_form form)
{
    return form == SPARK_ONNX_QDQ8A16 || form == SPARK_ONNX_QDQ4A16 || form == SPARK_ONNX_LPBQ4A16;
}

/* int4 needs DequantizeLinear's block_size and the int4 type, uint16
 * QuantizeLinear the same release: opset 21 and IR 10 (which Debian's onnx
 * 1.12 checker cannot read); the others stay at opset 17 / IR 8, what AI
 * Hub's own LLM exports use. */
static inline int spark_onnx_opset(spark_onnx_form form)
{
    return spark_onnx_weight_bits(form) == 4 || spark_onnx_a16(form) ? 21 : 17;
}
static inline int spark_onnx_ir_version(spark_onnx_form form)
{
    return spark_onnx_opset(form) == 21 ? 10 : 8;
}
/* The block of the int4 form along a weight's input axis. */
#define SPARK_ONNX_INT4_BLOCK 64

typedef struct spark_decode_layout {
    int32_t context;                    /* the bucket: positions 0..context-1 */
    int32_t tokens;                     /* tokens per run: 1 (decode) or a prefill chunk */
    spark_onnx_form form;
    int32_t slots[SPARK_LAYER_TYPES];   /* cache slots per layer of each type */
    int32_t half[SPARK_LAYER_TYPES];    /* rotary table width: rot_dims / 2 */
    int has_type[SPARK_LAYER_TYPES];
} spark_decode_layout;

/* A layer type's name in graph I/O names and the manifest: "sliding", "full". */
const char *spark_decode_type_name(int type);

const char *spark_onnx_form_name(spark_onnx_form form);
/* Parses "f32", "f16", "qdq8", "qdq4", "qdq8a16", "qdq4a16" or "lpbq4a16"; non-zero when
 * name is none of them. */
int spark_onnx_form_parse(const char *name, spark_onnx_form *out);
/* The element type of the graph's float inputs and outputs: 2 bytes (f16)
 * or 4 (f32). */
static inline size_t spark_onnx_io_bytes(spark_onnx_form form)
{
    return form == SPARK_ONNX_F16 ? 2 : 4;
}

/* The decode layout (tokens 1, form f32; callers set both after).
 * Fails (EMBER_ERR_INVALID_ARG) on a context outside [2, max_positions]. */
ember_status spark_decode_layout_of(const spark_config *c, int32_t context,
                                    spark_decode_layout *out);

#endif
