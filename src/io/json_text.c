#include "io/json_text.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"

static int is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

ember_status io_json_parse(const char *text, size_t len, const char *label, const char *what,
                           cJSON **out)
{
    const char *end = NULL;
    *out = NULL;
    if (len == 0)
        return ember_fail(EMBER_ERR_FORMAT, "%s: %s is empty, not valid JSON", label, what);
    char *copy = malloc(len + 1);
    if (!copy)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory reading the %s (%zu bytes)",
                          label, what, len);
    memcpy(copy, text, len);
    copy[len] = '\0';
    cJSON *root = cJSON_ParseWithLengthOpts(copy, len, &end, 0);
    if (!root) {
        size_t at = (end && end >= copy && end <= copy + len) ? (size_t)(end - copy) : 0;
        free(copy);
        return ember_fail(EMBER_ERR_FORMAT, "%s: %s is not valid JSON (error near byte %zu)",
                          label, what, at);
    }
    for (const char *p = end; p && p < copy + len; p++) {
        if (!is_json_space(*p)) {
            size_t at = (size_t)(p - copy);
            cJSON_Delete(root);
            free(copy);
            return ember_fail(EMBER_ERR_FORMAT,
                              "%s: %s has trailing bytes after the JSON value (at byte %zu)",
                              label, what, at);
        }
    }
    free(copy);
    *out = root;
    return EMBER_OK;
}
