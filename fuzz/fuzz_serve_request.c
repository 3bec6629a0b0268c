/* libFuzzer target: OpenAI request bodies (src/serve/request.c), the
 * server's first contact with untrusted input. Any body must give either a
 * request or an error object, never a crash, leak or undefined behaviour;
 * the first byte picks chat or completions. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    sv_kind kind = data[0] & 1 ? SV_COMPLETION : SV_CHAT;
    sv_request r;
    sv_error e;
    memset(&e, 0, sizeof e);
    if (sv_request_parse(kind, (const char *)data + 1, size - 1, 512, &r, &e) == 0) {
        /* what parsed must be usable as the server uses it */
        if (!r.model || (kind == SV_CHAT && !r.messages) ||
            (kind == SV_COMPLETION && !r.prompt && !r.prompt_ids) || r.n_stop > SV_MAX_STOP)
            __builtin_trap();
        for (size_t i = 0; i < r.n_prompt_ids; i++)
            if (r.prompt_ids[i] < 0 || r.prompt_ids[i] >= 512) __builtin_trap();
        char *text = cJSON_PrintUnformatted(r.messages);
        free(text);
        sv_request_free(&r);
    } else {
        if (e.status < 400 || e.status > 599 || !e.message[0]) __builtin_trap();
        char *json = sv_error_json(&e);
        free(json);
    }
    return 0;
}
