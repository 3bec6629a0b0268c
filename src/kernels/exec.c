#include "kernels/exec.h"

#include <stdint.h>

#include "kernels/formats.h"

/* Rows are handed out in multiples of this, so that no two workers write the
 * same cache line of y. */
#define ROW_ALIGN 16
/* Token counts the decode engines take (the pairs and row kernels, the
 * K-quant decode engines): at most a server's batch of 8. */
#define DECODE_MAX_TOKENS 8

/* The Q8_0 rows, then (64-byte aligned) room for a set's prepared form. */
size_t ek_exec_qbuf_bytes(int max_tokens, int64_t max_cols)
{
    return (size_t)max_tokens * ek_row_bytes(ET_Q8_0, max_cols) + 64 +
           ek_prepared_max_bytes(max_tokens, max_cols);
}

typedef struct gemm_task {
    const ek_exec *ex;
    const ek_matmul_out *outs;
    int n_outs;
    int64_t total_rows;
    const void *x;
    size_t x_stride;
    int n_tokens;
    const void *prepared; /* x in the set's prepared form, or NULL */
} gemm_task;

/* Rows [lo, hi) of w times the task's activations into y. */
static void gemm_range(const gemm_task *t, float *y, int64_t ys, const ek_matrix *w, int64_t lo,
                       int64_t hi)
{
    if (t->prepared)
        ek_kernels_gemm_prepared(t->ex->kernels, w)(y, ys, w, lo, hi, t->prepared, t->n_tokens);
    else
        ek_kernels_gemm(t->ex->kernels, w)(y, ys, w, lo, hi, t->x, t->x_stride, t->n_tokens);
}

/* A part is a range of the outputs' rows laid end to end; it may span the
 * end of one matrix and the start of the next. */
static void run_gemm(void *p, int part, int n_parts, int worker)
{
    const gemm_task *t = p;
    int64_t r0, r1, base = 0;
    (void)worker;
    pool_split(t->total_rows, ROW_ALIGN, part, n_parts, &r0, &r1);
    for (int i = 0; i < t->n_outs && base < r1; i++) {
        const ek_matmul_out *o = &t->outs[i];
        int64_t lo = r0 > base ? r0 - base : 0, hi = r1 - base < o->w->rows ? r1 - base : o->w->rows;
        if (lo < hi) gemm_range(t, o->y, o->y_stride, o->w, lo, hi);
        base += o->w->rows;
    }
}

/* Quantizing the activations to Q8_0 rows, and then preparing them, on the
 * pool: a prefill chunk's x is large enough that one thread doing it alone
 * leaves the others waiting. */
typedef struct act_task {
    const ek_kernel_set *k;
    const ek_prepared_form *form; /* of `prepared`, or NULL */
    const float *x;
    char *xq;
    void *prepared;
    int64_t cols;
    size_t qrow;
    int n_tokens;
} act_task;

static void run_quantize(void *p, int part, int n_parts, int worker)
{
    const act_task *t = p;
    int64_t t0, t1;
    (void)worker;
    pool_split(t->n_tokens, 1, part, n_parts, &t0, &t1);
    for (int64_t i = t0; i < t1; i++)
        t->k->quantize_q8_0(t->x + i * t->cols, t->xq + (size_t)i * t->qrow, t->cols);
}

static void run_prepare(void *p, int part, int n_parts, int worker)
{
    const act_task *t = p;
    (void)worker;
    t->form->prepare(t->prepared, t->xq, t->qrow, t->n_tokens, t->cols, part, n_parts);
}

/* The prepared form every output's gemm reads, when all read the same one
 * and the set prepares this many tokens: then x is prepared once, here,
 * instead of in every gemm call (qbuf has room for it). */
static const ek_prepared_form *shared_form(const ek_exec *ex, const ek_matmul_out *outs, int n_outs,
                                           int n_tokens)
{
    const ek_kernel_set *k = ex->kernels;
    const ek_prepared_form *form = k->prepared_form[outs[0].w->dtype];
    if (!form) return NULL;
    for (int i = 0; i < n_outs; i++)
        if (k->prepared_form[outs[i].w->dtype] != form || !ek_kernels_gemm_prepared(k, outs[i].w))
            return NULL;
    const size_t bytes = form->bytes(n_tokens, outs[0].w->cols);
    return bytes && bytes <= ek_prepared_max_bytes(n_tokens, outs[0].w->cols) ? form : NULL;
}

/* Whether the outputs can share one activation format and one run: the
 * same width and activation format, and each interleaved matrix starting at
 * a multiple of its 8-row groups. Their rows laid end to end in *total. */
static int one_run(const ek_matmul_out *outs, int n_outs, int64_t *total)
{
    const ek_matrix *w0 = outs[0].w;
    *total = 0;
    for (int i = 0; i < n_outs; i++) {
        if (outs[i].w->cols != w0->cols ||
            ek_format_of(outs[i].w->dtype)->act != ek_format_of(w0->dtype)->act ||
            (outs[i].w->layout == EK_LAYOUT_ROWS8 && *total % 8))
            return 0;
        *total += outs[i].w->rows;
    }
    return 1;
}

/* The task's activations in the outputs' format: x itself, or its Q8_0 rows
 * in qbuf, and (when every output has a gemm on it) the set's prepared form
 * of them after those. */
static void activations(gemm_task *t, const float *x, void *qbuf)
{
    const ek_exec *ex = t->ex;
    const ek_matrix *w0 = t->outs[0].w;
    const int workers = pool_size(ex->pool), n_tokens = t->n_tokens;
    t->x = x;
    t->x_stride = (size_t)w0->cols * sizeof(float);
    t->prepared = NULL;
    if (ek_format_of(w0->dtype)->act != ET_Q8_0) return;
    const size_t qrow = ek_row_bytes(ET_Q8_0, w0->cols), qbytes = (size_t)n_tokens * qrow;
    const ek_prepared_form *form = shared_form(ex, t->outs, t->n_outs, n_tokens);
    act_task a = {ex->kernels, form, x, qbuf, NULL, w0->cols, qrow, n_tokens};
    if (form) {
        a.prepared = (void *)(((uintptr_t)qbuf + qbytes + 63) & ~(uintptr_t)63);
        pool_run(ex->pool, run_quantize, &a, n_tokens < workers ? n_tokens : workers);
        pool_run(ex->pool, run_prepare, &a, workers);
        t->prepared = a.prepared;
    } else {
        run_quantize(&a, 0, 1, 0);
    }
    t->x = qbuf;
    t->x_stride = qrow;
}

/* y[t][r] += bias[r] for r < rows, t < n_tokens */
static void add_bias(float *y, int64_t ys, const float *bias, int64_t rows, int n_tokens)
{
    for (int i = 0; i < n_tokens; i++)
        for (int64_t r = 0; r < rows; r++) y[i * ys + r] += bias[r];
}

void ek_matmul_many(const ek_exec *ex, const float *x, int n_tokens, const ek_matmul_out *outs,
                    int n_outs, void *qbuf)
{
    if (n_outs < 1) return;
    int64_t total;
    if (!one_run(outs, n_outs, &total)) {
        for (int j = 0; j < n_outs; j++) ek_matmul_many(ex, x, n_tokens, &outs[j], 1, qbuf);
        return;
    }
    gemm_task t = {ex, outs, n_outs, total, NULL, 0, n_tokens, NULL};
    const int workers = pool_size(ex->pool);
    activations(&t, x, qbuf);
    /* a few parts per worker, so a late worker's share is picked up; two
     * for a decode step, whose engines rebuild their form of the
     * activations in every part (kernel_ab, 1 token, 2 threads, DRAM, 2
     * parts against 4: Q4_K 6144x2048 1.03x, 2048x2048 1.04x, Q8_0 1.01x,
     * Q6_K 1.00x; 1 part lost 7% at 2048x2048) */
    int64_t max_parts = (total + ROW_ALIGN - 1) / ROW_ALIGN;
    int parts = (n_tokens <= DECODE_MAX_TOKENS ? 2 : 4) * workers;
    pool_run(ex->pool, run_gemm, &t, parts < max_parts ? parts : (int)max_parts);
    for (int k = 0; k < n_outs; k++) {
        const ek_matmul_out *o = &outs[k];
        if (o->bias) add_bias(o->y, o->y_stride, o->bias, o->w->rows, n_tokens);
    }
}

void ek_matmul(const ek_exec *ex, float *y, int64_t y_stride, const float *x, int n_tokens,
               const ek_matrix *w, const float *bias, void *qbuf)
{
    const ek_matmul_out o = {y, y_stride, w, bias};
    ek_matmul_many(ex, x, n_tokens, &o, 1, qbuf);
}

/* ---- the MLP's gated half ------------------------------------------------ */

typedef struct glu_task {
    gemm_task gemm; /* outs: gate (into g), up */
    float *u;       /* the workers' strips of up rows, or all of up's output */
    ek_glu_fn glu;
    ek_glu_act act;
} glu_task;

/* g = act(g) * u over the n_tokens x rows outputs, split over the workers */
static void run_glu(void *p, int part, int n_parts, int worker)
{
    const glu_task *t = p;
    const int64_t rows = t->gemm.outs[0].w->rows;
    int64_t a, b;
    (void)worker;
    pool_split((int64_t)t->gemm.n_tokens * rows, 64, part, n_parts, &a, &b);
    if (b > a) t->glu(t->gemm.outs[0].y + a, t->u + a, b - a, t->act);
}

/* Rows of gate and of up per strip: a multiple of ROW_ALIGN, of the
 * eight-row groups and of the token-major tiles' 48-row panels. A strip of
 * 128 tokens is 48 KiB of each output, which L2 keeps until the activation
 * reads them back. */
enum { GLU_STRIP = 96 };

/* A part's strips: gate rows into g, the same up rows into the worker's
 * strip of u (GLU_STRIP floats a token), then g = act(g) * u on them. */
static void run_glu_strips(void *p, int part, int n_parts, int worker)
{
    const glu_task *t = p;
    const ek_matmul_out *gate = &t->gemm.outs[0], *up = &t->gemm.outs[1];
    const int n_tokens = t->gemm.n_tokens;
    float *us = t->u + (size_t)worker * GLU_STRIP * (size_t)n_tokens;
    int64_t r0, r1;
    pool_split(gate->w->rows, GLU_STRIP, part, n_parts, &r0, &r1);
    for (int64_t s0 = r0; s0 < r1; s0 += GLU_STRIP) {
        const int64_t n = r1 - s0 < GLU_STRIP ? r1 - s0 : GLU_STRIP;
        const ek_matrix wg = ek_matrix_rows(gate->w, s0, n), wu = ek_matrix_rows(up->w, s0, n);
        float *gs = gate->y + s0;
        gemm_range(&t->gemm, gs, gate->y_stride, &wg, 0, n);
        gemm_range(&t->gemm, us, GLU_STRIP, &wu, 0, n);
        if (gate->bias) add_bias(gs, gate->y_stride, gate->bias + s0, n, n_tokens);
        if (up->bias) add_bias(us, GLU_STRIP, up->bias + s0, n, n_tokens);
        for (int i = 0; i < n_tokens; i++)
            t->glu(gs + (int64_t)i * gate->y_stride, us + (int64_t)i * GLU_STRIP, n, t->act);
    }
}

void ek_matmul_glu(const ek_exec *ex, float *g, float *u, const float *x, int n_tokens,
                   const ek_glu_mats *m, void *qbuf)
{
    const int64_t rows = m->gate->rows;
    const int workers = pool_size(ex->pool);
    const ek_matmul_out outs[2] = {{g, rows, m->gate, m->b_gate}, {u, rows, m->up, m->b_up}};
    glu_task t = {{ex, outs, 2, 0, NULL, 0, n_tokens, NULL}, u, ex->kernels->glu, m->act};
    int64_t total;
    /* Strips pay off where the outputs outgrow the caches (a prefill chunk)
     * and the gemms take the activations as prepared once: a gemm that
     * repacks them in every call (a decode step's engines, a set without a
     * prepared form) would do so per strip. Those take the two matrices in
     * one run, then the activation. Strips also need the eight-row groups
     * whole and a strip of u per worker. */
    if (n_tokens > DECODE_MAX_TOKENS && one_run(outs, 2, &total) && m->up->rows == rows &&
        rows % 8 == 0 && (int64_t)workers * GLU_STRIP <= rows &&
        shared_form(ex, outs, 2, n_tokens)) {
        activations(&t.gemm, x, qbuf); /* prepared: every output has a gemm on it */
        const int64_t strips = (rows + GLU_STRIP - 1) / GLU_STRIP;
        pool_run(ex->pool, run_glu_strips, &t, 4 * workers < strips ? 4 * workers : (int)strips);
        return;
    }
    ek_matmul_many(ex, x, n_tokens, outs, 2, qbuf);
    pool_run(ex->pool, run_glu, &t, 4 * workers);
}

typedef struct conv_task {
    ek_conv_fn fn;
    float *y;
    int64_t ys;
    const ek_conv_weights *w;
    const float *bias;
    const char *x;
    int64_t xs;
    size_t x_elem;
    int32_t nt, dilation;
    int by_tokens;
} conv_task;

static void run_conv(void *p, int part, int n_parts, int worker)
{
    const conv_task *t = p;
    int64_t a, b, p0 = 0, p1 = t->w->n_panels, t0 = 0, t1 = t->nt;
    (void)worker;
    if (t->by_tokens) {
        pool_split(t->nt, 12, part, n_parts, &a, &b);
        t0 = a, t1 = b;
    } else {
        pool_split(t->w->n_panels, 2, part, n_parts, &a, &b);
        p0 = a, p1 = b;
    }
    if (p0 >= p1 || t0 >= t1) return;
    t->fn(t->y + t0 * t->ys, t->ys, t->w, (int32_t)p0, (int32_t)p1,
          t->x + (size_t)(t0 * t->xs) * t->x_elem, t->xs, (int32_t)(t1 - t0), t->dilation);
    if (!t->bias) return;
    const int64_t c0 = p0 * EK_CONV_PANEL;
    const int64_t c1 = p1 * EK_CONV_PANEL < t->w->cout ? p1 * EK_CONV_PANEL : t->w->cout;
    for (int64_t r = t0; r < t1; r++)
        for (int64_t c = c0; c < c1; c++) t->y[r * t->ys + c] += t->bias[c];
}

void ek_conv_run(const ek_exec *ex, float *y, int64_t ys, const ek_conv_weights *w,
                 const float *bias, const void *x, int64_t xs, int32_t nt, int32_t dilation)
{
    const int workers = pool_size(ex->pool);
    conv_task t = {ek_kernels_conv(ex->kernels, w->format), y, ys, w, bias, x, xs,
                   w->format == EK_CONV_BF16 ? 2 : 4, nt, dilation, 0};
    /* Split the output channels while there are enough panel pairs, so each
     * weight is read by one worker; else (the last, narrow convs) the time
     * steps. */
    t.by_tokens = w->n_panels < 4 * workers && nt >= 24 * workers;
    int parts = t.by_tokens ? (nt + 11) / 12 : (w->n_panels + 1) / 2;
    if (parts > 4 * workers) parts = 4 * workers;
    pool_run(ex->pool, run_conv, &t, parts);
}
