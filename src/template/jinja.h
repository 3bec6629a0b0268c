/* Chat templates: a Jinja2-subset interpreter whose output matches
 * @huggingface/jinja (the engine transformers.js uses) byte for byte, so a
 * conversation renders to exactly the prompt the model's own template makes.
 *
 * ej_parse compiles the source once (whitespace control as transformers.js
 * configures it: trim_blocks and lstrip_blocks on). Syntax errors and
 * constructs the interpreter does not know fail here with
 * "template:LINE:COL: ...". ej_render evaluates against a JSON context;
 * runtime errors (raise_exception, a bad operand, too deep recursion, too
 * much output) fail with a message and leave nothing allocated. A parsed
 * template is immutable: any number of threads may render it at once. */
#ifndef EMBER_TEMPLATE_JINJA_H
#define EMBER_TEMPLATE_JINJA_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/status.h"

typedef struct ej_template ej_template;

ember_status ej_parse(const char *src, size_t len, ej_template **out);

/* context: a cJSON object whose keys become top-level variables (NULL: none).
 * *out is a NUL-terminated malloc'd string of *out_len bytes (out_len may be
 * NULL); the caller frees it. */
ember_status ej_render(const ej_template *t, const cJSON *context, char **out, size_t *out_len);

void ej_free(ej_template *t);

#endif
