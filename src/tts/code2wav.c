/* The speech decoder as a stream (code2wav.h).
 *
 * The decoder is a chain of stages, each causal and each raising the time
 * resolution by a fixed factor: front (codes -> latent frames: dequantise,
 * pre_conv, transformer), the upsample stages, decoder.0, the decoder
 * blocks, and the final Snake + conv. Rows are time steps (channels-last).
 * Frames run depth-first through the chain in pieces no larger than each
 * stage's budget, so the late stages (1920 rows per frame) never hold a
 * whole chunk while the early ones still see many frames at once (their
 * weights are large, their activations small).
 *
 * Every convolution with more than one tap reads its input from a history
 * buffer: `hist` rows of the previous pieces followed by the new rows; after
 * the conv the last `hist` rows move to the front. That is all the state a
 * conv needs to stream exactly; the transformer's is its key ring. */
#include "tts/code2wav.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "base/status.h"
#include "kernels/exec.h"
#include "kernels/ops.h"
#include "onnx/c2w_ort.h"
#include "tts/tts_stack.h"

/* Largest float count of one stage's output piece (about 4 MiB). */
#define PIECE_FLOATS ((int64_t)1 << 20)
#define MAX_ALLOCS 128

/* A conv input with its history in front: rows [-hist, cap) around row 0. */
typedef struct hist_buf {
    float *base;
    int32_t ch, hist;
} hist_buf;

static float *hist_row0(const hist_buf *h) { return h->base + (size_t)h->hist * h->ch; }

/* After n new rows: keep the last `hist` rows of [-hist, n) as the history. */
static void hist_advance(hist_buf *h, int64_t n)
{
    if (h->hist) memmove(h->base, h->base + (size_t)n * h->ch, sizeof(float) * h->hist * h->ch);
}

enum stage_kind { ST_FRONT, ST_UPSAMPLE, ST_DEC0, ST_BLOCK, ST_FINAL };

typedef struct stage {
    enum stage_kind kind;
    int32_t index;          /* upsample stage or block number */
    int32_t up;             /* output rows per input row */
    int32_t cout;           /* output channels */
    int64_t max_in;         /* input rows per piece */
    float *out;             /* max_in * up * cout */
    hist_buf in[4];         /* the stage's conv inputs with history */
    float *tmp[2];          /* stage scratch */
} stage;

struct c2w_stream {
    const c2w_model *m;
    ek_exec exec;
    tts_stack_state tf;
    void *qbuf;
    int64_t frames;
    int32_t frames_per_pass;
    stage stages[2 + C2W_MAX_UPSAMPLE + C2W_MAX_BLOCKS];
    int32_t n_stages;
    uint16_t *bf16; /* conv inputs rounded to bf16 */
    float *wino;    /* Winograd scratch */
    size_t bf16_cap;
    float *front_a, *front_b, *front_h; /* front scratch */
    float *drop;                        /* a pass's samples nobody hears (priming) */
    int32_t tail_frames;                /* frames that fix the stages after the front */
    float *pcm_cursor;
    c2w_ort *ort; /* the onnx backend's decoder graphs, or NULL: native */
    void *allocs[MAX_ALLOCS];
    int32_t n_allocs;
};

/* Zeroed by writing, not calloc's lazily mapped pages: the page faults
 * happen here, at creation, instead of inside the first chunk of the first
 * request where they would delay the first audio. */
static float *alloc_floats(c2w_stream *s, size_t n)
{
    if (s->n_allocs == MAX_ALLOCS) return NULL;
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (p) {
        memset(p, 0, (n ? n : 1) * sizeof(float));
        s->allocs[s->n_allocs++] = p;
    }
    return p;
}

static int alloc_hist(c2w_stream *s, hist_buf *h, int32_t ch, int32_t hist, int64_t rows)
{
    h->ch = ch;
    h->hist = hist;
    h->base = alloc_floats(s, (size_t)(hist + rows) * (size_t)ch);
    return h->base != NULL;
}

/* ---- conv application ----------------------------------------------------- */

/* y = conv(x) + bias over n rows; x is row 0 of a history buffer (enough
 * history rows in front for the conv's taps and dilation). */
static void apply_conv(c2w_stream *s, const c2w_conv *c, const float *x, int64_t n, float *y,
                       int64_t ys)
{
    const ek_conv_weights *w = &c->w;
    if (w->format != EK_CONV_BF16) { /* fp32 activations */
        ek_conv_run(&s->exec, y, ys, w, c->bias, x, w->cin, (int32_t)n, c->dilation);
        return;
    }
    const int64_t hist = (int64_t)(w->taps - 1) * c->dilation;
    const int64_t count = (hist + n) * w->cin;
    ek_f32_to_bf16_row(x - hist * w->cin, s->bf16, count);
    ek_conv_run(&s->exec, y, ys, w, c->bias, s->bf16 + hist * w->cin, w->cin, (int32_t)n,
                c->dilation);
}

/* The elementwise steps between convs, split over the pool by rows (on two
 * cores a serial step would idle the other core for its whole length). */
enum rows_op { OP_SNAKE, OP_COPY_SNAKE, OP_ADD };

typedef struct rows_task {
    enum rows_op op;
    ek_snake_fn snake;
    const c2w_snake *sn;
    float *dst;
    const float *src;
    int64_t rows;
    int32_t c;
} rows_task;

static void run_rows(void *p, int part, int n_parts, int worker)
{
    const rows_task *t = p;
    int64_t r0, r1;
    (void)worker;
    pool_split(t->rows, 8, part, n_parts, &r0, &r1);
    if (r0 >= r1) return;
    float *d = t->dst + r0 * t->c;
    const float *x = t->src ? t->src + r0 * t->c : NULL;
    const size_t n = (size_t)(r1 - r0) * t->c;
    if (t->op == OP_ADD) {
        for (size_t i = 0; i < n; i++) d[i] += x[i];
        return;
    }
    if (t->op == OP_COPY_SNAKE) memcpy(d, x, sizeof(float) * n);
    t->snake(d, r1 - r0, t->c, t->sn->a, t->sn->inv_b);
}

static void rows_op(c2w_stream *s, enum rows_op op, const c2w_snake *sn, float *dst,
                    const float *src, int64_t rows, int32_t c)
{
    rows_task t = {op, ek_kernels_snake(s->exec.kernels), sn, dst, src, rows, c};
    int parts = 4 * pool_size(s->exec.pool);
    if (rows < 64) parts = 1;
    pool_run(s->exec.pool, run_rows, &t, parts);
}

static void snake(c2w_stream *s, const c2w_snake *sn, float *x, int64_t rows, int32_t c)
{
    rows_op(s, OP_SNAKE, sn, x, NULL, rows, c);
}

/* ---- stages ---------------------------------------------------------------- */

static void run_front(c2w_stream *s, stage *st, const int32_t *codes, int64_t n)
{
    const c2w_model *m = s->m;
    const c2w_config *c = &m->cfg;
    const int32_t vq = c->vq_dim, hid = c->transformer.hidden;
    float *first = s->front_a, *rest = s->front_b;
    for (int64_t t = 0; t < n; t++) {
        const int32_t *f = codes + t * c->n_quantizers;
        memcpy(first + t * vq, m->codebooks[0] + (size_t)f[0] * vq, sizeof(float) * vq);
        float *r = rest + t * vq;
        memcpy(r, m->codebooks[1] + (size_t)f[1] * vq, sizeof(float) * vq);
        for (int32_t k = 2; k < c->n_quantizers; k++) {
            const float *e = m->codebooks[k] + (size_t)f[k] * vq;
            for (int32_t i = 0; i < vq; i++) r[i] += e[i];
        }
    }
    /* quantized latent = proj_first(first) + proj_rest(rest), into pre_conv's input */
    float *q = hist_row0(&st->in[0]);
    apply_conv(s, &m->proj_first, first, n, q, c->codebook_dim);
    apply_conv(s, &m->proj_rest, rest, n, st->tmp[0], c->codebook_dim);
    for (int64_t i = 0; i < n * c->codebook_dim; i++) q[i] += st->tmp[0][i];
    apply_conv(s, &m->pre_conv, q, n, st->tmp[0], c->latent);
    hist_advance(&st->in[0], n);

    float *h = s->front_h;
    ek_matmul(&s->exec, h, hid, st->tmp[0], (int)n, &m->in_proj, m->in_proj_b, s->qbuf);
    tts_stack_forward(&s->tf, h, s->frames, (int32_t)n);
    for (int64_t t = 0; t < n; t++)
        ek_rmsnorm(h + t * hid, h + t * hid, m->transformer.final_norm, hid,
                   c->transformer.rms_eps);
    ek_matmul(&s->exec, st->out, c->latent, h, (int)n, &m->out_proj, m->out_proj_b, s->qbuf);
    s->frames += n;
}

/* LayerNorm over the channels of each row (biased variance), in place. */
static void layer_norm(float *x, int64_t rows, int32_t c, const float *w, const float *b, float eps)
{
    for (int64_t t = 0; t < rows; t++) {
        float *v = x + t * c;
        double mean = 0, var = 0;
        for (int32_t i = 0; i < c; i++) mean += v[i];
        mean /= c;
        for (int32_t i = 0; i < c; i++) var += (v[i] - mean) * (v[i] - mean);
        float inv = (float)(1.0 / sqrt(var / c + eps));
        for (int32_t i = 0; i < c; i++) v[i] = ((float)(v[i] - mean)) * inv * w[i] + b[i];
    }
}

static void run_upsample(c2w_stream *s, stage *st, const float *in, int64_t n)
{
    const c2w_upsample *u = &s->m->upsample[st->index];
    const c2w_convnext *nx = &u->block;
    const int32_t C = s->m->cfg.latent;
    const int64_t rows = n * u->ratio;
    /* the transposed conv's rows are ratio output steps side by side: written
     * straight into the depthwise conv's input as rows of C */
    float *x = hist_row0(&st->in[0]);
    apply_conv(s, &u->up, in, n, x, (int64_t)u->ratio * C);
    float *y = st->tmp[0];
    for (int64_t t = 0; t < rows; t++) {
        float *yr = y + t * C;
        memcpy(yr, nx->dw_b, sizeof(float) * C);
        for (int32_t j = 0; j < 7; j++) {
            const float *xr = x + (t - 6 + j) * C, *wj = nx->dw + (size_t)j * C;
            for (int32_t i = 0; i < C; i++) yr[i] += wj[i] * xr[i];
        }
    }
    layer_norm(y, rows, C, nx->ln_w, nx->ln_b, 1e-6f);
    float *g = st->tmp[1];
    apply_conv(s, &nx->pw1, y, rows, g, 4 * (int64_t)C);
    s->exec.kernels->glu(g, NULL, rows * 4 * C, EK_GLU_GELU_ERF);
    apply_conv(s, &nx->pw2, g, rows, y, C);
    for (int64_t t = 0; t < rows; t++)
        for (int32_t i = 0; i < C; i++)
            st->out[t * C + i] = x[t * C + i] + nx->gamma[i] * y[t * C + i];
    hist_advance(&st->in[0], rows);
}

static void run_dec0(c2w_stream *s, stage *st, const float *in, int64_t n)
{
    float *x = hist_row0(&st->in[0]);
    memcpy(x, in, sizeof(float) * (size_t)n * st->in[0].ch);
    apply_conv(s, &s->m->dec0, x, n, st->out, st->cout);
    hist_advance(&st->in[0], n);
}

static void run_block(c2w_stream *s, stage *st, const float *in, int64_t n)
{
    const c2w_block *b = &s->m->blocks[st->index];
    const int64_t rows = n * b->rate;
    float *a = hist_row0(&st->in[0]);
    rows_op(s, OP_COPY_SNAKE, &b->act, a, in, n, b->cin);
    float *x = st->out;
    apply_conv(s, &b->up, a, n, x, (int64_t)b->rate * b->cout);
    hist_advance(&st->in[0], n);
    for (int32_t u = 0; u < 3; u++) {
        const c2w_resunit *ru = &b->units[u];
        hist_buf *h = &st->in[1 + u];
        float *r = hist_row0(h), *t1 = st->tmp[0], *t2 = st->tmp[1];
        rows_op(s, OP_COPY_SNAKE, &ru->act1, r, x, rows, b->cout);
        int64_t done = 0;
        if (ru->conv1_fast.n)
            done = ek_winograd_run(&s->exec, &ru->conv1_fast, ru->conv1.bias, r, rows,
                                   ru->conv1.dilation, t1, b->cout, s->wino);
        if (done < rows)
            apply_conv(s, &ru->conv1, r + done * b->cout, rows - done, t1 + done * b->cout,
                       b->cout);
        hist_advance(h, rows);
        snake(s, &ru->act2, t1, rows, b->cout);
        apply_conv(s, &ru->conv2, t1, rows, t2, b->cout);
        rows_op(s, OP_ADD, NULL, x, t2, rows, b->cout);
    }
}

static void run_final(c2w_stream *s, stage *st, const float *in, int64_t n)
{
    const c2w_model *m = s->m;
    const int32_t c = st->in[0].ch;
    float *x = hist_row0(&st->in[0]);
    rows_op(s, OP_COPY_SNAKE, &m->final_act, x, in, n, c);
    apply_conv(s, &m->final_conv, x, n, s->pcm_cursor, 1);
    hist_advance(&st->in[0], n);
    for (int64_t t = 0; t < n; t++) {
        float v = s->pcm_cursor[t];
        s->pcm_cursor[t] = v > 1.0f ? 1.0f : v < -1.0f ? -1.0f : v;
    }
    s->pcm_cursor += n;
}

/* Runs stage i and everything after it on n input rows, in pieces. */
static void run_from(c2w_stream *s, int32_t i, const float *in, int64_t n)
{
    stage *st = &s->stages[i];
    const int32_t cin = i ? s->stages[i - 1].cout : 0;
    for (int64_t off = 0; off < n; off += st->max_in) {
        int64_t k = n - off < st->max_in ? n - off : st->max_in;
        const float *piece = in + off * cin;
        switch (st->kind) {
        case ST_FRONT: break; /* fed by c2w_stream_push */
        case ST_UPSAMPLE: run_upsample(s, st, piece, k); break;
        case ST_DEC0: run_dec0(s, st, piece, k); break;
        case ST_BLOCK: run_block(s, st, piece, k); break;
        case ST_FINAL: run_final(s, st, piece, k); break;
        }
        if (i + 1 < s->n_stages) run_from(s, i + 1, st->out, k * st->up);
    }
}

/* ---- creation -------------------------------------------------------------- */

static void add_stage(c2w_stream *s, enum stage_kind kind, int32_t index, int32_t up, int32_t cout,
                      int32_t widest)
{
    stage *st = &s->stages[s->n_stages];
    memset(st, 0, sizeof *st);
    st->kind = kind;
    st->index = index;
    st->up = up;
    st->cout = cout;
    /* input rows per piece: bounded by the stage's widest buffer and by
     * what the previous stage hands over at once */
    int64_t budget = PIECE_FLOATS / ((int64_t)up * widest);
    if (budget < 1) budget = 1;
    if (s->n_stages) {
        const stage *prev = &s->stages[s->n_stages - 1];
        int64_t from_prev = prev->max_in * prev->up;
        if (budget > from_prev) budget = from_prev;
    }
    st->max_in = budget;
    s->n_stages++;
}

static ember_status alloc_stage(c2w_stream *s, stage *st, int32_t cin)
{
    const c2w_model *m = s->m;
    const c2w_config *c = &m->cfg;
    const int64_t rows_in = st->max_in, rows = st->max_in * st->up;
    int ok = 1;
    size_t bf16_need = 0;
    switch (st->kind) {
    case ST_FRONT:
        ok = alloc_hist(s, &st->in[0], c->codebook_dim, 2, rows_in) &&
             (st->tmp[0] = alloc_floats(s, (size_t)rows_in * (size_t)(c->latent > c->codebook_dim
                                                                          ? c->latent
                                                                          : c->codebook_dim)));
        bf16_need = (size_t)(rows_in + 2) * (size_t)c->codebook_dim;
        break;
    case ST_UPSAMPLE:
        ok = alloc_hist(s, &st->in[0], c->latent, 6, rows) &&
             (st->tmp[0] = alloc_floats(s, (size_t)rows * c->latent)) &&
             (st->tmp[1] = alloc_floats(s, (size_t)rows * 4 * c->latent));
        bf16_need = (size_t)rows * 4 * c->latent;
        break;
    case ST_DEC0:
        ok = alloc_hist(s, &st->in[0], cin, 6, rows_in);
        bf16_need = (size_t)(rows_in + 6) * cin;
        break;
    case ST_BLOCK: {
        const c2w_block *b = &m->blocks[st->index];
        static const int32_t dil[3] = {1, 3, 9};
        ok = alloc_hist(s, &st->in[0], b->cin, 1, rows_in);
        for (int32_t u = 0; ok && u < 3; u++)
            ok = alloc_hist(s, &st->in[1 + u], b->cout, 6 * dil[u], rows);
        ok = ok && (st->tmp[0] = alloc_floats(s, (size_t)rows * b->cout)) &&
             (st->tmp[1] = alloc_floats(s, (size_t)rows * b->cout));
        bf16_need = (size_t)(rows + 54) * b->cout;
        if ((size_t)(rows_in + 1) * b->cin > bf16_need) bf16_need = (size_t)(rows_in + 1) * b->cin;
        break;
    }
    case ST_FINAL:
        ok = alloc_hist(s, &st->in[0], cin, 6, rows_in);
        bf16_need = (size_t)(rows_in + 6) * cin;
        break;
    }
    if (ok && st->kind != ST_FINAL) ok = (st->out = alloc_floats(s, (size_t)rows * st->cout)) != NULL;
    if (bf16_need > s->bf16_cap) s->bf16_cap = bf16_need;
    return ok ? EMBER_OK : ember_fail(EMBER_ERR_NO_MEMORY, "speech decoder: out of memory");
}

/* How many of the last frames decide the state of every stage after the
 * front. Those stages are convolutions without feedback: a stage's state is
 * its history rows, which depend on a bounded span of its input. Summed
 * down the chain in output samples (each history row at its buffer's rate,
 * plus one input row a stage for the transposed convs' overlap and row
 * rounding), that span is about 11 frames with the real config. Only the
 * front (the transformer's key rings) needs every frame. */
static int32_t tail_frames(const c2w_stream *s)
{
    const int64_t spf = s->m->cfg.samples_per_frame;
    int64_t rows_in = 1, samples = 0; /* input rows per frame of stage i */
    for (int32_t i = 1; i < s->n_stages; i++) {
        const stage *st = &s->stages[i];
        rows_in *= s->stages[i - 1].up;
        const int64_t in_step = spf / rows_in, out_step = spf / (rows_in * st->up);
        samples += in_step; /* the overlap / rounding row */
        for (int32_t k = 0; k < 4; k++) {
            /* an upsample stage's history and a block's residual-unit
             * histories are at the stage's output rate */
            const int at_output = st->kind == ST_UPSAMPLE || (st->kind == ST_BLOCK && k > 0);
            samples += (int64_t)st->in[k].hist * (at_output ? out_step : in_step);
        }
    }
    return (int32_t)((samples + spf - 1) / spf) + 1;
}

c2w_stream_params c2w_stream_default_params(void)
{
    c2w_stream_params p = {0, 25, NULL, NULL, NULL, NULL};
    return p;
}

static ember_status build(c2w_stream *s, const c2w_stream_params *p)
{
    const c2w_model *m = s->m;
    const c2w_config *c = &m->cfg;
    const int32_t P = s->frames_per_pass, latent = c->latent;
    ember_status st;
    if (p->n_threads > 1 && (st = pool_create(p->n_threads, &s->exec.pool))) return st;
    s->exec.kernels = m->kernels;

    /* the chain; `widest` is the widest row a stage holds per output row */
    add_stage(s, ST_FRONT, 0, 1, latent,
              c->transformer.intermediate > latent ? c->transformer.intermediate : latent);
    s->stages[0].max_in = P;
    for (int32_t u = 0; u < c->n_upsample; u++)
        add_stage(s, ST_UPSAMPLE, u, c->upsampling_ratios[u], latent, 4 * latent);
    add_stage(s, ST_DEC0, 0, 1, c->decoder_dim, c->decoder_dim);
    for (int32_t b = 0; b < c->n_blocks; b++)
        add_stage(s, ST_BLOCK, b, c->upsample_rates[b], c2w_block_channels(c, b + 1),
                  c2w_block_channels(c, b + 1) + c2w_block_channels(c, b));
    add_stage(s, ST_FINAL, 0, 1, 1, c2w_block_channels(c, c->n_blocks));
    for (int32_t i = 0; i < s->n_stages; i++)
        if ((st = alloc_stage(s, &s->stages[i], i ? s->stages[i - 1].cout : 0))) return st;

    const int32_t hid = c->transformer.hidden;
    const int64_t cols = tts_stack_max_cols(&c->transformer) > latent
                             ? tts_stack_max_cols(&c->transformer)
                             : latent;
    s->qbuf = alloc_floats(s, ek_exec_qbuf_bytes(P, cols) / sizeof(float) + 16);
    s->front_a = alloc_floats(s, (size_t)P * c->vq_dim);
    s->front_b = alloc_floats(s, (size_t)P * c->vq_dim);
    s->front_h = alloc_floats(s, (size_t)P * hid);
    s->drop = alloc_floats(s, (size_t)P * (size_t)c->samples_per_frame);
    s->tail_frames = tail_frames(s);
    if (m->conv_format == EK_CONV_BF16) s->bf16 = (uint16_t *)alloc_floats(s, s->bf16_cap / 2 + 1);
    size_t wino = 0;
    for (int32_t b = 0; b < c->n_blocks; b++)
        for (int32_t u = 0; u < 3; u++)
            if (m->blocks[b].units[u].conv1_fast.n &&
                ek_winograd_scratch_floats(&m->blocks[b].units[u].conv1_fast) > wino)
                wino = ek_winograd_scratch_floats(&m->blocks[b].units[u].conv1_fast);
    if (wino && !(s->wino = alloc_floats(s, wino)))
        return ember_fail(EMBER_ERR_NO_MEMORY, "speech decoder: out of memory");
    if (!s->qbuf || !s->front_a || !s->front_b || !s->front_h || !s->drop ||
        (m->conv_format == EK_CONV_BF16 && !s->bf16))
        return ember_fail(EMBER_ERR_NO_MEMORY, "speech decoder: out of memory");
    /* every layer is sliding: the ring holds window-1 keys whatever the
     * position, so the context limit is only the position counter's */
    return tts_stack_state_init(&s->tf, &m->transformer, &s->exec, s->qbuf,
                                pool_size(s->exec.pool), INT32_MAX, P);
}

ember_status c2w_stream_create(const c2w_model *m, const c2w_stream_params *p, c2w_stream **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "c2w_stream_create: out is NULL");
    *out = NULL;
    if (!m) return ember_fail(EMBER_ERR_INVALID_ARG, "c2w_stream_create: model is NULL");
    c2w_stream_params q = p ? *p : c2w_stream_default_params();
    if (q.n_threads < 0 || q.n_threads > 1024)
        return ember_fail(EMBER_ERR_INVALID_ARG, "n_threads %d must be in [0, 1024]", q.n_threads);
    if (q.n_threads == 0) q.n_threads = pool_cpu_count();
    if (q.frames_per_pass == 0) q.frames_per_pass = 25;
    if (q.frames_per_pass < 1 || q.frames_per_pass > 4096)
        return ember_fail(EMBER_ERR_INVALID_ARG, "frames_per_pass %d must be in [1, 4096]",
                          q.frames_per_pass);
    c2w_stream *s = calloc(1, sizeof *s);
    if (!s) return ember_fail(EMBER_ERR_NO_MEMORY, "speech decoder: out of memory");
    s->m = m;
    s->frames_per_pass = q.frames_per_pass;
    ember_status st = build(s, &q);
    if (!st && q.onnx_dir) {
        const ort_choice rt = {q.onnx_runtime, q.onnx_provider, q.onnx_options};
        st = c2w_ort_open(&m->cfg, q.onnx_dir, &rt, q.n_threads, &s->ort);
    }
    if (st) {
        c2w_stream_free(s);
        return st;
    }
    *out = s;
    return EMBER_OK;
}

void c2w_stream_free(c2w_stream *s)
{
    if (!s) return;
    if (s->tf.block) tts_stack_state_free(&s->tf);
    c2w_ort_free(s->ort);
    pool_free(s->exec.pool);
    for (int32_t i = 0; i < s->n_allocs; i++) free(s->allocs[i]);
    free(s);
}

void c2w_stream_reset(c2w_stream *s)
{
    for (int32_t i = 0; i < s->n_stages; i++)
        for (int32_t k = 0; k < 4; k++) {
            hist_buf *h = &s->stages[i].in[k];
            if (h->base) memset(h->base, 0, sizeof(float) * h->hist * h->ch);
        }
    s->frames = 0; /* the key rings are read only at positions >= 0 of the new utterance */
    if (s->ort) c2w_ort_reset(s->ort);
}

int64_t c2w_stream_frames(const c2w_stream *s) { return s->frames; }

int c2w_stream_on_onnx(const c2w_stream *s) { return s->ort != NULL; }

int c2w_stream_onnx_sizes(const c2w_stream *s, int32_t *sizes, int max)
{
    return s->ort ? c2w_ort_sizes(s->ort, sizes, max) : 0;
}

const c2w_model *c2w_stream_model(const c2w_stream *s) { return s->m; }

int32_t c2w_stream_threads(const c2w_stream *s) { return pool_size(s->exec.pool); }

void c2w_stream_use_threads(c2w_stream *s, int32_t n) { pool_set_active(s->exec.pool, n); }

ember_status c2w_stream_pin(c2w_stream *s, const int32_t *cpus, int32_t n)
{
    return pool_pin(s->exec.pool, cpus, n);
}

/* Every code in [0, codebook_size). */
static ember_status check_codes(const c2w_config *c, const int32_t *codes, int32_t n_frames)
{
    for (int64_t i = 0; i < (int64_t)n_frames * c->n_quantizers; i++)
        if (codes[i] < 0 || codes[i] >= c->codebook_size)
            return ember_fail(EMBER_ERR_INVALID_ARG,
                              "speech decoder: code %d of frame %lld is %d, outside [0, %d)",
                              (int)(i % c->n_quantizers), (long long)(i / c->n_quantizers),
                              codes[i], c->codebook_size);
    return EMBER_OK;
}

ember_status c2w_stream_push(c2w_stream *s, const int32_t *codes, int32_t n_frames, float *pcm)
{
    if (!s || (n_frames && (!codes || !pcm)) || n_frames < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "c2w_stream_push: bad arguments");
    const c2w_config *c = &s->m->cfg;
    ember_status st = check_codes(c, codes, n_frames);
    if (st) return st;
    if (s->ort) {
        st = c2w_ort_push(s->ort, codes, n_frames, pcm);
        if (!st) s->frames += n_frames;
        return st;
    }
    s->pcm_cursor = pcm;
    stage *front = &s->stages[0];
    for (int32_t off = 0; off < n_frames; off += s->frames_per_pass) {
        int32_t k = n_frames - off < s->frames_per_pass ? n_frames - off : s->frames_per_pass;
        run_front(s, front, codes + (int64_t)off * c->n_quantizers, k);
        run_from(s, 1, front->out, k);
    }
    return EMBER_OK;
}

ember_status c2w_stream_prime(c2w_stream *s, const int32_t *codes, int32_t n_frames)
{
    if (!s || (n_frames && !codes) || n_frames < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "c2w_stream_prime: bad arguments");
    const c2w_config *c = &s->m->cfg;
    ember_status st = check_codes(c, codes, n_frames);
    if (st) return st;
    /* the graphs have no front-only path: every frame runs whole, its
     * samples dropped */
    for (int32_t off = 0; s->ort && off < n_frames && !st; off += s->frames_per_pass) {
        int32_t k = n_frames - off < s->frames_per_pass ? n_frames - off : s->frames_per_pass;
        st = c2w_stream_push(s, codes + (int64_t)off * c->n_quantizers, k, s->drop);
    }
    if (s->ort) return st;
    stage *front = &s->stages[0];
    /* the frames before the tail reach only the front; the tail then runs
     * the whole chain into samples that are dropped */
    const int32_t tail0 = n_frames > s->tail_frames ? n_frames - s->tail_frames : 0;
    for (int32_t off = 0; off < n_frames; off += s->frames_per_pass) {
        int32_t k = n_frames - off < s->frames_per_pass ? n_frames - off : s->frames_per_pass;
        run_front(s, front, codes + (int64_t)off * c->n_quantizers, k);
        const int32_t skip = tail0 > off ? (tail0 - off < k ? tail0 - off : k) : 0;
        s->pcm_cursor = s->drop;
        if (skip < k) run_from(s, 1, front->out + (size_t)skip * front->cout, k - skip);
    }
    return EMBER_OK;
}

ember_status c2w_stream_push_windowed(c2w_stream *s, const int32_t *codes, int32_t n_ctx,
                                      int32_t n_new, float *pcm)
{
    if (!s || n_ctx < 0) return ember_fail(EMBER_ERR_INVALID_ARG, "c2w_stream_push_windowed: bad arguments");
    const int32_t q = s->m->cfg.n_quantizers, spf = s->m->cfg.samples_per_frame;
    c2w_stream_reset(s);
    /* the context's samples are computed and dropped, a pass at a time */
    const int32_t piece = s->frames_per_pass;
    float *drop = n_ctx ? malloc(sizeof(float) * (size_t)piece * spf) : NULL;
    if (n_ctx && !drop) return ember_fail(EMBER_ERR_NO_MEMORY, "speech decoder: out of memory");
    ember_status st = EMBER_OK;
    for (int32_t off = 0; off < n_ctx && !st; off += piece) {
        int32_t k = n_ctx - off < piece ? n_ctx - off : piece;
        st = c2w_stream_push(s, codes + (int64_t)off * q, k, drop);
    }
    free(drop);
    return st ? st : c2w_stream_push(s, codes + (int64_t)n_ctx * q, n_new, pcm);
}
