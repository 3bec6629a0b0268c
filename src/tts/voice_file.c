#include "tts/voice_file.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/checksum.h"
#include "base/status.h"

static const char MAGIC[8] = {'E', 'M', 'B', 'R', 'V', 'O', 'I', 'C'};

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

/* n 32-bit values (floats or ints) little-endian, whatever the host's order */
static void put_words(uint8_t *p, const void *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t w;
        memcpy(&w, (const uint8_t *)v + 4 * i, 4);
        put_u32(p + 4 * i, w);
    }
}

static void get_words(void *v, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const uint32_t w = get_u32(p + 4 * i);
        memcpy((uint8_t *)v + 4 * i, &w, 4);
    }
}

ember_status voice_serialize(const voice_data *v, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    cJSON *o = cJSON_CreateObject();
    const int ok = o && cJSON_AddNumberToObject(o, "xvector_dim", v->xvector_dim) &&
                   cJSON_AddNumberToObject(o, "frames", v->n_frames) &&
                   cJSON_AddNumberToObject(o, "codebooks", v->codebooks) &&
                   (v->ref_text ? cJSON_AddStringToObject(o, "ref_text", v->ref_text) != NULL
                                : cJSON_AddNullToObject(o, "ref_text") != NULL) &&
                   cJSON_AddStringToObject(o, "model", v->model ? v->model : "");
    char *json = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!json) return ember_fail(EMBER_ERR_NO_MEMORY, "voice: out of memory");
    const size_t n_json = strlen(json), n_codes = (size_t)v->n_frames * (size_t)v->codebooks;
    const size_t total = 16 + n_json + 4 * ((size_t)v->xvector_dim + n_codes) + 8;
    uint8_t *b = malloc(total);
    if (!b) {
        free(json);
        return ember_fail(EMBER_ERR_NO_MEMORY, "voice: out of memory");
    }
    memcpy(b, MAGIC, 8);
    put_u32(b + 8, VOICE_FILE_VERSION);
    put_u32(b + 12, (uint32_t)n_json);
    memcpy(b + 16, json, n_json);
    free(json);
    uint8_t *p = b + 16 + n_json;
    put_words(p, v->xvector, (size_t)v->xvector_dim);
    p += 4 * (size_t)v->xvector_dim;
    if (n_codes) put_words(p, v->codes, n_codes);
    p += 4 * n_codes;
    const uint64_t sum = cksum64_of(b, (size_t)(p - b));
    put_u32(p, (uint32_t)sum);
    put_u32(p + 4, (uint32_t)(sum >> 32));
    *out = b;
    *len = total;
    return EMBER_OK;
}

void voice_data_free(voice_data *v)
{
    free(v->xvector);
    free(v->codes);
    free(v->ref_text);
    free(v->model);
    memset(v, 0, sizeof *v);
}

static char *dup_string(const cJSON *s)
{
    return cJSON_IsString(s) ? strdup(s->valuestring) : NULL;
}

/* The JSON header's sizes, each an integer in range. */
static int header_int(const cJSON *o, const char *key, int32_t lo, int32_t hi, int32_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    /* the range first: a value outside int32_t must not reach the cast */
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
        v->valuedouble != floor(v->valuedouble))
        return -1;
    *out = (int32_t)v->valuedouble;
    return 0;
}

ember_status voice_parse(const uint8_t *data, size_t len, const char *label, voice_data *out)
{
    memset(out, 0, sizeof *out);
    if (len < 24 || memcmp(data, MAGIC, 8))
        return ember_fail(EMBER_ERR_FORMAT, "%s: not an ember voice file (no EMBRVOIC header)", label);
    const uint32_t version = get_u32(data + 8), n_json = get_u32(data + 12);
    if (version != VOICE_FILE_VERSION)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: voice file version %u; this ember reads version %d", label,
                          version, VOICE_FILE_VERSION);
    if (get_u64(data + len - 8) != cksum64_of(data, len - 8))
        return ember_fail(EMBER_ERR_FORMAT, "%s: checksum mismatch: the voice file is truncated or corrupt", label);
    if (n_json > len - 24) return ember_fail(EMBER_ERR_FORMAT, "%s: the header runs past the end", label);
    cJSON *o = cJSON_ParseWithLength((const char *)data + 16, n_json);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(o, "ref_text");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(o, "model");
    voice_data v = {0};
    int bad = !cJSON_IsObject(o) || header_int(o, "xvector_dim", 1, VOICE_MAX_DIM, &v.xvector_dim) ||
              header_int(o, "frames", 0, VOICE_MAX_FRAMES, &v.n_frames) ||
              header_int(o, "codebooks", 0, VOICE_MAX_CODEBOOKS, &v.codebooks) ||
              !(cJSON_IsNull(text) || cJSON_IsString(text)) || !cJSON_IsString(model);
    const size_t n_codes = (size_t)v.n_frames * (size_t)v.codebooks;
    if (!bad && 16 + (size_t)n_json + 4 * ((size_t)v.xvector_dim + n_codes) + 8 != len) bad = 2;
    if (!bad) {
        v.xvector = malloc(4 * (size_t)v.xvector_dim);
        v.codes = n_codes ? malloc(4 * n_codes) : NULL;
        v.ref_text = dup_string(text);
        v.model = dup_string(model);
        if (!v.xvector || (n_codes && !v.codes) || (cJSON_IsString(text) && !v.ref_text) || !v.model) bad = 3;
    }
    cJSON_Delete(o);
    if (bad) {
        voice_data_free(&v);
        if (bad == 3) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", label);
        return ember_fail(EMBER_ERR_FORMAT, "%s: %s", label,
                          bad == 2 ? "the sizes in the header do not add up to the file's length"
                                   : "bad header (xvector_dim, frames, codebooks, ref_text, model)");
    }
    const uint8_t *p = data + 16 + n_json;
    get_words(v.xvector, p, (size_t)v.xvector_dim);
    if (n_codes) get_words(v.codes, p + 4 * (size_t)v.xvector_dim, n_codes);
    for (int32_t i = 0; i < v.xvector_dim; i++)
        if (!(v.xvector[i] == v.xvector[i]) || v.xvector[i] > 1e30f || v.xvector[i] < -1e30f) {
            voice_data_free(&v);
            return ember_fail(EMBER_ERR_FORMAT, "%s: x-vector value %d is not a finite number", label, i);
        }
    for (size_t i = 0; i < n_codes; i++)
        if (v.codes[i] < 0) {
            voice_data_free(&v);
            return ember_fail(EMBER_ERR_FORMAT, "%s: reference code %zu is negative", label, i);
        }
    *out = v;
    return EMBER_OK;
}
