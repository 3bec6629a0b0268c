/* A view of one tensor inside a mapped checkpoint file. */
#ifndef EMBER_IO_TENSOR_H
#define EMBER_IO_TENSOR_H

#include <stddef.h>
#include <stdint.h>

typedef enum et_dtype {
    ET_F32 = 0,
    ET_F16,
    ET_BF16,
    ET_DTYPE_COUNT
} et_dtype;

/* "F32", "F16", "BF16" as safetensors spells them. */
const char *et_dtype_name(et_dtype dt);
size_t et_dtype_size(et_dtype dt);

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
