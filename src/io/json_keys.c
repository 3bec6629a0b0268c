/* Typed keys of a JSON config object, with errors naming the file and the
 * dotted key path. */
#include "io/json_keys.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"

ember_status json_bad(const json_obj *o, ember_status st, const char *key, const char *what)
{
    return ember_fail(st, "%s: key '%s%s': %s", o->label, o->path, key, what);
}

const cJSON *json_item(const json_obj *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o->j, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* An integer in [lo, hi]; a missing key takes def unless required. */
ember_status json_get_int(const json_obj *o, const char *key, bool required, int64_t def,
                          int64_t lo, int64_t hi, int32_t *out)
{
    const cJSON *v = json_item(o, key);
    char what[128];
    if (!v) {
        if (required) return json_bad(o, EMBER_ERR_FORMAT, key, "missing");
        *out = (int32_t)def;
        return EMBER_OK;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
        return json_bad(o, EMBER_ERR_FORMAT, key, "must be an integer");
    if (v->valuedouble < (double)lo || v->valuedouble > (double)hi) {
        snprintf(what, sizeof what, "value %.17g is outside the supported range [%lld, %lld]",
                 v->valuedouble, (long long)lo, (long long)hi);
        return json_bad(o, EMBER_ERR_UNSUPPORTED, key, what);
    }
    *out = (int32_t)v->valuedouble;
    return EMBER_OK;
}

ember_status json_get_float(const json_obj *o, const char *key, bool required, double def,
                            double lo, double hi, float *out)
{
    const cJSON *v = json_item(o, key);
    char what[128];
    if (!v) {
        if (required) return json_bad(o, EMBER_ERR_FORMAT, key, "missing");
        *out = (float)def;
        return EMBER_OK;
    }
    if (!cJSON_IsNumber(v)) return json_bad(o, EMBER_ERR_FORMAT, key, "must be a number");
    if (!(v->valuedouble >= lo && v->valuedouble <= hi)) {
        snprintf(what, sizeof what, "value %.17g is outside the supported range [%g, %g]",
                 v->valuedouble, lo, hi);
        return json_bad(o, EMBER_ERR_UNSUPPORTED, key, what);
    }
    *out = (float)v->valuedouble;
    return EMBER_OK;
}

ember_status json_get_bool(const json_obj *o, const char *key, bool def, bool *out)
{
    const cJSON *v = json_item(o, key);
    if (!v) {
        *out = def;
        return EMBER_OK;
    }
    if (!cJSON_IsBool(v)) return json_bad(o, EMBER_ERR_FORMAT, key, "must be true or false");
    *out = cJSON_IsTrue(v);
    return EMBER_OK;
}

/* A key that, when present, must be the string `want`. */
ember_status json_expect_string(const json_obj *o, const char *key, const char *want)
{
    const cJSON *v = json_item(o, key);
    char what[128];
    if (!v) return EMBER_OK;
    if (!cJSON_IsString(v)) return json_bad(o, EMBER_ERR_FORMAT, key, "must be a string");
    if (strcmp(v->valuestring, want)) {
        snprintf(what, sizeof what, "'%.60s' is not supported (only '%s')", v->valuestring, want);
        return json_bad(o, EMBER_ERR_UNSUPPORTED, key, what);
    }
    return EMBER_OK;
}

/* A key that, when present, must be false (a feature ember does not run). */
ember_status json_expect_off(const json_obj *o, const char *key)
{
    bool on = false;
    ember_status st = json_get_bool(o, key, false, &on);
    if (st) return st;
    return on ? json_bad(o, EMBER_ERR_UNSUPPORTED, key, "must be false: not supported") : EMBER_OK;
}

ember_status json_sub_object(const json_obj *o, const char *key, const char *path,
                             json_obj *out)
{
    const cJSON *v = json_item(o, key);
    if (!v) return json_bad(o, EMBER_ERR_FORMAT, key, "missing");
    if (!cJSON_IsObject(v)) return json_bad(o, EMBER_ERR_FORMAT, key, "must be an object");
    *out = (json_obj){v, o->label, path};
    return EMBER_OK;
}
