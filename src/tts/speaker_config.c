#include "tts/speaker_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "io/json_keys.h"
#include "io/json_text.h"
#include "tts/mel.h"

/* An integer list key; absent keeps `def` (n_def entries). All lists must
 * have the length of the first one read (*n, 0 before it). */
static ember_status int_list(const json_obj *o, const char *key, const int32_t *def, int32_t n_def,
                             int32_t lo, int32_t hi, int32_t *out, int32_t *n)
{
    const cJSON *v = json_item(o, key), *e;
    int32_t count = 0;
    if (!v) {
        memcpy(out, def, sizeof(int32_t) * (size_t)n_def);
        count = n_def;
    } else {
        if (!cJSON_IsArray(v)) return json_bad(o, EMBER_ERR_FORMAT, key, "must be a list");
        cJSON_ArrayForEach(e, v) {
            if (count == SPK_MAX_LAYERS)
                return json_bad(o, EMBER_ERR_UNSUPPORTED, key, "has too many entries");
            if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) ||
                e->valuedouble < lo || e->valuedouble > hi) {
                char what[96];
                snprintf(what, sizeof what, "must hold integers in [%d, %d]", lo, hi);
                return json_bad(o, EMBER_ERR_FORMAT, key, what);
            }
            out[count++] = (int32_t)e->valuedouble;
        }
    }
    if (*n && count != *n)
        return json_bad(o, EMBER_ERR_FORMAT, key, "must have as many entries as enc_channels");
    if (count < 3)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, key,
                        "needs at least 3 entries (first TDNN, one block, aggregation)");
    *n = count;
    return EMBER_OK;
}

/* The shapes the forward pass relies on: each SE-Res2Net block keeps its
 * width (identity residual) and splits it evenly; the aggregation takes the
 * blocks' outputs side by side. */
static ember_status check_shapes(const json_obj *o, const spk_config *c)
{
    int32_t sum = 0;
    for (int32_t b = 1; b < c->n_layers - 1; b++) {
        if (c->channels[b] != c->channels[b - 1])
            return json_bad(o, EMBER_ERR_UNSUPPORTED, "enc_channels",
                            "must keep one width through the SE-Res2Net blocks (identity residual)");
        if (c->channels[b] % c->res2net_scale)
            return json_bad(o, EMBER_ERR_UNSUPPORTED, "enc_res2net_scale",
                            "must divide the SE-Res2Net block width");
        sum += c->channels[b];
    }
    if (c->channels[c->n_layers - 1] != sum)
        return json_bad(o, EMBER_ERR_UNSUPPORTED, "enc_channels",
                        "last entry must be the sum of the SE-Res2Net block widths");
    return EMBER_OK;
}

ember_status spk_config_parse(const char *json, size_t len, const char *label, spk_config *out)
{
    static const int32_t def_channels[] = {512, 512, 512, 512, 1536}, def_kernels[] = {5, 3, 3, 3, 1},
                         def_dilations[] = {1, 2, 3, 4, 1};
    cJSON *root = NULL;
    memset(out, 0, sizeof *out);
    ember_status st = io_json_parse(json, len, label, "config", &root);
    if (st) return st;
    json_obj top = {root, label, ""}, o;
    const cJSON *type = cJSON_IsObject(root) ? json_item(&top, "tts_model_type") : NULL;
    if (!cJSON_IsObject(root)) {
        st = ember_fail(EMBER_ERR_FORMAT, "%s: config must be a JSON object", label);
        goto done;
    }
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "base") != 0) {
        st = ember_fail(EMBER_ERR_UNSUPPORTED,
                        "%s: tts_model_type is %s%s%s, not \"base\": only the Base models have a "
                        "speaker encoder (voice cloning)",
                        label, cJSON_IsString(type) ? "\"" : "",
                        cJSON_IsString(type) ? type->valuestring : "missing",
                        cJSON_IsString(type) ? "\"" : "");
        goto done;
    }
    const cJSON *sub = json_item(&top, "speaker_encoder_config");
    if (sub && !cJSON_IsObject(sub)) {
        st = json_bad(&top, EMBER_ERR_FORMAT, "speaker_encoder_config", "must be an object");
        goto done;
    }
    /* an absent object means every class default */
    cJSON *empty = sub ? NULL : cJSON_CreateObject();
    o = (json_obj){sub ? sub : empty, label, "speaker_encoder_config."};
    const int32_t nd = (int32_t)(sizeof def_channels / sizeof *def_channels);
    int32_t n = 0;
    if (!(st = json_get_int(&o, "mel_dim", false, MEL_BINS, MEL_BINS, MEL_BINS, &out->mel_dim)) &&
        !(st = json_get_int(&o, "enc_dim", false, 1024, 1, 65536, &out->enc_dim)) &&
        !(st = int_list(&o, "enc_channels", def_channels, nd, 1, 65536, out->channels, &n)) &&
        !(st = int_list(&o, "enc_kernel_sizes", def_kernels, nd, 1, 64, out->kernels, &n)) &&
        !(st = int_list(&o, "enc_dilations", def_dilations, nd, 1, 64, out->dilations, &n)) &&
        !(st = json_get_int(&o, "enc_attention_channels", false, 128, 1, 65536,
                            &out->attention_channels)) &&
        !(st = json_get_int(&o, "enc_res2net_scale", false, 8, 2, SPK_MAX_SCALE,
                            &out->res2net_scale)) &&
        !(st = json_get_int(&o, "enc_se_channels", false, 128, 1, 65536, &out->se_channels)) &&
        !(st = json_get_int(&o, "sample_rate", false, MEL_SAMPLE_RATE, MEL_SAMPLE_RATE,
                            MEL_SAMPLE_RATE, &out->sample_rate))) {
        out->n_layers = n;
        st = check_shapes(&o, out);
    }
    cJSON_Delete(empty);
done:
    cJSON_Delete(root);
    if (st) memset(out, 0, sizeof *out);
    return st;
}
