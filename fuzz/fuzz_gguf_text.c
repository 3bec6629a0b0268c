/* libFuzzer target: what ember reads about text from a GGUF file's metadata
 * (text/tok_gguf.c, text/gguf_text.c) on arbitrary bytes: gguf_parse, then
 * the tokenizer.ggml.* keys turned into a tokenizer.json and loaded, a
 * fixed text encoded and decoded again with it, the chat template source,
 * the end-of-turn ids and the sampling defaults. Every step either fails
 * with a message and no output, or gives values that hold together.
 *
 * Seeds (fuzz/corpus/gguf_text/): GGUFs with a vocab, template and sampling
 * keys from the unit test's writer, and fuzz_gguf's spark_small_q4_0.gguf
 * (a token list without the other tokenizer keys):
 *   build/tests/test_tok_gguf --write-seeds fuzz/corpus/gguf_text */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/gguf.h"
#include "template/chat.h"
#include "tokenizer/gguf_text.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failure must leave a message. */
static void failed_cleanly(const void *out)
{
    if (out != NULL || ember_last_error()[0] == '\0') __builtin_trap();
}

static void tokenizer(const gguf_file *f)
{
    char *json = NULL;
    size_t len = 0;
    if (et_tokenizer_json_from_gguf(f, &json, &len) != EMBER_OK) {
        failed_cleanly(json);
        return;
    }
    if (!json || strlen(json) != len) __builtin_trap();
    free(json);
    et_tokenizer *t = NULL;
    if (et_tokenizer_load_gguf(f, &t) != EMBER_OK) {
        failed_cleanly(t);
        return;
    }
    static const char text[] = "abc <|im_end|> 12345 caf\xc3\xa9\n\t x";
    int32_t *ids = NULL;
    size_t n = 0;
    if (et_tokenizer_encode(t, text, sizeof text - 1, true, &ids, &n) == EMBER_OK) {
        for (size_t i = 0; i < n; i++)
            if (ids[i] < 0 || (size_t)ids[i] >= et_tokenizer_vocab_size(t)) __builtin_trap();
        char *back = NULL;
        size_t blen = 0;
        if (et_tokenizer_decode(t, ids, n, false, &back, &blen) == EMBER_OK && strlen(back) != blen)
            __builtin_trap();
        free(back);
    }
    free(ids);
    et_tokenizer_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file *f = NULL;
    if (gguf_parse(data, size, "fuzz.gguf", &f) != EMBER_OK) return 0;
    tokenizer(f);

    et_chat_source src;
    if (et_gguf_chat_source(f, &src) == EMBER_OK) {
        if (!src.main) __builtin_trap();
        et_chat_template *t = NULL;
        if (et_chat_template_from_source(&src, &t) == EMBER_OK) et_chat_template_free(t);
        et_chat_source_free(&src);
    } else {
        failed_cleanly(src.main);
    }

    int32_t ids[8];
    size_t n = 0;
    if (et_gguf_stop_ids(f, ids, 8, &n) == EMBER_OK) {
        if (n > 8) __builtin_trap();
        for (size_t i = 0; i < n; i++)
            if (ids[i] < 0) __builtin_trap();
    }
    et_sampler_params p;
    et_sampler_params_default(&p);
    (void)et_gguf_sampling_defaults(f, &p);
    gguf_close(f);
    return 0;
}
