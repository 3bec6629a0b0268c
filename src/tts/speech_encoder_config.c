/* speech_tokenizer/config.json's encoder_config (a MimiConfig) and the top
 * level keys of the encoding path; what the encoder cannot run is refused
 * naming its key. */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "base/status.h"
#include "io/json_keys.h"
#include "io/json_text.h"
#include "tts/speech_encoder.h"

static ember_status parse_strides(const json_obj *o, se_config *c)
{
    const cJSON *v = json_item(o, "upsampling_ratios"), *e;
    int32_t r[SE_MAX_STAGES], n = 0;
    if (!cJSON_IsArray(v)) return json_bad(o, EMBER_ERR_FORMAT, "upsampling_ratios", "must be a list");
    cJSON_ArrayForEach(e, v) {
        if (n == SE_MAX_STAGES)
            return json_bad(o, EMBER_ERR_UNSUPPORTED, "upsampling_ratios", "has too many entries");
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 1 && e->valuedouble <= 64) ||
            e->valuedouble != floor(e->valuedouble))
            return json_bad(o, EMBER_ERR_FORMAT, "upsampling_ratios", "must hold integers in [1, 64]");
        r[n++] = (int32_t)e->valuedouble;
    }
    if (n == 0) return json_bad(o, EMBER_ERR_FORMAT, "upsampling_ratios", "is empty");
    c->n_stages = n;
    for (int32_t i = 0; i < n; i++) c->strides[i] = r[n - 1 - i]; /* the encoder runs them reversed */
    return EMBER_OK;
}

static ember_status parse_encoder(const json_obj *o, se_config *c)
{
    ember_status st;
    int32_t one, residual_layers, growth, rate;
    float frame_rate;
    if ((st = json_get_int(o, "num_filters", true, 0, 1, 65536, &c->n_filters)) ||
        (st = json_get_int(o, "hidden_size", true, 0, 1, 65536, &c->hidden)) ||
        (st = json_get_int(o, "intermediate_size", true, 0, 1, 262144, &c->intermediate)) ||
        (st = json_get_int(o, "num_hidden_layers", true, 0, 0, 256, &c->n_layers)) ||
        (st = json_get_int(o, "num_attention_heads", true, 0, 1, 1024, &c->n_heads)) ||
        (st = json_get_int(o, "num_key_value_heads", false, c->n_heads, 1, 1024, &c->n_kv_heads)) ||
        (st = json_get_int(o, "head_dim", false, c->hidden / c->n_heads, 2, 1024, &c->head_dim)) ||
        (st = json_get_int(o, "kernel_size", true, 0, 1, 64, &c->kernel)) ||
        (st = json_get_int(o, "last_kernel_size", true, 0, 1, 64, &c->last_kernel)) ||
        (st = json_get_int(o, "residual_kernel_size", true, 0, 1, 64, &c->residual_kernel)) ||
        (st = json_get_int(o, "compress", true, 0, 1, 64, &c->compress)) ||
        (st = json_get_int(o, "num_residual_layers", true, 1, 1, 1, &residual_layers)) ||
        (st = json_get_int(o, "dilation_growth_rate", false, 2, 1, 64, &growth)) ||
        (st = json_get_int(o, "audio_channels", false, 1, 1, 1, &one)) ||
        (st = json_get_int(o, "codebook_size", true, 0, 2, 1 << 20, &c->codebook_size)) ||
        (st = json_get_int(o, "codebook_dim", true, 0, 1, 65536, &c->codebook_dim)) ||
        (st = json_get_int(o, "vector_quantization_hidden_dimension", true, 0, 1, 65536,
                           &c->vq_hidden)) ||
        (st = json_get_int(o, "num_quantizers", true, 0, 2, 1024, &c->n_quantizers)) ||
        (st = json_get_int(o, "num_semantic_quantizers", false, 1, 1, 1, &c->n_semantic)) ||
        (st = json_get_int(o, "sampling_rate", false, 24000, 24000, 24000, &rate)) ||
        (st = json_get_float(o, "norm_eps", false, 1e-5, 0.0, 1.0, &c->norm_eps)) ||
        (st = json_get_float(o, "rope_theta", false, 10000.0, 1.0, 1e12, &c->rope_theta)) ||
        (st = json_get_float(o, "_frame_rate", true, 0, 0.01, 1e6, &frame_rate)) ||
        (st = json_expect_string(o, "hidden_act", "gelu")) ||
        (st = json_expect_string(o, "pad_mode", "constant")) ||
        (st = json_expect_off(o, "use_conv_shortcut")) || (st = json_expect_off(o, "attention_bias")) ||
        (st = parse_strides(o, c)))
        return st;
    if (c->n_filters % c->compress || c->n_heads % c->n_kv_heads)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, "compress", "must divide num_filters (and kv heads the heads)");
    if (c->head_dim % 2) return json_bad(o, EMBER_ERR_UNSUPPORTED, "head_dim", "must be even (RoPE)");
    if (c->vq_hidden != c->codebook_dim)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, "vector_quantization_hidden_dimension",
                        "must equal codebook_dim");
    int64_t hop = 1;
    for (int32_t i = 0; i < c->n_stages; i++) hop *= c->strides[i];
    /* the downsample conv halves the SEANet rate: k 4, stride 2 */
    if (fabs(24000.0 / (double)hop - 2.0 * frame_rate) > 1e-6 * frame_rate)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, "_frame_rate",
                        "must be half the SEANet frame rate (sampling_rate / prod(upsampling_ratios))");
    c->samples_per_frame = (int32_t)(2 * hop);
    return EMBER_OK;
}

ember_status se_config_parse(const char *json, size_t len, const char *label, se_config *out)
{
    cJSON *root = NULL;
    memset(out, 0, sizeof *out);
    ember_status st = io_json_parse(json, len, label, "config", &root);
    if (st) return st;
    json_obj top = {root, label, ""}, enc;
    int32_t rate;
    if (!cJSON_IsObject(root))
        st = ember_fail(EMBER_ERR_FORMAT, "%s: config must be a JSON object", label);
    else if (!(st = json_sub_object(&top, "encoder_config", "encoder_config.", &enc)) &&
             !(st = parse_encoder(&enc, out)) &&
             !(st = json_get_int(&top, "encoder_valid_num_quantizers", true, 0, 1, SE_MAX_CODES,
                                 &out->n_codes)) &&
             !(st = json_get_int(&top, "encode_downsample_rate", false, out->samples_per_frame,
                                 out->samples_per_frame, out->samples_per_frame, &rate)) &&
             !(st = json_get_int(&top, "input_sample_rate", false, 24000, 24000, 24000, &rate))) {
        if (out->n_codes > out->n_quantizers)
            st = json_bad(&top, EMBER_ERR_FORMAT, "encoder_valid_num_quantizers",
                          "must not exceed encoder_config.num_quantizers");
    }
    cJSON_Delete(root);
    if (st) memset(out, 0, sizeof *out);
    return st;
}
