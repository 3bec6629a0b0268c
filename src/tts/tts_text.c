#include "tts/tts_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

ember_status tts_text_encode(const et_tokenizer *tok, tts_text_kind kind, const char *text, int32_t **ids,
                             size_t *n)
{
    static const char *const head[] = {"<|im_start|>assistant\n", "<|im_start|>assistant\n", "<|im_start|>user\n"};
    static const char *const tail[] = {"<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>\n", "<|im_end|>\n"};
    const size_t len = strlen(head[kind]) + strlen(text) + strlen(tail[kind]);
    char *full = malloc(len + 1);
    if (!full) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    snprintf(full, len + 1, "%s%s%s", head[kind], text, tail[kind]);
    const ember_status st = et_tokenizer_encode(tok, full, len, false, ids, n);
    free(full);
    return st;
}
