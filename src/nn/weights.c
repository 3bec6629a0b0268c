#include "nn/weights.h"

#include "base/large_alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/status.h"
#include "kernels/formats.h"
#include "kernels/rows8.h"

et_dtype wt_dtype_of_type(ember_type t)
{
    switch (t) {
    case EMBER_TYPE_F32: return ET_F32;
    case EMBER_TYPE_F16: return ET_F16;
    case EMBER_TYPE_BF16: return ET_BF16;
    case EMBER_TYPE_Q8_0: return ET_Q8_0;
    case EMBER_TYPE_Q4_0: return ET_Q4_0;
    case EMBER_TYPE_Q2_K: return ET_Q2_K;
    case EMBER_TYPE_Q3_K: return ET_Q3_K;
    case EMBER_TYPE_Q4_K: return ET_Q4_K;
    case EMBER_TYPE_Q5_K: return ET_Q5_K;
    case EMBER_TYPE_Q6_K: return ET_Q6_K;
    case EMBER_TYPE_IQ4_NL: return ET_IQ4_NL;
    case EMBER_TYPE_IQ4_XS: return ET_IQ4_XS;
    case EMBER_TYPE_Q4_1: return ET_Q4_1;
    case EMBER_TYPE_Q5_0: return ET_Q5_0;
    case EMBER_TYPE_Q5_1: return ET_Q5_1;
    case EMBER_TYPE_NONE: break;
    }
    return ET_DTYPE_COUNT;
}

static void shape_text(char *buf, size_t cap, const int64_t *shape, int n)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", i ? ", " : "",
                                 (long long)shape[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
}

ember_status wt_fetch(wt_loader *ld, const char *name, int64_t rows, int64_t cols,
                      const et_tensor **out)
{
    const int64_t want[2] = {rows, cols};
    return wt_fetch_shape(ld, name, cols ? 2 : 1, want, out);
}

ember_status wt_fetch_shape(wt_loader *ld, const char *name, int want_dims, const int64_t *want,
                            const et_tensor **out)
{
    const char *file = NULL;
    const et_tensor *t = ck_get(ld->ck, name, &file);
    char got_s[96], want_s[96];
    if (!t) return ember_fail(EMBER_ERR_FORMAT, "%s: missing tensor '%s'", ck_path(ld->ck), name);
    bool same = t->n_dims == want_dims;
    for (int i = 0; same && i < want_dims; i++) same = t->shape[i] == want[i];
    if (!same) {
        shape_text(got_s, sizeof got_s, t->shape, t->n_dims);
        shape_text(want_s, sizeof want_s, want, want_dims);
        return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s' has shape %s but config.json implies %s",
                          file, name, got_s, want_s);
    }
    /* The kernels read weights in place with naturally aligned loads. Files
     * written by safetensors pad the header, so real checkpoints are aligned. */
    size_t align = et_dtype_is_float(t->dtype) ? et_dtype_size(t->dtype) : 2;
    if ((uintptr_t)t->data % align)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: tensor '%s' data is not aligned to %zu bytes",
                          file, name, align);
    *out = t;
    return EMBER_OK;
}

/* Drops the resident file pages wholly inside [p, p + n): a tensor just
 * copied out of the mapping would otherwise stay in RSS beside its copy
 * until the whole file is dropped (or for good, when the loader keeps other
 * tensors mapped), so loading peaked at file + copies. A page read again
 * later faults back in from the file. */
static void drop_source_pages(const void *p, size_t n)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t begin = ((uintptr_t)p + page - 1) & ~(page - 1), end = ((uintptr_t)p + n) & ~(page - 1);
    if (end > begin) (void)madvise((void *)begin, end - begin, MADV_DONTNEED); /* advice only */
}

ember_status wt_fetch_f32(wt_loader *ld, const char *name, int n_dims, const int64_t *shape,
                          wt_f32_buf *buf, const float **out)
{
    const et_tensor *t;
    ember_status st = wt_fetch_shape(ld, name, n_dims, shape, &t);
    if (st) return st;
    const ek_format *f = ek_format_of(t->dtype);
    if (!et_dtype_is_float(t->dtype) || f->block != 1)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: tensor '%s' must be a float format (F32, F16, "
                          "BF16), not %s", ck_path(ld->ck), name, et_dtype_name(t->dtype));
    const size_t n = (size_t)et_tensor_numel(t);
    if (n > buf->cap) {
        /* nothing to keep: a fresh buffer, in huge pages when large (the
         * largest tensor's worth of 4 KiB page faults otherwise) */
        free(buf->p);
        buf->cap = 0;
        if (!(buf->p = ember_large_alloc(n * sizeof(float))))
            return ember_fail(EMBER_ERR_NO_MEMORY, "loading '%s': out of memory", name);
        buf->cap = n;
    }
    /* the kernel set's conversion where it has one (exact, like the table's) */
    (ld->kernels ? ek_kernels_to_f32(ld->kernels, t->dtype) : f->to_f32)(t->data, buf->p, (int64_t)n);
    drop_source_pages(t->data, t->nbytes); /* the caller repacks the copy */
    *out = buf->p;
    return EMBER_OK;
}

/* Weights are streamed from DRAM every token: in 4 KiB pages
 * every page costs a TLB walk and stops the hardware prefetcher (decode
 * measured ~9% slower than in huge pages). One huge-page allocation per
 * matrix would waste up to 2 MiB of RSS per matrix, so matrices are packed
 * into blocks of WT_BLOCK bytes (a larger matrix gets a block of its own). */
#define WT_BLOCK ((size_t)64 << 20)

static char *block_alloc(wt_loader *ld, size_t bytes)
{
    bytes = (bytes + 63) & ~(size_t)63;
    if (ld->block && ld->block_size - ld->block_used >= bytes) {
        char *p = ld->block + ld->block_used;
        ld->block_used += bytes;
        return p;
    }
    if (*ld->n_converted >= ld->max_converted) return NULL;
    size_t size = bytes > WT_BLOCK ? bytes : WT_BLOCK;
    char *block = ember_large_alloc(size);
    if (!block) return NULL;
    ld->converted[(*ld->n_converted)++] = block;
    ld->block = block;
    ld->block_used = bytes;
    ld->block_size = size;
    return block;
}

/* Whether m, once in `target`, gets the eight-row interleaved layout: the
 * kernel set has a gemm for it and the shape fits (kernels/rows8.h). */
static int wants_rows8(const wt_loader *ld, const ek_matrix *m, et_dtype target)
{
    return ld->kernels && !ld->keep_rows && ld->kernels->gemm_rows8[target] &&
           ek_rows8_fits(target, m->rows, m->cols);
}

/* Replaces m's data by a copy in `target` and `layout` (either may be m's
 * own), in one of the loader's converted blocks. Rows go through fp32
 * where the format changes; the interleaved layout takes them 8 at a time
 * through a small buffer; a matrix that changes neither is copied as it is. */
static ember_status place_matrix(wt_loader *ld, const char *name, ek_matrix *m, et_dtype target,
                                 ek_layout layout)
{
    const ek_format *to = ek_format_of(target), *from = ek_format_of(m->dtype);
    if (m->cols % to->block)
        return ember_fail(EMBER_ERR_UNSUPPORTED,
                          "tensor '%s': %lld columns are not a multiple of the %s block (%d)",
                          name, (long long)m->cols, to->name, to->block);
    const int convert = target != m->dtype, rows8 = layout == EK_LAYOUT_ROWS8;
    size_t in_row = ek_row_bytes(m->dtype, m->cols), out_row = ek_row_bytes(target, m->cols);
    char *dst = block_alloc(ld, (size_t)m->rows * out_row);
    float *row = convert ? malloc((size_t)m->cols * sizeof *row) : NULL;
    char *group = convert && rows8 ? malloc(EK_ROWS8 * out_row) : NULL;
    if (!dst || (convert && !row) || (convert && rows8 && !group)) {
        free(row);
        free(group);
        return ember_fail(EMBER_ERR_NO_MEMORY, "tensor '%s': out of memory converting to %s",
                          name, to->name);
    }
    ek_to_f32_fn widen = ld->kernels ? ek_kernels_to_f32(ld->kernels, m->dtype) : from->to_f32;
    ek_quantize_fn narrow = ld->kernels && target == ET_Q8_0 ? ld->kernels->quantize_q8_0 : NULL;
    const int64_t step = rows8 ? EK_ROWS8 : 1;
    for (int64_t r = 0; r < m->rows; r += step) {
        const char *src = (const char *)m->data + (size_t)r * in_row;
        char *out = dst + (size_t)r * out_row;
        size_t src_stride = in_row;
        if (convert) {
            char *conv = rows8 ? group : out;
            for (int64_t i = 0; i < step; i++) {
                widen(src + (size_t)i * in_row, row, m->cols);
                if (narrow) narrow(row, conv + (size_t)i * out_row, m->cols);
                else to->from_f32(row, conv + (size_t)i * out_row, m->cols);
            }
            src = conv;
            src_stride = out_row;
        }
        if (rows8) ek_rows8_pack(target, m->cols, src, src_stride, out);
    }
    if (!convert && !rows8) memcpy(dst, m->data, (size_t)m->rows * in_row);
    free(row);
    free(group);
    drop_source_pages(m->data, (size_t)m->rows * in_row);
    m->dtype = target;
    m->data = dst;
    m->layout = layout;
    return EMBER_OK;
}

/* matmul: the matrix feeds gemms (and may be interleaved); else it is only
 * read a row at a time. */
static ember_status bind_as(wt_loader *ld, const char *name, int64_t rows, int64_t cols,
                            et_dtype target, int matmul, ek_matrix *out)
{
    const et_tensor *t;
    ember_status st = wt_fetch(ld, name, rows, cols, &t);
    if (st) return st;
    out->dtype = t->dtype;
    out->data = t->data;
    out->rows = rows;
    out->cols = cols;
    out->layout = EK_LAYOUT_ROWS;
    if (target == ET_DTYPE_COUNT) target = t->dtype;
    const ek_layout layout =
        matmul && wants_rows8(ld, out, target) ? EK_LAYOUT_ROWS8 : EK_LAYOUT_ROWS;
    /* A matrix the gemms read is copied even when it stays as stored: in
     * the file's mapping it sits in 4 KiB pages (WT_BLOCK says what those
     * cost; measured on a Q4_K_M 1.7B GGUF, whose K-quants the kernels read
     * as stored: decode 30.0-32.7 -> 36.3-37.9 tok/s). The file's pages are
     * dropped behind the copy, so the resident size stays. */
    if (target != t->dtype || layout != EK_LAYOUT_ROWS || matmul)
        return place_matrix(ld, name, out, target, layout);
    ld->kept_mapped = 1;
    return EMBER_OK;
}

ember_status wt_bind_matrix(wt_loader *ld, const char *name, int64_t rows, int64_t cols,
                            ek_matrix *out)
{
    return bind_as(ld, name, rows, cols, ld->convert_to, 1, out);
}

ember_status wt_bind_table(wt_loader *ld, const char *name, int64_t rows, int64_t cols,
                           ek_matrix *out)
{
    et_dtype target = ld->convert_to;
    if (target != ET_DTYPE_COUNT && et_dtype_is_float(target)) target = ET_DTYPE_COUNT;
    return bind_as(ld, name, rows, cols, target, 0, out);
}

ember_status wt_bind_vector(wt_loader *ld, const char *name, int64_t n, const float **out)
{
    const et_tensor *t;
    ember_status st = wt_fetch(ld, name, n, 0, &t);
    if (st) return st;
    if (ld->vectors_end - ld->next_vector < n)
        return ember_fail(EMBER_ERR_INVALID_ARG, "tensor '%s': vector block exhausted", name);
    float *dst = ld->next_vector;
    ld->next_vector += n;
    ek_matrix as_row = {t->dtype, t->data, 1, n, EK_LAYOUT_ROWS};
    ek_row_to_f32(dst, &as_row, 0);
    *out = dst;
    return EMBER_OK;
}
