/* K-quant and IQ4 blocks: decoding to the common integer form, conversion to
 * and from fp32, and the scalar dot products (kquants.h). */
#include "kernels/kquants.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/convert.h"
#include "kernels/matmul.h"

_Static_assert(sizeof(ek_block_q2_k) == 84, "Q2_K block is 84 bytes in GGUF");
_Static_assert(sizeof(ek_block_q3_k) == 110, "Q3_K block is 110 bytes in GGUF");
_Static_assert(sizeof(ek_block_q4_k) == 144, "Q4_K block is 144 bytes in GGUF");
_Static_assert(sizeof(ek_block_q5_k) == 176, "Q5_K block is 176 bytes in GGUF");
_Static_assert(sizeof(ek_block_q6_k) == 210, "Q6_K block is 210 bytes in GGUF");
_Static_assert(sizeof(ek_block_iq4_nl) == 18, "IQ4_NL block is 18 bytes in GGUF");
_Static_assert(sizeof(ek_block_iq4_xs) == 136, "IQ4_XS block is 136 bytes in GGUF");

const int8_t ek_iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                  1,    13,   25,  38,  53,  69,  89,  113};

/* ---- decoding -------------------------------------------------------------- */

/* Q4_K/Q5_K: eight 6-bit scales and offsets in 12 bytes. Bytes 0-3 hold
 * scales 0-3 and bytes 4-7 offsets 0-3 in their low six bits; scales and
 * offsets 4-7 keep their low four bits in bytes 8-11 and their top two bits
 * in the spare top bits of bytes 0-7. */
static void k4_scale_min(const uint8_t *q, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* Q3_K: sixteen 6-bit scales in 12 bytes: the low nibbles of scales 0-7 in
 * bytes 0-7, of scales 8-15 in the high nibbles of bytes 0-7; the top two
 * bits of scale k in byte 8 + k % 4 at bit 2 * (k / 4). */
static int k3_scale(const uint8_t *s, int k)
{
    int lo = k < 8 ? s[k] & 15 : s[k - 8] >> 4;
    int hi = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
    return lo | (hi << 4);
}

static void unpack_q2_k(const ek_block_q2_k *b, ek_kq_ints *u)
{
    u->d = ek_f16_to_f32(b->d);
    u->dmin = ek_f16_to_f32(b->dmin);
    for (int k = 0; k < 16; k++) {
        u->scale[k] = b->scales[k] & 15;
        u->min[k] = b->scales[k] >> 4;
    }
    /* element 128c + 32s + l is bits 2s of byte 32c + l */
    for (int c = 0; c < 2; c++)
        for (int s = 0; s < 4; s++)
            for (int l = 0; l < 32; l++) u->q[128 * c + 32 * s + l] = (int8_t)((b->qs[32 * c + l] >> (2 * s)) & 3);
}

static void unpack_q3_k(const ek_block_q3_k *b, ek_kq_ints *u)
{
    u->d = ek_f16_to_f32(b->d);
    u->dmin = 0.0f;
    for (int k = 0; k < 16; k++) {
        u->scale[k] = (int16_t)(k3_scale(b->scales, k) - 32);
        u->min[k] = 0;
    }
    /* as Q2_K, with the third bit (4c + s of hmask[l]) clear meaning -4 */
    for (int c = 0; c < 2; c++)
        for (int s = 0; s < 4; s++)
            for (int l = 0; l < 32; l++) {
                int low = (b->qs[32 * c + l] >> (2 * s)) & 3;
                int high = (b->hmask[l] >> (4 * c + s)) & 1;
                u->q[128 * c + 32 * s + l] = (int8_t)(low - (high ? 0 : 4));
            }
}

static void unpack_q45_k(uint16_t d, uint16_t dmin, const uint8_t *scales, const uint8_t *qs,
                         const uint8_t *qh, ek_kq_ints *u)
{
    u->d = ek_f16_to_f32(d);
    u->dmin = ek_f16_to_f32(dmin);
    for (int j = 0; j < 8; j++) {
        int sc, m;
        k4_scale_min(scales, j, &sc, &m);
        u->scale[2 * j] = u->scale[2 * j + 1] = (int16_t)sc;
        u->min[2 * j] = u->min[2 * j + 1] = (int16_t)m;
    }
    /* 64 values per 32 bytes: sub-block 2c in the low nibbles, 2c + 1 in the
     * high ones; Q5_K's fifth bit of sub-block j is bit j of qh[l] */
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int lo = qs[32 * c + l] & 15, hi = qs[32 * c + l] >> 4;
            if (qh) {
                lo |= ((qh[l] >> (2 * c)) & 1) << 4;
                hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
            }
            u->q[64 * c + l] = (int8_t)lo;
            u->q[64 * c + 32 + l] = (int8_t)hi;
        }
}

static void unpack_q6_k(const ek_block_q6_k *b, ek_kq_ints *u)
{
    u->d = ek_f16_to_f32(b->d);
    u->dmin = 0.0f;
    for (int k = 0; k < 16; k++) {
        u->scale[k] = b->scales[k];
        u->min[k] = 0;
    }
    /* per 128 values: ql[l] and ql[l + 32] give four low nibbles, qh[l]
     * their four pairs of high bits */
    for (int c = 0; c < 2; c++) {
        const uint8_t *ql = b->ql + 64 * c, *qh = b->qh + 32 * c;
        int8_t *q = u->q + 128 * c;
        for (int l = 0; l < 32; l++) {
            q[l] = (int8_t)(((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32);
            q[l + 32] = (int8_t)(((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32);
            q[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            q[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}

static void unpack_iq4_xs(const ek_block_iq4_xs *b, ek_kq_ints *u)
{
    u->d = ek_f16_to_f32(b->d);
    u->dmin = 0.0f;
    for (int j = 0; j < 8; j++) {
        int ls = ((b->scales_l[j / 2] >> (4 * (j % 2))) & 15) | (((b->scales_h >> (2 * j)) & 3) << 4);
        u->scale[2 * j] = u->scale[2 * j + 1] = (int16_t)(ls - 32);
        u->min[2 * j] = u->min[2 * j + 1] = 0;
        for (int l = 0; l < 16; l++) {
            u->q[32 * j + l] = ek_iq4_levels[b->qs[16 * j + l] & 15];
            u->q[32 * j + 16 + l] = ek_iq4_levels[b->qs[16 * j + l] >> 4];
        }
    }
}

int ek_kq_unpack(et_dtype dtype, const void *row, int64_t b, ek_kq_ints *out)
{
    switch (dtype) {
    case ET_Q2_K: unpack_q2_k((const ek_block_q2_k *)row + b, out); return 1;
    case ET_Q3_K: unpack_q3_k((const ek_block_q3_k *)row + b, out); return 1;
    case ET_Q4_K: {
        const ek_block_q4_k *k = (const ek_block_q4_k *)row + b;
        unpack_q45_k(k->d, k->dmin, k->scales, k->qs, NULL, out);
        return 1;
    }
    case ET_Q5_K: {
        const ek_block_q5_k *k = (const ek_block_q5_k *)row + b;
        unpack_q45_k(k->d, k->dmin, k->scales, k->qs, k->qh, out);
        return 1;
    }
    case ET_Q6_K: unpack_q6_k((const ek_block_q6_k *)row + b, out); return 1;
    case ET_IQ4_XS: unpack_iq4_xs((const ek_block_iq4_xs *)row + b, out); return 1;
    default: return 0;
    }
}

/* ---- to fp32 ------------------------------------------------------------------ */

static void kq_to_f32(et_dtype dt, const void *src, float *dst, int64_t n)
{
    ek_kq_ints u;
    for (int64_t b = 0; b < n / EK_QK_K; b++) {
        ek_kq_unpack(dt, src, b, &u);
        float *y = dst + b * EK_QK_K;
        for (int k = 0; k < 16; k++) {
            float dl = u.d * (float)u.scale[k], ml = u.dmin * (float)u.min[k];
            for (int i = 16 * k; i < 16 * k + 16; i++) y[i] = dl * (float)u.q[i] - ml;
        }
    }
}

void ek_q2_k_to_f32(const void *src, float *dst, int64_t n) { kq_to_f32(ET_Q2_K, src, dst, n); }
void ek_q3_k_to_f32(const void *src, float *dst, int64_t n) { kq_to_f32(ET_Q3_K, src, dst, n); }
void ek_q4_k_to_f32(const void *src, float *dst, int64_t n) { kq_to_f32(ET_Q4_K, src, dst, n); }
void ek_q5_k_to_f32(const void *src, float *dst, int64_t n) { kq_to_f32(ET_Q5_K, src, dst, n); }
void ek_q6_k_to_f32(const void *src, float *dst, int64_t n) { kq_to_f32(ET_Q6_K, src, dst, n); }
void ek_iq4_xs_to_f32(const void *src, float *dst, int64_t n) { kq_to_f32(ET_IQ4_XS, src, dst, n); }

void ek_iq4_nl_to_f32(const void *src, float *dst, int64_t n)
{
    const ek_block_iq4_nl *b = src;
    for (int64_t i = 0; i < n / EK_QBLOCK; i++) {
        float d = ek_f16_to_f32(b[i].d);
        float *y = dst + i * EK_QBLOCK;
        for (int l = 0; l < 16; l++) {
            y[l] = d * (float)ek_iq4_levels[b[i].qs[l] & 15];
            y[l + 16] = d * (float)ek_iq4_levels[b[i].qs[l] >> 4];
        }
    }
}

/* ---- from fp32 ---------------------------------------------------------------- *
 * ember's own quantizers (the layouts are llama.cpp's; the search is ours):
 * each sub-block gets the scale (and offset) that minimise its squared error
 * over a small set of candidates, each refined by least squares; the
 * super-block scales then quantize those, and the values are rounded again
 * against the scales as stored. */

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The f16 value a float is stored as. */
static float as_f16(float f) { return ek_f16_to_f32(ek_f32_to_f16(f)); }

/* x ~ s * L - off with L in 0..nmax, s >= 0, off >= 0. Returns s. */
static float fit_offset(const float *x, int n, int nmax, float *off)
{
    float lo = x[0], hi = x[0];
    for (int i = 1; i < n; i++) {
        lo = fminf(lo, x[i]);
        hi = fmaxf(hi, x[i]);
    }
    if (lo > 0.0f) lo = 0.0f;
    *off = -lo;
    if (hi <= lo) return 0.0f;
    float best_err = FLT_MAX, best_s = (hi - lo) / (float)nmax, best_off = -lo;
    for (int t = -6; t <= 6; t++) {
        float is = ((float)nmax + 0.1f * (float)t) / (hi - lo);
        double sl = 0, sl2 = 0, sx = 0, slx = 0;
        uint8_t L[32];
        for (int i = 0; i < n; i++) {
            L[i] = (uint8_t)clampi((int)lrintf(is * (x[i] - lo)), 0, nmax);
            sl += L[i];
            sl2 += (double)L[i] * L[i];
            sx += x[i];
            slx += (double)L[i] * x[i];
        }
        /* least squares for s and m = -off with L fixed; m <= 0 */
        double det = n * sl2 - sl * sl, s, m;
        if (det <= 0) continue;
        s = (n * slx - sl * sx) / det;
        m = (sl2 * sx - sl * slx) / det;
        if (m > 0) {
            m = 0;
            s = slx / sl2;
        }
        if (s <= 0) continue;
        double err = 0;
        for (int i = 0; i < n; i++) {
            double e = s * L[i] + m - x[i];
            err += e * e;
        }
        if (err < best_err) {
            best_err = (float)err;
            best_s = (float)s;
            best_off = (float)-m;
        }
    }
    *off = best_off;
    return best_s;
}

/* Nearest of the sorted levels[0..nl) to v (ties to the lower); the index.
 * Bisection: the first level above v, then whichever neighbour is closer. */
static int nearest_level(const int8_t *levels, int nl, float v)
{
    int lo = 0, hi = nl;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if ((float)levels[mid] <= v) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return 0;
    if (lo == nl) return nl - 1;
    return v - (float)levels[lo - 1] <= (float)levels[lo] - v ? lo - 1 : lo;
}

/* x ~ s * level[L] with a signed s: the value of largest magnitude is tried
 * at either end of the level set (the wider side is usually best). levels
 * NULL: the integers qmin..qmax. Returns s. */
static float fit_levels(const float *x, int n, int qmin, int qmax, const int8_t *levels)
{
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    if (amax == 0.0f) return 0.0f;
    int nl = levels ? 16 : qmax - qmin + 1;
    float ends[2] = {levels ? (float)levels[0] : (float)qmin, levels ? (float)levels[15] : (float)qmax};
    float best_err = FLT_MAX, best_s = max / ends[0];
    for (int e = 0; e < 2; e++)
        for (int t = -4; t <= 4; t++) {
            float is0 = ends[e] * (1.0f + 0.03f * (float)t) / max;
            double sxl = 0, sll = 0;
            float q[32];
            for (int i = 0; i < n; i++) {
                int L = levels ? nearest_level(levels, nl, x[i] * is0)
                               : clampi((int)lrintf(x[i] * is0), qmin, qmax);
                q[i] = levels ? (float)levels[L] : (float)L;
                sxl += (double)x[i] * q[i];
                sll += (double)q[i] * q[i];
            }
            if (sll <= 0) continue;
            double s = sxl / sll, err = 0;
            for (int i = 0; i < n; i++) {
                double d = s * q[i] - x[i];
                err += d * d;
            }
            if (err < best_err) {
                best_err = (float)err;
                best_s = (float)s;
            }
        }
    return best_s;
}

/* Super-block scale for sub-block scales that are stored as integers in
 * [-lim_neg, lim_pos] (signed) or [0, lim_pos]: the largest magnitude maps to
 * the wider end. Returns the f16-rounded d; the integers go to out. */
static float quantize_scales(const float *s, int n, int lim_neg, int lim_pos, int *out)
{
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; i++)
        if (fabsf(s[i]) > amax) {
            amax = fabsf(s[i]);
            max = s[i];
        }
    float d = lim_neg > lim_pos ? max / (float)-lim_neg : amax / (float)lim_pos;
    d = as_f16(d);
    for (int i = 0; i < n; i++) out[i] = d != 0.0f ? clampi((int)lrintf(s[i] / d), -lim_neg, lim_pos) : 0;
    return d;
}

/* Rounds x against a stored scale and offset: L in 0..nmax. */
static int round_offset(float x, float scale, float off, int nmax)
{
    return scale != 0.0f ? clampi((int)lrintf((x + off) / scale), 0, nmax) : 0;
}

/* Q4_K and Q5_K share the scale search and packing; nmax 15 or 31. */
static void quantize_q45(const float *x, int nmax, uint16_t *d_out, uint16_t *dmin_out, uint8_t *scales,
                         uint8_t L[EK_QK_K])
{
    float s[8], off[8];
    int sc[8], m[8];
    for (int j = 0; j < 8; j++) s[j] = fit_offset(x + 32 * j, 32, nmax, &off[j]);
    float d = quantize_scales(s, 8, 0, 63, sc), dmin = quantize_scales(off, 8, 0, 63, m);
    *d_out = ek_f32_to_f16(d);
    *dmin_out = ek_f32_to_f16(dmin);
    memset(scales, 0, 12);
    for (int j = 0; j < 4; j++) {
        scales[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
        scales[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
        scales[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 32; i++)
            L[32 * j + i] = (uint8_t)round_offset(x[32 * j + i], d * (float)sc[j], dmin * (float)m[j], nmax);
}

void ek_q4_k_from_f32(const float *src, void *dst, int64_t n)
{
    for (int64_t b = 0; b < n / EK_QK_K; b++) {
        ek_block_q4_k *k = (ek_block_q4_k *)dst + b;
        uint8_t L[EK_QK_K];
        quantize_q45(src + b * EK_QK_K, 15, &k->d, &k->dmin, k->scales, L);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) k->qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    }
}

void ek_q5_k_from_f32(const float *src, void *dst, int64_t n)
{
    for (int64_t b = 0; b < n / EK_QK_K; b++) {
        ek_block_q5_k *k = (ek_block_q5_k *)dst + b;
        uint8_t L[EK_QK_K];
        quantize_q45(src + b * EK_QK_K, 31, &k->d, &k->dmin, k->scales, L);
        memset(k->qh, 0, sizeof k->qh);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) {
                int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
                k->qs[32 * c + l] = (uint8_t)((lo & 15) | ((hi & 15) << 4));
                k->qh[l] |= (uint8_t)(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
            }
    }
}

void ek_q2_k_from_f32(const float *src, void *dst, int64_t n)
{
    for (int64_t b = 0; b < n / EK_QK_K; b++) {
        const float *x = src + b * EK_QK_K;
        ek_block_q2_k *k = (ek_block_q2_k *)dst + b;
        float s[16], off[16];
        int sc[16], m[16];
        for (int j = 0; j < 16; j++) s[j] = fit_offset(x + 16 * j, 16, 3, &off[j]);
        float d = quantize_scales(s, 16, 0, 15, sc), dmin = quantize_scales(off, 16, 0, 15, m);
        k->d = ek_f32_to_f16(d);
        k->dmin = ek_f32_to_f16(dmin);
        for (int j = 0; j < 16; j++) k->scales[j] = (uint8_t)(sc[j] | (m[j] << 4));
        memset(k->qs, 0, sizeof k->qs);
        for (int c = 0; c < 2; c++)
            for (int t = 0; t < 4; t++)
                for (int l = 0; l < 32; l++) {
                    int i = 128 * c + 32 * t + l;
                    int L = round_offset(x[i], d * (float)sc[i / 16], dmin * (float)m[i / 16], 3);
                    k->qs[32 * c + l] |= (uint8_t)(L << (2 * t));
                }
    }
}

/* Rounds x against a stored signed scale: L in qmin..qmax. */
static int round_signed(float x, float scale, int qmin, int qmax)
{
    return scale != 0.0f ? clampi((int)lrintf(x / scale), qmin, qmax) : 0;
}

/* Q3_K and Q6_K: sixteen sub-blocks of 16 on the integers qmin..qmax,
 * their signed scales stored as integers in [-lim_neg, lim_pos]. */
static float fit_signed16(const float *x, int qmin, int qmax, int lim_neg, int lim_pos, int sc[16])
{
    float s[16];
    for (int j = 0; j < 16; j++) s[j] = fit_levels(x + 16 * j, 16, qmin, qmax, NULL);
    return quantize_scales(s, 16, lim_neg, lim_pos, sc);
}

void ek_q3_k_from_f32(const float *src, void *dst, int64_t n)
{
    for (int64_t b = 0; b < n / EK_QK_K; b++) {
        const float *x = src + b * EK_QK_K;
        ek_block_q3_k *k = (ek_block_q3_k *)dst + b;
        int sc[16];
        float d = fit_signed16(x, -4, 3, 32, 31, sc);
        k->d = ek_f32_to_f16(d);
        memset(k->scales, 0, sizeof k->scales);
        for (int j = 0; j < 16; j++) {
            int v = sc[j] + 32;
            k->scales[j % 8] |= (uint8_t)((v & 15) << (j < 8 ? 0 : 4));
            k->scales[8 + j % 4] |= (uint8_t)((v >> 4) << (2 * (j / 4)));
        }
        memset(k->qs, 0, sizeof k->qs);
        memset(k->hmask, 0, sizeof k->hmask);
        for (int c = 0; c < 2; c++)
            for (int t = 0; t < 4; t++)
                for (int l = 0; l < 32; l++) {
                    int i = 128 * c + 32 * t + l;
                    int v = round_signed(x[i], d * (float)sc[i / 16], -4, 3) + 4; /* 0..7 */
                    k->qs[32 * c + l] |= (uint8_t)((v & 3) << (2 * t));
                    k->hmask[l] |= (uint8_t)((v >> 2) << (4 * c + t));
                }
    }
}

void ek_q6_k_from_f32(const float *src, void *dst, int64_t n)
{
    for (int64_t b = 0; b < n / EK_QK_K; b++) {
        const float *x = src + b * EK_QK_K;
        ek_block_q6_k *k = (ek_block_q6_k *)dst + b;
        int sc[16];
        float d = fit_signed16(x, -32, 31, 127, 127, sc);
        k->d = ek_f32_to_f16(d);
        for (int j = 0; j < 16; j++) k->scales[j] = (int8_t)sc[j];
        for (int c = 0; c < 2; c++) {
            uint8_t *ql = k->ql + 64 * c, *qh = k->qh + 32 * c;
            int v[4];
            for (int l = 0; l < 32; l++) {
                for (int r = 0; r < 4; r++) {
                    int i = 128 * c + 32 * r + l;
                    v[r] = round_signed(x[i], d * (float)sc[i / 16], -32, 31) + 32; /* 0..63 */
                }
                ql[l] = (uint8_t)((v[0] & 15) | ((v[2] & 15) << 4));
                ql[l + 32] = (uint8_t)((v[1] & 15) | ((v[3] & 15) << 4));
                qh[l] = (uint8_t)((v[0] >> 4) | ((v[1] >> 4) << 2) | ((v[2] >> 4) << 4) | ((v[3] >> 4) << 6));
            }
        }
    }
}

/* 32 values against a scale on the IQ4 levels; nibbles as in IQ4_NL. */
static void iq4_pack(const float *x, float scale, uint8_t qs[16])
{
    for (int l = 0; l < 16; l++) {
        int lo = scale != 0.0f ? nearest_level(ek_iq4_levels, 16, x[l] / scale) : 8;
        int hi = scale != 0.0f ? nearest_level(ek_iq4_levels, 16, x[l + 16] / scale) : 8;
        qs[l] = (uint8_t)(lo | (hi << 4));
    }
}

void ek_iq4_nl_from_f32(const float *src, void *dst, int64_t n)
{
    for (int64_t b = 0; b < n / EK_QBLOCK; b++) {
        const float *x = src + b * EK_QBLOCK;
        ek_block_iq4_nl *k = (ek_block_iq4_nl *)dst + b;
        float d = as_f16(fit_levels(x, 32, 0, 0, ek_iq4_levels));
        k->d = ek_f32_to_f16(d);
        iq4_pack(x, d, k->qs);
    }
}

void ek_iq4_xs_from_f32(const float *src, void *dst, int64_t n)
{
    for (int64_t b = 0; b < n / EK_QK_K; b++) {
        const float *x = src + b * EK_QK_K;
        ek_block_iq4_xs *k = (ek_block_iq4_xs *)dst + b;
        float s[8];
        int sc[8];
        for (int j = 0; j < 8; j++) s[j] = fit_levels(x + 32 * j, 32, 0, 0, ek_iq4_levels);
        float d = quantize_scales(s, 8, 32, 31, sc);
        k->d = ek_f32_to_f16(d);
        k->scales_h = 0;
        memset(k->scales_l, 0, sizeof k->scales_l);
        for (int j = 0; j < 8; j++) {
            int v = sc[j] + 32;
            k->scales_l[j / 2] |= (uint8_t)((v & 15) << (4 * (j % 2)));
            k->scales_h |= (uint16_t)((v >> 4) << (2 * j));
            iq4_pack(x + 32 * j, d * (float)sc[j], k->qs + 16 * j);
        }
    }
}

/* ---- scalar dot products ------------------------------------------------------ */

static void kq_block_dots(const ek_kq_ints *u, const char *x, size_t x_stride, int64_t b, int t0, int t1,
                          float *acc);

float ek_dot_kquant_scalar(et_dtype dtype, const void *w, const ek_block_q8_0 *x, int64_t n)
{
    float sum = 0.0f;
    ek_kq_ints u;
    for (int64_t b = 0; b < n / EK_QK_K; b++) {
        ek_kq_unpack(dtype, w, b, &u);
        kq_block_dots(&u, (const char *)x, 0, b, 0, 1, &sum);
    }
    return sum;
}

float ek_dot_iq4_nl_scalar(const void *w, const ek_block_q8_0 *x, int64_t n)
{
    const ek_block_iq4_nl *b = w;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EK_QBLOCK; i++) {
        int32_t dot = 0;
        for (int l = 0; l < 16; l++) {
            dot += ek_iq4_levels[b[i].qs[l] & 15] * (int32_t)x[i].q[l];
            dot += ek_iq4_levels[b[i].qs[l] >> 4] * (int32_t)x[i].q[l + 16];
        }
        sum += ek_f16_to_f32(b[i].d) * ek_f16_to_f32(x[i].d) * (float)dot;
    }
    return sum;
}

/* Per super-block: the 8 activation blocks it meets, for tokens [t0, t1). */
static void kq_block_dots(const ek_kq_ints *u, const char *x, size_t x_stride, int64_t b, int t0, int t1,
                          float *acc)
{
    for (int t = t0; t < t1; t++) {
        const ek_block_q8_0 *xb = (const ek_block_q8_0 *)(x + (size_t)t * x_stride) + b * (EK_QK_K / EK_QBLOCK);
        float sum = acc[t - t0];
        for (int s = 0; s < EK_QK_K / EK_QBLOCK; s++, xb++) {
            int32_t qsum = 0, msum = 0;
            for (int h = 0; h < 2; h++) {
                int32_t dot = 0, xs = 0;
                for (int j = 0; j < 16; j++) {
                    dot += (int32_t)u->q[32 * s + 16 * h + j] * xb->q[16 * h + j];
                    xs += xb->q[16 * h + j];
                }
                qsum += u->scale[2 * s + h] * dot;
                msum += u->min[2 * s + h] * xs;
            }
            sum += ek_f16_to_f32(xb->d) * (u->d * (float)qsum - u->dmin * (float)msum);
        }
        acc[t - t0] = sum;
    }
}

void ek_gemm_kquant_scalar(float *y, int64_t y_stride, const ek_matrix *w, int64_t r0, int64_t r1,
                           const void *x, size_t x_stride, int n_tokens)
{
    size_t row_bytes = ek_row_bytes(w->dtype, w->cols);
    enum { CHUNK = 64 };
    float acc[CHUNK];
    for (int64_t r = r0; r < r1; r++) {
        const char *wr = (const char *)w->data + (size_t)r * row_bytes;
        if (w->dtype == ET_IQ4_NL) {
            for (int t = 0; t < n_tokens; t++)
                y[t * y_stride + r] = ek_dot_iq4_nl_scalar(wr, (const ek_block_q8_0 *)((const char *)x + (size_t)t * x_stride), w->cols);
            continue;
        }
        for (int t0 = 0; t0 < n_tokens; t0 += CHUNK) {
            int t1 = t0 + CHUNK < n_tokens ? t0 + CHUNK : n_tokens;
            memset(acc, 0, sizeof acc);
            ek_kq_ints u;
            for (int64_t b = 0; b < w->cols / EK_QK_K; b++) {
                ek_kq_unpack(w->dtype, wr, b, &u);
                kq_block_dots(&u, x, x_stride, b, t0, t1, acc);
            }
            for (int t = t0; t < t1; t++) y[t * y_stride + r] = acc[t - t0];
        }
    }
}
