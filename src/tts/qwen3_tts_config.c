#include "tts/qwen3_tts_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "io/json_keys.h"
#include "io/json_text.h"

/* The keys of one decoder stack. rope_scaling may declare M-RoPE: with the
 * identical position streams of the TTS path it is plain RoPE, provided its
 * sections cover the rotated half of the head exactly. */
static ember_status parse_stack(const json_obj *o, tts_stack_config *s)
{
    ember_status st;
    if ((st = json_get_int(o, "num_hidden_layers", true, 0, 1, TTS_MAX_LAYERS, &s->n_layers)) ||
        (st = json_get_int(o, "hidden_size", true, 0, 1, 65536, &s->hidden)) ||
        (st = json_get_int(o, "intermediate_size", true, 0, 1, 262144, &s->intermediate)) ||
        (st = json_get_int(o, "num_attention_heads", true, 0, 1, 1024, &s->n_heads)) ||
        (st = json_get_int(o, "num_key_value_heads", false, s->n_heads, 1, 1024, &s->n_kv_heads)) ||
        (st = json_get_int(o, "head_dim", false, s->hidden / s->n_heads, 2, 1024, &s->head_dim)) ||
        (st = json_get_int(o, "vocab_size", true, 0, 1, 1 << 24, &s->vocab)) ||
        (st = json_get_int(o, "max_position_embeddings", false, 32768, 1, 1 << 24, &s->max_positions)) ||
        (st = json_get_float(o, "rms_norm_eps", false, 1e-6, 0.0, 1.0, &s->rms_eps)) ||
        (st = json_get_float(o, "rope_theta", false, 10000.0, 1.0, 1e12, &s->rope_theta)) ||
        (st = json_expect_string(o, "hidden_act", "silu")) || (st = json_expect_off(o, "attention_bias")) ||
        (st = json_expect_off(o, "use_sliding_window")))
        return st;
    s->qk_norm = true;
    if (s->n_heads % s->n_kv_heads)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, "num_key_value_heads",
                   "must divide num_attention_heads");
    if (s->head_dim % 2) return json_bad(o, EMBER_ERR_UNSUPPORTED, "head_dim", "must be even (RoPE)");
    const cJSON *rs = json_item(o, "rope_scaling");
    if (!rs) return EMBER_OK;
    if (!cJSON_IsObject(rs)) return json_bad(o, EMBER_ERR_FORMAT, "rope_scaling", "must be an object");
    char path[96];
    snprintf(path, sizeof path, "%srope_scaling.", o->path);
    json_obj r = {rs, o->label, path};
    if ((st = json_expect_string(&r, "rope_type", "default")) || (st = json_expect_string(&r, "type", "default")))
        return st;
    const cJSON *sec = json_item(&r, "mrope_section");
    if (!sec) return EMBER_OK;
    int64_t sum = 0;
    const cJSON *e;
    if (!cJSON_IsArray(sec)) return json_bad(&r, EMBER_ERR_FORMAT, "mrope_section", "must be a list");
    cJSON_ArrayForEach(e, sec) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 65536 ||
            e->valuedouble != floor(e->valuedouble))
            return json_bad(&r, EMBER_ERR_FORMAT, "mrope_section", "must hold non-negative integers");
        sum += (int64_t)e->valuedouble;
    }
    if (sum != s->head_dim / 2)
        return json_bad(&r, EMBER_ERR_UNSUPPORTED, "mrope_section", "must sum to head_dim / 2");
    return EMBER_OK;
}

/* name -> id objects (codec_language_id, spk_id). */
static ember_status parse_named(const json_obj *o, const char *key, int32_t id_limit,
                                tts_named_id *out, int32_t *n)
{
    const cJSON *v = json_item(o, key), *e;
    char what[160];
    *n = 0;
    if (!v) return json_bad(o, EMBER_ERR_FORMAT, key, "missing");
    if (!cJSON_IsObject(v)) return json_bad(o, EMBER_ERR_FORMAT, key, "must be an object");
    cJSON_ArrayForEach(e, v) {
        if (*n == TTS_MAX_NAMED) return json_bad(o, EMBER_ERR_UNSUPPORTED, key, "too many entries");
        if (strlen(e->string) >= TTS_NAME_MAX) {
            snprintf(what, sizeof what, "name '%.40s...' is too long", e->string);
            return json_bad(o, EMBER_ERR_UNSUPPORTED, key, what);
        }
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
            e->valuedouble >= id_limit) {
            snprintf(what, sizeof what, "'%s' must be a codec id in [0, %d)", e->string, id_limit);
            return json_bad(o, EMBER_ERR_FORMAT, key, what);
        }
        for (int32_t i = 0; i < *n; i++)
            if (!strcmp(out[i].name, e->string)) {
                snprintf(what, sizeof what, "'%s' appears twice", e->string);
                return json_bad(o, EMBER_ERR_FORMAT, key, what);
            }
        snprintf(out[*n].name, TTS_NAME_MAX, "%s", e->string);
        out[*n].id = (int32_t)e->valuedouble;
        out[*n].dialect = -1;
        (*n)++;
    }
    return EMBER_OK;
}

/* spk_is_dialect: speaker -> false or the name of a language entry. */
static ember_status parse_dialects(const json_obj *o, tts_config *c)
{
    const cJSON *v = json_item(o, "spk_is_dialect"), *e;
    char what[200];
    if (!v) return EMBER_OK;
    if (!cJSON_IsObject(v)) return json_bad(o, EMBER_ERR_FORMAT, "spk_is_dialect", "must be an object");
    cJSON_ArrayForEach(e, v) {
        int32_t spk = tts_config_speaker(c, e->string);
        if (spk < 0) {
            snprintf(what, sizeof what, "speaker '%.60s' is not in spk_id", e->string);
            return json_bad(o, EMBER_ERR_FORMAT, "spk_is_dialect", what);
        }
        if (cJSON_IsFalse(e)) continue;
        int32_t lang = cJSON_IsString(e) ? tts_config_language(c, e->valuestring) : -1;
        if (lang < 0) {
            snprintf(what, sizeof what, "'%.60s' must be false or a key of codec_language_id",
                     e->string);
            return json_bad(o, EMBER_ERR_FORMAT, "spk_is_dialect", what);
        }
        c->speakers[spk].dialect = lang;
    }
    return EMBER_OK;
}

static ember_status parse_talker(const json_obj *t, tts_config *c)
{
    ember_status st;
    int32_t lim;
    json_obj cp;
    if ((st = json_expect_string(t, "model_type", "qwen3_tts_talker")) || (st = parse_stack(t, &c->talker)) ||
        (st = json_get_int(t, "text_hidden_size", true, 0, 1, 65536, &c->text_hidden)) ||
        (st = json_get_int(t, "text_vocab_size", true, 0, 1, 1 << 24, &c->text_vocab)) ||
        (st = json_get_int(t, "num_code_groups", true, 0, 2, TTS_MAX_GROUPS, &c->n_groups)))
        return st;
    lim = c->talker.vocab - 1;
    if ((st = json_get_int(t, "codec_pad_id", true, 0, 0, lim, &c->codec_pad)) ||
        (st = json_get_int(t, "codec_bos_id", true, 0, 0, lim, &c->codec_bos)) ||
        (st = json_get_int(t, "codec_eos_token_id", true, 0, 0, lim, &c->codec_eos)) ||
        (st = json_get_int(t, "codec_think_id", true, 0, 0, lim, &c->think)) ||
        (st = json_get_int(t, "codec_nothink_id", true, 0, 0, lim, &c->nothink)) ||
        (st = json_get_int(t, "codec_think_bos_id", true, 0, 0, lim, &c->think_bos)) ||
        (st = json_get_int(t, "codec_think_eos_id", true, 0, 0, lim, &c->think_eos)) ||
        (st = parse_named(t, "codec_language_id", c->talker.vocab, c->languages, &c->n_languages)) ||
        (st = parse_named(t, "spk_id", c->talker.vocab, c->speakers, &c->n_speakers)) ||
        (st = parse_dialects(t, c)) ||
        (st = json_sub_object(t, "code_predictor_config", "talker_config.code_predictor_config.", &cp)) ||
        (st = json_expect_string(&cp, "model_type", "qwen3_tts_talker_code_predictor")) ||
        (st = parse_stack(&cp, &c->predictor)))
        return st;
    int32_t cp_groups;
    if ((st = json_get_int(&cp, "num_code_groups", false, c->n_groups, 2, TTS_MAX_GROUPS, &cp_groups)))
        return st;
    if (cp_groups != c->n_groups)
        return json_bad(&cp, EMBER_ERR_UNSUPPORTED, "num_code_groups",
                   "must equal talker_config.num_code_groups");
    /* The talker's codebook-0 ids below the predictor's vocabulary are the
     * codes; the rest of its vocabulary holds the special ids. */
    if (c->predictor.vocab > c->talker.vocab)
        return json_bad(&cp, EMBER_ERR_UNSUPPORTED, "vocab_size", "must not exceed the talker's");
    if (c->codec_eos < c->predictor.vocab)
        return json_bad(t, EMBER_ERR_UNSUPPORTED, "codec_eos_token_id",
                   "must lie above the codebook ids (code_predictor vocab_size)");
    return EMBER_OK;
}

/* tts_model_type (absent in early CustomVoice files: custom_voice) and
 * tts_model_size. */
static ember_status parse_model_type(const json_obj *top, tts_config *c)
{
    static const struct {
        const char *name;
        tts_model_type type;
    } types[] = {{"custom_voice", TTS_CUSTOM_VOICE}, {"base", TTS_BASE}, {"voice_design", TTS_VOICE_DESIGN}};
    const cJSON *t = json_item(top, "tts_model_type"), *size = json_item(top, "tts_model_size");
    c->type = TTS_CUSTOM_VOICE;
    if (t) {
        size_t i = 0;
        while (i < sizeof types / sizeof *types && !(cJSON_IsString(t) && !strcmp(t->valuestring, types[i].name)))
            i++;
        if (i == sizeof types / sizeof *types)
            return json_bad(top, EMBER_ERR_UNSUPPORTED, "tts_model_type",
                            "must be \"custom_voice\", \"base\" or \"voice_design\"");
        c->type = types[i].type;
    }
    if (size && !cJSON_IsString(size)) return json_bad(top, EMBER_ERR_FORMAT, "tts_model_size", "must be a string");
    c->small = size && !strcmp(size->valuestring, "0b6");
    return EMBER_OK;
}

ember_status tts_config_parse(const char *json, size_t len, const char *label, tts_config *out)
{
    cJSON *root = NULL;
    memset(out, 0, sizeof *out);
    ember_status st = io_json_parse(json, len, label, "config", &root);
    if (st) return st;
    json_obj top = {root, label, ""}, talker;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ember_fail(EMBER_ERR_FORMAT, "%s: config must be a JSON object", label);
    }
    const int64_t big = 1 << 24;
    if ((st = json_expect_string(&top, "model_type", "qwen3_tts")) ||
        (st = json_sub_object(&top, "talker_config", "talker_config.", &talker)) ||
        (st = parse_talker(&talker, out)) ||
        (st = json_get_int(&top, "im_start_token_id", true, 0, 0, big, &out->im_start)) ||
        (st = json_get_int(&top, "im_end_token_id", true, 0, 0, big, &out->im_end)) ||
        (st = json_get_int(&top, "assistant_token_id", true, 0, 0, big, &out->assistant)) ||
        (st = json_get_int(&top, "tts_bos_token_id", true, 0, 0, big, &out->tts_bos)) ||
        (st = json_get_int(&top, "tts_eos_token_id", true, 0, 0, big, &out->tts_eos)) ||
        (st = json_get_int(&top, "tts_pad_token_id", true, 0, 0, big, &out->tts_pad)))
        goto done;
    if ((st = parse_model_type(&top, out))) goto done;
    const struct {
        const char *key;
        int32_t id;
    } text_ids[] = {{"im_start_token_id", out->im_start}, {"im_end_token_id", out->im_end},
                    {"assistant_token_id", out->assistant}, {"tts_bos_token_id", out->tts_bos},
                    {"tts_eos_token_id", out->tts_eos}, {"tts_pad_token_id", out->tts_pad}};
    for (size_t i = 0; i < sizeof text_ids / sizeof *text_ids; i++)
        if (text_ids[i].id >= out->text_vocab) {
            st = json_bad(&top, EMBER_ERR_FORMAT, text_ids[i].key,
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
static ember_status parse_sampling(const json_obj *o, const char *k_do, const char *prefix,
                                   tts_sampling *s)
{
    char k_t[64], k_k[64], k_p[64];
    snprintf(k_t, sizeof k_t, "%stemperature", prefix);
    snprintf(k_k, sizeof k_k, "%stop_k", prefix);
    snprintf(k_p, sizeof k_p, "%stop_p", prefix);
    ember_status st;
    if ((st = json_get_bool(o, k_do, s->do_sample, &s->do_sample)) ||
        (st = json_get_float(o, k_t, false, s->temperature, 0.0, 100.0, &s->temperature)) ||
        (st = json_get_int(o, k_k, false, s->top_k, 0, 1 << 24, &s->top_k)) ||
        (st = json_get_float(o, k_p, false, s->top_p, 0.0, 1.0, &s->top_p)))
        return st;
    if (s->do_sample && s->temperature <= 0.0f)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, k_t, "must be above 0 when sampling");
    if (s->do_sample && s->top_p <= 0.0f)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, k_p, "must be above 0 when sampling");
    return EMBER_OK;
}

ember_status tts_gen_config_parse(const char *json, size_t len, const char *label,
                                  tts_gen_config *g)
{
    cJSON *root = NULL;
    ember_status st = io_json_parse(json, len, label, "generation config", &root);
    if (st) return st;
    json_obj o = {root, label, ""};
    if (!cJSON_IsObject(root)) {
        st = ember_fail(EMBER_ERR_FORMAT, "%s: generation config must be a JSON object", label);
    } else if (!(st = parse_sampling(&o, "do_sample", "", &g->talker)) &&
               !(st = parse_sampling(&o, "subtalker_dosample", "subtalker_", &g->subtalker)) &&
               !(st = json_get_float(&o, "repetition_penalty", false, g->repetition_penalty, 1e-3,
                                1e3, &g->repetition_penalty)) &&
               !(st = json_get_int(&o, "max_new_tokens", false, g->max_new_tokens, 1, 1 << 20,
                              &g->max_new_tokens)) &&
               !(st = json_get_int(&o, "min_new_tokens", false, g->min_new_tokens, 0, 1 << 20,
                              &g->min_new_tokens))) {
        if (g->min_new_tokens > g->max_new_tokens)
            st = json_bad(&o, EMBER_ERR_UNSUPPORTED, "min_new_tokens", "must not exceed max_new_tokens");
    }
    cJSON_Delete(root);
    return st;
}
