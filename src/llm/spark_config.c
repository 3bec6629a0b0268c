#include "llm/spark_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "io/json_text.h"

/* Config flags of a re-uploaded variant of the modeling file (KV sharpening,
 * int4 layers, Hadamard rotations). They change the computation, so a config
 * that turns one on must be rejected, never silently run as the plain model. */
static const char *const unsupported_flags[] = {
    "gsq_int4", "hadamard_spin", "dv_ssq", "selective_attention_preservation",
    "key_value_binding_sharpening", "attention_sink_suppression",
};

typedef struct parse_ctx {
    const cJSON *root;
    const char *label;
} parse_ctx;

static ember_status bad(const parse_ctx *p, ember_status st, const char *key, const char *what)
{
    return ember_fail(st, "%s: key '%s': %s", p->label, key, what);
}

/* Reads an integer in [lo, hi]. A missing key takes `def` unless required. */
static ember_status get_int(const parse_ctx *p, const char *key, bool required, int64_t def,
                            int64_t lo, int64_t hi, int32_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p->root, key);
    char what[128];
    if (!v || cJSON_IsNull(v)) {
        if (required) return bad(p, EMBER_ERR_FORMAT, key, "missing");
        *out = (int32_t)def;
        return EMBER_OK;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
        return bad(p, EMBER_ERR_FORMAT, key, "must be an integer");
    if (v->valuedouble < (double)lo || v->valuedouble > (double)hi) {
        snprintf(what, sizeof what, "value %.17g out of the supported range [%lld, %lld]",
                 v->valuedouble, (long long)lo, (long long)hi);
        return bad(p, EMBER_ERR_UNSUPPORTED, key, what);
    }
    *out = (int32_t)v->valuedouble;
    return EMBER_OK;
}

static ember_status get_bool(const parse_ctx *p, const char *key, bool def, bool *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p->root, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return EMBER_OK;
    }
    if (!cJSON_IsBool(v)) return bad(p, EMBER_ERR_FORMAT, key, "must be true or false");
    *out = cJSON_IsTrue(v);
    return EMBER_OK;
}

/* A string key that must equal one of `allowed` (NULL-terminated); returns
 * its index, or `def_index` when missing. */
static ember_status get_enum(const parse_ctx *p, const char *key, const char *const *allowed,
                             int def_index, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p->root, key);
    char what[160];
    if (!v || cJSON_IsNull(v)) {
        *out = def_index;
        return EMBER_OK;
    }
    if (!cJSON_IsString(v)) return bad(p, EMBER_ERR_FORMAT, key, "must be a string");
    for (int i = 0; allowed[i]; i++) {
        if (strcmp(v->valuestring, allowed[i]) == 0) {
            *out = i;
            return EMBER_OK;
        }
    }
    snprintf(what, sizeof what, "value \"%.60s\" is not supported (expected \"%s\"%s)",
             v->valuestring, allowed[0], allowed[1] ? " or another listed value" : "");
    return bad(p, EMBER_ERR_UNSUPPORTED, key, what);
}

/* bos/eos/pad ids: an integer, null, or (for eos) a list whose first entry is used. */
static ember_status get_token_id(const parse_ctx *p, const char *key, int32_t vocab, int32_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p->root, key);
    *out = -1;
    if (!v || cJSON_IsNull(v)) return EMBER_OK;
    if (cJSON_IsArray(v)) v = cJSON_GetArrayItem(v, 0);
    if (!v) return EMBER_OK;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble >= (double)vocab)
        return bad(p, EMBER_ERR_FORMAT, key, "must be a token id below vocab_size");
    *out = (int32_t)v->valuedouble;
    return EMBER_OK;
}

static ember_status parse_layer_types(const parse_ctx *p, spark_config *c)
{
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(p->root, "layer_types");
    char what[160];
    if (!lt || cJSON_IsNull(lt)) {
        /* The configuration class defaults to all full attention. */
        memset(c->layer_type, SPARK_FULL, (size_t)c->n_layers);
        return EMBER_OK;
    }
    if (!cJSON_IsArray(lt)) return bad(p, EMBER_ERR_FORMAT, "layer_types", "must be a list");
    if (cJSON_GetArraySize(lt) != c->n_layers) {
        snprintf(what, sizeof what, "has %d entries but num_hidden_layers is %d",
                 cJSON_GetArraySize(lt), c->n_layers);
        return bad(p, EMBER_ERR_FORMAT, "layer_types", what);
    }
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, lt) {
        if (cJSON_IsString(e) && strcmp(e->valuestring, "sliding_attention") == 0)
            c->layer_type[i] = SPARK_SLIDING;
        else if (cJSON_IsString(e) && strcmp(e->valuestring, "full_attention") == 0)
            c->layer_type[i] = SPARK_FULL;
        else {
            snprintf(what, sizeof what,
                     "entry %d must be \"sliding_attention\" or \"full_attention\"", i);
            return bad(p, EMBER_ERR_UNSUPPORTED, "layer_types", what);
        }
        i++;
    }
    return EMBER_OK;
}

static ember_status parse_rope(const parse_ctx *p, spark_config *c)
{
    static const char *const type_key[SPARK_LAYER_TYPES] = {"sliding_attention",
                                                            "full_attention"};
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(p->root, "rope_parameters");
    char key[96];
    if (!rp || !cJSON_IsObject(rp))
        return bad(p, EMBER_ERR_FORMAT, "rope_parameters",
                   "missing or not an object (expected per layer type parameters)");
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(rp, type_key[t]);
        double theta = 10000.0, factor = 1.0;
        if (o && !cJSON_IsObject(o)) {
            snprintf(key, sizeof key, "rope_parameters.%s", type_key[t]);
            return bad(p, EMBER_ERR_FORMAT, key, "must be an object");
        }
        if (o) {
            const cJSON *th = cJSON_GetObjectItemCaseSensitive(o, "rope_theta");
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "partial_rotary_factor");
            const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "rope_type");
            if (ty && !(cJSON_IsString(ty) && strcmp(ty->valuestring, "default") == 0)) {
                snprintf(key, sizeof key, "rope_parameters.%s.rope_type", type_key[t]);
                return bad(p, EMBER_ERR_UNSUPPORTED, key,
                           "only the default rope type is supported");
            }
            if (th) {
                snprintf(key, sizeof key, "rope_parameters.%s.rope_theta", type_key[t]);
                if (!cJSON_IsNumber(th) || !(th->valuedouble > 1.0) || th->valuedouble > 1e12)
                    return bad(p, EMBER_ERR_FORMAT, key, "must be a number > 1");
                theta = th->valuedouble;
            }
            if (f) {
                snprintf(key, sizeof key, "rope_parameters.%s.partial_rotary_factor",
                         type_key[t]);
                if (!cJSON_IsNumber(f) || !(f->valuedouble > 0.0) || f->valuedouble > 1.0)
                    return bad(p, EMBER_ERR_FORMAT, key, "must be in (0, 1]");
                factor = f->valuedouble;
            }
        }
        /* Same truncation as the reference: int(head_dim * factor). */
        int32_t rot = (int32_t)((double)c->head_dim * factor);
        if (rot < 2 || rot % 2 != 0) {
            snprintf(key, sizeof key, "rope_parameters.%s.partial_rotary_factor", type_key[t]);
            return bad(p, EMBER_ERR_UNSUPPORTED, key,
                       "head_dim x factor must give an even number of rotated dims >= 2");
        }
        c->rope[t].theta = (float)theta;
        c->rope[t].factor = (float)factor;
        c->rope[t].rot_dims = rot;
    }
    return EMBER_OK;
}

static ember_status parse_root(const parse_ctx *p, spark_config *c)
{
    ember_status st;
    static const char *const model_types[] = {"spark2_5", NULL};
    static const char *const acts[] = {"gelu", NULL};
    static const char *const gate_modes[] = {"sigmoid", "silu", NULL};
    int idx;
    bool gate_on;

    if ((st = get_enum(p, "model_type", model_types, 0, &idx))) return st;
    if ((st = get_enum(p, "hidden_act", acts, 0, &idx))) return st;
    for (size_t i = 0; i < sizeof unsupported_flags / sizeof *unsupported_flags; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(p->root, unsupported_flags[i]);
        if (v && !cJSON_IsNull(v) && !cJSON_IsFalse(v))
            return bad(p, EMBER_ERR_UNSUPPORTED, unsupported_flags[i],
                       "this variant of the model changes attention or weights; "
                       "only the plain Spark-X2.5 is supported");
    }
    if (cJSON_GetObjectItemCaseSensitive(p->root, "quantization_config"))
        return bad(p, EMBER_ERR_UNSUPPORTED, "quantization_config",
                   "pre-quantized checkpoints are not supported");

    if ((st = get_int(p, "num_hidden_layers", true, 0, 1, SPARK_MAX_LAYERS, &c->n_layers)) ||
        (st = get_int(p, "hidden_size", true, 0, 1, 65536, &c->hidden)) ||
        (st = get_int(p, "intermediate_size", true, 0, 1, 262144, &c->intermediate)) ||
        (st = get_int(p, "num_attention_heads", true, 0, 1, 1024, &c->n_heads)) ||
        (st = get_int(p, "num_key_value_heads", false, c->n_heads, 1, 1024, &c->n_kv_heads)) ||
        (st = get_int(p, "vocab_size", true, 0, 1, 1 << 24, &c->vocab)) ||
        (st = get_int(p, "max_position_embeddings", false, 1048576, 1, 1 << 24,
                      &c->max_positions)))
        return st;
    /* head_dim is decoupled from hidden_size / heads; derive it only when the
     * config leaves it out, as the configuration class does. */
    if ((st = get_int(p, "head_dim", false, c->hidden / c->n_heads, 2, 4096, &c->head_dim)))
        return st;
    if (c->head_dim % 2)
        return bad(p, EMBER_ERR_UNSUPPORTED, "head_dim", "must be even for RoPE");
    if (c->n_heads % c->n_kv_heads)
        return bad(p, EMBER_ERR_FORMAT, "num_key_value_heads",
                   "must divide num_attention_heads");

    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(p->root, "rms_norm_eps");
    c->rms_eps = 1e-6f;
    if (eps && !cJSON_IsNull(eps)) {
        if (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0) || eps->valuedouble > 1)
            return bad(p, EMBER_ERR_FORMAT, "rms_norm_eps", "must be a number in (0, 1]");
        c->rms_eps = (float)eps->valuedouble;
    }

    if ((st = get_bool(p, "headwise_attn_output_gate", true, &gate_on)) ||
        (st = get_enum(p, "gate_attn_act_mode", gate_modes, 0, &idx)))
        return st;
    c->gate = !gate_on ? SPARK_GATE_NONE : idx == 0 ? SPARK_GATE_SIGMOID : SPARK_GATE_SILU;
    if ((st = get_bool(p, "attention_bias", false, &c->attention_bias)) ||
        (st = get_bool(p, "mlp_bias", false, &c->mlp_bias)) ||
        (st = get_bool(p, "tie_word_embeddings", true, &c->tie_embeddings)))
        return st;

    if ((st = parse_layer_types(p, c))) return st;
    if (spark_config_count_layers(c, SPARK_SLIDING) > 0) {
        if ((st = get_int(p, "sliding_window", true, 0, 2, 1 << 24, &c->sliding_window)))
            return st;
    } else {
        if ((st = get_int(p, "sliding_window", false, 0, 0, 1 << 24, &c->sliding_window)))
            return st;
    }
    if ((st = parse_rope(p, c))) return st;
    if ((st = get_token_id(p, "bos_token_id", c->vocab, &c->bos_id)) ||
        (st = get_token_id(p, "eos_token_id", c->vocab, &c->eos_id)) ||
        (st = get_token_id(p, "pad_token_id", c->vocab, &c->pad_id)))
        return st;
    return EMBER_OK;
}

ember_status spark_config_parse(const char *json, size_t len, const char *label,
                                spark_config *out)
{
    memset(out, 0, sizeof *out);
    cJSON *root;
    ember_status st = io_json_parse(json, len, label, "config", &root);
    if (st) return st;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ember_fail(EMBER_ERR_FORMAT, "%s: top level must be a JSON object", label);
    }
    parse_ctx p = {root, label};
    st = parse_root(&p, out);
    cJSON_Delete(root);
    return st;
}

int32_t spark_config_count_layers(const spark_config *c, spark_layer_type t)
{
    int32_t n = 0;
    for (int32_t i = 0; i < c->n_layers; i++) n += c->layer_type[i] == t;
    return n;
}

void spark_kv_shape(const spark_config *c, kv_shape *out)
{
    memset(out, 0, sizeof *out);
    out->n_layers = c->n_layers;
    out->kv_heads = c->n_kv_heads;
    out->head_dim = c->head_dim;
    for (int32_t i = 0; i < c->n_layers && i < KV_MAX_LAYERS; i++)
        out->window[i] = c->layer_type[i] == SPARK_SLIDING ? c->sliding_window : 0;
}
