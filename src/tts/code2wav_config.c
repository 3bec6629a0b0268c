#include "tts/code2wav_config.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "io/json_keys.h"
#include "io/json_text.h"

/* An array of 1..max positive integers (upsample rates). */
static ember_status get_rates(const json_obj *o, const char *key, int32_t max, int32_t *out,
                              int32_t *n)
{
    const cJSON *v = json_item(o, key), *e;
    if (!v) return json_bad(o, EMBER_ERR_FORMAT, key, "missing");
    if (!cJSON_IsArray(v)) return json_bad(o, EMBER_ERR_FORMAT, key, "must be an array");
    int32_t count = cJSON_GetArraySize(v);
    if (count < 1 || count > max)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, key, "must have between 1 and 8 entries");
    *n = 0;
    cJSON_ArrayForEach(e, v) {
        /* the range first: converting an out-of-range double to int is undefined */
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 1 && e->valuedouble <= 64) ||
            e->valuedouble != (double)(int32_t)e->valuedouble)
            return json_bad(o, EMBER_ERR_FORMAT, key, "entries must be integers in [1, 64]");
        out[(*n)++] = (int32_t)e->valuedouble;
    }
    return EMBER_OK;
}

static ember_status parse_decoder(const json_obj *o, c2w_config *c)
{
    tts_stack_config *t = &c->transformer;
    ember_status st;
    if ((st = json_get_int(o, "num_quantizers", true, 0, 2, C2W_MAX_QUANTIZERS, &c->n_quantizers)) ||
        (st = json_get_int(o, "codebook_size", true, 0, 1, 1 << 20, &c->codebook_size)) ||
        (st = json_get_int(o, "codebook_dim", true, 0, 2, 65536, &c->codebook_dim)) ||
        (st = json_get_int(o, "latent_dim", true, 0, 1, 65536, &c->latent)) ||
        (st = json_get_int(o, "decoder_dim", true, 0, 1, 65536, &c->decoder_dim)) ||
        (st = json_get_int(o, "num_hidden_layers", true, 0, 1, TTS_MAX_LAYERS, &t->n_layers)) ||
        (st = json_get_int(o, "hidden_size", true, 0, 1, 65536, &t->hidden)) ||
        (st = json_get_int(o, "intermediate_size", true, 0, 1, 262144, &t->intermediate)) ||
        (st = json_get_int(o, "num_attention_heads", true, 0, 1, 1024, &t->n_heads)) ||
        (st = json_get_int(o, "num_key_value_heads", false, t->n_heads, 1, 1024, &t->n_kv_heads)) ||
        (st = json_get_int(o, "head_dim", false, t->hidden / t->n_heads, 2, 1024, &t->head_dim)) ||
        (st = json_get_int(o, "max_position_embeddings", false, 8000, 1, 1 << 24,
                           &t->max_positions)) ||
        (st = json_get_float(o, "rms_norm_eps", false, 1e-5, 0.0, 1.0, &t->rms_eps)) ||
        (st = json_get_float(o, "rope_theta", false, 10000.0, 1.0, 1e12, &t->rope_theta)) ||
        (st = json_get_int(o, "sliding_window", true, 0, 2, 1 << 20, &c->sliding_window)) ||
        (st = json_expect_string(o, "hidden_act", "silu")) ||
        (st = json_expect_off(o, "attention_bias")) ||
        (st = get_rates(o, "upsample_rates", C2W_MAX_BLOCKS, c->upsample_rates, &c->n_blocks)) ||
        (st = get_rates(o, "upsampling_ratios", C2W_MAX_UPSAMPLE, c->upsampling_ratios,
                        &c->n_upsample)))
        return st;
    if (c->codebook_dim % 2)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, "codebook_dim", "must be even");
    c->vq_dim = c->codebook_dim / 2;
    if (t->n_heads % t->n_kv_heads)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, "num_key_value_heads",
                        "must divide num_attention_heads");
    if (t->head_dim % 2) return json_bad(o, EMBER_ERR_UNSUPPORTED, "head_dim", "must be even (RoPE)");
    if (c->decoder_dim % (1 << c->n_blocks))
        return json_bad(o, EMBER_ERR_UNSUPPORTED, "decoder_dim",
                        "must halve evenly once per decoder block");
    t->vocab = 0;
    t->layer_scale = true;
    t->sliding_window = c->sliding_window;
    int64_t spf = 1;
    for (int32_t i = 0; i < c->n_blocks; i++) spf *= c->upsample_rates[i];
    for (int32_t i = 0; i < c->n_upsample; i++) spf *= c->upsampling_ratios[i];
    if (spf > 1 << 16)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, "upsample_rates", "more than 65536 samples per frame");
    c->samples_per_frame = (int32_t)spf;
    return EMBER_OK;
}

ember_status c2w_config_parse(const char *json, size_t len, const char *label, c2w_config *out)
{
    cJSON *root = NULL;
    memset(out, 0, sizeof *out);
    ember_status st = io_json_parse(json, len, label, "config", &root);
    if (st) return st;
    json_obj top = {root, label, ""}, dec;
    int32_t upsample = 0;
    if (!cJSON_IsObject(root)) {
        st = ember_fail(EMBER_ERR_FORMAT, "%s: must be a JSON object", label);
    } else if (!(st = json_sub_object(&top, "decoder_config", "decoder_config.", &dec)) &&
               !(st = parse_decoder(&dec, out)) &&
               !(st = json_get_int(&top, "output_sample_rate", false, 24000, 1, 1 << 20,
                                   &out->sample_rate)) &&
               !(st = json_get_int(&top, "decode_upsample_rate", false, out->samples_per_frame, 1,
                                   1 << 20, &upsample)) &&
               upsample != out->samples_per_frame) {
        char what[128];
        snprintf(what, sizeof what, "%d, but the decoder's rates multiply to %d", upsample,
                 out->samples_per_frame);
        st = json_bad(&top, EMBER_ERR_FORMAT, "decode_upsample_rate", what);
    }
    cJSON_Delete(root);
    if (st) memset(out, 0, sizeof *out);
    return st;
}
