/* Loading and running the ECAPA-TDNN speaker encoder (speaker_encoder.h). */
#include "tts/speaker_encoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/large_alloc.h"
#include "base/status.h"
#include "io/checkpoint.h"
#include "kernels/conv.h"
#include "kernels/exec.h"
#include "nn/weights.h"
#include "tts/tts_gguf.h"

#define PREFIX "speaker_encoder."
#define STATS_EPS 1e-12 /* AttentiveStatisticsPooling.eps */

/* A Conv1d with its bias, "same" reflect padding and whether a ReLU follows
 * (a TimeDelayNetBlock). */
typedef struct spk_conv {
    ek_conv_weights w;
    float *bias;
    int32_t dilation, pad_left, pad_right;
    int relu;
} spk_conv;

typedef struct spk_block {
    spk_conv tdnn1, res2net[SPK_MAX_SCALE - 1], tdnn2, se1, se2;
} spk_block;

struct spk_encoder {
    spk_config cfg;
    const ek_kernel_set *kernels;
    spk_conv first, mfa, asp_tdnn, asp_conv, fc;
    spk_block blocks[SPK_MAX_LAYERS];
};

/* ---- loading ---------------------------------------------------------------- */

typedef struct spk_loader {
    wt_loader wt;
    wt_f32_buf tmp; /* one tensor widened to fp32 */
} spk_loader;

/* "speaker_encoder.{name}.weight" [cout, cin, k] and ".bias" [cout]. */
static ember_status bind_conv(spk_loader *ld, const char *name, int32_t cout, int32_t cin,
                              int32_t k, int32_t dilation, int relu, spk_conv *c)
{
    char full[192];
    const float *w;
    ember_status st;
    const int64_t wshape[3] = {cout, cin, k}, bshape[1] = {cout};
    snprintf(full, sizeof full, PREFIX "%s.weight", name);
    if ((st = wt_fetch_f32(&ld->wt, full, 3, wshape, &ld->tmp, &w)) || (st = ek_conv_pack(&c->w, EK_CONV_F32, w, cout, cin, k)))
        return st;
    snprintf(full, sizeof full, PREFIX "%s.bias", name);
    if ((st = wt_fetch_f32(&ld->wt, full, 1, bshape, &ld->tmp, &w))) return st;
    if (!(c->bias = malloc(sizeof(float) * (size_t)cout)))
        return ember_fail(EMBER_ERR_NO_MEMORY, "loading '%s': out of memory", full);
    memcpy(c->bias, w, sizeof(float) * (size_t)cout);
    const int32_t total = dilation * (k - 1);
    c->dilation = dilation;
    c->pad_left = total / 2;
    c->pad_right = total - total / 2;
    c->relu = relu;
    return EMBER_OK;
}

static ember_status bind_all(spk_loader *ld, spk_encoder *e)
{
    const spk_config *c = &e->cfg;
    const int32_t n = c->n_layers, last = c->channels[n - 1];
    char name[128];
    ember_status st;
    if ((st = bind_conv(ld, "blocks.0.conv", c->channels[0], c->mel_dim, c->kernels[0],
                        c->dilations[0], 1, &e->first)))
        return st;
    for (int32_t b = 1; b < n - 1; b++) {
        spk_block *k = &e->blocks[b];
        const int32_t w = c->channels[b], part = w / c->res2net_scale;
        snprintf(name, sizeof name, "blocks.%d.tdnn1.conv", b);
        if ((st = bind_conv(ld, name, w, c->channels[b - 1], 1, 1, 1, &k->tdnn1))) return st;
        for (int32_t j = 0; j < c->res2net_scale - 1; j++) {
            snprintf(name, sizeof name, "blocks.%d.res2net_block.blocks.%d.conv", b, j);
            if ((st = bind_conv(ld, name, part, part, c->kernels[b], c->dilations[b], 1,
                                &k->res2net[j])))
                return st;
        }
        snprintf(name, sizeof name, "blocks.%d.tdnn2.conv", b);
        if ((st = bind_conv(ld, name, w, w, 1, 1, 1, &k->tdnn2))) return st;
        snprintf(name, sizeof name, "blocks.%d.se_block.conv1", b);
        if ((st = bind_conv(ld, name, c->se_channels, w, 1, 1, 1, &k->se1))) return st;
        snprintf(name, sizeof name, "blocks.%d.se_block.conv2", b);
        if ((st = bind_conv(ld, name, w, c->se_channels, 1, 1, 0, &k->se2))) return st;
    }
    if ((st = bind_conv(ld, "mfa.conv", last, last, c->kernels[n - 1], c->dilations[n - 1], 1,
                        &e->mfa)) ||
        (st = bind_conv(ld, "asp.tdnn.conv", c->attention_channels, 3 * last, 1, 1, 1,
                        &e->asp_tdnn)) ||
        (st = bind_conv(ld, "asp.conv", last, c->attention_channels, 1, 1, 0, &e->asp_conv)))
        return st;
    return bind_conv(ld, "fc", c->enc_dim, 2 * last, 1, 1, 0, &e->fc);
}

static void free_conv(spk_conv *c)
{
    ek_conv_weights_free(&c->w);
    free(c->bias);
    c->bias = NULL;
}

void spk_encoder_free(spk_encoder *e)
{
    if (!e) return;
    free_conv(&e->first);
    for (int32_t b = 0; b < SPK_MAX_LAYERS; b++) {
        spk_block *k = &e->blocks[b];
        free_conv(&k->tdnn1);
        free_conv(&k->tdnn2);
        free_conv(&k->se1);
        free_conv(&k->se2);
        for (int32_t j = 0; j < SPK_MAX_SCALE - 1; j++) free_conv(&k->res2net[j]);
    }
    free_conv(&e->mfa);
    free_conv(&e->asp_tdnn);
    free_conv(&e->asp_conv);
    free_conv(&e->fc);
    free(e);
}

ember_status spk_encoder_load(const char *dir, const ek_kernel_set *kernels, spk_encoder **out)
{
    *out = NULL;
    ck_dir *ck;
    char label[1200];
    ember_status st = tts_ck_open(dir, TTS_PART_SPEAKER, &ck, label, sizeof label);
    if (st) return st;
    spk_encoder *e = calloc(1, sizeof *e);
    if (!e) {
        ck_close(ck);
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", dir);
    }
    e->kernels = kernels ? kernels : ek_kernels_best();
    spk_loader ld = {.wt = {.ck = ck, .convert_to = ET_DTYPE_COUNT, .kernels = e->kernels}};
    if (!(st = spk_config_parse(ck_config_json(ck), ck_config_len(ck), label, &e->cfg)))
        st = bind_all(&ld, e);
    free(ld.tmp.p);
    ck_close(ck); /* every weight was copied into packed panels */
    if (st) {
        spk_encoder_free(e);
        return st;
    }
    *out = e;
    return EMBER_OK;
}

const spk_config *spk_encoder_config(const spk_encoder *e) { return &e->cfg; }

static int32_t widest_pad(const spk_conv *c)
{
    return c->pad_left > c->pad_right ? c->pad_left : c->pad_right;
}

int64_t spk_encoder_min_frames(const spk_encoder *e)
{
    int32_t p = widest_pad(&e->first);
    for (int32_t b = 1; b < e->cfg.n_layers - 1; b++)
        if (widest_pad(&e->blocks[b].res2net[0]) > p) p = widest_pad(&e->blocks[b].res2net[0]);
    if (widest_pad(&e->mfa) > p) p = widest_pad(&e->mfa);
    return (int64_t)p + 1; /* a reflection of p frames needs p + 1 */
}

/* ---- the forward pass ------------------------------------------------------- */

typedef struct spk_run {
    const spk_encoder *e;
    ek_exec ex;
    int64_t T;
    float *pad; /* reflect-padded input of the conv being run */
} spk_run;

/* y = conv(x) (+ ReLU for a TDNN) over T frames; x rows xs floats apart, y
 * rows ys apart. A padded conv reads a reflect-padded copy of x: with the
 * left padding as the kernel's "history" rows, the causal kernel's output
 * is the "same" conv's. */
static void run_conv(spk_run *r, const spk_conv *c, const float *x, int64_t xs, float *y,
                     int64_t ys, int64_t T)
{
    const int32_t cin = c->w.cin;
    if (c->pad_left + c->pad_right > 0) {
        const int64_t pl = c->pad_left, pr = c->pad_right;
        for (int64_t i = -pl; i < T + pr; i++) {
            const int64_t src = i < 0 ? -i : i >= T ? 2 * (T - 1) - i : i;
            memcpy(r->pad + (i + pl) * cin, x + src * xs, sizeof(float) * (size_t)cin);
        }
        x = r->pad + (pl + pr) * cin; /* (taps - 1) * dilation rows of history */
        xs = cin;
    }
    ek_conv_run(&r->ex, y, ys, &c->w, c->bias, x, xs, (int32_t)T, c->dilation);
    if (!c->relu) return;
    /* not fmaxf: without -ffast-math it is a libm call per element */
    for (int64_t t = 0; t < T; t++)
        for (int32_t o = 0; o < c->w.cout; o++) {
            float *v = y + t * ys + o;
            if (*v < 0.0f) *v = 0.0f;
        }
}

/* One SE-Res2Net block: u (rows us apart) -> out (rows os apart). */
static void se_res2net(spk_run *r, const spk_block *k, int32_t width, int32_t scale, const float *u,
                       int64_t us, float *out, int64_t os, float *t1, float *mix, float *part_in)
{
    const int64_t T = r->T;
    const int32_t part = width / scale;
    run_conv(r, &k->tdnn1, u, us, t1, width, T);
    /* Res2Net: chunk 0 passes; chunk i > 0 goes through conv i-1, after
     * adding chunk i-1's output from i = 2 on */
    for (int64_t t = 0; t < T; t++) memcpy(mix + t * width, t1 + t * width, sizeof(float) * (size_t)part);
    for (int32_t i = 1; i < scale; i++) {
        const float *src = t1 + (size_t)i * part;
        int64_t ss = width;
        if (i > 1) {
            for (int64_t t = 0; t < T; t++)
                for (int32_t c = 0; c < part; c++)
                    part_in[t * part + c] = src[t * width + c] + mix[t * width + (i - 1) * part + c];
            src = part_in;
            ss = part;
        }
        run_conv(r, &k->res2net[i - 1], src, ss, mix + (size_t)i * part, width, T);
    }
    run_conv(r, &k->tdnn2, mix, width, t1, width, T);
    /* squeeze-excitation over the time mean */
    float *m = part_in, *s1 = part_in + width, *s2 = s1 + k->se1.w.cout;
    for (int32_t c = 0; c < width; c++) {
        double sum = 0.0;
        for (int64_t t = 0; t < T; t++) sum += t1[t * width + c];
        m[c] = (float)(sum / (double)T);
    }
    run_conv(r, &k->se1, m, width, s1, k->se1.w.cout, 1);
    run_conv(r, &k->se2, s1, k->se1.w.cout, s2, width, 1);
    for (int32_t c = 0; c < width; c++) s2[c] = 1.0f / (1.0f + expf(-s2[c]));
    for (int64_t t = 0; t < T; t++)
        for (int32_t c = 0; c < width; c++)
            out[t * os + c] = t1[t * width + c] * s2[c] + u[t * us + c];
}

/* Weighted mean and std per channel of h [T][C] (weights w[t][c], or 1/T
 * each when w is NULL); std = sqrt(max(var, 1e-12)). acc holds 2 C doubles.
 * Time runs in the outer loop so h and w are read row by row; each channel
 * still sums its terms in time order. */
static void weighted_stats(const float *h, const float *w, int64_t T, int32_t C, float *mean,
                           float *std, double *acc)
{
    double *mu = acc, *var = acc + C;
    for (int32_t c = 0; c < C; c++) mu[c] = var[c] = 0.0;
    for (int64_t t = 0; t < T; t++)
        for (int32_t c = 0; c < C; c++) mu[c] += (w ? w[t * C + c] : 1.0 / (double)T) * h[t * C + c];
    for (int64_t t = 0; t < T; t++)
        for (int32_t c = 0; c < C; c++) {
            const double d = h[t * C + c] - mu[c];
            var[c] += (w ? w[t * C + c] : 1.0 / (double)T) * d * d;
        }
    for (int32_t c = 0; c < C; c++) {
        mean[c] = (float)mu[c];
        std[c] = (float)sqrt(fmax(var[c], STATS_EPS));
    }
}

/* Softmax over time of each channel of a [T][C], in place. */
static void softmax_over_time(float *a, int64_t T, int32_t C)
{
    for (int32_t c = 0; c < C; c++) {
        float top = -INFINITY;
        for (int64_t t = 0; t < T; t++) top = fmaxf(top, a[t * C + c]);
        double sum = 0.0;
        for (int64_t t = 0; t < T; t++) sum += (a[t * C + c] = expf(a[t * C + c] - top));
        const float inv = (float)(1.0 / sum);
        for (int64_t t = 0; t < T; t++) a[t * C + c] *= inv;
    }
}

ember_status spk_encoder_xvector(const spk_encoder *e, ember_pool *pool, const float *mel,
                                 int64_t frames, float *xvector)
{
    const spk_config *c = &e->cfg;
    const int64_t need = spk_encoder_min_frames(e);
    if (frames < need)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "speaker encoder: %lld mel frames is too short (at least %lld: %lld "
                          "samples at 24 kHz)",
                          (long long)frames, (long long)need, (long long)need * 256);
    const int32_t n = c->n_layers, C0 = c->channels[0], W = c->channels[1];
    const int32_t L = c->channels[n - 1], A = c->attention_channels;
    const int64_t T = frames;
    /* the padded convs (k > 1): blocks.0 on the mel, the Res2Net convs on a
     * part, mfa on the blocks' outputs side by side */
    int32_t widest_pad_in = e->first.w.cin;
    for (int32_t b = 1; b < n - 1; b++)
        if (e->blocks[b].res2net[0].w.cin > widest_pad_in) widest_pad_in = e->blocks[b].res2net[0].w.cin;
    if (widest_pad(&e->mfa) && e->mfa.w.cin > widest_pad_in) widest_pad_in = e->mfa.w.cin;
    /* scratch: padded conv input; h0; block scratch (t1, mix, part) ;
     * the blocks' outputs side by side; mfa output; asp input and stages;
     * the statistics' 2 L doubles */
    const size_t pad_rows = (size_t)T + 2 * (size_t)need;
    const size_t sizes[] = {
        pad_rows * (size_t)widest_pad_in, (size_t)T * C0, (size_t)T * W, (size_t)T * W,
        (size_t)T * W + 2 * (size_t)W + (size_t)c->se_channels, (size_t)T * L, (size_t)T * L,
        (size_t)T * 3 * L, (size_t)T * A, (size_t)T * L, 4 * (size_t)L, 4 * (size_t)L};
    enum { PAD, H0, T1, MIX, PART, CAT, H, ASP_IN, ASP_MID, ASP_W, POOLED, STATS, N_BUF };
    float *buf[N_BUF];
    /* one arena in huge pages: ~55 MB for a 10 s clip, which in 4 KiB pages
     * took ~14,000 page faults, about a third of the encoder's time */
    size_t offs[N_BUF], total = 0;
    for (int i = 0; i < N_BUF; i++) {
        offs[i] = total;
        total += (sizes[i] + 15) & ~(size_t)15; /* 64-byte aligned */
    }
    float *arena = ember_large_alloc(sizeof(float) * total);
    if (!arena)
        return ember_fail(EMBER_ERR_NO_MEMORY, "speaker encoder: out of memory (%lld frames)",
                          (long long)T);
    for (int i = 0; i < N_BUF; i++) buf[i] = arena + offs[i];
    spk_run r = {e, {e->kernels, pool}, T, buf[PAD]};
    run_conv(&r, &e->first, mel, c->mel_dim, buf[H0], C0, T);
    const float *u = buf[H0];
    int64_t us = C0, off = 0;
    for (int32_t b = 1; b < n - 1; b++) {
        float *out = buf[CAT] + off;
        se_res2net(&r, &e->blocks[b], c->channels[b], c->res2net_scale, u, us, out, L, buf[T1],
                   buf[MIX], buf[PART]);
        u = out;
        us = L;
        off += c->channels[b];
    }
    float *h = buf[H];
    run_conv(&r, &e->mfa, buf[CAT], L, h, L, T);
    /* attentive statistics pooling */
    float *pooled = buf[POOLED], *gmean = pooled + 2 * L, *gstd = gmean + L;
    weighted_stats(h, NULL, T, L, gmean, gstd, (double *)buf[STATS]);
    for (int64_t t = 0; t < T; t++) {
        float *row = buf[ASP_IN] + t * 3 * L;
        memcpy(row, h + t * L, sizeof(float) * (size_t)L);
        memcpy(row + L, gmean, sizeof(float) * (size_t)L);
        memcpy(row + 2 * L, gstd, sizeof(float) * (size_t)L);
    }
    run_conv(&r, &e->asp_tdnn, buf[ASP_IN], 3 * L, buf[ASP_MID], A, T);
    for (size_t i = 0; i < (size_t)T * A; i++) buf[ASP_MID][i] = tanhf(buf[ASP_MID][i]);
    run_conv(&r, &e->asp_conv, buf[ASP_MID], A, buf[ASP_W], L, T);
    softmax_over_time(buf[ASP_W], T, L);
    weighted_stats(h, buf[ASP_W], T, L, pooled, pooled + L, (double *)buf[STATS]);
    run_conv(&r, &e->fc, pooled, 2 * L, xvector, c->enc_dim, 1);
    free(arena);
    return EMBER_OK;
}
