/* Binding checkpoint tensors to a model's weights, shared by every model
 * loader: fetch a tensor by name with shape and alignment checks, keep a
 * matrix in the file's format or convert it once at load, and copy small
 * vectors (norm weights, biases) to fp32. */
#ifndef EMBER_NN_WEIGHTS_H
#define EMBER_NN_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "io/checkpoint.h"
#include "kernels/matmul.h"

typedef struct wt_loader {
    ck_dir *ck;
    float *next_vector;   /* bump pointer into the model's fp32 vector block */
    float *vectors_end;   /* one past that block: a bind beyond it is a bug, refused */
    void **converted;     /* the model's list of blocks holding converted copies (it frees them) */
    size_t *n_converted;
    size_t max_converted;
    et_dtype convert_to;  /* ET_DTYPE_COUNT: keep the file's formats */
    int kept_mapped;      /* set when a matrix still points into a file mapping */
    /* Converted matrices are packed into large huge-page blocks (see
     * place_matrix in weights.c); zero-initialize. */
    char *block;
    size_t block_used, block_size;
    /* the model's kernel set: its row conversions and Q8_0 quantizer (bit-
     * identical to the format table's) make converting at load fast */
    const ek_kernel_set *kernels;
    /* keep the row layout even where the set has interleaved gemms (a
     * matrix that will be split at rows that are not multiples of 8) */
    int keep_rows;
} wt_loader;

/* The storage format an ember_type asks for; ET_DTYPE_COUNT for NONE. */
et_dtype wt_dtype_of_type(ember_type t);

/* Finds `name` and checks its shape: [rows] when cols is 0, else [rows, cols].
 * Errors name the file and tensor ("config.json implies [..]"). */
ember_status wt_fetch(wt_loader *ld, const char *name, int64_t rows, int64_t cols,
                      const et_tensor **out);

/* The same for any number of dimensions (conv weights are 3-D). */
ember_status wt_fetch_shape(wt_loader *ld, const char *name, int n_dims, const int64_t *shape,
                            const et_tensor **out);

/* A float tensor widened to fp32 into a reusable buffer (grown as needed;
 * the caller frees buf->p): for weights that are repacked at load (conv
 * panels, codebooks), whatever float dtype the file stores. */
typedef struct wt_f32_buf {
    float *p;
    size_t cap;
} wt_f32_buf;
ember_status wt_fetch_f32(wt_loader *ld, const char *name, int n_dims, const int64_t *shape,
                          wt_f32_buf *buf, const float **out);

/* Binds a [rows, cols] matrix, converted to ld->convert_to when one is set,
 * and in the eight-row interleaved layout (kernels/rows8.h) when the
 * loader's kernel set has gemms for it. */
ember_status wt_bind_matrix(wt_loader *ld, const char *name, int64_t rows, int64_t cols,
                            ek_matrix *out);

/* Binds a [rows, cols] matrix that is only ever read a row at a time (an
 * embedding table): converted only when the target format is smaller than a
 * float format, since a lookup reads one row and fp32 copies would only
 * double the memory (bf16 -> fp32 is exact, so the values do not change). */
ember_status wt_bind_table(wt_loader *ld, const char *name, int64_t rows, int64_t cols,
                           ek_matrix *out);

/* Copies an [n] vector to fp32 from the loader's vector block. */
ember_status wt_bind_vector(wt_loader *ld, const char *name, int64_t n, const float **out);

#endif
