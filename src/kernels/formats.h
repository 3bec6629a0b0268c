/* The weight formats, in one table: block size, bytes per block, the GGUF
 * type id, conversions to and from fp32, and which activation format the dot
 * products take. Every block format uses GGUF's layout byte for byte, so a
 * quantized tensor can be written to or read from a llama.cpp file as is;
 * the K-quants and IQ4 (256-value super-blocks) are in kquants.h, Q4_1, Q5_0
 * and Q5_1 in q32.h.
 *
 *   Q8_0 block (34 bytes): f16 d, int8 q[32];          x[j] = d * q[j]
 *   Q4_0 block (18 bytes): f16 d, uint8 qs[16];         x[j]      = d * ((qs[j] & 15) - 8)
 *                                                       x[j + 16] = d * ((qs[j] >> 4) - 8)
 */
#ifndef EMBER_KERNELS_FORMATS_H
#define EMBER_KERNELS_FORMATS_H

#include <stddef.h>
#include <stdint.h>

#include "io/tensor.h"

#define EK_QBLOCK 32

typedef struct ek_block_q8_0 {
    uint16_t d; /* f16 scale */
    int8_t q[EK_QBLOCK];
} ek_block_q8_0;

typedef struct ek_block_q4_0 {
    uint16_t d; /* f16 scale */
    uint8_t qs[EK_QBLOCK / 2];
} ek_block_q4_0;

typedef struct ek_format {
    et_dtype dtype;
    const char *name;   /* lower case, as on the command line: "q8_0" */
    int32_t block;      /* elements per block (1 for float formats) */
    size_t block_bytes;
    uint32_t ggml_type; /* GGUF tensor type id */
    /* The format the other operand of a dot product must be in: fp32 for the
     * float formats; Q8_0 for the quantized ones (activations are quantized
     * on the fly so the dot product runs on integers). */
    et_dtype act;
    /* n must be a multiple of block. */
    void (*to_f32)(const void *src, float *dst, int64_t n);
    void (*from_f32)(const float *src, void *dst, int64_t n);
} ek_format;

/* NULL for an out-of-range dtype. */
const ek_format *ek_format_of(et_dtype dt);
/* By lower-case name ("f32", "bf16", "q4_0", ...); NULL if unknown. */
const ek_format *ek_format_by_name(const char *name);
/* By GGUF type id; NULL if ember does not support it. */
const ek_format *ek_format_by_ggml_type(uint32_t ggml_type);

/* Bytes of a row of n elements (n a multiple of the block size). */
size_t ek_row_bytes(et_dtype dt, int64_t n);

/* fp32 -> IEEE half, round to nearest even (overflow to inf, NaN kept). */
uint16_t ek_f32_to_f16(float f);

#endif
