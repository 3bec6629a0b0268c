/* libFuzzer target: the input is a tokenizer.json. It must load or fail
 * with an error, never crash or leak; when it loads, encoding a few strings
 * (added-token text, bytes spanning several scripts) and decoding the ids,
 * all at once and through the streaming detokenizer, must work too. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const samples[] = {
    "Hello world! It's 2024, isn't it?  \n\n",
    "\xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9 e\xCC\x81 \xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7",
    "<|im_start|>user\n<s>abc</s> 12345678 \t x",
    "",
};

static void round_trip(const et_tokenizer *tok, const char *text)
{
    int32_t *ids = NULL;
    size_t n = 0;
    if (et_tokenizer_encode(tok, text, strlen(text), true, &ids, &n) != EMBER_OK) return;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= et_tokenizer_vocab_size(tok)) __builtin_trap();
    char *out = NULL;
    size_t len = 0;
    if (et_tokenizer_decode(tok, ids, n, false, &out, &len) == EMBER_OK) free(out);
    et_detok *d;
    if (et_detok_create(tok, true, &d) == EMBER_OK) {
        const char *piece;
        size_t plen;
        for (size_t i = 0; i < n; i++)
            if (et_detok_push(d, ids[i], &piece, &plen) != EMBER_OK) break;
        (void)et_detok_flush(d, &piece, &plen);
        et_detok_free(d);
    }
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    et_tokenizer *tok = NULL;
    if (et_tokenizer_load_json((const char *)data, size, &tok) != EMBER_OK) return 0;
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) round_trip(tok, samples[i]);
    et_tokenizer_free(tok);
    return 0;
}
