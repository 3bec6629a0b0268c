/* A view of one tensor inside a mapped checkpoint file. */
#ifndef EMBER_IO_TENSOR_H
#define EMBER_IO_TENSOR_H

#include <stddef.h>
#include <stdint.h>

/* Element formats. The float ones are what safetensors files hold; the block
 * formats (GGUF's layouts) come from GGUF files or conversion at load. Their
 * sizes, conversions and dot products are in src/kernels/formats.h. */
typedef enum et_dtype {
    ET_F32 = 0,
    ET_F16,
    ET_BF16,
    ET_Q8_0, /* blocks of 32: f16 scale + 32 int8 */
    ET_Q4_0, /* blocks of 32: f16 scale + 16 bytes of 4-bit values */
    /* llama.cpp's K-quants and IQ4 (src/kernels/kquants.h): super-blocks of
     * 256 values (IQ4_NL: 32) with integer sub-block scales */
    ET_Q2_K,
    ET_Q3_K,
    ET_Q4_K,
    ET_Q5_K,
    ET_Q6_K,
    ET_IQ4_NL,
    ET_IQ4_XS,
    /* ggml's other 32-value blocks (src/kernels/q32.h): an offset per block
     * (Q4_1, Q5_1) or a fifth bit (Q5_0, Q5_1) */
    ET_Q4_1,
    ET_Q5_0,
    ET_Q5_1,
    ET_DTYPE_COUNT
} et_dtype;

/* "F32", "F16", "BF16" as safetensors spells them; "Q8_0", "Q4_K", ... as
 * ggml does. */
const char *et_dtype_name(et_dtype dt);
/* Bytes per element of a float format; 0 for block formats. */
size_t et_dtype_size(et_dtype dt);
/* True for F32/F16/BF16 (one value per element, no blocks). */
int et_dtype_is_float(et_dtype dt);

#define ET_MAX_DIMS 4

typedef struct et_tensor {
    const char *name;     /* owned by the file that holds the tensor */
    et_dtype dtype;
    int n_dims;           /* 0 (scalar) .. ET_MAX_DIMS */
    int64_t shape[ET_MAX_DIMS];
    const void *data;     /* points into the read-only mapping */
    size_t nbytes;
} et_tensor;

/* Number of elements (1 for a scalar). */
int64_t et_tensor_numel(const et_tensor *t);

#endif
