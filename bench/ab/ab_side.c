/* One side of the A/B harness: ember's own weight formats, layouts, kernel
 * sets, pool and matmul executor, as the revision this file is compiled
 * against has them. bench/kernel_ab.sh builds it into each revision's
 * library under AB_SIDE_GET's name. */
#include "ab_side.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/large_alloc.h"
#include "base/pool.h"
#include "kernels/exec.h"
#include "kernels/formats.h"
#include "kernels/matmul.h"
#include "kernels/rows8.h"

#ifndef AB_SIDE_GET
#error "build with -DAB_SIDE_GET=name (bench/kernel_ab.sh does)"
#endif

struct ab_matrix {
    const ek_kernel_set *kernels;
    ember_pool *pool;
    ek_matrix w; /* copy 0; copy c at data + c * bytes */
    char *data;
    size_t bytes;
    int copies, max_tokens;
    float *x, *y;
    void *qbuf;
};

static void matrix_free(ab_matrix *m)
{
    if (!m) return;
    pool_free(m->pool);
    free(m->data);
    free(m->x);
    free(m->y);
    free(m->qbuf);
    free(m);
}

static ab_matrix *fail(ab_matrix *m, char *err, size_t len, const char *msg)
{
    snprintf(err, len, "%s", msg);
    matrix_free(m);
    return NULL;
}

static ab_matrix *matrix_new(const char *set, const char *dtype, int64_t rows, int64_t cols,
                             const float *w, int copies, const float *x, int max_tokens,
                             int threads, char *err, size_t err_len)
{
    ab_matrix *m = calloc(1, sizeof *m);
    if (!m) return fail(m, err, err_len, "out of memory");
    m->kernels = strcmp(set, "best") ? ek_kernels_by_name(set) : ek_kernels_best();
    if (!m->kernels) return fail(m, err, err_len, "kernel set not available on this CPU");
    int dt = -1;
    for (int d = 0; d < ET_DTYPE_COUNT; d++)
        if (!strcmp(ek_format_of((et_dtype)d)->name, dtype)) dt = d;
    if (dt < 0) return fail(m, err, err_len, "unknown weight format");
    const ek_format *f = ek_format_of((et_dtype)dt);
    if (cols % f->block) return fail(m, err, err_len, "cols not a multiple of the format's block");
    const size_t rb = ek_row_bytes((et_dtype)dt, cols);
    /* the loader's choice (src/nn/weights.c): interleave where the set can */
    const int rows8 = m->kernels->gemm_rows8[dt] && ek_rows8_fits((et_dtype)dt, rows, cols);
    m->bytes = (size_t)rows * rb;
    m->copies = copies;
    m->max_tokens = max_tokens;
    m->data = ember_large_alloc(m->bytes * (size_t)copies); /* huge pages, as the loader */
    m->x = malloc((size_t)max_tokens * (size_t)cols * sizeof(float));
    m->y = malloc((size_t)max_tokens * (size_t)rows * sizeof(float));
    m->qbuf = malloc(ek_exec_qbuf_bytes(max_tokens, cols));
    char *plain = malloc(m->bytes);
    if (!m->data || !m->x || !m->y || !m->qbuf || !plain) {
        free(plain);
        return fail(m, err, err_len, "out of memory");
    }
    for (int64_t r = 0; r < rows; r++) f->from_f32(w + r * cols, plain + (size_t)r * rb, cols);
    if (rows8)
        for (int64_t g = 0; g < rows / EK_ROWS8; g++)
            ek_rows8_pack((et_dtype)dt, cols, plain + (size_t)g * EK_ROWS8 * rb, rb,
                          m->data + (size_t)g * EK_ROWS8 * rb);
    else
        memcpy(m->data, plain, m->bytes);
    free(plain);
    for (int c = 1; c < copies; c++) memcpy(m->data + (size_t)c * m->bytes, m->data, m->bytes);
    memcpy(m->x, x, (size_t)max_tokens * (size_t)cols * sizeof(float));
    m->w = (ek_matrix){(et_dtype)dt, m->data, rows, cols,
                       rows8 ? EK_LAYOUT_ROWS8 : EK_LAYOUT_ROWS};
    if (threads > 1 && pool_create(threads, &m->pool) != EMBER_OK)
        return fail(m, err, err_len, "cannot start the thread pool");
    return m;
}

static size_t matrix_bytes(const ab_matrix *m) { return m->bytes; }
static const char *matrix_layout(const ab_matrix *m)
{
    return m->w.layout == EK_LAYOUT_ROWS8 ? "rows8" : "rows";
}
static const char *matrix_set(const ab_matrix *m) { return m->kernels->name; }

static const float *matrix_run(ab_matrix *m, int copy, int n_tokens)
{
    ek_matrix w = m->w;
    w.data = m->data + (size_t)(copy % m->copies) * m->bytes;
    ek_exec ex = {m->kernels, m->pool};
    ek_matmul(&ex, m->y, w.rows, m->x, n_tokens, &w, NULL, m->qbuf);
    return m->y;
}

const ab_side *AB_SIDE_GET(void);
const ab_side *AB_SIDE_GET(void)
{
    static const ab_side side = {AB_SIDE_VERSION, matrix_new,  matrix_bytes, matrix_layout,
                                 matrix_set,      matrix_run,  matrix_free};
    return &side;
}
