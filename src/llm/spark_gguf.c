/* Spark-X2.5 <-> GGUF: the tensor-name table and metadata -> config.json
 * for reading. The writer (spark_gguf_write.c) is apart, so a program that
 * only loads models does not link it and the text-side metadata it writes. */
#include "llm/spark_gguf.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "llm/spark.h"
#include "llm/spark_config.h"
#include "llm/spark_gguf_names.h"

#define ARCH SPARK_GGUF_ARCH

/* ---- the names ------------------------------------------------------------------ */

const layer_name spark_gguf_layer_names[SPARK_GGUF_N_LAYER_NAMES] = {
    {"attn_norm.weight", "input_layernorm.weight", K_VEC, offsetof(spark_layer, attn_norm), L_HIDDEN, QM_NONE},
    {"attn_qkv.weight", "self_attn.q_k_v_proj.weight", K_QKV, offsetof(spark_layer, wq), L_NONE, QM_ATTN_QKV},
    {"attn_qkv.bias", "self_attn.q_k_v_proj.bias", K_QKV_BIAS, offsetof(spark_layer, bq), L_QKV, QM_NONE},
    {"attn_gate.weight", "self_attn.g_proj.weight", K_MAT, offsetof(spark_layer, wg), L_NONE, QM_ATTN_GATE},
    {"attn_gate.bias", "self_attn.g_proj.bias", K_VEC, offsetof(spark_layer, bg), L_HEADS, QM_NONE},
    {"attn_output.weight", "self_attn.out_proj.weight", K_MAT, offsetof(spark_layer, wo), L_NONE, QM_ATTN_OUTPUT},
    {"attn_output.bias", "self_attn.out_proj.bias", K_VEC, offsetof(spark_layer, bo), L_HIDDEN, QM_NONE},
    {"ffn_norm.weight", "post_attention_layernorm.weight", K_VEC, offsetof(spark_layer, mlp_norm), L_HIDDEN, QM_NONE},
    {"ffn_gate.weight", "mlp.gate_proj.weight", K_MAT, offsetof(spark_layer, w_gate), L_NONE, QM_FFN_GATE},
    {"ffn_gate.bias", "mlp.gate_proj.bias", K_VEC, offsetof(spark_layer, b_gate), L_INTER, QM_NONE},
    {"ffn_up.weight", "mlp.up_proj.weight", K_MAT, offsetof(spark_layer, w_up), L_NONE, QM_FFN_UP},
    {"ffn_up.bias", "mlp.up_proj.bias", K_VEC, offsetof(spark_layer, b_up), L_INTER, QM_NONE},
    {"ffn_down.weight", "mlp.down_proj.weight", K_MAT, offsetof(spark_layer, w_down), L_NONE, QM_FFN_DOWN},
    {"ffn_down.bias", "mlp.down_proj.bias", K_VEC, offsetof(spark_layer, b_down), L_HIDDEN, QM_NONE},
};

static const char *const global_names[][2] = {
    {"token_embd.weight", "model.embedding.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
};

const char *spark_gguf_hf_name(const char *g, char *buf, size_t cap)
{
    for (size_t i = 0; i < sizeof global_names / sizeof *global_names; i++)
        if (!strcmp(g, global_names[i][0]))
            return (size_t)snprintf(buf, cap, "%s", global_names[i][1]) < cap ? buf : NULL;
    if (strncmp(g, "blk.", 4)) return NULL;
    const char *p = g + 4;
    long layer = 0;
    int digits = 0;
    /* a plain decimal layer index: no sign, no leading zeros */
    while (*p >= '0' && *p <= '9' && digits < 6) layer = layer * 10 + (*p++ - '0'), digits++;
    if (!digits || *p != '.' || (digits > 1 && g[4] == '0')) return NULL;
    p++;
    for (size_t i = 0; i < SPARK_GGUF_N_LAYER_NAMES; i++)
        if (!strcmp(p, spark_gguf_layer_names[i].gguf))
            return (size_t)snprintf(buf, cap, "model.layers.%ld.%s", layer,
                                    spark_gguf_layer_names[i].hf) < cap ? buf : NULL;
    return NULL;
}

/* ---- metadata -> config.json ---------------------------------------------------- */

typedef struct meta {
    const gguf_file *f;
    const char *label;
    char key[96];
} meta;

static const char *k(meta *m, const char *suffix)
{
    snprintf(m->key, sizeof m->key, ARCH ".%s", suffix);
    return m->key;
}

/* An optional uint32: *present says whether it was there. */
static ember_status opt_u32(meta *m, const char *suffix, uint32_t def, uint32_t *out)
{
    const char *key = k(m, suffix);
    *out = def;
    return gguf_find(m->f, key) ? gguf_get_u32(m->f, key, out) : EMBER_OK;
}

static ember_status opt_f32(meta *m, const char *suffix, float def, float *out)
{
    const char *key = k(m, suffix);
    *out = def;
    return gguf_find(m->f, key) ? gguf_get_f32(m->f, key, out) : EMBER_OK;
}

/* partial_rotary_factor such that int(head_dim * factor) == rot, as the
 * config parser computes it. The value is one with at most 15 significant
 * digits, so that printing it as JSON (cJSON prints 15 digits when they are
 * "close enough") and parsing it back gives the very same double. */
static double rope_factor(uint32_t rot, uint32_t head_dim)
{
    double f = (double)rot / (double)head_dim, p = f;
    char text[32];
    for (int i = 0; i < 64; i++) {
        snprintf(text, sizeof text, "%.15g", f);
        p = strtod(text, NULL);
        if ((uint32_t)((double)head_dim * p) == rot) break;
        f += f * 1e-15; /* the next 15-digit value up */
    }
    return p;
}

/* vocab_size: token_embd.weight's rows; the token list and spark2_5.vocab_size agree. */
static ember_status vocab_size(meta *m, uint32_t *out)
{
    const gguf_tensor *t = gguf_find_tensor(m->f, "token_embd.weight");
    const gguf_value *tokens = gguf_find(m->f, "tokenizer.ggml.tokens");
    uint32_t declared;
    ember_status st;
    if (!t) return ember_fail(EMBER_ERR_FORMAT, "%s: missing tensor 'token_embd.weight'", m->label);
    if (t->n_dims != 2 || t->ne[1] == 0 || t->ne[1] > (1u << 24))
        return ember_fail(EMBER_ERR_FORMAT, "%s: tensor 'token_embd.weight' must be a matrix of "
                          "1 to 2^24 rows (one per token)", m->label);
    *out = (uint32_t)t->ne[1];
    if (tokens) {
        const gguf_value *arr;
        if ((st = gguf_get_arr(m->f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &arr))) return st;
        if (arr->n != *out)
            return ember_fail(EMBER_ERR_FORMAT, "%s: tokenizer.ggml.tokens has %llu tokens but "
                              "token_embd.weight has %u rows", m->label,
                              (unsigned long long)arr->n, *out);
    }
    if ((st = opt_u32(m, "vocab_size", *out, &declared))) return st;
    if (declared != *out)
        return ember_fail(EMBER_ERR_FORMAT, "%s: %s is %u but token_embd.weight has %u rows",
                          m->label, m->key, declared, *out);
    return EMBER_OK;
}

static ember_status layer_types(meta *m, uint32_t n_layers, cJSON *root, bool *any_sliding)
{
    const char *key = k(m, "attention.sliding_window_pattern");
    const gguf_value *pat;
    cJSON *types = cJSON_AddArrayToObject(root, "layer_types");
    ember_status st;
    *any_sliding = false;
    if (!types) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", m->label);
    if (!gguf_find(m->f, key)) {
        for (uint32_t i = 0; i < n_layers; i++)
            cJSON_AddItemToArray(types, cJSON_CreateString("full_attention"));
        return EMBER_OK;
    }
    if ((st = gguf_get_arr(m->f, key, GGUF_TYPE_BOOL, &pat))) return st;
    if (pat->n != n_layers)
        return ember_fail(EMBER_ERR_FORMAT, "%s: key '%s' has %llu entries but block_count is %u",
                          m->label, key, (unsigned long long)pat->n, n_layers);
    for (uint32_t i = 0; i < n_layers; i++) {
        bool sliding = gguf_arr_u(pat, i) != 0;
        *any_sliding |= sliding;
        cJSON_AddItemToArray(types,
                             cJSON_CreateString(sliding ? "sliding_attention" : "full_attention"));
    }
    return EMBER_OK;
}

static ember_status rope(meta *m, cJSON *root, uint32_t head_dim)
{
    uint32_t rot_full, rot_swa;
    float base, base_swa;
    ember_status st;
    if ((st = opt_u32(m, "rope.dimension_count", head_dim, &rot_full)) ||
        (st = opt_u32(m, "rope.dimension_count_swa", head_dim, &rot_swa)) ||
        (st = opt_f32(m, "rope.freq_base", 10000.0f, &base)) ||
        (st = opt_f32(m, "rope.freq_base_swa", base, &base_swa)))
        return st;
    if (rot_full == 0 || rot_full > head_dim || rot_swa == 0 || rot_swa > head_dim)
        return ember_fail(EMBER_ERR_FORMAT, "%s: " ARCH ".rope.dimension_count(_swa) must be in "
                          "[1, key_length = %u]", m->label, head_dim);
    cJSON *rp = cJSON_AddObjectToObject(root, "rope_parameters");
    cJSON *full = rp ? cJSON_AddObjectToObject(rp, "full_attention") : NULL;
    cJSON *swa = rp ? cJSON_AddObjectToObject(rp, "sliding_attention") : NULL;
    if (!full || !swa) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", m->label);
    cJSON_AddNumberToObject(full, "rope_theta", base);
    cJSON_AddNumberToObject(full, "partial_rotary_factor", rope_factor(rot_full, head_dim));
    cJSON_AddNumberToObject(swa, "rope_theta", base_swa);
    cJSON_AddNumberToObject(swa, "partial_rotary_factor", rope_factor(rot_swa, head_dim));
    return EMBER_OK;
}

static ember_status token_ids(meta *m, cJSON *root)
{
    static const char *const keys[][2] = {{"tokenizer.ggml.bos_token_id", "bos_token_id"},
                                          {"tokenizer.ggml.eos_token_id", "eos_token_id"},
                                          {"tokenizer.ggml.padding_token_id", "pad_token_id"}};
    for (size_t i = 0; i < 3; i++) {
        uint32_t id;
        if (!gguf_find(m->f, keys[i][0])) continue;
        ember_status st = gguf_get_u32(m->f, keys[i][0], &id);
        if (st) return st;
        cJSON_AddNumberToObject(root, keys[i][1], id);
    }
    return EMBER_OK;
}

static ember_status build_config(meta *m, cJSON *root)
{
    const gguf_file *f = m->f;
    uint32_t n_layers = 0, ctx = 0, hidden = 0, inter = 0, heads = 0, kv = 0, head_dim = 0;
    uint32_t v_len = 0, window = 0, vocab = 0;
    float eps = 0;
    bool any_sliding;
    ember_status st;

    if ((st = gguf_check_arch(f, ARCH, "ember reads only '" ARCH "' GGUF files (Spark-X2.5)")))
        return st;
    if ((st = gguf_get_u32(f, k(m, "block_count"), &n_layers)) ||
        (st = gguf_get_u32(f, k(m, "context_length"), &ctx)) ||
        (st = gguf_get_u32(f, k(m, "embedding_length"), &hidden)) ||
        (st = gguf_get_u32(f, k(m, "feed_forward_length"), &inter)) ||
        (st = gguf_get_u32(f, k(m, "attention.head_count"), &heads)) ||
        (st = gguf_get_f32(f, k(m, "attention.layer_norm_rms_epsilon"), &eps)))
        return st;
    if (heads == 0) return ember_fail(EMBER_ERR_FORMAT, "%s: %s is 0", m->label, m->key);
    if ((st = opt_u32(m, "attention.head_count_kv", heads, &kv)) ||
        (st = opt_u32(m, "attention.key_length", hidden / heads, &head_dim)) ||
        (st = opt_u32(m, "attention.value_length", head_dim, &v_len)))
        return st;
    if (v_len != head_dim)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: " ARCH ".attention.value_length %u differs "
                          "from key_length %u (ember needs one head size)", m->label, v_len,
                          head_dim);
    if (head_dim == 0) return ember_fail(EMBER_ERR_FORMAT, "%s: key_length is 0", m->label);
    if ((st = vocab_size(m, &vocab))) return st;

    cJSON *arch = cJSON_AddArrayToObject(root, "architectures");
    if (!arch) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", m->label);
    cJSON_AddItemToArray(arch, cJSON_CreateString("Spark2_5ForCausalLM"));
    cJSON_AddStringToObject(root, "model_type", ARCH);
    cJSON_AddNumberToObject(root, "num_hidden_layers", n_layers);
    cJSON_AddNumberToObject(root, "max_position_embeddings", ctx);
    cJSON_AddNumberToObject(root, "hidden_size", hidden);
    cJSON_AddNumberToObject(root, "intermediate_size", inter);
    cJSON_AddNumberToObject(root, "num_attention_heads", heads);
    cJSON_AddNumberToObject(root, "num_key_value_heads", kv);
    cJSON_AddNumberToObject(root, "head_dim", head_dim);
    cJSON_AddNumberToObject(root, "vocab_size", vocab);
    cJSON_AddNumberToObject(root, "rms_norm_eps", eps);
    cJSON_AddStringToObject(root, "hidden_act", "gelu");
    if (n_layers > SPARK_MAX_LAYERS)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: " ARCH ".block_count %u is over ember's "
                          "limit of %d layers", m->label, n_layers, SPARK_MAX_LAYERS);
    if ((st = layer_types(m, n_layers, root, &any_sliding))) return st;
    if (gguf_find(f, k(m, "attention.sliding_window"))) {
        if ((st = gguf_get_u32(f, m->key, &window))) return st;
        cJSON_AddNumberToObject(root, "sliding_window", window);
    } else if (any_sliding) {
        return ember_fail(EMBER_ERR_FORMAT, "%s: missing key '" ARCH ".attention.sliding_window' "
                          "(the sliding_window_pattern has sliding layers)", m->label);
    }
    if ((st = rope(m, root, head_dim))) return st;

    bool gate = gguf_find_tensor(f, "blk.0.attn_gate.weight") != NULL;
    cJSON_AddBoolToObject(root, "headwise_attn_output_gate", gate);
    if (gguf_find(f, k(m, "attention.gate_activation"))) {
        const char *act;
        if ((st = gguf_get_str(f, m->key, &act, NULL))) return st;
        cJSON_AddStringToObject(root, "gate_attn_act_mode", act);
    } else {
        cJSON_AddStringToObject(root, "gate_attn_act_mode", "sigmoid");
    }
    cJSON_AddBoolToObject(root, "attention_bias", gguf_find_tensor(f, "blk.0.attn_qkv.bias") != NULL);
    cJSON_AddBoolToObject(root, "mlp_bias", gguf_find_tensor(f, "blk.0.ffn_up.bias") != NULL);
    cJSON_AddBoolToObject(root, "tie_word_embeddings", gguf_find_tensor(f, "output.weight") == NULL);
    return token_ids(m, root);
}

ember_status spark_gguf_config_json(const gguf_file *f, char **json, size_t *len)
{
    meta m = {f, gguf_label(f), {0}};
    *json = NULL;
    *len = 0;
    cJSON *root = cJSON_CreateObject();
    if (!root) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", m.label);
    ember_status st = build_config(&m, root);
    char *text = st ? NULL : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (st) return st;
    if (!text) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", m.label);
    /* Validate here, so a bad value is reported against this file rather
     * than a config.json it does not have. */
    char label[512];
    spark_config cfg;
    snprintf(label, sizeof label, "%s (" ARCH " metadata as config.json)", m.label);
    st = spark_config_parse(text, strlen(text), label, &cfg);
    if (st) {
        cJSON_free(text);
        return st;
    }
    *len = strlen(text);
    *json = malloc(*len + 1);
    if (*json) memcpy(*json, text, *len + 1);
    cJSON_free(text);
    if (!*json) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", m.label);
    return EMBER_OK;
}

const ck_gguf_map spark_gguf_map = {ARCH, spark_gguf_config_json, spark_gguf_hf_name};
