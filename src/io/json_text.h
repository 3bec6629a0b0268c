/* Parsing JSON held in memory that is not NUL-terminated (a safetensors
 * header, config.json, an index file), with errors that name the file. */
#ifndef EMBER_IO_JSON_TEXT_H
#define EMBER_IO_JSON_TEXT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "ember.h"

/* Parses exactly `len` bytes: one JSON value, then only whitespace. `label`
 * names the file and `what` the part of it ("header", "config") in errors.
 * The text is copied into a NUL-terminated buffer first so the parser can
 * never read past `len`. On success the caller owns *out (cJSON_Delete). */
ember_status io_json_parse(const char *text, size_t len, const char *label, const char *what,
                           cJSON **out);

#endif
