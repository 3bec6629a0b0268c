#include "onnx/tts_step_graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "kernels/formats.h"
#include "onnx/graph_ops.h"

static ember_status check_stack(const tts_stack_config *c, const char *which, spark_onnx_form form)
{
    const int64_t B = SPARK_ONNX_INT4_BLOCK;
    if (c->layer_scale || c->sliding_window)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "export: the %s has LayerScale or a sliding window", which);
    if (!c->qk_norm)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "export: the %s has no q/k norms", which);
    if (spark_onnx_weight_bits(form) == 4 &&
        (c->hidden % B || c->intermediate % B || ((int64_t)c->n_heads * c->head_dim) % B))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "export: the int4 form needs the %s's hidden, "
                          "intermediate and heads x head_dim to be multiples of %d", which, (int)B);
    return EMBER_OK;
}

ember_status tts_step_check_model(const tts_model *m, spark_onnx_form form)
{
    ember_status st = check_stack(&m->cfg.talker, "talker", form);
    if (!st) st = check_stack(&m->cfg.predictor, "code predictor", form);
    return st;
}

typedef struct step_ctx {
    go_ctx o;
    const tts_model *m;
    const tts_stack *w;
    const tts_step_layout *lay;
    int64_t T; /* rows per run */
    const char *cos, *sin, *mask, *chunk_mask, *scale;
    const char *shape_q, *shape_k, *shape_knew, *shape_vnew, *shape_flat;
    /* a talker chunk (T > 1) only */
    const char *shape_o4, *shape_q3, *shape_s4, *shape_p3, *shape_n4, *shape_pn3, *shape_o4t;
} step_ctx;

static const char *reshape(step_ctx *s, const char *hint, const char *x, const char *shape)
{
    return go_node2(&s->o, "Reshape", hint, x, shape);
}

static void attention(step_ctx *s, int li, const char **x)
{
    const tts_stack_config *c = s->lay->stack;
    const tts_layer *W = &s->w->layers[li];
    const int64_t KV = c->n_kv_heads, d = c->head_dim, S = s->lay->slots, T = s->T;
    go_ctx *o = &s->o;
    char nm[96], key_in[48], val_in[48], key_out[48], val_out[48];
    snprintf(key_in, sizeof key_in, "past_key_%d", li);
    snprintf(val_in, sizeof val_in, "past_value_%d", li);
    snprintf(key_out, sizeof key_out, "new_key_%d", li);
    snprintf(val_out, sizeof val_out, "new_value_%d", li);
    const int64_t kdims[3] = {KV, d, S}, vdims[3] = {KV, S, d}, kndims[3] = {KV, d, T},
                  vndims[3] = {KV, T, d};
    const char *past_k = og_input(o->g, key_in, o->et, 3, kdims);
    const char *past_v = og_input(o->g, val_in, o->et, 3, vdims);

    snprintf(nm, sizeof nm, "layers.%d.attn_norm", li);
    const char *h = go_rmsnorm(o, nm, *x, W->attn_norm, c->hidden);
    snprintf(nm, sizeof nm, "layers.%d.q", li);
    const char *q = go_linear(o, nm, h, &W->wq, NULL);
    snprintf(nm, sizeof nm, "layers.%d.k", li);
    const char *k = go_linear(o, nm, h, &W->wk, NULL);
    snprintf(nm, sizeof nm, "layers.%d.v", li);
    const char *v = go_linear(o, nm, h, &W->wv, NULL);

    /* per-head RMSNorm over head_dim, then RoPE (one table row per token);
     * the query as [kv_heads, tokens * group, d] (GQA without expanding
     * K/V): one token needs Reshapes only, a chunk moves the kv-head axis
     * to the front */
    snprintf(nm, sizeof nm, "layers.%d.q_norm", li);
    q = go_rope(o, go_rmsnorm(o, nm, reshape(s, "q", q, s->shape_q), W->q_norm, d), s->cos, s->sin,
                s->lay->half, d);
    snprintf(nm, sizeof nm, "layers.%d.k_norm", li);
    k = go_rope(o, go_rmsnorm(o, nm, reshape(s, "k", k, s->shape_k), W->k_norm, d), s->cos, s->sin,
                s->lay->half, d);
    const char *k_new, *v_new;
    if (T == 1) {
        const char *kin[2] = {k, s->shape_knew}, *vin[2] = {v, s->shape_vnew};
        k_new = og_node_named(o->g, "Reshape", key_out, 2, kin, 0, NULL);
        v_new = og_node_named(o->g, "Reshape", val_out, 2, vin, 0, NULL);
    } else {
        static const int64_t heads_first[4] = {1, 0, 2, 3}, key_t[3] = {1, 2, 0}, val_t[3] = {1, 0, 2};
        q = reshape(s, "q", go_transpose(o, NULL, reshape(s, "q", q, s->shape_o4), 4, heads_first), s->shape_q3);
        k_new = go_transpose(o, key_out, k, 3, key_t);                    /* [T, KV, d] -> [KV, d, T] */
        v_new = go_transpose(o, val_out, reshape(s, "v", v, s->shape_k), 3, val_t);
    }
    og_output(o->g, key_out, o->et, 3, kndims);
    og_output(o->g, val_out, o->et, 3, vndims);

    /* score space: the cached slots (masked) and the new keys, one softmax */
    const char *s_cache = go_node2(o, "MatMul", "scores", q, past_k);
    const char *s_new = go_node2(o, "MatMul", "score_new", q, k_new);
    if (T == 1) {
        s_cache = go_node2(o, "Add", "scores", s_cache, s->mask);
    } else {
        s_cache = go_masked_chunk(o, s_cache, s->shape_s4, s->shape_p3, s->mask);
        s_new = go_masked_chunk(o, s_new, s->shape_n4, s->shape_pn3, s->chunk_mask);
    }
    const char *att = go_join(o, s_cache, s_new, past_v, v_new, s->scale, S, T);
    if (T > 1) {
        static const int64_t tokens_first[4] = {1, 0, 2, 3};
        att = go_transpose(o, NULL, reshape(s, "attn", att, s->shape_o4t), 4, tokens_first);
    }
    att = reshape(s, "attn", att, s->shape_flat);
    snprintf(nm, sizeof nm, "layers.%d.out", li);
    *x = go_node2(o, "Add", "resid", *x, go_linear(o, nm, att, &W->wo, NULL));
}

static void mlp(step_ctx *s, int li, const char **x)
{
    const tts_layer *W = &s->w->layers[li];
    go_ctx *o = &s->o;
    char nm[96];
    snprintf(nm, sizeof nm, "layers.%d.mlp_norm", li);
    const char *h = go_rmsnorm(o, nm, *x, W->mlp_norm, s->lay->stack->hidden);
    snprintf(nm, sizeof nm, "layers.%d.ffn_gate", li);
    const char *g = go_linear(o, nm, h, &W->w_gate, NULL);
    snprintf(nm, sizeof nm, "layers.%d.ffn_up", li);
    const char *u = go_linear(o, nm, h, &W->w_up, NULL);
    /* SwiGLU: silu(g) * u, silu as g * sigmoid(g) */
    const char *act = go_node2(o, "Mul", "swiglu", go_node2(o, "Mul", "swiglu", g, go_node1(o, "Sigmoid", "swiglu", g)), u);
    snprintf(nm, sizeof nm, "layers.%d.ffn_down", li);
    *x = go_node2(o, "Add", "resid", *x, go_linear(o, nm, act, &W->w_down, NULL));
}

static void declare(step_ctx *s)
{
    const tts_step_layout *lay = s->lay;
    const tts_stack_config *c = lay->stack;
    go_ctx *o = &s->o;
    const int64_t KV = c->n_kv_heads, G = c->n_heads / c->n_kv_heads, d = c->head_dim, T = s->T;
    const int64_t S = lay->slots, rd[3] = {T, 1, lay->half}, md[3] = {T, 1, S}, cd[3] = {T, 1, T};
    /* one token: [1, n]; a chunk: [T, 1, n], a row per token */
    const int rank = T == 1 ? 2 : 3;
    s->cos = og_input(o->g, "cos", o->et, rank, T == 1 ? rd + 1 : rd);
    s->sin = og_input(o->g, "sin", o->et, rank, T == 1 ? rd + 1 : rd);
    s->mask = og_input(o->g, "mask", o->et, rank, T == 1 ? md + 1 : md);
    if (T > 1) s->chunk_mask = og_input(o->g, "chunk_mask", o->et, 3, cd);
    o->eps = og_const_float(o->g, "rms_eps", o->et, c->rms_eps);
    s->scale = og_const_float(o->g, "attn_scale", o->et, 1.0f / sqrtf((float)d));
    const int64_t q[3] = {KV, G, d}, k[2] = {KV, d}, kn[3] = {KV, d, 1}, vn[3] = {KV, 1, d},
                  flat[2] = {T, KV * G * d};
    s->shape_flat = og_init_i64(o->g, "shape_attn", 2, flat);
    if (T == 1) {
        s->shape_q = og_init_i64(o->g, "shape_q", 3, q);
        s->shape_k = og_init_i64(o->g, "shape_k", 2, k);
        s->shape_knew = og_init_i64(o->g, "shape_new_key", 3, kn);
        s->shape_vnew = og_init_i64(o->g, "shape_new_value", 3, vn);
        return;
    }
    const int64_t qt[3] = {T, KV * G, d}, kt[3] = {T, KV, d}, o4[4] = {T, KV, G, d},
                  q3[3] = {KV, T * G, d}, s4[4] = {KV, T, G, S}, p3[3] = {KV, T * G, S},
                  n4[4] = {KV, T, G, T}, pn3[3] = {KV, T * G, T}, o4t[4] = {KV, T, G, d};
    s->shape_q = og_init_i64(o->g, "shape_q_tokens", 3, qt);
    s->shape_k = og_init_i64(o->g, "shape_kv_tokens", 3, kt);
    s->shape_o4 = og_init_i64(o->g, "shape_tokens_heads", 4, o4);
    s->shape_q3 = og_init_i64(o->g, "shape_q_heads", 3, q3);
    s->shape_s4 = og_init_i64(o->g, "shape_scores4", 4, s4);
    s->shape_p3 = og_init_i64(o->g, "shape_scores", 3, p3);
    s->shape_n4 = og_init_i64(o->g, "shape_chunk_scores4", 4, n4);
    s->shape_pn3 = og_init_i64(o->g, "shape_chunk_scores", 3, pn3);
    s->shape_o4t = og_init_i64(o->g, "shape_heads_tokens", 4, o4t);
}

/* The predictor's lm heads as one [heads, hidden, vocab] table (each W^T)
 * and the one the `head` input names, gathered: static shapes for every
 * codebook. The table stays float in the QDQ forms (a gathered head would
 * need its scales gathered too). */
static const char *predictor_logits(step_ctx *s, const char *h)
{
    const tts_model *m = s->m;
    const tts_stack_config *c = s->lay->stack;
    go_ctx *o = &s->o;
    const int64_t H = s->lay->heads, hid = c->hidden, V = c->vocab;
    float *t = o->tmp, *row = o->tmp + H * hid * V;
    for (int64_t g = 0; g < H; g++)
        for (int64_t r = 0; r < V; r++) {
            ek_row_to_f32(row, &m->cp_head[g], r);
            for (int64_t k = 0; k < hid; k++) t[(g * hid + k) * V + r] = row[k];
        }
    const int64_t dims[3] = {H, hid, V}, one = 1, shape[2] = {hid, V};
    const char *head = og_input(o->g, "head", OG_INT32, 1, &one);
    const char *gin[2] = {go_tensor(o, "lm_heads.weight_t", 3, dims, t), head};
    const char *w = og_node(o->g, "Gather", "lm_head", 2, gin, 0, NULL);
    w = reshape(s, "lm_head", w, og_init_i64(o->g, "shape_lm_head", 2, shape));
    const char *in[2] = {h, w};
    return og_node_named(o->g, "MatMul", "logits", 2, in, 0, NULL);
}

ember_status tts_step_graph_write(const tts_model *m, const tts_step_layout *lay,
                                  const char *model_path, og_data *data)
{
    ember_status st = tts_step_check_model(m, lay->form);
    if (st) return st;
    const tts_stack_config *c = lay->stack;
    const int talker = lay->kind != TTS_GRAPH_PREDICTOR;
    step_ctx s;
    memset(&s, 0, sizeof s);
    s.m = m;
    s.w = talker ? &m->talker : &m->predictor;
    s.lay = lay;
    s.T = lay->tokens;
    /* the largest matrix: a layer's, the codec head, the projection, or the
     * predictor's stacked heads */
    size_t most = (size_t)c->intermediate * (size_t)c->hidden, cols = (size_t)c->intermediate;
    const size_t qd = (size_t)c->n_heads * (size_t)c->head_dim;
    if (qd * (size_t)c->hidden > most) most = qd * (size_t)c->hidden;
    if (qd > cols) cols = qd;
    if ((size_t)lay->in_dim > cols) cols = (size_t)lay->in_dim;
    const size_t head = talker ? (size_t)c->vocab * (size_t)c->hidden
                               : (size_t)lay->heads * (size_t)c->vocab * (size_t)c->hidden;
    if (head > most) most = head;
    if ((size_t)lay->in_dim * (size_t)c->hidden > most) most = (size_t)lay->in_dim * (size_t)c->hidden;
    st = go_init(&s.o, lay->form, most, cols);
    if (st) return st;
    char name[64];
    snprintf(name, sizeof name, "qwen3_tts_%s_ar%d_cl%d", talker ? "talker" : "predictor", lay->tokens,
             lay->context);
    st = og_create_shared(name, data, &s.o.g);
    if (st) {
        go_free(&s.o);
        return st;
    }
    go_ctx *o = &s.o;
    const int64_t edims[2] = {s.T, lay->in_dim};
    const char *x = og_input(o->g, "embedding", o->et, 2, edims);
    declare(&s);
    if (!talker && m->has_mtp) x = go_linear(o, "small_to_mtp_projection", x, &m->mtp_proj, m->mtp_b);
    for (int li = 0; li < c->n_layers && !og_status(o->g); li++) {
        attention(&s, li, &x);
        mlp(&s, li, &x);
    }
    const int64_t hdims[2] = {s.T, c->hidden}, ldims[2] = {s.T, c->vocab};
    if (talker) {
        const char *h = go_rmsnorm_to(o, "final_norm", "hidden", x, s.w->final_norm, c->hidden);
        og_output(o->g, "hidden", o->et, 2, hdims);
        const char *in[2] = {h, go_weight_t(o, "codec_head.weight_t", &m->codec_head)};
        og_node_named(o->g, "MatMul", "logits", 2, in, 0, NULL);
    } else {
        predictor_logits(&s, go_rmsnorm(o, "final_norm", x, s.w->final_norm, c->hidden));
    }
    og_output(o->g, "logits", o->et, 2, ldims);
    st = og_write(o->g, model_path, spark_onnx_ir_version(lay->form), spark_onnx_opset(lay->form),
                  ember_version_string());
    og_free(o->g);
    go_free(o);
    return st;
}
