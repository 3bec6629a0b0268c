/* Spark-X2.5 <-> GGUF: the tensor-name table, metadata -> config.json for
 * reading, and the writer (spark_gguf_write). */
#include "llm/spark_gguf.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/formats.h"
#include "kernels/rows8.h"
#include "llm/spark.h"
#include "llm/spark_config.h"

#define ARCH "spark2_5"

/* ---- the names ------------------------------------------------------------------ */

/* What a per-layer entry holds in spark_layer, and the length of a vector. */
typedef enum kind { K_MAT, K_VEC, K_QKV, K_QKV_BIAS } kind;
typedef enum len_dim { L_NONE, L_HIDDEN, L_QKV, L_HEADS, L_INTER } len_dim;

typedef struct layer_name {
    const char *gguf; /* after "blk.{i}." */
    const char *hf;   /* after "model.layers.{i}." */
    kind k;
    size_t field;     /* offsetof(spark_layer, ...) */
    len_dim len;      /* vectors */
    qm_role role;     /* matrices: what the quantization mix calls them */
} layer_name;

static const layer_name layer_names[] = {
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
#define N_LAYER_NAMES (sizeof layer_names / sizeof *layer_names)

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
    for (size_t i = 0; i < N_LAYER_NAMES; i++)
        if (!strcmp(p, layer_names[i].gguf))
            return (size_t)snprintf(buf, cap, "model.layers.%ld.%s", layer, layer_names[i].hf) < cap
                       ? buf : NULL;
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

static ember_status check_arch(const gguf_file *f)
{
    const char *arch;
    ember_status st = gguf_get_str(f, "general.architecture", &arch, NULL);
    if (st) return st;
    if (strcmp(arch, ARCH))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: general.architecture is '%.64s', but ember "
                          "reads only '" ARCH "' GGUF files (Spark-X2.5)", gguf_label(f), arch);
    return EMBER_OK;
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

    if ((st = check_arch(f))) return st;
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

/* ---- writing ------------------------------------------------------------------- */

/* A matrix to stream: up to three parts stacked by rows (Q, K, V). */
typedef struct mat_src {
    ek_matrix part[3];
    int n_parts;
    et_dtype to;
} mat_src;

static ember_status produce_matrix(void *ctx, gguf_sink *sink)
{
    const mat_src *s = ctx;
    const ek_format *to = ek_format_of(s->to);
    int64_t cols = s->part[0].cols;
    size_t out_row = ek_row_bytes(s->to, cols);
    float *row = malloc((size_t)cols * sizeof *row + 1);
    void *out = malloc(out_row + 1);
    /* a row of an interleaved matrix, back in the file's row layout */
    char *plain = malloc((size_t)cols * sizeof(float) + 1);
    ember_status st = EMBER_OK;
    if (!row || !out || !plain)
        st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory converting a matrix");
    for (int p = 0; p < s->n_parts && !st; p++) {
        const ek_matrix *m = &s->part[p];
        size_t in_row = ek_row_bytes(m->dtype, cols);
        for (int64_t r = 0; r < m->rows && !st; r++) {
            const char *src = (const char *)m->data + (size_t)r * in_row;
            if (m->layout == EK_LAYOUT_ROWS8) {
                ek_rows8_unpack_row(m, r, plain);
                src = plain;
            }
            if (m->dtype == s->to) {
                st = gguf_sink_write(sink, src, in_row); /* as is: no round trip */
            } else {
                ek_format_of(m->dtype)->to_f32(src, row, cols);
                to->from_f32(row, out, cols);
                st = gguf_sink_write(sink, out, out_row);
            }
        }
    }
    free(row);
    free(out);
    free(plain);
    return st;
}

static ember_status put_metadata(gguf_writer *w, const ember_model *m, const quant_mix *mix)
{
    const spark_config *c = &m->cfg;
    const gguf_file *src = ck_gguf(m->ck);
    const char *name = NULL;
    char base[256];
    ember_status st;

    if (src && gguf_find(src, "general.name") && gguf_get_str(src, "general.name", &name, NULL))
        name = NULL;
    if (!name) {
        const char *p = ck_path(m->ck);
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/') n--;
        size_t b = n;
        while (b > 0 && p[b - 1] != '/') b--;
        snprintf(base, sizeof base, "%.*s", (int)(n - b), p + b);
        name = base;
    }
    uint8_t pattern[SPARK_MAX_LAYERS];
    for (int32_t i = 0; i < c->n_layers; i++) pattern[i] = c->layer_type[i] == SPARK_SLIDING;
    if ((st = gguf_set_str(w, "general.architecture", ARCH)) ||
        (st = gguf_set_str(w, "general.name", name)) ||
        (st = gguf_set_u32(w, "general.file_type", quant_mix_file_type(mix))) ||
        (!et_dtype_is_float(quant_mix_base(mix)) && (st = gguf_set_u32(w, "general.quantization_version", 2))) ||
        (st = gguf_set_u32(w, ARCH ".block_count", (uint32_t)c->n_layers)) ||
        (st = gguf_set_u32(w, ARCH ".context_length", (uint32_t)c->max_positions)) ||
        (st = gguf_set_u32(w, ARCH ".embedding_length", (uint32_t)c->hidden)) ||
        (st = gguf_set_u32(w, ARCH ".feed_forward_length", (uint32_t)c->intermediate)) ||
        (st = gguf_set_u32(w, ARCH ".vocab_size", (uint32_t)c->vocab)) ||
        (st = gguf_set_u32(w, ARCH ".attention.head_count", (uint32_t)c->n_heads)) ||
        (st = gguf_set_u32(w, ARCH ".attention.head_count_kv", (uint32_t)c->n_kv_heads)) ||
        (st = gguf_set_u32(w, ARCH ".attention.key_length", (uint32_t)c->head_dim)) ||
        (st = gguf_set_u32(w, ARCH ".attention.value_length", (uint32_t)c->head_dim)) ||
        (st = gguf_set_f32(w, ARCH ".attention.layer_norm_rms_epsilon", c->rms_eps)) ||
        (st = gguf_set_arr(w, ARCH ".attention.sliding_window_pattern", GGUF_TYPE_BOOL, pattern,
                           (size_t)c->n_layers)) ||
        (st = gguf_set_u32(w, ARCH ".rope.dimension_count", (uint32_t)c->rope[SPARK_FULL].rot_dims)) ||
        (st = gguf_set_u32(w, ARCH ".rope.dimension_count_swa",
                           (uint32_t)c->rope[SPARK_SLIDING].rot_dims)) ||
        (st = gguf_set_f32(w, ARCH ".rope.freq_base", c->rope[SPARK_FULL].theta)) ||
        (st = gguf_set_f32(w, ARCH ".rope.freq_base_swa", c->rope[SPARK_SLIDING].theta)))
        return st;
    if (c->sliding_window > 0 &&
        (st = gguf_set_u32(w, ARCH ".attention.sliding_window", (uint32_t)c->sliding_window)))
        return st;
    if (c->gate == SPARK_GATE_SILU &&
        (st = gguf_set_str(w, ARCH ".attention.gate_activation", "silu")))
        return st;
    bool synthesized = false;
    if ((st = spark_gguf_vocab(w, m, &synthesized))) return st;
    /* a template over invented token texts would only mislead */
    if ((st = spark_gguf_text(w, m, !synthesized))) return st;
    if (synthesized)
        return gguf_set_str(w, "general.description",
                            "written by ember: the source had no tokenizer.json, so the vocab is "
                            "synthesized (256 byte-level tokens, the special ids, [PADn] "
                            "fillers, no merges); token ids are right, token texts are not the "
                            "model's");
    if (src) {
        const char *desc;
        if (gguf_find(src, "general.description") &&
            !gguf_get_str(src, "general.description", &desc, NULL))
            return gguf_set_str(w, "general.description", desc);
    }
    return EMBER_OK;
}

static ember_status add_matrix(gguf_writer *w, mat_src *src, const char *name, et_dtype type,
                               const ek_matrix *parts, int n)
{
    const ek_format *f = ek_format_of(type);
    int64_t rows = 0;
    for (int i = 0; i < n; i++) {
        src->part[i] = parts[i];
        rows += parts[i].rows;
    }
    src->n_parts = n;
    src->to = type;
    if (parts[0].cols % f->block)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "tensor '%s': %lld columns are not a multiple "
                          "of the %s block (%d)", name, (long long)parts[0].cols, f->name,
                          f->block);
    return gguf_add_matrix(w, name, type, rows, parts[0].cols, NULL, produce_matrix, src);
}

static int64_t vec_len(const spark_config *c, len_dim d)
{
    switch (d) {
    case L_HIDDEN: return c->hidden;
    case L_QKV: return (int64_t)(c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
    case L_HEADS: return c->n_heads;
    case L_INTER: return c->intermediate;
    case L_NONE: break;
    }
    return 0;
}

static ember_status add_layer(gguf_writer *w, const ember_model *m, int32_t i, const quant_mix *mix,
                              mat_src **next)
{
    const spark_layer *L = &m->layers[i];
    char name[96];
    ember_status st = EMBER_OK;
    for (size_t k2 = 0; k2 < N_LAYER_NAMES && !st; k2++) {
        const layer_name *ln = &layer_names[k2];
        const void *field = (const char *)L + ln->field;
        snprintf(name, sizeof name, "blk.%d.%s", i, ln->gguf);
        const int n = m->cfg.n_layers;
        const bool tied = m->cfg.tie_embeddings;
        if (ln->k == K_QKV) {
            ek_matrix parts[3] = {L->wq, L->wk, L->wv};
            et_dtype type = quant_mix_type(mix, ln->role, i, n, parts[0].cols, tied);
            st = add_matrix(w, (*next)++, name, type, parts, 3);
        } else if (ln->k == K_MAT) {
            const ek_matrix *mat = field;
            et_dtype type = quant_mix_type(mix, ln->role, i, n, mat->cols, tied);
            if (mat->rows) st = add_matrix(w, (*next)++, name, type, mat, 1);
        } else {
            const float *v = *(const float *const *)field; /* QKV bias: bq, bk, bv are contiguous */
            if (v) st = gguf_add_vector(w, name, ET_F32, vec_len(&m->cfg, ln->len), v, NULL, NULL);
        }
    }
    return st;
}

size_t spark_gguf_tensor_count(const ember_model *m)
{
    size_t n = 2 + !m->cfg.tie_embeddings;
    for (int32_t i = 0; i < m->cfg.n_layers; i++) {
        const spark_layer *L = &m->layers[i];
        for (size_t j = 0; j < N_LAYER_NAMES; j++) {
            const void *field = (const char *)L + layer_names[j].field;
            if (layer_names[j].k == K_QKV) n++;
            else if (layer_names[j].k == K_MAT) n += ((const ek_matrix *)field)->rows != 0;
            else n += *(const float *const *)field != NULL;
        }
    }
    return n;
}

ember_status spark_gguf_write(const ember_model *m, const char *path, const quant_mix *mix,
                              int (*progress)(void *ctx, size_t done, size_t total), void *ctx)
{
    if (!m || !path || !mix) return ember_fail(EMBER_ERR_INVALID_ARG, "spark_gguf_write: NULL argument");
    if (m->params.all_full_attention)
        return ember_fail(EMBER_ERR_INVALID_ARG, "spark_gguf_write: the model was loaded with "
                          "all_full_attention (a benchmarking mode that changes it); load it "
                          "plainly to write it");
    const spark_config *c = &m->cfg;
    gguf_writer *w = NULL;
    /* one source per matrix: embedding, lm_head, 6 per layer */
    mat_src *srcs = calloc(2 + 6 * (size_t)c->n_layers, sizeof *srcs), *next = srcs;
    ember_status st = srcs ? gguf_writer_create(&w)
                           : ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
    const bool tied = c->tie_embeddings;
    if (!st) st = put_metadata(w, m, mix);
    if (!st)
        st = add_matrix(w, next++, "token_embd.weight",
                        quant_mix_type(mix, QM_TOKEN_EMBD, 0, c->n_layers, m->embed.cols, tied), &m->embed, 1);
    if (!st) st = gguf_add_vector(w, "output_norm.weight", ET_F32, c->hidden, m->final_norm, NULL, NULL);
    if (!st && !tied)
        st = add_matrix(w, next++, "output.weight",
                        quant_mix_type(mix, QM_OUTPUT, 0, c->n_layers, m->lm_head.cols, tied), &m->lm_head, 1);
    for (int32_t i = 0; i < c->n_layers && !st; i++) st = add_layer(w, m, i, mix, &next);
    if (!st) st = gguf_write(w, path, progress, ctx);
    if (st) ember_fail_prefix(st, "writing %s", path);
    gguf_writer_free(w);
    free(srcs);
    return st;
}
