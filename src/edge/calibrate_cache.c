/* The calibration cache: SHA-1, the hardware fingerprint, the cache path and
 * the cache file (JSON; untrusted when read back: parsed strictly). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"
#include "edge/calibrate.h"
#include "edge/probe.h"
#include "io/json_keys.h"
#include "io/json_text.h"
#include "io/read_file.h"
#include "io/write_file.h"

/* ---- SHA-1 (FIPS 180-4, section 6.1) ---- */

static uint32_t rol32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
    uint32_t w[80];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 | (uint32_t)p[4 * t + 2] << 8 | p[4 * t + 3];
    for (int t = 16; t < 80; t++) w[t] = rol32(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int t = 0; t < 80; t++) {
        uint32_t f, k;
        if (t < 20) f = (b & c) | (~b & d), k = 0x5a827999u;
        else if (t < 40) f = b ^ c ^ d, k = 0x6ed9eba1u;
        else if (t < 60) f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdcu;
        else f = b ^ c ^ d, k = 0xca62c1d6u;
        uint32_t tmp = rol32(a, 5) + f + e + k + w[t];
        e = d, d = c, c = rol32(b, 30), b = a, a = tmp;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

void edge_sha1(const void *data, size_t len, uint8_t digest[20])
{
    uint32_t h[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u};
    const uint8_t *p = data;
    size_t whole = len / 64 * 64;
    for (size_t off = 0; off < whole; off += 64) sha1_block(h, p + off);
    /* the tail, the 0x80 byte, zeros, the bit length big-endian: one or two blocks */
    uint8_t tail[128] = {0};
    size_t rest = len - whole, n_tail = rest + 9 <= 64 ? 64 : 128;
    if (rest) memcpy(tail, p + whole, rest);
    tail[rest] = 0x80;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) tail[n_tail - 1 - i] = (uint8_t)(bits >> (8 * i));
    for (size_t off = 0; off < n_tail; off += 64) sha1_block(h, tail + off);
    for (int i = 0; i < 20; i++) digest[i] = (uint8_t)(h[i / 4] >> (24 - 8 * (i % 4)));
}

/* ---- the fingerprint key, as Python's json.dumps writes it ---- */

/* One code point from UTF-8; an invalid sequence reads as U+FFFD, one byte. */
static uint32_t next_code_point(const unsigned char **s)
{
    const unsigned char *p = *s;
    uint32_t cp;
    int extra;
    if (p[0] < 0x80) cp = p[0], extra = 0;
    else if ((p[0] & 0xe0) == 0xc0) cp = p[0] & 0x1fu, extra = 1;
    else if ((p[0] & 0xf0) == 0xe0) cp = p[0] & 0x0fu, extra = 2;
    else if ((p[0] & 0xf8) == 0xf0) cp = p[0] & 0x07u, extra = 3;
    else goto bad;
    for (int i = 1; i <= extra; i++) {
        if ((p[i] & 0xc0) != 0x80) goto bad;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    static const uint32_t least[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < least[extra] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) goto bad;
    *s = p + 1 + extra;
    return cp;
bad:
    *s = p + 1;
    return 0xfffd;
}

/* A JSON string with ensure_ascii: ", \ and the short escapes Python uses,
 * other controls and everything past ASCII as \uXXXX (surrogate pairs above
 * U+FFFF). */
static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        uint32_t cp = next_code_point(&p);
        switch (cp) {
        case '"': fputs("\\\"", f); continue;
        case '\\': fputs("\\\\", f); continue;
        case '\n': fputs("\\n", f); continue;
        case '\r': fputs("\\r", f); continue;
        case '\t': fputs("\\t", f); continue;
        case '\b': fputs("\\b", f); continue;
        case '\f': fputs("\\f", f); continue;
        default: break;
        }
        if (cp >= 0x20 && cp < 0x7f) {
            fputc((int)cp, f);
        } else if (cp < 0x10000) {
            fprintf(f, "\\u%04x", cp);
        } else {
            uint32_t v = cp - 0x10000;
            fprintf(f, "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
        }
    }
    fputc('"', f);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

ember_status edge_fingerprint_key(const edge_hw *hw, const char *model, char **out)
{
    *out = NULL;
    if (!hw || !model) return ember_fail(EMBER_ERR_INVALID_ARG, "fingerprint: NULL profile or model");
    const char *flags[EDGE_N_FLAGS];
    int n_flags = 0;
    for (int f = 0; f < EDGE_N_FLAGS; f++)
        if (edge_has(hw, (edge_flag)f)) flags[n_flags++] = edge_flag_name((edge_flag)f);
    qsort(flags, (size_t)n_flags, sizeof flags[0], cmp_str); /* Python's sorted(): code point order */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return ember_fail(EMBER_ERR_NO_MEMORY, "fingerprint: out of memory");
    /* the keys in sorted order: class, cores, cpu, flags, gpu, gpu_mem, model */
    fputs("{\"class\": ", f);
    put_json_string(f, edge_class_name(hw->cls));
    fprintf(f, ", \"cores\": %d, \"cpu\": ", (int)hw->n_physical);
    put_json_string(f, hw->cpu_model);
    fputs(", \"flags\": [", f);
    for (int i = 0; i < n_flags; i++) {
        if (i) fputs(", ", f);
        put_json_string(f, flags[i]);
    }
    fputs("], \"gpu\": ", f);
    if (hw->n_gpus > 0) put_json_string(f, hw->gpus[0].name);
    else fputs("null", f);
    /* Python's // floors; memory sizes are never negative here */
    int64_t mem = hw->n_gpus > 0 && hw->gpus[0].mem_bytes > 0 ? hw->gpus[0].mem_bytes : 0;
    fprintf(f, ", \"gpu_mem\": %lld, \"model\": ", (long long)(mem / (256LL << 20)));
    put_json_string(f, model);
    fputc('}', f);
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed || !text) {
        free(text);
        return ember_fail(EMBER_ERR_NO_MEMORY, "fingerprint: out of memory");
    }
    *out = text;
    return EMBER_OK;
}

ember_status edge_fingerprint(const edge_hw *hw, const char *model, char out[17])
{
    char *key;
    out[0] = '\0';
    ember_status st = edge_fingerprint_key(hw, model, &key);
    if (st) return st;
    uint8_t d[20];
    edge_sha1(key, strlen(key), d);
    free(key);
    for (int i = 0; i < 8; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
    return EMBER_OK;
}

ember_status edge_calibration_cache_path(const char *xdg_cache_home, const char *home, const char *fingerprint,
                                         char *buf, size_t cap)
{
    if (!fingerprint || !fingerprint[0] || strchr(fingerprint, '/'))
        return ember_fail(EMBER_ERR_INVALID_ARG, "calibration cache: bad fingerprint '%s'",
                          fingerprint ? fingerprint : "(null)");
    int n;
    if (xdg_cache_home && xdg_cache_home[0] == '/') /* the XDG rule: relative values are ignored */
        n = snprintf(buf, cap, "%s/ember/%s.json", xdg_cache_home, fingerprint);
    else if (home && home[0])
        n = snprintf(buf, cap, "%s/.cache/ember/%s.json", home, fingerprint);
    else
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "calibration cache: neither XDG_CACHE_HOME (absolute) nor HOME is set");
    if (n < 0 || (size_t)n >= cap)
        return ember_fail(EMBER_ERR_INVALID_ARG, "calibration cache: the path is longer than %zu bytes", cap);
    return EMBER_OK;
}

ember_status edge_calibration_path_for(const char *model_dir, char *path, size_t cap)
{
    const char *base = strrchr(model_dir, '/');
    base = base && base[1] ? base + 1 : model_dir;
    edge_hw hw;
    char fp[17];
    ember_status st = edge_hw_detect(NULL, getenv("EMBER_HW_PROFILE"), &hw);
    if (!st) st = edge_fingerprint(&hw, base, fp);
    if (!st) st = edge_calibration_cache_path(getenv("XDG_CACHE_HOME"), getenv("HOME"), fp, path, cap);
    return st;
}

/* ---- the file ---- */

#define CACHE_SCHEMA 1

ember_status edge_calibration_to_text(const edge_calibration *c, char **out)
{
    *out = NULL;
    cJSON *o = cJSON_CreateObject(), *ramp = NULL;
    bool ok = o && cJSON_AddNumberToObject(o, "schema", CACHE_SCHEMA) &&
              cJSON_AddBoolToObject(o, "measured", c->measured) &&
              cJSON_AddNumberToObject(o, "rate_frames_per_s", c->rate_fps) &&
              cJSON_AddNumberToObject(o, "rtf", c->rtf) &&
              cJSON_AddNumberToObject(o, "ms_per_frame", c->ms_per_frame) &&
              cJSON_AddNumberToObject(o, "ttfa_ms", c->ttfa_ms) &&
              cJSON_AddNumberToObject(o, "chunk_overhead_ms", c->chunk_overhead_ms) &&
              cJSON_AddNumberToObject(o, "slope_ms_per_frame", c->slope_ms_per_frame) &&
              cJSON_AddNumberToObject(o, "lead_ms", c->lead_ms) &&
              cJSON_AddNumberToObject(o, "min_frames", c->min_frames) &&
              cJSON_AddNumberToObject(o, "margin_ms", c->margin_ms) &&
              cJSON_AddBoolToObject(o, "adaptive", c->adaptive) &&
              cJSON_AddBoolToObject(o, "planned", c->planned) &&
              (ramp = cJSON_AddArrayToObject(o, "ramp")) != NULL;
    for (int32_t i = 0; ok && i < c->n_ramp; i++) ok = cJSON_AddItemToArray(ramp, cJSON_CreateNumber(c->ramp[i]));
    char *text = ok ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (!text) return ember_fail(EMBER_ERR_NO_MEMORY, "calibration: out of memory");
    *out = text;
    return EMBER_OK;
}

/* A required finite number in [lo, hi]. */
static ember_status get_number(const json_obj *o, const char *key, double lo, double hi, double *out)
{
    const cJSON *v = json_item(o, key);
    if (!v) return json_bad(o, EMBER_ERR_FORMAT, key, "missing");
    if (!cJSON_IsNumber(v)) return json_bad(o, EMBER_ERR_FORMAT, key, "not a number");
    if (!isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return json_bad(o, EMBER_ERR_FORMAT, key, "out of range");
    *out = v->valuedouble;
    return EMBER_OK;
}

static ember_status get_flag(const json_obj *o, const char *key, bool *out)
{
    const cJSON *v = json_item(o, key);
    if (!v) return json_bad(o, EMBER_ERR_FORMAT, key, "missing");
    if (!cJSON_IsBool(v)) return json_bad(o, EMBER_ERR_FORMAT, key, "not true or false");
    *out = cJSON_IsTrue(v);
    return EMBER_OK;
}

static ember_status parse_ramp(const json_obj *o, edge_calibration *c)
{
    const cJSON *r = json_item(o, "ramp");
    if (!r) return json_bad(o, EMBER_ERR_FORMAT, "ramp", "missing");
    int n = cJSON_IsArray(r) ? cJSON_GetArraySize(r) : -1;
    if (n < 1 || n > EDGE_CAL_MAX_RAMP)
        return json_bad(o, EMBER_ERR_FORMAT, "ramp", "not a list of 1 to 32 chunk sizes");
    c->n_ramp = 0;
    for (const cJSON *v = r->child; v; v = v->next) {
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1 ||
            v->valuedouble > EDGE_CAL_MAX_FRAMES)
            return json_bad(o, EMBER_ERR_FORMAT, "ramp", "holds a size that is not an integer in 1..1000");
        c->ramp[c->n_ramp++] = (int32_t)v->valuedouble;
    }
    return EMBER_OK;
}

ember_status edge_calibration_parse(const char *text, size_t len, const char *label, edge_calibration *out)
{
    edge_calibration_default(out);
    cJSON *root = NULL;
    ember_status st = io_json_parse(text, len, label, "calibration", &root);
    if (st) return st;
    json_obj o = {root, label, ""};
    edge_calibration c;
    memset(&c, 0, sizeof c);
    double schema = 0;
    if (!cJSON_IsObject(root)) st = ember_fail(EMBER_ERR_FORMAT, "%s: the calibration is not a JSON object", label);
    if (!st) st = get_number(&o, "schema", CACHE_SCHEMA, CACHE_SCHEMA, &schema);
    if (!st) st = get_flag(&o, "measured", &c.measured);
    if (!st) st = get_number(&o, "rate_frames_per_s", 0, 1e9, &c.rate_fps);
    if (!st) st = get_number(&o, "rtf", 0, 1e9, &c.rtf);
    if (!st) st = get_number(&o, "ms_per_frame", 0, 1e9, &c.ms_per_frame);
    if (!st) st = get_number(&o, "ttfa_ms", 0, 1e12, &c.ttfa_ms);
    if (!st) st = get_number(&o, "chunk_overhead_ms", 0, 1e9, &c.chunk_overhead_ms);
    if (!st) st = get_number(&o, "slope_ms_per_frame", 0, 1e9, &c.slope_ms_per_frame);
    if (!st) st = get_number(&o, "lead_ms", 0, 1e12, &c.lead_ms);
    if (!st) st = json_get_int(&o, "min_frames", true, 0, 1, EDGE_CAL_MAX_FRAMES, &c.min_frames);
    if (!st) st = get_number(&o, "margin_ms", 0, 1e6, &c.margin_ms);
    if (!st) st = get_flag(&o, "adaptive", &c.adaptive);
    if (!st) st = get_flag(&o, "planned", &c.planned);
    if (!st) st = parse_ramp(&o, &c);
    cJSON_Delete(root);
    if (st) return st;
    *out = c;
    return EMBER_OK;
}

ember_status edge_calibration_save(const char *path, const edge_calibration *c)
{
    if (!path || !c) return ember_fail(EMBER_ERR_INVALID_ARG, "calibration save: NULL argument");
    const char *slash = strrchr(path, '/');
    ember_status st = EMBER_OK;
    if (slash && slash != path) {
        size_t n = (size_t)(slash - path);
        char *dir = malloc(n + 1);
        if (!dir) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
        memcpy(dir, path, n);
        dir[n] = '\0';
        st = io_make_dirs(dir);
        free(dir);
    }
    char *text = NULL;
    if (!st) st = edge_calibration_to_text(c, &text);
    if (!st) st = io_write_file_atomic(path, text, strlen(text));
    free(text);
    return st;
}

ember_status edge_calibration_load(const char *path, edge_calibration *out, bool *found)
{
    *found = false;
    edge_calibration_default(out);
    if (!path) return ember_fail(EMBER_ERR_INVALID_ARG, "calibration load: NULL path");
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT) return EMBER_OK;
    char *text = NULL;
    size_t len = 0;
    ember_status st = io_read_text_file(path, 1 << 16, &text, &len);
    if (!st) st = edge_calibration_parse(text, len, path, out);
    free(text);
    if (st) {
        edge_calibration_default(out);
        return ember_fail_prefix(st, "calibration cache (delete it to recalibrate)");
    }
    *found = true;
    return EMBER_OK;
}
