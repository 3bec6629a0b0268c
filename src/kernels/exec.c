#include "kernels/exec.h"

#include "kernels/formats.h"

/* Rows are handed out in multiples of this, so that no two workers write the
 * same cache line of y. */
#define ROW_ALIGN 16

size_t ek_exec_qbuf_bytes(int max_tokens, int64_t max_cols)
{
    return (size_t)max_tokens * ek_row_bytes(ET_Q8_0, max_cols);
}

typedef struct gemm_task {
    const ek_exec *ex;
    float *y;
    int64_t y_stride;
    const ek_matrix *w;
    const void *x;
    size_t x_stride;
    int n_tokens;
} gemm_task;

static void run_gemm(void *p, int part, int n_parts, int worker)
{
    const gemm_task *t = p;
    int64_t r0, r1;
    (void)worker;
    pool_split(t->w->rows, ROW_ALIGN, part, n_parts, &r0, &r1);
    if (r0 < r1)
        t->ex->kernels->gemm[t->w->dtype](t->y, t->y_stride, t->w, r0, r1, t->x, t->x_stride,
                                         t->n_tokens);
}

void ek_matmul(const ek_exec *ex, float *y, int64_t y_stride, const float *x, int n_tokens,
               const ek_matrix *w, const float *bias, void *qbuf)
{
    gemm_task t = {ex, y, y_stride, w, x, (size_t)w->cols * sizeof(float), n_tokens};
    if (ek_format_of(w->dtype)->act == ET_Q8_0) {
        size_t qrow = ek_row_bytes(ET_Q8_0, w->cols);
        for (int i = 0; i < n_tokens; i++)
            ex->kernels->quantize_q8_0(x + (int64_t)i * w->cols, (char *)qbuf + (size_t)i * qrow,
                                       w->cols);
        t.x = qbuf;
        t.x_stride = qrow;
    }
    /* a few parts per worker, so a late worker's share is picked up */
    int64_t max_parts = (w->rows + ROW_ALIGN - 1) / ROW_ALIGN;
    int parts = 4 * pool_size(ex->pool);
    pool_run(ex->pool, run_gemm, &t, parts < max_parts ? parts : (int)max_parts);
    if (bias)
        for (int i = 0; i < n_tokens; i++)
            for (int64_t r = 0; r < w->rows; r++) y[i * y_stride + r] += bias[r];
}
