/* Reading typed keys of a parsed config object (config.json and friends):
 * integers and floats with ranges, booleans, expected strings, nested
 * objects. Every error names the file and the dotted key path
 * ("config.json: key 'decoder_config.hidden_size': missing"). */
#ifndef EMBER_IO_JSON_KEYS_H
#define EMBER_IO_JSON_KEYS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "ember.h"

/* An object being read and the dotted path that names it in messages. */
typedef struct json_obj {
    const cJSON *j;
    const char *label; /* the file */
    const char *path;  /* "" at the top level, else "talker_config." etc. */
} json_obj;

ember_status json_bad(const json_obj *o, ember_status st, const char *key, const char *what);
/* The value of key, NULL when absent or null. */
const cJSON *json_item(const json_obj *o, const char *key);
/* An integer in [lo, hi]; a missing key takes def unless required. */
ember_status json_get_int(const json_obj *o, const char *key, bool required, int64_t def,
                          int64_t lo, int64_t hi, int32_t *out);
ember_status json_get_float(const json_obj *o, const char *key, bool required, double def,
                            double lo, double hi, float *out);
ember_status json_get_bool(const json_obj *o, const char *key, bool def, bool *out);
/* A key that, when present, must be the string `want`. */
ember_status json_expect_string(const json_obj *o, const char *key, const char *want);
/* A key that, when present, must be false (a feature ember does not run). */
ember_status json_expect_off(const json_obj *o, const char *key);
/* A required nested object; path is its dotted prefix ("decoder_config."). */
ember_status json_sub_object(const json_obj *o, const char *key, const char *path, json_obj *out);

#endif
