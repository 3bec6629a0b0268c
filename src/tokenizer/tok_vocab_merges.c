/* The "slow" Hugging Face tokenizer files: vocab.json + merges.txt +
 * tokenizer_config.json (GPT2Tokenizer, Qwen2Tokenizer), as a checkpoint
 * without tokenizer.json ships them (Qwen3-TTS does). They are turned into
 * the tokenizer.json that transformers' converter would write for the same
 * class, and loaded through the one tokenizer.json path, so there is a
 * single BPE implementation and a single set of checks.
 *
 * Per class (transformers' tokenization_gpt2.py / tokenization_qwen2.py and
 * their fast converters):
 *   GPT2Tokenizer   ByteLevel pre-tokenizer with the GPT-2 regex
 *   Qwen2Tokenizer  NFC, then Split on the Qwen2 regex and ByteLevel
 * Added tokens come from tokenizer_config.json's added_tokens_decoder. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/json_text.h"
#include "io/read_file.h"
#include "tokenizer/tok_internal.h"

#define FILE_MAX ((size_t)256 << 20)

static ember_status read_dir_file(const char *dir, const char *name, char **text, size_t *len)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    return io_read_text_file(path, FILE_MAX, text, len);
}

/* merges.txt: one "left right" pair per line, an optional "#version" first
 * line, blank lines ignored. */
static ember_status put_merges(tok_text *b, const char *text, size_t len)
{
    size_t at = 0, line_no = 0;
    int first = 1;
    tok_text_puts(b, "[");
    while (at < len) {
        const char *line = text + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + (nl ? 1 : 0);
        line_no++;
        if (n && line[n - 1] == '\r') n--;
        if (!n || (line_no == 1 && n >= 8 && !memcmp(line, "#version", 8))) continue;
        const char *sp = memchr(line, ' ', n);
        if (!sp || sp == line || sp == line + n - 1 || memchr(sp + 1, ' ', (size_t)(line + n - sp - 1)))
            return ember_fail(EMBER_ERR_FORMAT, "merges.txt:%zu: expected two tokens separated by one space", line_no);
        if (!first) tok_text_puts(b, ",");
        first = 0;
        tok_text_puts(b, "[");
        tok_text_string(b, line, (size_t)(sp - line));
        tok_text_puts(b, ",");
        tok_text_string(b, sp + 1, (size_t)(line + n - sp - 1));
        tok_text_puts(b, "]");
    }
    tok_text_puts(b, "]");
    return EMBER_OK;
}

/* added_tokens_decoder {"id": {content, lstrip, rstrip, normalized,
 * single_word, special}} -> tokenizer.json's added_tokens array. */
static ember_status put_added(tok_text *b, const cJSON *config)
{
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(config, "added_tokens_decoder"), *e;
    tok_text_puts(b, "[");
    if (dec && !cJSON_IsObject(dec))
        return ember_fail(EMBER_ERR_FORMAT, "tokenizer_config.json: added_tokens_decoder must be an object");
    int first = 1;
    cJSON_ArrayForEach(e, dec) {
        char *end;
        long id = strtol(e->string, &end, 10);
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (*end || end == e->string || id < 0 || !cJSON_IsObject(e) || !cJSON_IsString(content))
            return ember_fail(EMBER_ERR_FORMAT,
                              "tokenizer_config.json: added_tokens_decoder.%s: expected an id and an "
                              "object with a string content", e->string);
        cJSON *tok = cJSON_Duplicate(e, 1);
        if (!tok) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
        cJSON_DeleteItemFromObjectCaseSensitive(tok, "__type"); /* old AddedToken pickles */
        cJSON_AddNumberToObject(tok, "id", (double)id);
        char *json = cJSON_PrintUnformatted(tok);
        cJSON_Delete(tok);
        if (!json) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
        if (!first) tok_text_puts(b, ",");
        first = 0;
        tok_text_puts(b, json);
        free(json);
    }
    tok_text_puts(b, "]");
    return EMBER_OK;
}

ember_status et_tokenizer_json_from_vocab_merges(const char *dir, char **json, size_t *len, const char **pre)
{
    char *cfg_text = NULL, *vocab = NULL, *merges = NULL;
    size_t cfg_len, vocab_len, merges_len;
    cJSON *cfg = NULL;
    tok_text b = {0};
    *json = NULL;
    *len = 0;
    ember_status st = read_dir_file(dir, "tokenizer_config.json", &cfg_text, &cfg_len);
    if (!st) st = io_json_parse(cfg_text, cfg_len, "tokenizer_config.json", "file", &cfg);
    if (!st) st = read_dir_file(dir, "vocab.json", &vocab, &vocab_len);
    if (!st) st = read_dir_file(dir, "merges.txt", &merges, &merges_len);
    if (st) goto done;
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(cfg, "tokenizer_class");
    const char *name = cJSON_IsString(cls) ? cls->valuestring : "";
    int qwen2 = !strcmp(name, "Qwen2Tokenizer") || !strcmp(name, "Qwen2TokenizerFast");
    int gpt2 = !strcmp(name, "GPT2Tokenizer") || !strcmp(name, "GPT2TokenizerFast");
    if (!qwen2 && !gpt2) {
        st = ember_fail(EMBER_ERR_UNSUPPORTED,
                        "tokenizer_config.json: tokenizer_class '%s' has no tokenizer.json and is not "
                        "one ember builds from vocab.json + merges.txt (GPT2Tokenizer, Qwen2Tokenizer)",
                        name);
        goto done;
    }
    tok_text_puts(&b, "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":");
    if ((st = put_added(&b, cfg))) goto done;
    tok_text_puts(&b, ",");
    *pre = qwen2 ? "qwen2" : "gpt-2";
    tok_text_pre_style(&b, tok_pre_style_find(*pre));
    tok_text_puts(&b, ",\"post_processor\":");
    tok_text_byte_level(&b);
    tok_text_puts(&b, ",");
    tok_text_bpe_open(&b, false);
    tok_text_put(&b, vocab, vocab_len);
    tok_text_puts(&b, ",\"merges\":");
    if ((st = put_merges(&b, merges, merges_len))) goto done;
    tok_text_puts(&b, "}}");
    if (!(st = tok_text_status(&b))) {
        *json = b.s;
        *len = b.n;
        b.s = NULL;
    }
done:
    if (st) ember_fail_prefix(st, "%s (vocab.json + merges.txt)", dir);
    cJSON_Delete(cfg);
    free(cfg_text);
    free(vocab);
    free(merges);
    free(b.s);
    return st;
}

ember_status et_tokenizer_load_vocab_merges(const char *dir, et_tokenizer **out)
{
    char *json;
    size_t len;
    const char *pre;
    *out = NULL;
    ember_status st = et_tokenizer_json_from_vocab_merges(dir, &json, &len, &pre);
    if (st) return st;
    st = et_tokenizer_load_json(json, len, out);
    free(json);
    if (st) ember_fail_prefix(st, "%s (vocab.json + merges.txt)", dir);
    return st;
}
