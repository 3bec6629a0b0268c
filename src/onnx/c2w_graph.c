/* The speech decoder's streaming step graph (c2w_graph.h), stage by stage
 * as code2wav.c runs it: front (codebook lookups, output projections,
 * pre_conv, transformer), upsample stages (transposed conv + ConvNeXt),
 * decoder.0, decoder blocks (Snake, transposed conv, residual units),
 * final Snake + conv, clamp. Conv weights come from the checkpoint in their
 * PyTorch layout ([cout, cin, k], ConvTranspose [cin, cout, k]), which is
 * ONNX's; the rest (codebooks, Snake's exp'd parameters, norms, biases)
 * from the loaded model, as the native decoder uses them. */
#include "onnx/c2w_graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/tensor.h"
#include "kernels/formats.h"
#include "onnx/graph_ops.h"

ember_status c2w_graph_check(const c2w_model *m, spark_onnx_form form)
{
    const tts_stack_config *t = &m->cfg.transformer;
    const int64_t B = SPARK_ONNX_INT4_BLOCK, C = m->cfg.latent;
    if (t->n_heads % t->n_kv_heads)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "export: the speech decoder's heads do not divide");
    if (form == SPARK_ONNX_QDQ4 &&
        (t->hidden % B || t->intermediate % B || ((int64_t)t->n_heads * t->head_dim) % B || C % B))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "export: the int4 form needs the speech decoder's "
                          "widths to be multiples of %d", (int)B);
    return EMBER_OK;
}

typedef struct dec_ctx {
    go_ctx o;
    const c2w_model *m;
    int64_t N; /* frames per run */
    c2w_state_info *states;
    int n_states, next_state;
    float *raw, *raw_t; /* a checkpoint tensor as f32, and a transposed copy */
    size_t raw_cap;
    ember_status failed;
    const char *cos, *sin, *mask, *scale, *sqrt2, *one, *half_c;
} dec_ctx;

static const char *node1(dec_ctx *d, const char *op, const char *hint, const char *a)
{
    return go_node1(&d->o, op, hint, a);
}

static const char *node2(dec_ctx *d, const char *op, const char *hint, const char *a, const char *b)
{
    return go_node2(&d->o, op, hint, a, b);
}

static const char *reshape(dec_ctx *d, const char *x, int n, const int64_t *shape)
{
    char nm[64];
    snprintf(nm, sizeof nm, "shape_%d", n);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(nm);
        snprintf(nm + len, sizeof nm - len, "_%lld", (long long)shape[i]);
    }
    return node2(d, "Reshape", "reshape", x, og_init_i64(d->o.g, nm, n, shape));
}

/* x[from:to] along `axis`, constant bounds; `out` names the result (NULL: fresh). */
static const char *slice(dec_ctx *d, const char *x, int64_t axis, int64_t from, int64_t to, const char *out)
{
    char a[64], b[64], c[64];
    snprintf(a, sizeof a, "slice_start_%lld", (long long)from);
    snprintf(b, sizeof b, "slice_end_%lld", (long long)to);
    snprintf(c, sizeof c, "slice_axis_%lld", (long long)axis);
    const char *in[4] = {x, og_init_i64(d->o.g, a, 1, &from), og_init_i64(d->o.g, b, 1, &to),
                         og_init_i64(d->o.g, c, 1, &axis)};
    return out ? og_node_named(d->o.g, "Slice", out, 4, in, 0, NULL)
               : og_node(d->o.g, "Slice", "slice", 4, in, 0, NULL);
}

static const char *concat(dec_ctx *d, const char *a, const char *b, int64_t axis)
{
    const og_attr at = {"axis", OG_ATTR_INT, axis, 0, NULL, 0};
    const char *in[2] = {a, b};
    return og_node(d->o.g, "Concat", "concat", 2, in, 1, &at);
}

static const char *transpose(dec_ctx *d, const char *x, int rank, const int64_t *perm)
{
    return go_transpose(&d->o, NULL, x, rank, perm);
}

/* [rows, C] <-> [1, C, rows] */
static const char *to_channels(dec_ctx *d, const char *x, int64_t rows, int64_t C)
{
    static const int64_t swap[2] = {1, 0};
    const int64_t shape[3] = {1, C, rows};
    return reshape(d, transpose(d, x, 2, swap), 3, shape);
}

static const char *to_rows(dec_ctx *d, const char *x, int64_t rows, int64_t C)
{
    static const int64_t swap[2] = {1, 0};
    const int64_t shape[2] = {C, rows};
    return transpose(d, reshape(d, x, 2, shape), 2, swap);
}

/* The checkpoint tensor `name` (n floats) as f32 in d->raw. */
static const float *raw_tensor(dec_ctx *d, const char *name, int64_t n)
{
    if (d->failed) return NULL;
    const et_tensor *t = ck_get(d->m->ck, name, NULL);
    if (!t || et_tensor_numel(t) != n || !et_dtype_is_float(t->dtype) || ek_format_of(t->dtype)->block != 1) {
        d->failed = ember_fail(EMBER_ERR_FORMAT, "export: speech decoder tensor '%s' missing or not "
                               "%lld floats", name, (long long)n);
        return NULL;
    }
    if ((size_t)n > d->raw_cap) {
        free(d->raw);
        free(d->raw_t);
        d->raw = malloc((size_t)n * sizeof(float));
        d->raw_t = malloc((size_t)n * sizeof(float));
        d->raw_cap = d->raw && d->raw_t ? (size_t)n : 0;
        if (!d->raw_cap) {
            d->failed = ember_fail(EMBER_ERR_NO_MEMORY, "export: out of memory");
            return NULL;
        }
    }
    ek_format_of(t->dtype)->to_f32(t->data, d->raw, n);
    return d->raw;
}

/* A conv weight [d0, d1, k] from the checkpoint as an initializer. */
static const char *conv_weight(dec_ctx *d, const char *name, int64_t d0, int64_t d1, int64_t k)
{
    const int64_t dims[3] = {d0, d1, k};
    const float *w = raw_tensor(d, name, d0 * d1 * k);
    if (!w) return "failed";
    return go_tensor(&d->o, name, 3, dims, w);
}

/* A Linear/1x1 weight [rows, cols] from the checkpoint as W^T for MatMul. */
static const char *linear_weight_t(dec_ctx *d, const char *name, int64_t rows, int64_t cols)
{
    const float *w = raw_tensor(d, name, rows * cols);
    if (!w) return "failed";
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) d->raw_t[c * rows + r] = w[r * cols + c];
    char nm[200];
    snprintf(nm, sizeof nm, "%s_t", name);
    return go_matrix(&d->o, nm, cols, rows, d->raw_t, 1);
}

static const char *vec(dec_ctx *d, const char *name, const float *v, int64_t n)
{
    return go_vector(&d->o, name, v, n);
}

/* A per-channel vector as [C, 1] (broadcast over [1, C, T]). */
static const char *channel_vec(dec_ctx *d, const char *name, const float *v, int64_t C)
{
    const int64_t dims[2] = {C, 1};
    return go_tensor(&d->o, name, 2, dims, v);
}

/* The next state in order: declares input `X` and returns it; the caller
 * produces "next_X" through out_name. */
static const char *state_in(dec_ctx *d, char *next_name, size_t size)
{
    const c2w_state_info *s = &d->states[d->next_state++];
    snprintf(next_name, size, "next_%s", s->name);
    og_output(d->o.g, next_name, d->o.et, s->rank, s->dims);
    return og_input(d->o.g, s->name, d->o.et, s->rank, s->dims);
}

/* Conv1d on x [1, cin, T] over its history state ((k-1)*dil rows), with
 * the next history out; weight [cout, cin/group, k] from the checkpoint. */
static const char *conv_hist(dec_ctx *d, const char *x, int64_t T, const char *wname, int64_t cout,
                             int64_t cin, int64_t k, int64_t dil, int64_t group, const char *bias)
{
    const int64_t H = (k - 1) * dil;
    const char *w = conv_weight(d, wname, cout, cin / group, k);
    const char *in = x;
    if (H) {
        char next[64];
        const char *h = state_in(d, next, sizeof next);
        in = concat(d, h, x, 2);
        slice(d, in, 2, T, T + H, next);
    }
    const og_attr at[3] = {{"kernel_shape", OG_ATTR_INTS, 0, 0, &k, 1},
                           {"dilations", OG_ATTR_INTS, 0, 0, &dil, 1},
                           {"group", OG_ATTR_INT, group, 0, NULL, 0}};
    const char *ins[3] = {in, w, bias};
    return og_node(d->o.g, "Conv", "conv", bias ? 3 : 2, ins, 3, at);
}

/* ConvTranspose1d, k = 2 * stride or k = stride (no overlap). */
static const char *conv_transposed(dec_ctx *d, const char *x, const char *wname, int64_t cin,
                                   int64_t cout, int64_t k, int64_t stride, const char *bias)
{
    const char *w = conv_weight(d, wname, cin, cout, k);
    const og_attr at[2] = {{"kernel_shape", OG_ATTR_INTS, 0, 0, &k, 1},
                           {"strides", OG_ATTR_INTS, 0, 0, &stride, 1}};
    const char *ins[3] = {x, w, bias};
    return og_node(d->o.g, "ConvTranspose", "conv_t", 3, ins, 2, at);
}

/* SnakeBeta: x + sin(a x)^2 * inv_b, per channel of [1, C, T]. */
static const char *snake(dec_ctx *d, const char *name, const char *x, const c2w_snake *sn, int64_t C)
{
    char nm[160];
    snprintf(nm, sizeof nm, "%s.a", name);
    const char *s = node1(d, "Sin", "snake", node2(d, "Mul", "snake", x, channel_vec(d, nm, sn->a, C)));
    snprintf(nm, sizeof nm, "%s.inv_b", name);
    return node2(d, "Add", "snake", x,
                 node2(d, "Mul", "snake", node2(d, "Mul", "snake", s, s), channel_vec(d, nm, sn->inv_b, C)));
}

/* ---- front ------------------------------------------------------------------ */

static const char *front_codes(dec_ctx *d)
{
    const c2w_model *m = d->m;
    const c2w_config *c = &m->cfg;
    const int64_t Q = c->n_quantizers, cs = c->codebook_size, vq = c->vq_dim, N = d->N;
    const int64_t cdims[2] = {N, Q}, odims[2] = {1, Q}, tdims[2] = {Q * cs, vq};
    const char *codes = og_input(d->o.g, "codes", OG_INT32, 2, cdims);
    int32_t *offsets = malloc((size_t)Q * sizeof *offsets);
    float *table = malloc((size_t)(Q * cs * vq) * sizeof *table);
    if (!offsets || !table) {
        free(offsets);
        free(table);
        d->failed = ember_fail(EMBER_ERR_NO_MEMORY, "export: out of memory");
        return "failed";
    }
    for (int64_t q = 0; q < Q; q++) {
        offsets[q] = (int32_t)(q * cs);
        memcpy(table + q * cs * vq, m->codebooks[q], (size_t)(cs * vq) * sizeof(float));
    }
    /* one lookup in the codebooks stacked: code + q * codebook_size */
    const char *idx = node2(d, "Add", "codes", codes,
                            og_init_raw(d->o.g, "codebook_offsets", OG_INT32, 2, odims, offsets, 4));
    const char *gin[2] = {go_tensor(&d->o, "codebooks", 2, tdims, table), idx};
    const char *e = og_node(d->o.g, "Gather", "codebooks", 2, gin, 0, NULL); /* [N, Q, vq] */
    free(offsets);
    free(table);
    const int64_t row[2] = {N, vq}, one = 1;
    const char *first = reshape(d, slice(d, e, 1, 0, 1, NULL), 2, row);
    const og_attr keep = {"keepdims", OG_ATTR_INT, 0, 0, NULL, 0};
    const char *rin[2] = {slice(d, e, 1, 1, Q, NULL), og_init_i64(d->o.g, "axes_1", 1, &one)};
    const char *rest = og_node(d->o.g, "ReduceSum", "rest", 2, rin, 1, &keep);
    const int64_t cd = c->codebook_dim;
    const char *q = node2(d, "Add", "quantized",
                          node2(d, "MatMul", "proj_first", first,
                                linear_weight_t(d, "decoder.quantizer.rvq_first.output_proj.weight", cd, vq)),
                          node2(d, "MatMul", "proj_rest", rest,
                                linear_weight_t(d, "decoder.quantizer.rvq_rest.output_proj.weight", cd, vq)));
    return to_channels(d, q, N, cd);
}

static void attention(dec_ctx *d, int li, const char **x)
{
    const c2w_config *c = &d->m->cfg;
    const tts_stack_config *t = &c->transformer;
    const tts_layer *W = &d->m->transformer.layers[li];
    go_ctx *o = &d->o;
    const int64_t N = d->N, KV = t->n_kv_heads, H = t->n_heads, G = H / KV, hd = t->head_dim,
                  S = c->sliding_window - 1, hid = t->hidden;
    char nm[96], next_k[64], next_v[64];
    snprintf(nm, sizeof nm, "transformer.%d.attn_norm", li);
    const char *h = go_rmsnorm(o, nm, *x, W->attn_norm, hid);
    snprintf(nm, sizeof nm, "transformer.%d.q", li);
    const char *q = go_linear(o, nm, h, &W->wq, NULL);
    snprintf(nm, sizeof nm, "transformer.%d.k", li);
    const char *k = go_linear(o, nm, h, &W->wk, NULL);
    snprintf(nm, sizeof nm, "transformer.%d.v", li);
    const char *v = go_linear(o, nm, h, &W->wv, NULL);
    const int64_t qs[3] = {N, H, hd}, ks[3] = {N, KV, hd}, q4[4] = {N, KV, G, hd}, q3[3] = {KV, N * G, hd};
    q = reshape(d, q, 3, qs);
    k = reshape(d, k, 3, ks);
    if (W->q_norm) {
        snprintf(nm, sizeof nm, "transformer.%d.q_norm", li);
        q = go_rmsnorm(o, nm, q, W->q_norm, hd);
    }
    if (W->k_norm) {
        snprintf(nm, sizeof nm, "transformer.%d.k_norm", li);
        k = go_rmsnorm(o, nm, k, W->k_norm, hd);
    }
    q = go_rope(o, q, d->cos, d->sin, hd / 2, hd);
    k = go_rope(o, k, d->cos, d->sin, hd / 2, hd);
    static const int64_t heads_first[4] = {1, 0, 2, 3}, key_t[3] = {1, 2, 0}, val_t[3] = {1, 0, 2};
    q = reshape(d, transpose(d, reshape(d, q, 4, q4), 4, heads_first), 3, q3);
    /* the ring (oldest first) and the chunk's keys, and the next ring */
    const char *ring_k = state_in(d, next_k, sizeof next_k);
    const char *ring_v = state_in(d, next_v, sizeof next_v);
    const char *K = concat(d, ring_k, transpose(d, k, 3, key_t), 2);                      /* [KV, hd, S+N] */
    const char *V = concat(d, ring_v, transpose(d, reshape(d, v, 3, ks), 3, val_t), 1);   /* [KV, S+N, hd] */
    slice(d, K, 2, N, N + S, next_k);
    slice(d, V, 1, N, N + S, next_v);
    const int64_t s4[4] = {KV, N, G, S + N}, s3[3] = {KV, N * G, S + N}, o4[4] = {KV, N, G, hd},
                  flat[2] = {N, H * hd};
    const char *sc = node2(d, "Mul", "scores", node2(d, "MatMul", "scores", q, K), d->scale);
    sc = reshape(d, node2(d, "Add", "scores", reshape(d, sc, 4, s4), d->mask), 3, s3);
    const og_attr axis = {"axis", OG_ATTR_INT, -1, 0, NULL, 0};
    const char *p = og_node(o->g, "Softmax", "probs", 1, &sc, 1, &axis);
    const char *att = node2(d, "MatMul", "attn", p, V);
    att = reshape(d, transpose(d, reshape(d, att, 4, o4), 4, heads_first), 2, flat);
    snprintf(nm, sizeof nm, "transformer.%d.out", li);
    att = go_linear(o, nm, att, &W->wo, NULL);
    if (W->attn_scale) {
        snprintf(nm, sizeof nm, "transformer.%d.attn_layer_scale", li);
        att = node2(d, "Mul", "layer_scale", att, vec(d, nm, W->attn_scale, hid));
    }
    *x = node2(d, "Add", "resid", *x, att);
}

static void mlp(dec_ctx *d, int li, const char **x)
{
    const tts_stack_config *t = &d->m->cfg.transformer;
    const tts_layer *W = &d->m->transformer.layers[li];
    go_ctx *o = &d->o;
    char nm[96];
    snprintf(nm, sizeof nm, "transformer.%d.mlp_norm", li);
    const char *h = go_rmsnorm(o, nm, *x, W->mlp_norm, t->hidden);
    snprintf(nm, sizeof nm, "transformer.%d.ffn_gate", li);
    const char *g = go_linear(o, nm, h, &W->w_gate, NULL);
    snprintf(nm, sizeof nm, "transformer.%d.ffn_up", li);
    const char *u = go_linear(o, nm, h, &W->w_up, NULL);
    const char *act = node2(d, "Mul", "swiglu", node2(d, "Mul", "swiglu", g, node1(d, "Sigmoid", "swiglu", g)), u);
    snprintf(nm, sizeof nm, "transformer.%d.ffn_down", li);
    const char *y = go_linear(o, nm, act, &W->w_down, NULL);
    if (W->mlp_scale) {
        snprintf(nm, sizeof nm, "transformer.%d.mlp_layer_scale", li);
        y = node2(d, "Mul", "layer_scale", y, vec(d, nm, W->mlp_scale, t->hidden));
    }
    *x = node2(d, "Add", "resid", *x, y);
}

/* codes -> [1, latent, N] */
static const char *front(dec_ctx *d)
{
    const c2w_model *m = d->m;
    const c2w_config *c = &m->cfg;
    const int64_t N = d->N, hid = c->transformer.hidden;
    const char *x = conv_hist(d, front_codes(d), N, "decoder.pre_conv.conv.weight", c->latent,
                              c->codebook_dim, 3, 1, 1, vec(d, "decoder.pre_conv.conv.bias", m->pre_conv.bias, c->latent));
    x = go_linear(&d->o, "transformer.input_proj", to_rows(d, x, N, c->latent), &m->in_proj, m->in_proj_b);
    for (int li = 0; li < c->transformer.n_layers && !og_status(d->o.g); li++) {
        attention(d, li, &x);
        mlp(d, li, &x);
    }
    x = go_rmsnorm(&d->o, "transformer.final_norm", x, m->transformer.final_norm, hid);
    x = go_linear(&d->o, "transformer.output_proj", x, &m->out_proj, m->out_proj_b);
    return to_channels(d, x, N, c->latent);
}

/* ---- the convolution stages -------------------------------------------------- */

/* exact GELU as x * (erf(x / sqrt 2) + 1) * 0.5, the form QNN fuses */
static const char *gelu(dec_ctx *d, const char *x)
{
    const char *e = node1(d, "Erf", "gelu", node2(d, "Div", "gelu", x, d->sqrt2));
    return node2(d, "Mul", "gelu", node2(d, "Mul", "gelu", x, node2(d, "Add", "gelu", e, d->one)), d->half_c);
}

static const char *upsample(dec_ctx *d, int32_t u, const char *x, int64_t T)
{
    const c2w_model *m = d->m;
    const c2w_upsample *up = &m->upsample[u];
    const c2w_convnext *nx = &up->block;
    const int64_t C = m->cfg.latent, r = up->ratio, rows = T * r;
    char nm[160], p[64];
    snprintf(p, sizeof p, "decoder.upsample.%d", u);
    snprintf(nm, sizeof nm, "%s.0.conv.bias", p);
    const char *b = vec(d, nm, up->up.bias, C); /* the expanded bias's first copy */
    snprintf(nm, sizeof nm, "%s.0.conv.weight", p);
    x = conv_transposed(d, x, nm, C, C, r, r, b);
    /* the depthwise taps, tap-major in the model, to [C, 1, 7] */
    float *dw = malloc((size_t)(7 * C) * sizeof *dw);
    if (!dw) {
        d->failed = ember_fail(EMBER_ERR_NO_MEMORY, "export: out of memory");
        return "failed";
    }
    for (int64_t ch = 0; ch < C; ch++)
        for (int64_t j = 0; j < 7; j++) dw[ch * 7 + j] = nx->dw[j * C + ch];
    const int64_t dwd[3] = {C, 1, 7}, k = 7, dil = 1;
    snprintf(nm, sizeof nm, "%s.1.dwconv.weight", p);
    const char *w = go_tensor(&d->o, nm, 3, dwd, dw);
    free(dw);
    char next[64];
    const char *in = concat(d, state_in(d, next, sizeof next), x, 2);
    slice(d, in, 2, rows, rows + 6, next);
    snprintf(nm, sizeof nm, "%s.1.dwconv.bias", p);
    const og_attr at[3] = {{"kernel_shape", OG_ATTR_INTS, 0, 0, &k, 1},
                           {"dilations", OG_ATTR_INTS, 0, 0, &dil, 1},
                           {"group", OG_ATTR_INT, C, 0, NULL, 0}};
    const char *ins[3] = {in, w, vec(d, nm, nx->dw_b, C)};
    const char *y = to_rows(d, og_node(d->o.g, "Conv", "dwconv", 3, ins, 3, at), rows, C);
    const og_attr ln[2] = {{"axis", OG_ATTR_INT, -1, 0, NULL, 0}, {"epsilon", OG_ATTR_FLOAT, 0, 1e-6f, NULL, 0}};
    snprintf(nm, sizeof nm, "%s.1.norm.weight", p);
    const char *lin[3] = {y, vec(d, nm, nx->ln_w, C), NULL};
    snprintf(nm, sizeof nm, "%s.1.norm.bias", p);
    lin[2] = vec(d, nm, nx->ln_b, C);
    y = og_node(d->o.g, "LayerNormalization", "norm", 3, lin, 2, ln);
    snprintf(nm, sizeof nm, "%s.1.pwconv1.weight", p);
    y = node2(d, "MatMul", "pwconv1", y, linear_weight_t(d, nm, 4 * C, C));
    snprintf(nm, sizeof nm, "%s.1.pwconv1.bias", p);
    y = gelu(d, node2(d, "Add", "pwconv1", y, vec(d, nm, nx->pw1.bias, 4 * C)));
    snprintf(nm, sizeof nm, "%s.1.pwconv2.weight", p);
    y = node2(d, "MatMul", "pwconv2", y, linear_weight_t(d, nm, C, 4 * C));
    snprintf(nm, sizeof nm, "%s.1.pwconv2.bias", p);
    y = node2(d, "Add", "pwconv2", y, vec(d, nm, nx->pw2.bias, C));
    snprintf(nm, sizeof nm, "%s.1.gamma", p);
    y = node2(d, "Mul", "gamma", y, vec(d, nm, nx->gamma, C));
    return node2(d, "Add", "convnext", x, to_channels(d, y, rows, C));
}

static const char *block(dec_ctx *d, int32_t bi, const char *x, int64_t T)
{
    const c2w_model *m = d->m;
    const c2w_block *b = &m->blocks[bi];
    const int64_t r = b->rate, rows = T * r;
    char nm[160], p[64], next[64];
    snprintf(p, sizeof p, "decoder.decoder.%d.block", bi + 1);
    snprintf(nm, sizeof nm, "%s.0", p);
    x = snake(d, nm, x, &b->act, b->cin);
    /* the transposed conv over [carry, x]: outputs [r, (T+1) r) are the
     * chunk's, the first r the carry's own (already out last chunk) */
    const char *in = concat(d, state_in(d, next, sizeof next), x, 2);
    slice(d, in, 2, T, T + 1, next);
    snprintf(nm, sizeof nm, "%s.1.conv.bias", p);
    const char *bias = vec(d, nm, b->up.bias, b->cout);
    snprintf(nm, sizeof nm, "%s.1.conv.weight", p);
    x = slice(d, conv_transposed(d, in, nm, b->cin, b->cout, 2 * r, r, bias), 2, r, r + rows, NULL);
    for (int32_t u = 0; u < 3; u++) {
        const c2w_resunit *ru = &b->units[u];
        snprintf(nm, sizeof nm, "%s.%d.act1", p, u + 2);
        const char *h = snake(d, nm, x, &ru->act1, b->cout);
        snprintf(nm, sizeof nm, "%s.%d.conv1.conv.bias", p, u + 2);
        const char *b1 = vec(d, nm, ru->conv1.bias, b->cout);
        snprintf(nm, sizeof nm, "%s.%d.conv1.conv.weight", p, u + 2);
        h = conv_hist(d, h, rows, nm, b->cout, b->cout, 7, ru->conv1.dilation, 1, b1);
        snprintf(nm, sizeof nm, "%s.%d.act2", p, u + 2);
        h = snake(d, nm, h, &ru->act2, b->cout);
        snprintf(nm, sizeof nm, "%s.%d.conv2.conv.bias", p, u + 2);
        const char *b2 = vec(d, nm, ru->conv2.bias, b->cout);
        snprintf(nm, sizeof nm, "%s.%d.conv2.conv.weight", p, u + 2);
        x = node2(d, "Add", "resunit", x, conv_hist(d, h, rows, nm, b->cout, b->cout, 1, 1, 1, b2));
    }
    return x;
}

/* min(max(x, -1), 1) over [n] as reductions (Clip is not an HTP-listed op). */
static const char *clamp_to(dec_ctx *d, const char *x, int64_t n, const char *out)
{
    const int64_t col[2] = {n, 1}, last = 1;
    float *lo = malloc((size_t)n * sizeof *lo);
    if (!lo) {
        d->failed = ember_fail(EMBER_ERR_NO_MEMORY, "export: out of memory");
        return "failed";
    }
    for (int64_t i = 0; i < n; i++) lo[i] = -1.0f;
    const char *lo_t = go_tensor(&d->o, "clamp_low", 2, col, lo);
    for (int64_t i = 0; i < n; i++) lo[i] = 1.0f;
    const char *hi_t = go_tensor(&d->o, "clamp_high", 2, col, lo);
    free(lo);
    const int axes_input = spark_onnx_opset(d->o.form) >= 18;
    const og_attr at[2] = {{"keepdims", OG_ATTR_INT, 0, 0, NULL, 0}, {"axes", OG_ATTR_INTS, 0, 0, &last, 1}};
    const char *axes = axes_input ? og_init_i64(d->o.g, "axes_1", 1, &last) : NULL;
    const char *in1[2] = {concat(d, reshape(d, x, 2, col), lo_t, 1), axes};
    const char *y = og_node(d->o.g, "ReduceMax", "clamp", axes_input ? 2 : 1, in1, axes_input ? 1 : 2, at);
    const char *in2[2] = {concat(d, reshape(d, y, 2, col), hi_t, 1), axes};
    return og_node_named(d->o.g, "ReduceMin", out, axes_input ? 2 : 1, in2, axes_input ? 1 : 2, at);
}

static const char *final_stage(dec_ctx *d, const char *x, int64_t T)
{
    const c2w_model *m = d->m;
    const c2w_config *c = &m->cfg;
    char nm[80], bn[80];
    snprintf(nm, sizeof nm, "decoder.decoder.%d", c->n_blocks + 1);
    const int64_t last = c2w_block_channels(c, c->n_blocks);
    x = snake(d, nm, x, &m->final_act, last);
    snprintf(nm, sizeof nm, "decoder.decoder.%d.conv.weight", c->n_blocks + 2);
    snprintf(bn, sizeof bn, "decoder.decoder.%d.conv.bias", c->n_blocks + 2);
    x = conv_hist(d, x, T, nm, 1, last, 7, 1, 1, vec(d, bn, m->final_conv.bias, 1));
    return clamp_to(d, x, T, "pcm");
}

/* Stage k of c2w_graph_stages on x ([1, cin, T]; the front reads the
 * codes), its state from d->states[first state of k]. */
static const char *run_stage(dec_ctx *d, const c2w_stage_info *st, int k, const char *x, int64_t T)
{
    const c2w_model *m = d->m;
    const c2w_config *c = &m->cfg;
    d->next_state = st->first_state;
    if (k == 0) return front(d);
    if (k <= c->n_upsample) return upsample(d, k - 1, x, T);
    if (k == c->n_upsample + 1)
        return conv_hist(d, x, T, "decoder.decoder.0.conv.weight", c->decoder_dim, c->latent, 7, 1, 1,
                         vec(d, "decoder.decoder.0.conv.bias", m->dec0.bias, c->decoder_dim));
    if (k <= c->n_upsample + 1 + c->n_blocks) return block(d, k - c->n_upsample - 2, x, T);
    return final_stage(d, x, T);
}

/* The whole decoder (stage < 0) or one stage: its input `x` [1, cin,
 * N * in_rows] and output `y` (the front reads the codes, the final stage
 * writes pcm). */
static void build(dec_ctx *d, int stage)
{
    const c2w_model *m = d->m;
    const c2w_config *c = &m->cfg;
    go_ctx *o = &d->o;
    const tts_stack_config *t = &c->transformer;
    const int64_t N = d->N, half = t->head_dim / 2, S = c->sliding_window - 1;
    const int64_t rd[3] = {N, 1, half}, md[3] = {N, 1, S + N};
    c2w_stage_info stages[C2W_MAX_STAGES];
    const int n = c2w_graph_stages(c, stages);
    if (stage <= 0) {
        d->cos = og_input(o->g, "cos", o->et, 3, rd);
        d->sin = og_input(o->g, "sin", o->et, 3, rd);
        d->mask = og_input(o->g, "mask", o->et, 3, md);
    }
    /* constants only where a stage uses them (ORT warns of unused ones) */
    if (stage <= 0) {
        o->eps = og_const_float(o->g, "rms_eps", o->et, t->rms_eps);
        d->scale = og_const_float(o->g, "attn_scale", o->et, 1.0f / sqrtf((float)t->head_dim));
    }
    if (stage < 0 || (stage >= 1 && stage <= c->n_upsample)) {
        d->sqrt2 = og_const_float(o->g, "sqrt2", o->et, sqrtf(2.0f));
        d->one = og_const_float(o->g, "one", o->et, 1.0f);
        d->half_c = og_const_float(o->g, "half", o->et, 0.5f);
    }
    const char *x = NULL;
    for (int k = stage < 0 ? 0 : stage; k < (stage < 0 ? n : stage + 1) && !d->failed; k++) {
        const c2w_stage_info *st = &stages[k];
        const int64_t in_dims[3] = {1, st->cin, N * st->in_rows}, out_dims[3] = {1, st->cout, N * st->out_rows};
        if (k == stage && k > 0) x = og_input(o->g, "x", o->et, 3, in_dims);
        x = run_stage(d, st, k, x, N * st->in_rows);
        if (k == n - 1) {
            og_output(o->g, "pcm", o->et, 1, &out_dims[2]);
        } else if (k == stage) {
            const char *in[2] = {x, og_init_i64(o->g, "shape_y", 3, out_dims)};
            og_node_named(o->g, "Reshape", "y", 2, in, 0, NULL);
            og_output(o->g, "y", o->et, 3, out_dims);
        }
    }
}

ember_status c2w_graph_write(const c2w_model *m, int32_t frames, int stage, spark_onnx_form form,
                             const char *path, og_data *data)
{
    ember_status st = c2w_graph_check(m, form);
    if (st) return st;
    if (frames < 1 || frames > 4096)
        return ember_fail(EMBER_ERR_INVALID_ARG, "export: speech decoder chunk %d outside [1, 4096]", frames);
    const c2w_config *c = &m->cfg;
    dec_ctx d;
    memset(&d, 0, sizeof d);
    d.m = m;
    d.N = frames;
    /* go_ctx's buffers: the largest of the codebook table, a transformer
     * matrix, the ConvNeXt's, a conv's weights and the clamp's bounds */
    const tts_stack_config *t = &c->transformer;
    size_t most = (size_t)c->n_quantizers * c->codebook_size * c->vq_dim;
    const size_t cand[] = {(size_t)t->intermediate * t->hidden, (size_t)t->n_heads * t->head_dim * t->hidden,
                           (size_t)c->latent * t->hidden, 4 * (size_t)c->latent * c->latent,
                           (size_t)c->decoder_dim * c->latent * 7,
                           (size_t)frames * c->samples_per_frame};
    for (size_t i = 0; i < sizeof cand / sizeof *cand; i++)
        if (cand[i] > most) most = cand[i];
    for (int32_t b = 0; b < c->n_blocks; b++) {
        const size_t ci = (size_t)c2w_block_channels(c, b), co = (size_t)c2w_block_channels(c, b + 1);
        if (ci * co * 2 * (size_t)c->upsample_rates[b] > most) most = ci * co * 2 * (size_t)c->upsample_rates[b];
        if (co * co * 7 > most) most = co * co * 7;
    }
    size_t cols = (size_t)4 * c->latent;
    if ((size_t)t->intermediate > cols) cols = (size_t)t->intermediate;
    d.states = calloc(C2W_MAX_STATES, sizeof *d.states);
    if (!d.states) return ember_fail(EMBER_ERR_NO_MEMORY, "export: out of memory");
    d.n_states = c2w_graph_states(c, d.states);
    if ((st = go_init(&d.o, form, most, cols))) {
        free(d.states);
        return st;
    }
    c2w_stage_info stages[C2W_MAX_STAGES];
    const int n_stages = c2w_graph_stages(c, stages);
    if (stage >= n_stages) {
        go_free(&d.o);
        free(d.states);
        return ember_fail(EMBER_ERR_INVALID_ARG, "export: speech decoder stage %d of %d", stage, n_stages);
    }
    char name[96];
    snprintf(name, sizeof name, "qwen3_tts_code2wav_%d_frames%s%s", frames, stage < 0 ? "" : "_",
             stage < 0 ? "" : stages[stage].name);
    st = og_create_shared(name, data, &d.o.g);
    if (!st) {
        build(&d, stage);
        st = d.failed;
        /* the states the graph declared are exactly its stage's */
        const int want = stage < 0 ? d.n_states : stages[stage].first_state + stages[stage].n_states;
        if (!st && d.next_state != want)
            st = ember_fail(EMBER_ERR_INVALID_ARG, "export: the decoder graph used states up to %d, not %d",
                            d.next_state, want);
        if (!st)
            st = og_write(d.o.g, path, spark_onnx_ir_version(form), spark_onnx_opset(form),
                          ember_version_string());
        og_free(d.o.g);
    }
    go_free(&d.o);
    free(d.states);
    free(d.raw);
    free(d.raw_t);
    return st;
}
