#include "kernels/conv_winograd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

/* The finite Toom-Cook points, small magnitudes first (rounding grows with
 * their spread); infinity is the last point. */
static const double points[EK_WINOGRAD_MAX_TAPS] = {0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5};

/* In-place Gauss-Jordan inverse of an n x n matrix (partial pivoting). */
static int invert(double a[][EK_WINOGRAD_MAX_TAPS + 1], int n)
{
    double inv[EK_WINOGRAD_MAX_TAPS + 1][EK_WINOGRAD_MAX_TAPS + 1];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) inv[i][j] = i == j;
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(a[r][c]) > fabs(a[p][c])) p = r;
        if (fabs(a[p][c]) < 1e-12) return -1;
        for (int j = 0; j < n; j++) {
            double t = a[c][j];
            a[c][j] = a[p][j], a[p][j] = t;
            t = inv[c][j];
            inv[c][j] = inv[p][j], inv[p][j] = t;
        }
        double d = a[c][c];
        for (int j = 0; j < n; j++) a[c][j] /= d, inv[c][j] /= d;
        for (int r = 0; r < n; r++) {
            if (r == c || a[r][c] == 0) continue;
            double f = a[r][c];
            for (int j = 0; j < n; j++) a[r][j] -= f * a[c][j], inv[r][j] -= f * inv[c][j];
        }
    }
    memcpy(a, inv, sizeof inv);
    return 0;
}

/* p^j, with the infinity point (index n-1) picking only the top power. */
static double power_at(int i, int n, int j, int top)
{
    if (i == n - 1) return j == top;
    return pow(points[i], j);
}

ember_status ek_winograd_pack(ek_winograd *out, const float *w, int32_t cout, int32_t cin,
                              int32_t taps)
{
    memset(out, 0, sizeof *out);
    if (taps < 2 || taps > EK_WINOGRAD_MAX_TAPS || cout < 1 || cin < 1)
        return ember_fail(EMBER_ERR_INVALID_ARG, "winograd: %d taps (need 2..%d)", taps,
                          EK_WINOGRAD_MAX_TAPS);
    const int n = taps + 1;
    out->taps = taps, out->cin = cin, out->cout = cout, out->n = n;
    double v[EK_WINOGRAD_MAX_TAPS + 1][EK_WINOGRAD_MAX_TAPS + 1];
    for (int i = 0; i < n; i++)
        for (int l = 0; l < n; l++) v[i][l] = power_at(i, n, l, n - 1);
    if (invert(v, n)) return ember_fail(EMBER_ERR_INVALID_ARG, "winograd: singular points");
    for (int l = 0; l < n; l++)
        for (int i = 0; i < n; i++) out->in_t[l][i] = (float)v[l][i];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 2; j++) out->out_t[i][j] = (float)power_at(i, n, j, 1);
    float *g = malloc(sizeof(float) * (size_t)cout * (size_t)cin);
    if (!g) return ember_fail(EMBER_ERR_NO_MEMORY, "winograd: out of memory");
    ember_status st = EMBER_OK;
    for (int i = 0; i < n && !st; i++) {
        double gi[EK_WINOGRAD_MAX_TAPS];
        for (int j = 0; j < taps; j++) gi[j] = power_at(i, n, j, taps - 1);
        for (int64_t o = 0; o < (int64_t)cout * cin; o++) {
            double s = 0;
            for (int j = 0; j < taps; j++) s += gi[j] * w[o * taps + j];
            g[o] = (float)s;
        }
        st = ek_conv_pack(&out->w[i], EK_CONV_F32, g, cout, cin, 1);
    }
    free(g);
    if (st) ek_winograd_free(out);
    return st;
}

void ek_winograd_free(ek_winograd *wg)
{
    for (int i = 0; i < EK_WINOGRAD_MAX_TAPS + 1; i++) ek_conv_weights_free(&wg->w[i]);
    memset(wg, 0, sizeof *wg);
}

size_t ek_winograd_scratch_floats(const ek_winograd *wg)
{
    return (size_t)wg->n * EK_WINOGRAD_TILES * ((size_t)wg->cin + (size_t)wg->cout);
}

/* One batch of T tiles starting at tile q0; the transforms split the tiles
 * over the pool like the GEMMs split the panels. */
typedef struct wino_batch {
    const ek_winograd *wg;
    const ek_axpy_fn axpy;
    const float *x, *bias;
    float *y, *u, *p;
    int64_t ys, q0;
    int32_t d, T;
} wino_batch;

/* The first output row of batch tile q: tiles are the pairs (t, t+d) of
 * whole blocks of 2d rows, d per block. */
static int64_t tile_row(const wino_batch *b, int64_t q)
{
    const int64_t tile = b->q0 + q;
    return tile / b->d * 2 * b->d + tile % b->d;
}

/* input transform: u[i][q] = sum_l V^-1[l][i] x_l */
static void transform_in(void *ctx, int part, int n_parts, int worker)
{
    const wino_batch *b = ctx;
    const ek_winograd *wg = b->wg;
    const int32_t cin = wg->cin, d = b->d;
    int64_t q_lo, q_hi;
    (void)worker;
    pool_split(b->T, 1, part, n_parts, &q_lo, &q_hi);
    for (int64_t q = q_lo; q < q_hi; q++) {
        const int64_t t0 = tile_row(b, q);
        for (int i = 0; i < wg->n; i++) memset(b->u + ((size_t)i * b->T + q) * cin, 0, sizeof(float) * cin);
        for (int l = 0; l < wg->n; l++) {
            const float *xl = b->x + (t0 - (int64_t)(wg->taps - 1) * d + (int64_t)l * d) * cin;
            for (int i = 0; i < wg->n; i++)
                if (wg->in_t[l][i] != 0.0f)
                    b->axpy(b->u + ((size_t)i * b->T + q) * cin, wg->in_t[l][i], xl, cin);
        }
    }
}

/* output transform: the pair's two rows from the n products, plus the bias */
static void transform_out(void *ctx, int part, int n_parts, int worker)
{
    const wino_batch *b = ctx;
    const ek_winograd *wg = b->wg;
    const int32_t cout = wg->cout, d = b->d;
    int64_t q_lo, q_hi;
    (void)worker;
    pool_split(b->T, 1, part, n_parts, &q_lo, &q_hi);
    for (int64_t q = q_lo; q < q_hi; q++) {
        const int64_t t0 = tile_row(b, q);
        float *y0 = b->y + t0 * b->ys, *y1 = b->y + (t0 + d) * b->ys;
        if (b->bias) {
            memcpy(y0, b->bias, sizeof(float) * cout);
            memcpy(y1, b->bias, sizeof(float) * cout);
        } else {
            memset(y0, 0, sizeof(float) * cout);
            memset(y1, 0, sizeof(float) * cout);
        }
        for (int i = 0; i < wg->n; i++) {
            const float *pi = b->p + ((size_t)i * b->T + q) * cout;
            if (wg->out_t[i][0] != 0.0f) b->axpy(y0, wg->out_t[i][0], pi, cout);
            if (wg->out_t[i][1] != 0.0f) b->axpy(y1, wg->out_t[i][1], pi, cout);
        }
    }
}

int64_t ek_winograd_run(const ek_exec *ex, const ek_winograd *wg, const float *bias,
                        const float *x, int64_t n, int32_t dilation, float *y, int64_t ys,
                        float *scratch)
{
    const int32_t d = dilation, np = wg->n;
    const int64_t tiles = n / (2 * d) * d; /* output pairs (t, t+d) in whole blocks of 2d rows */
    float *u = scratch, *p = scratch + (size_t)np * EK_WINOGRAD_TILES * wg->cin;
    const int parts = 4 * pool_size(ex->pool);
    for (int64_t q0 = 0; q0 < tiles; q0 += EK_WINOGRAD_TILES) {
        const int32_t T = (int32_t)(tiles - q0 < EK_WINOGRAD_TILES ? tiles - q0 : EK_WINOGRAD_TILES);
        wino_batch b = {wg, ex->kernels->axpy_f32, x, bias, y, u, p, ys, q0, d, T};
        pool_run(ex->pool, transform_in, &b, parts < T ? parts : T);
        for (int i = 0; i < np; i++)
            ek_conv_run(ex, p + (size_t)i * T * wg->cout, wg->cout, &wg->w[i], NULL,
                        u + (size_t)i * T * wg->cin, wg->cin, T, 1);
        pool_run(ex->pool, transform_out, &b, parts < T ? parts : T);
    }
    return tiles / d * 2 * d;
}
