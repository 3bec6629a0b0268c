#include "tts/qwen3_tts_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "io/json_text.h"

/* An object being read and the dotted path that names it in messages. */
typedef struct obj {
    const cJSON *j;
    const char *label; /* the file */
    const char *path;  /* "" at the top level, else "talker_config." etc. */
} obj;

static ember_status bad(const obj *o, ember_status st, const char *key, const char *what)
{
    return ember_fail(st, "%s: key '%s%s': %s", o->label, o->path, key, what);
}

static const cJSON *item(const obj *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o->j, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* An integer in [lo, hi]; a missing key takes def unless required. */
static ember_status get_int(const obj *o, const char *key, bool required, int64_t def, int64_t lo,
                            int64_t hi, int32_t *out)
{
    const cJSON *v = item(o, key);
    char what[128];
    if (!v) {
        if (required) return bad(o, EMBER_ERR_FORMAT, key, "missing");
        *out = (int32_t)def;
        return EMBER_OK;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
        return bad(o, EMBER_ERR_FORMAT, key, "must be an integer");
    if (v->valuedouble < (double)lo || v->valuedouble > (double)hi) {
        snprintf(what, sizeof what, "value %.17g is outside the supported range [%lld, %lld]",
                 v->valuedouble, (long long)lo, (long long)hi);
        return bad(o, EMBER_ERR_UNSUPPORTED, key, what);
    }
    *out = (int32_t)v->valuedouble;
    return EMBER_OK;
}

static ember_status get_float(const obj *o, const char *key, bool required, double def, double lo,
                              double hi, float *out)
{
    const cJSON *v = item(o, key);
    char what[128];
    if (!v) {
        if (required) return bad(o, EMBER_ERR_FORMAT, key, "missing");
        *out = (float)def;
        return EMBER_OK;
    }
    if (!cJSON_IsNumber(v)) return bad(o, EMBER_ERR_FORMAT, key, "must be a number");
    if (!(v->valuedouble >= lo && v->valuedouble <= hi)) {
        snprintf(what, sizeof what, "value %.17g is outside the supported range [%g, %g]",
                 v->valuedouble, lo, hi);
        return bad(o, EMBER_ERR_UNSUPPORTED, key, what);
    }
    *out = (float)v->valuedouble;
    return EMBER_OK;
}

static ember_status get_bool(const obj *o, const char *key, bool def, bool *out)
{
    const cJSON *v = item(o, key);
    if (!v) {
        *out = def;
        return EMBER_OK;
    }
    if (!cJSON_IsBool(v)) return bad(o, EMBER_ERR_FORMAT, key, "must be true or false");
    *out = cJSON_IsTrue(v);
    return EMBER_OK;
}

/* A key that, when present, must be the string `want`. */
static ember_status expect_string(const obj *o, const char *key, const char *want)
{
    const cJSON *v = item(o, key);
    char what[128];
    if (!v) return EMBER_OK;
    if (!cJSON_IsString(v)) return bad(o, EMBER_ERR_FORMAT, key, "must be a string");
    if (strcmp(v->valuestring, want)) {
        snprintf(what, sizeof what, "'%.60s' is not supported (only '%s')", v->valuestring, want);
        return bad(o, EMBER_ERR_UNSUPPORTED, key, what);
    }
    return EMBER_OK;
}

/* A key that, when present, must be false (a feature ember does not run). */
static ember_status expect_off(const obj *o, const char *key)
{
    bool on = false;
    ember_status st = get_bool(o, key, false, &on);
    if (st) return st;
    return on ? bad(o, EMBER_ERR_UNSUPPORTED, key, "must be false: not supported") : EMBER_OK;
}

static ember_status sub_object(const obj *o, const char *key, const char *path, obj *out)
{
    const cJSON *v = item(o, key);
    if (!v) return bad(o, EMBER_ERR_FORMAT, key, "missing");
    if (!cJSON_IsObject(v)) return bad(o, EMBER_ERR_FORMAT, key, "must be an object");
    *out = (obj){v, o->label, path};
    return EMBER_OK;
}

/* The keys of one decoder stack. rope_scaling may declare M-RoPE: with the
 * identical position streams of the TTS path it is plain RoPE, provided its
 * sections cover the rotated half of the head exactly. */
static ember_status parse_stack(const obj *o, tts_stack_config *s)
{
    ember_status st;
    if ((st = get_int(o, "num_hidden_layers", true, 0, 1, TTS_MAX_LAYERS, &s->n_layers)) ||
        (st = get_int(o, "hidden_size", true, 0, 1, 65536, &s->hidden)) ||
        (st = get_int(o, "intermediate_size", true, 0, 1, 262144, &s->intermediate)) ||
        (st = get_int(o, "num_attention_heads", true, 0, 1, 1024, &s->n_heads)) ||
        (st = get_int(o, "num_key_value_heads", false, s->n_heads, 1, 1024, &s->n_kv_heads)) ||
        (st = get_int(o, "head_dim", false, s->hidden / s->n_heads, 2, 1024, &s->head_dim)) ||
        (st = get_int(o, "vocab_size", true, 0, 1, 1 << 24, &s->vocab)) ||
        (st = get_int(o, "max_position_embeddings", false, 32768, 1, 1 << 24, &s->max_positions)) ||
        (st = get_float(o, "rms_norm_eps", false, 1e-6, 0.0, 1.0, &s->rms_eps)) ||
        (st = get_float(o, "rope_theta", false, 10000.0, 1.0, 1e12, &s->rope_theta)) ||
        (st = expect_string(o, "hidden_act", "silu")) || (st = expect_off(o, "attention_bias")) ||
        (st = expect_off(o, "use_sliding_window")))
        return st;
    if (s->n_heads % s->n_kv_heads)
        return bad(o, EMBER_ERR_UNSUPPORTED, "num_key_value_heads",
                   "must divide num_attention_heads");
    if (s->head_dim % 2) return bad(o, EMBER_ERR_UNSUPPORTED, "head_dim", "must be even (RoPE)");
    const cJSON *rs = item(o, "rope_scaling");
    if (!rs) return EMBER_OK;
    if (!cJSON_IsObject(rs)) return bad(o, EMBER_ERR_FORMAT, "rope_scaling", "must be an object");
    char path[96];
    snprintf(path, sizeof path, "%srope_scaling.", o->path);
    obj r = {rs, o->label, path};
    if ((st = expect_string(&r, "rope_type", "default")) || (st = expect_string(&r, "type", "default")))
        return st;
    const cJSON *sec = item(&r, "mrope_section");
    if (!sec) return EMBER_OK;
    int64_t sum = 0;
    const cJSON *e;
    if (!cJSON_IsArray(sec)) return bad(&r, EMBER_ERR_FORMAT, "mrope_section", "must be a list");
    cJSON_ArrayForEach(e, sec) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 65536 ||
            e->valuedouble != floor(e->valuedouble))
            return bad(&r, EMBER_ERR_FORMAT, "mrope_section", "must hold non-negative integers");
        sum += (int64_t)e->valuedouble;
    }
    if (sum != s->head_dim / 2)
        return bad(&r, EMBER_ERR_UNSUPPORTED, "mrope_section", "must sum to head_dim / 2");
    return EMBER_OK;
}

/* name -> id objects (codec_language_id, spk_id). */
static ember_status parse_named(const obj *o, const char *key, int32_t id_limit,
                                tts_named_id *out, int32_t *n)
{
    const cJSON *v = item(o, key), *e;
    char what[160];
    *n = 0;
    if (!v) return bad(o, EMBER_ERR_FORMAT, key, "missing");
    if (!cJSON_IsObject(v)) return bad(o, EMBER_ERR_FORMAT, key, "must be an object");
    cJSON_ArrayForEach(e, v) {
        if (*n == TTS_MAX_NAMED) return bad(o, EMBER_ERR_UNSUPPORTED, key, "too many entries");
        if (strlen(e->string) >= TTS_NAME_MAX) {
            snprintf(what, sizeof what, "name '%.40s...' is too long", e->string);
            return bad(o, EMBER_ERR_UNSUPPORTED, key, what);
        }
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
            e->valuedouble >= id_limit) {
            snprintf(what, sizeof what, "'%s' must be a codec id in [0, %d)", e->string, id_limit);
            return bad(o, EMBER_ERR_FORMAT, key, what);
        }
        for (int32_t i = 0; i < *n; i++)
            if (!strcmp(out[i].name, e->string)) {
                snprintf(what, sizeof what, "'%s' appears twice", e->string);
                return bad(o, EMBER_ERR_FORMAT, key, what);
            }
        snprintf(out[*n].name, TTS_NAME_MAX, "%s", e->string);
        out[*n].id = (int32_t)e->valuedouble;
        out[*n].dialect = -1;
        (*n)++;
    }
    return EMBER_OK;
}

/* spk_is_dialect: speaker -> false or the name of a language entry. */
static ember_status parse_dialects(const obj *o, tts_config *c)
{
    const cJSON *v = item(o, "spk_is_dialect"), *e;
    char what[200];
    if (!v) return EMBER_OK;
    if (!cJSON_IsObject(v)) return bad(o, EMBER_ERR_FORMAT, "spk_is_dialect", "must be an object");
    cJSON_ArrayForEach(e, v) {
        int32_t spk = tts_config_speaker(c, e->string);
        if (spk < 0) {
            snprintf(what, sizeof what, "speaker '%.60s' is not in spk_id", e->string);
            return bad(o, EMBER_ERR_FORMAT, "spk_is_dialect", what);
        }
        if (cJSON_IsFalse(e)) continue;
        int32_t lang = cJSON_IsString(e) ? tts_config_language(c, e->valuestring) : -1;
        if (lang < 0) {
            snprintf(what, sizeof what, "'%.60s' must be false or a key of codec_language_id",
                     e->string);
            return bad(o, EMBER_ERR_FORMAT, "spk_is_dialect", what);
        }
        c->speakers[spk].dialect = lang;
    }
    return EMBER_OK;
}

static ember_status parse_talker(const obj *t, tts_config *c)
{
    ember_status st;
    int32_t lim;
    obj cp;
    if ((st = expect_string(t, "model_type", "qwen3_tts_talker")) || (st = parse_stack(t, &c->talker)) ||
        (st = get_int(t, "text_hidden_size", true, 0, 1, 65536, &c->text_hidden)) ||
        (st = get_int(t, "text_vocab_size", true, 0, 1, 1 << 24, &c->text_vocab)) ||
        (st = get_int(t, "num_code_groups", true, 0, 2, TTS_MAX_GROUPS, &c->n_groups)))
        return st;
    lim = c->talker.vocab - 1;
    if ((st = get_int(t, "codec_pad_id", true, 0, 0, lim, &c->codec_pad)) ||
        (st = get_int(t, "codec_bos_id", true, 0, 0, lim, &c->codec_bos)) ||
        (st = get_int(t, "codec_eos_token_id", true, 0, 0, lim, &c->codec_eos)) ||
        (st = get_int(t, "codec_think_id", true, 0, 0, lim, &c->think)) ||
        (st = get_int(t, "codec_nothink_id", true, 0, 0, lim, &c->nothink)) ||
        (st = get_int(t, "codec_think_bos_id", true, 0, 0, lim, &c->think_bos)) ||
        (st = get_int(t, "codec_think_eos_id", true, 0, 0, lim, &c->think_eos)) ||
        (st = parse_named(t, "codec_language_id", c->talker.vocab, c->languages, &c->n_languages)) ||
        (st = parse_named(t, "spk_id", c->talker.vocab, c->speakers, &c->n_speakers)) ||
        (st = parse_dialects(t, c)) ||
        (st = sub_object(t, "code_predictor_config", "talker_config.code_predictor_config.", &cp)) ||
        (st = expect_string(&cp, "model_type", "qwen3_tts_talker_code_predictor")) ||
        (st = parse_stack(&cp, &c->predictor)))
        return st;
    int32_t cp_groups;
    if ((st = get_int(&cp, "num_code_groups", false, c->n_groups, 2, TTS_MAX_GROUPS, &cp_groups)))
        return st;
    if (cp_groups != c->n_groups)
        return bad(&cp, EMBER_ERR_UNSUPPORTED, "num_code_groups",
                   "must equal talker_config.num_code_groups");
    /* The talker's codebook-0 ids below the predictor's vocabulary are the
     * codes; the rest of its vocabulary holds the special ids. */
    if (c->predictor.vocab > c->talker.vocab)
        return bad(&cp, EMBER_ERR_UNSUPPORTED, "vocab_size", "must not exceed the talker's");
    if (c->codec_eos < c->predictor.vocab)
        return bad(t, EMBER_ERR_UNSUPPORTED, "codec_eos_token_id",
                   "must lie above the codebook ids (code_predictor vocab_size)");
    return EMBER_OK;
}

ember_status tts_config_parse(const char *json, size_t len, const char *label, tts_config *out)
{
    cJSON *root = NULL;
    memset(out, 0, sizeof *out);
    ember_status st = io_json_parse(json, len, label, "config", &root);
    if (st) return st;
    obj top = {root, label, ""}, talker;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ember_fail(EMBER_ERR_FORMAT, "%s: config must be a JSON object", label);
    }
    const int64_t big = 1 << 24;
    if ((st = expect_string(&top, "model_type", "qwen3_tts")) ||
        (st = sub_object(&top, "talker_config", "talker_config.", &talker)) ||
        (st = parse_talker(&talker, out)) ||
        (st = get_int(&top, "im_start_token_id", true, 0, 0, big, &out->im_start)) ||
        (st = get_int(&top, "im_end_token_id", true, 0, 0, big, &out->im_end)) ||
        (st = get_int(&top, "assistant_token_id", true, 0, 0, big, &out->assistant)) ||
        (st = get_int(&top, "tts_bos_token_id", true, 0, 0, big, &out->tts_bos)) ||
        (st = get_int(&top, "tts_eos_token_id", true, 0, 0, big, &out->tts_eos)) ||
        (st = get_int(&top, "tts_pad_token_id", true, 0, 0, big, &out->tts_pad)))
        goto done;
    const struct {
        const char *key;
        int32_t id;
    } text_ids[] = {{"im_start_token_id", out->im_start}, {"im_end_token_id", out->im_end},
                    {"assistant_token_id", out->assistant}, {"tts_bos_token_id", out->tts_bos},
                    {"tts_eos_token_id", out->tts_eos}, {"tts_pad_token_id", out->tts_pad}};
    for (size_t i = 0; i < sizeof text_ids / sizeof *text_ids; i++)
        if (text_ids[i].id >= out->text_vocab) {
            st = bad(&top, EMBER_ERR_FORMAT, text_ids[i].key,
                     "must be below talker_config.text_vocab_size");
            goto done;
        }
done:
    cJSON_Delete(root);
    return st;
}

static int32_t find_named(const tts_named_id *v, int32_t n, const char *name)
{
    for (int32_t i = 0; name && i < n; i++)
        if (!strcmp(v[i].name, name)) return i;
    return -1;
}

int32_t tts_config_language(const tts_config *c, const char *name)
{
    return find_named(c->languages, c->n_languages, name);
}

int32_t tts_config_speaker(const tts_config *c, const char *name)
{
    return find_named(c->speakers, c->n_speakers, name);
}

void tts_gen_config_default(tts_gen_config *g)
{
    memset(g, 0, sizeof *g);
    g->talker = (tts_sampling){true, 0.9f, 1.0f, 50};
    g->subtalker = g->talker;
    g->repetition_penalty = 1.05f;
    g->max_new_tokens = 4096;
    g->min_new_tokens = 2;
}

/* The talker's keys are do_sample, temperature, ...; the predictor's are
 * subtalker_dosample (sic), subtalker_temperature, ... */
static ember_status parse_sampling(const obj *o, const char *k_do, const char *prefix,
                                   tts_sampling *s)
{
    char k_t[64], k_k[64], k_p[64];
    snprintf(k_t, sizeof k_t, "%stemperature", prefix);
    snprintf(k_k, sizeof k_k, "%stop_k", prefix);
    snprintf(k_p, sizeof k_p, "%stop_p", prefix);
    ember_status st;
    if ((st = get_bool(o, k_do, s->do_sample, &s->do_sample)) ||
        (st = get_float(o, k_t, false, s->temperature, 0.0, 100.0, &s->temperature)) ||
        (st = get_int(o, k_k, false, s->top_k, 0, 1 << 24, &s->top_k)) ||
        (st = get_float(o, k_p, false, s->top_p, 0.0, 1.0, &s->top_p)))
        return st;
    if (s->do_sample && s->temperature <= 0.0f)
        return bad(o, EMBER_ERR_UNSUPPORTED, k_t, "must be above 0 when sampling");
    if (s->do_sample && s->top_p <= 0.0f)
        return bad(o, EMBER_ERR_UNSUPPORTED, k_p, "must be above 0 when sampling");
    return EMBER_OK;
}

ember_status tts_gen_config_parse(const char *json, size_t len, const char *label,
                                  tts_gen_config *g)
{
    cJSON *root = NULL;
    ember_status st = io_json_parse(json, len, label, "generation config", &root);
    if (st) return st;
    obj o = {root, label, ""};
    if (!cJSON_IsObject(root)) {
        st = ember_fail(EMBER_ERR_FORMAT, "%s: generation config must be a JSON object", label);
    } else if (!(st = parse_sampling(&o, "do_sample", "", &g->talker)) &&
               !(st = parse_sampling(&o, "subtalker_dosample", "subtalker_", &g->subtalker)) &&
               !(st = get_float(&o, "repetition_penalty", false, g->repetition_penalty, 1e-3,
                                1e3, &g->repetition_penalty)) &&
               !(st = get_int(&o, "max_new_tokens", false, g->max_new_tokens, 1, 1 << 20,
                              &g->max_new_tokens)) &&
               !(st = get_int(&o, "min_new_tokens", false, g->min_new_tokens, 0, 1 << 20,
                              &g->min_new_tokens))) {
        if (g->min_new_tokens > g->max_new_tokens)
            st = bad(&o, EMBER_ERR_UNSUPPORTED, "min_new_tokens", "must not exceed max_new_tokens");
    }
    cJSON_Delete(root);
    return st;
}
