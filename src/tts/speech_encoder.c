/* Loading and running the speech tokenizer's encoder (speech_encoder.h). */
#include "tts/speech_encoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/large_alloc.h"
#include "base/pool.h"
#include "base/status.h"
#include "io/checkpoint.h"
#include "kernels/conv.h"
#include "kernels/exec.h"
#include "nn/weights.h"
#include "tts/tts_gguf.h"

#define USAGE_EPS 1e-5f /* codebook rows: embed_sum / max(cluster_usage, 1e-5) */

/* A causal conv of kernel k and stride s (k == 2s when s > 1, packed as a
 * two-tap conv over rows of s samples), or a linear layer (k = s = 1). */
typedef struct se_conv {
    ek_conv_weights w;
    float *bias; /* or NULL */
    int32_t cin, cout, k, stride;
} se_conv;

typedef struct se_layer {
    float *ln1_w, *ln1_b, *ln2_w, *ln2_b, *attn_scale, *mlp_scale;
    se_conv q, k, v, o, fc1, fc2;
} se_layer;

struct se_encoder {
    se_config cfg;
    const ek_kernel_set *kernels;
    se_conv first, last, down;
    se_conv res_a[SE_MAX_STAGES], res_b[SE_MAX_STAGES], stride[SE_MAX_STAGES];
    se_layer *layers;
    se_conv proj_semantic, proj_acoustic;
    float *codebooks; /* n_codes x codebook_size x codebook_dim: level 0 semantic */
    double *norms;    /* n_codes x codebook_size: squared length of each row */
};

/* ---- loading ---------------------------------------------------------------- */

typedef struct se_loader {
    wt_loader wt;
    wt_f32_buf tmp;
} se_loader;

static ember_status take_vector(se_loader *ld, const char *name, int32_t n, float **out)
{
    const float *v;
    const int64_t shape[1] = {n};
    ember_status st = wt_fetch_f32(&ld->wt, name, 1, shape, &ld->tmp, &v);
    if (st) return st;
    if (!(*out = malloc(sizeof(float) * (size_t)n)))
        return ember_fail(EMBER_ERR_NO_MEMORY, "loading '%s': out of memory", name);
    memcpy(*out, v, sizeof(float) * (size_t)n);
    return EMBER_OK;
}

/* "{name}.weight" [cout, cin, k] (or [cout, cin] for a linear layer: k 0)
 * and, when has_bias, "{name}.bias". */
static ember_status load_conv(se_loader *ld, const char *name, int32_t cout, int32_t cin, int32_t k,
                              int32_t stride, int has_bias, se_conv *c)
{
    char full[160];
    const float *w;
    ember_status st;
    const int64_t shape[3] = {cout, cin, k};
    snprintf(full, sizeof full, "%s.weight", name);
    if ((st = wt_fetch_f32(&ld->wt, full, k ? 3 : 2, shape, &ld->tmp, &w))) return st;
    c->cin = cin, c->cout = cout, c->k = k ? k : 1, c->stride = stride;
    if (stride == 1) {
        st = ek_conv_pack(&c->w, EK_CONV_F32, w, cout, cin, c->k);
    } else {
        /* rows of `stride` samples side by side: input (j, ci) of tap t is
         * weight tap t * stride + j */
        const size_t row = (size_t)stride * cin;
        float *w2 = malloc(sizeof(float) * (size_t)cout * row * 2);
        if (!w2) return ember_fail(EMBER_ERR_NO_MEMORY, "loading '%s': out of memory", full);
        for (int32_t o = 0; o < cout; o++)
            for (int32_t j = 0; j < stride; j++)
                for (int32_t ci = 0; ci < cin; ci++)
                    for (int32_t t = 0; t < 2; t++)
                        w2[((size_t)o * row + (size_t)j * cin + ci) * 2 + t] =
                            w[((size_t)o * cin + ci) * (size_t)k + (size_t)t * stride + j];
        st = ek_conv_pack(&c->w, EK_CONV_F32, w2, cout, (int32_t)row, 2);
        free(w2);
    }
    if (st || !has_bias) return st;
    snprintf(full, sizeof full, "%s.bias", name);
    return take_vector(ld, full, cout, &c->bias);
}

static ember_status load_layer(se_loader *ld, const se_config *c, int32_t i, se_layer *l)
{
    char p[96], n[160];
    const int32_t H = c->hidden, q = c->n_heads * c->head_dim, kv = c->n_kv_heads * c->head_dim;
    ember_status st;
    snprintf(p, sizeof p, "encoder.encoder_transformer.layers.%d.", i);
#define VEC(key, field)                                                                      \
    (snprintf(n, sizeof n, "%s" key, p), take_vector(ld, n, H, &l->field))
#define LIN(key, field, out, in)                                                             \
    (snprintf(n, sizeof n, "%s" key, p), load_conv(ld, n, out, in, 0, 1, 0, &l->field))
    if ((st = VEC("input_layernorm.weight", ln1_w)) || (st = VEC("input_layernorm.bias", ln1_b)) ||
        (st = VEC("post_attention_layernorm.weight", ln2_w)) ||
        (st = VEC("post_attention_layernorm.bias", ln2_b)) ||
        (st = VEC("self_attn_layer_scale.scale", attn_scale)) ||
        (st = VEC("mlp_layer_scale.scale", mlp_scale)) || (st = LIN("self_attn.q_proj", q, q, H)) ||
        (st = LIN("self_attn.k_proj", k, kv, H)) || (st = LIN("self_attn.v_proj", v, kv, H)) ||
        (st = LIN("self_attn.o_proj", o, H, q)) || (st = LIN("mlp.fc1", fc1, c->intermediate, H)) ||
        (st = LIN("mlp.fc2", fc2, H, c->intermediate)))
        return st;
#undef VEC
#undef LIN
    return EMBER_OK;
}

static ember_status load_codebooks(se_loader *ld, se_encoder *e)
{
    const se_config *c = &e->cfg;
    const size_t rows = (size_t)c->codebook_size, dim = (size_t)c->codebook_dim;
    e->codebooks = malloc(sizeof(float) * (size_t)c->n_codes * rows * dim);
    e->norms = malloc(sizeof(double) * (size_t)c->n_codes * rows);
    if (!e->codebooks || !e->norms)
        return ember_fail(EMBER_ERR_NO_MEMORY, "speech encoder: out of memory for codebooks");
    for (int32_t q = 0; q < c->n_codes; q++) {
        char p[128], n[192];
        const float *sum, *usage;
        ember_status st;
        snprintf(p, sizeof p, "encoder.quantizer.%s_residual_vector_quantizer.layers.%d.codebook.",
                 q ? "acoustic" : "semantic", q ? q - 1 : 0);
        const int64_t s2[2] = {c->codebook_size, c->codebook_dim}, s1[1] = {c->codebook_size};
        float *out = e->codebooks + (size_t)q * rows * dim;
        snprintf(n, sizeof n, "%sembed_sum", p);
        if ((st = wt_fetch_f32(&ld->wt, n, 2, s2, &ld->tmp, &sum))) return st;
        memcpy(out, sum, sizeof(float) * rows * dim);
        snprintf(n, sizeof n, "%scluster_usage", p);
        if ((st = wt_fetch_f32(&ld->wt, n, 1, s1, &ld->tmp, &usage))) return st;
        for (size_t r = 0; r < rows; r++) {
            double n2 = 0;
            for (size_t d = 0; d < dim; d++) {
                out[r * dim + d] /= fmaxf(usage[r], USAGE_EPS);
                n2 += (double)out[r * dim + d] * out[r * dim + d];
            }
            e->norms[(size_t)q * rows + r] = n2;
        }
    }
    return EMBER_OK;
}

static ember_status load_all(se_loader *ld, se_encoder *e)
{
    const se_config *c = &e->cfg;
    char n[128];
    ember_status st;
    int32_t ch = c->n_filters, idx = 1;
    if ((st = load_conv(ld, "encoder.encoder.layers.0.conv", ch, 1, c->kernel, 1, 1, &e->first)))
        return st;
    for (int32_t s = 0; s < c->n_stages; s++) {
        snprintf(n, sizeof n, "encoder.encoder.layers.%d.block.1.conv", idx);
        if ((st = load_conv(ld, n, ch / c->compress, ch, c->residual_kernel, 1, 1, &e->res_a[s])))
            return st;
        snprintf(n, sizeof n, "encoder.encoder.layers.%d.block.3.conv", idx);
        if ((st = load_conv(ld, n, ch, ch / c->compress, 1, 1, 1, &e->res_b[s]))) return st;
        snprintf(n, sizeof n, "encoder.encoder.layers.%d.conv", idx + 2); /* idx + 1 is the ELU */
        if ((st = load_conv(ld, n, 2 * ch, ch, 2 * c->strides[s], c->strides[s], 1, &e->stride[s])))
            return st;
        idx += 3;
        ch *= 2;
    }
    snprintf(n, sizeof n, "encoder.encoder.layers.%d.conv", idx + 1);
    if ((st = load_conv(ld, n, c->hidden, ch, c->last_kernel, 1, 1, &e->last))) return st;
    if (c->n_layers && !(e->layers = calloc((size_t)c->n_layers, sizeof *e->layers)))
        return ember_fail(EMBER_ERR_NO_MEMORY, "speech encoder: out of memory");
    for (int32_t i = 0; i < c->n_layers; i++)
        if ((st = load_layer(ld, c, i, &e->layers[i]))) return st;
    if ((st = load_conv(ld, "encoder.downsample.conv", c->hidden, c->hidden, 4, 2, 0, &e->down)) ||
        (st = load_conv(ld, "encoder.quantizer.semantic_residual_vector_quantizer.input_proj",
                        c->vq_hidden, c->hidden, 1, 1, 0, &e->proj_semantic)) ||
        (st = load_conv(ld, "encoder.quantizer.acoustic_residual_vector_quantizer.input_proj",
                        c->vq_hidden, c->hidden, 1, 1, 0, &e->proj_acoustic)))
        return st;
    return load_codebooks(ld, e);
}

static void free_conv(se_conv *c)
{
    ek_conv_weights_free(&c->w);
    free(c->bias);
}

void se_encoder_free(se_encoder *e)
{
    if (!e) return;
    free_conv(&e->first);
    free_conv(&e->last);
    free_conv(&e->down);
    free_conv(&e->proj_semantic);
    free_conv(&e->proj_acoustic);
    for (int32_t s = 0; s < SE_MAX_STAGES; s++) {
        free_conv(&e->res_a[s]);
        free_conv(&e->res_b[s]);
        free_conv(&e->stride[s]);
    }
    for (int32_t i = 0; e->layers && i < e->cfg.n_layers; i++) {
        se_layer *l = &e->layers[i];
        free(l->ln1_w), free(l->ln1_b), free(l->ln2_w), free(l->ln2_b);
        free(l->attn_scale), free(l->mlp_scale);
        free_conv(&l->q), free_conv(&l->k), free_conv(&l->v), free_conv(&l->o);
        free_conv(&l->fc1), free_conv(&l->fc2);
    }
    free(e->layers);
    free(e->codebooks);
    free(e->norms);
    free(e);
}

ember_status se_encoder_load(const char *dir, const ek_kernel_set *kernels, se_encoder **out)
{
    char label[1200];
    *out = NULL;
    ck_dir *ck;
    ember_status st = tts_ck_open(dir, TTS_PART_SPEECH, &ck, label, sizeof label);
    if (st) return st;
    se_encoder *e = calloc(1, sizeof *e);
    if (!e) {
        ck_close(ck);
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", dir);
    }
    e->kernels = kernels ? kernels : ek_kernels_best();
    se_loader ld = {.wt = {.ck = ck, .convert_to = ET_DTYPE_COUNT, .kernels = e->kernels}};
    if (!(st = se_config_parse(ck_config_json(ck), ck_config_len(ck), label, &e->cfg)))
        st = load_all(&ld, e);
    free(ld.tmp.p);
    ck_close(ck); /* every weight was copied */
    if (st) {
        se_encoder_free(e);
        return st;
    }
    *out = e;
    return EMBER_OK;
}

const se_config *se_encoder_config(const se_encoder *e) { return &e->cfg; }

int64_t se_encoder_frames(const se_encoder *e, size_t n)
{
    return (int64_t)((n + (size_t)e->cfg.samples_per_frame - 1) / (size_t)e->cfg.samples_per_frame);
}

/* ---- the forward pass ------------------------------------------------------- */

static float elu(float x) { return x > 0.0f ? x : expm1f(x); }

/* The conv input rows [-hist, padded) (zeros or row 0 / L-1 repeated
 * outside [0, L)), ELU'd when asked: split over the pool by rows, as on the
 * first stages (240,000 rows of 64 for 10 s) the scalar expm1f is a large
 * part of the encoder. */
typedef struct input_rows {
    float *buf;
    const float *x;
    int64_t L, hist, padded;
    size_t cin;
    int act, replicate;
} input_rows;

static void fill_rows(void *p, int part, int n_parts, int worker)
{
    const input_rows *r = p;
    int64_t r0, r1;
    (void)worker;
    pool_split(r->hist + r->padded, 64, part, n_parts, &r0, &r1);
    for (int64_t t = r0 - r->hist; t < r1 - r->hist; t++) {
        float *row = r->buf + (size_t)(t + r->hist) * r->cin;
        const int64_t src = t < 0 ? 0 : t >= r->L ? r->L - 1 : t;
        if ((t < 0 || t >= r->L) && !r->replicate) {
            memset(row, 0, sizeof(float) * r->cin);
            continue;
        }
        const float *x = r->x + (size_t)src * r->cin;
        if (r->act)
            for (size_t i = 0; i < r->cin; i++) row[i] = elu(x[i]);
        else
            memcpy(row, x, sizeof(float) * r->cin);
    }
}

/* y = conv(x) for x [L][cin] (ELU'd first when asked), causal: k - s rows of
 * zeros (replicate: row 0 repeated) before it and enough after it for
 * ceil(L / s) outputs (zeros, or the last row). Returns y (*out_len rows of
 * cout; free() it) or NULL. The buffers of the first stages are tens of MB:
 * in huge pages, or their page faults cost as much as the convolutions. */
static float *run_conv(const ek_exec *ex, const se_conv *c, const float *x, int64_t L, int act,
                       int replicate, int64_t *out_len)
{
    const int64_t s = c->stride, hist = c->k - s, padded = (L + s - 1) / s * s;
    const size_t cin = (size_t)c->cin;
    float *buf = ember_large_alloc(sizeof(float) * (size_t)(hist + padded) * cin);
    float *y = ember_large_alloc(sizeof(float) * (size_t)(padded / s) * (size_t)c->cout);
    if (!buf || !y) {
        free(buf);
        free(y);
        return NULL;
    }
    input_rows rows = {buf, x, L, hist, padded, cin, act, replicate};
    pool_run(ex->pool, fill_rows, &rows, hist + padded >= 4096 ? 4 * pool_size(ex->pool) : 1);
    ek_conv_run(ex, y, c->cout, &c->w, c->bias, buf + (size_t)hist * cin, (int64_t)(s * cin),
                (int32_t)(padded / s), 1);
    free(buf);
    *out_len = padded / s;
    return y;
}

static void layer_norm(const float *x, float *y, int64_t T, int32_t H, const float *w, const float *b,
                       float eps)
{
    for (int64_t t = 0; t < T; t++) {
        const float *r = x + t * H;
        double mu = 0, var = 0;
        for (int32_t i = 0; i < H; i++) mu += r[i];
        mu /= H;
        for (int32_t i = 0; i < H; i++) var += (r[i] - mu) * (r[i] - mu);
        const float inv = (float)(1.0 / sqrt(var / H + eps));
        for (int32_t i = 0; i < H; i++) y[t * H + i] = (float)(r[i] - mu) * inv * w[i] + b[i];
    }
}

/* NeoX rotate-half RoPE over each head of x [T][heads * d], positions 0.. */
static void rope(float *x, int64_t T, int32_t heads, int32_t d, float theta)
{
    for (int64_t t = 0; t < T; t++)
        for (int32_t i = 0; i < d / 2; i++) {
            const double a = (double)t * pow(theta, -2.0 * i / d);
            const float cs = (float)cos(a), sn = (float)sin(a);
            for (int32_t h = 0; h < heads; h++) {
                float *p = x + t * heads * d + h * d;
                const float x0 = p[i], x1 = p[i + d / 2];
                p[i] = x0 * cs - x1 * sn;
                p[i + d / 2] = x1 * cs + x0 * sn;
            }
        }
}

/* Full causal attention: o [T][heads * d] from q, k, v (kv heads shared). */
static void attention(const se_config *c, const float *q, const float *k, const float *v, float *o,
                      int64_t T, float *scores)
{
    const int32_t d = c->head_dim, nh = c->n_heads, group = c->n_heads / c->n_kv_heads;
    const int32_t qw = nh * d, kw = c->n_kv_heads * d;
    const float scale = 1.0f / sqrtf((float)d);
    for (int32_t h = 0; h < nh; h++)
        for (int64_t t = 0; t < T; t++) {
            const float *qr = q + t * qw + h * d;
            float top = -INFINITY;
            for (int64_t j = 0; j <= t; j++) {
                const float *kr = k + j * kw + (h / group) * d;
                float dot = 0;
                for (int32_t i = 0; i < d; i++) dot += qr[i] * kr[i];
                scores[j] = dot * scale;
                top = fmaxf(top, scores[j]);
            }
            double sum = 0;
            for (int64_t j = 0; j <= t; j++) sum += (scores[j] = expf(scores[j] - top));
            float *out = o + t * qw + h * d;
            memset(out, 0, sizeof(float) * (size_t)d);
            for (int64_t j = 0; j <= t; j++) {
                const float p = (float)(scores[j] / sum);
                const float *vr = v + j * kw + (h / group) * d;
                for (int32_t i = 0; i < d; i++) out[i] += p * vr[i];
            }
        }
}

/* One pre-norm layer over x [T][H], in place. */
static int transformer_layer(const ek_exec *ex, const se_config *c, const se_layer *l, float *x,
                             int64_t T)
{
    const int32_t H = c->hidden;
    int64_t n;
    float *a = malloc(sizeof(float) * (size_t)(T * H)), *scores = malloc(sizeof(float) * (size_t)T);
    float *q = NULL, *k = NULL, *v = NULL, *o = NULL, *att = NULL, *f = NULL, *g = NULL;
    int ok = 0;
    if (!a || !scores) goto done;
    layer_norm(x, a, T, H, l->ln1_w, l->ln1_b, c->norm_eps);
    if (!(q = run_conv(ex, &l->q, a, T, 0, 0, &n)) || !(k = run_conv(ex, &l->k, a, T, 0, 0, &n)) ||
        !(v = run_conv(ex, &l->v, a, T, 0, 0, &n)))
        goto done;
    rope(q, T, c->n_heads, c->head_dim, c->rope_theta);
    rope(k, T, c->n_kv_heads, c->head_dim, c->rope_theta);
    if (!(att = malloc(sizeof(float) * (size_t)(T * c->n_heads * c->head_dim)))) goto done;
    attention(c, q, k, v, att, T, scores);
    if (!(o = run_conv(ex, &l->o, att, T, 0, 0, &n))) goto done;
    for (int64_t i = 0; i < T * H; i++) x[i] += l->attn_scale[i % H] * o[i];
    layer_norm(x, a, T, H, l->ln2_w, l->ln2_b, c->norm_eps);
    if (!(f = run_conv(ex, &l->fc1, a, T, 0, 0, &n))) goto done;
    for (int64_t i = 0; i < T * c->intermediate; i++) f[i] = 0.5f * f[i] * (1.0f + erff(f[i] * (float)M_SQRT1_2));
    if (!(g = run_conv(ex, &l->fc2, f, T, 0, 0, &n))) goto done;
    for (int64_t i = 0; i < T * H; i++) x[i] += l->mlp_scale[i % H] * g[i];
    ok = 1;
done:
    free(a), free(scores), free(q), free(k), free(v), free(o), free(att), free(f), free(g);
    return ok;
}

/* Nearest codebook row of r (lowest index on a tie), and the distance to
 * the second nearest minus the nearest. A float pass ranks every row by
 * |e|^2 - 2 r.e (the kernel set's dot product); the rows that pass leaves
 * within its rounding (1e-4 of |r|^2 + |e|^2, far above float32's ~1e-5
 * for these widths) of the best, and at least the two best, are measured
 * again exactly in double, so the choice is the exact search's. */
static int32_t nearest(const ek_kernel_set *ks, const float *book, const double *norms,
                       int32_t rows, int32_t dim, const float *r, float *approx, float *gap)
{
    double rr = 0, top = 0;
    for (int32_t i = 0; i < dim; i++) rr += (double)r[i] * r[i];
    float a1 = INFINITY, a2 = INFINITY;
    for (int32_t j = 0; j < rows; j++) {
        approx[j] = (float)norms[j] - 2.0f * ks->dot_f32(r, book + (size_t)j * dim, dim);
        if (approx[j] < a1) a2 = a1, a1 = approx[j];
        else if (approx[j] < a2) a2 = approx[j];
        if (norms[j] > top) top = norms[j];
    }
    const double tol = 1e-4 * (rr + top), limit = fmax((double)a1 + tol, (double)a2);
    double best = INFINITY, second = INFINITY;
    int32_t arg = 0;
    for (int32_t j = 0; j < rows; j++) {
        if ((double)approx[j] > limit) continue;
        const float *e = book + (size_t)j * dim;
        double d2 = 0;
        for (int32_t i = 0; i < dim; i++) d2 += ((double)r[i] - e[i]) * ((double)r[i] - e[i]);
        if (d2 < best) {
            second = best;
            best = d2;
            arg = j;
        } else if (d2 < second) {
            second = d2;
        }
    }
    if (gap) *gap = (float)(sqrt(second) - sqrt(best));
    return arg;
}

ember_status se_encoder_encode(const se_encoder *e, ember_pool *pool, const float *wave, size_t n,
                               int32_t *codes, float *gaps, float *latent)
{
    const se_config *c = &e->cfg;
    const ek_exec ex = {e->kernels, pool};
    if (n == 0) return ember_fail(EMBER_ERR_INVALID_ARG, "speech encoder: no samples");
    int64_t L = (int64_t)n, len;
    float *x = run_conv(&ex, &e->first, wave, L, 0, 0, &L), *h = NULL, *t = NULL;
    for (int32_t s = 0; x && s < c->n_stages; s++) {
        h = run_conv(&ex, &e->res_a[s], x, L, 1, 0, &len);
        t = h ? run_conv(&ex, &e->res_b[s], h, L, 1, 0, &len) : NULL;
        if (t)
            for (int64_t i = 0; i < L * e->res_b[s].cout; i++) x[i] += t[i];
        free(h), free(t);
        h = t ? run_conv(&ex, &e->stride[s], x, L, 1, 0, &len) : NULL;
        free(x);
        x = h;
        L = len;
    }
    if (x) {
        h = run_conv(&ex, &e->last, x, L, 1, 0, &len);
        free(x);
        x = h;
    }
    for (int32_t i = 0; x && i < c->n_layers; i++)
        if (!transformer_layer(&ex, c, &e->layers[i], x, L)) {
            free(x);
            x = NULL;
        }
    float *z = x ? run_conv(&ex, &e->down, x, L, 0, 1, &len) : NULL;
    free(x);
    const int64_t frames = se_encoder_frames(e, n);
    float *u = z ? run_conv(&ex, &e->proj_semantic, z, frames, 0, 0, &L) : NULL;
    float *r = u ? run_conv(&ex, &e->proj_acoustic, z, frames, 0, 0, &L) : NULL;
    if (!r) {
        free(z), free(u);
        return ember_fail(EMBER_ERR_NO_MEMORY, "speech encoder: out of memory (%zu samples)", n);
    }
    if (len != frames) { /* ceil(ceil(n / hop) / 2) == ceil(n / (2 hop)) */
        free(z), free(u), free(r);
        return ember_fail(EMBER_ERR_INVALID_ARG, "speech encoder: %lld frames, expected %lld",
                          (long long)len, (long long)frames);
    }
    const int32_t D = c->codebook_dim, rows = c->codebook_size;
    float *approx = malloc(sizeof(float) * (size_t)rows);
    if (!approx) {
        free(z), free(u), free(r);
        return ember_fail(EMBER_ERR_NO_MEMORY, "speech encoder: out of memory");
    }
    for (int64_t f = 0; f < frames; f++) {
        float *res = r + f * D;
        int32_t *out = codes + f * c->n_codes;
        out[0] = nearest(e->kernels, e->codebooks, e->norms, rows, D, u + f * D, approx,
                         gaps ? &gaps[f * c->n_codes] : NULL);
        for (int32_t q = 1; q < c->n_codes; q++) {
            const float *book = e->codebooks + (size_t)q * rows * D;
            out[q] = nearest(e->kernels, book, e->norms + (size_t)q * rows, rows, D, res, approx,
                             gaps ? &gaps[f * c->n_codes + q] : NULL);
            for (int32_t i = 0; i < D; i++) res[i] -= book[(size_t)out[q] * D + i];
        }
    }
    free(approx);
    if (latent) memcpy(latent, z, sizeof(float) * (size_t)(frames * c->hidden));
    free(z), free(u), free(r);
    return EMBER_OK;
}
