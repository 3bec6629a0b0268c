/* libFuzzer target: the chat-template interpreter. The input is template
 * source; if it parses, it is rendered against a small fixed conversation.
 * Any input must give output or an error, never a crash, a leak, undefined
 * behaviour or a hang (the interpreter bounds depth, steps and memory). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "template/jinja.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char CONTEXT[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": \"Weather in Z\\u00fcrich? \\ud83c\\udf24\"},"
    " {\"role\": \"assistant\", \"content\": \"<think>\\nr\\n</think>\\n\\n\", \"tool_calls\":"
    " [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Z\", \"n\": 2.5}}}]},"
    " {\"role\": \"tool\", \"content\": \"{\\\"temp\\\": -3}\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"1\": 1, \"a\": [true, null]}}}],"
    " \"add_generation_prompt\": true, \"enable_thinking\": false, \"bos_token\": \"<s>\", \"n\": 3, \"f\": 1.5}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192) return 0; /* long inputs only slow the search down */
    ej_template *t;
    if (ej_parse((const char *)data, size, &t) != EMBER_OK) return 0;
    cJSON *ctx = cJSON_Parse(CONTEXT);
    char *out = NULL;
    size_t len = 0;
    if (ej_render(t, ctx, &out, &len) == EMBER_OK && (!out || out[len] != 0)) __builtin_trap();
    free(out);
    cJSON_Delete(ctx);
    ej_free(t);
    return 0;
}
