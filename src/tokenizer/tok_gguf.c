/* A GGUF file's embedded tokenizer (the tokenizer.ggml.* keys llama.cpp's
 * converter writes, and ember's own writer, llm/spark_gguf_vocab.c) as the
 * tokenizer.json it was made from, loaded through the one tokenizer.json
 * path (tok_load.c), so a .gguf alone is a whole model.
 *
 *   tokenizer.ggml.model       "gpt2" (byte-level BPE); nothing else is read
 *   tokenizer.ggml.pre         the pre-tokenizer by name (tok_build.c's styles);
 *                              absent: llama.cpp's "default", as llama.cpp reads it
 *   tokenizer.ggml.tokens      one string per id
 *   tokenizer.ggml.token_type  int32 per id, llama.cpp's types:
 *                              1 normal (2 unknown, 6 byte): model.vocab
 *                              3 control: an added token, special
 *                              4 user-defined: an added token, not special
 *                              5 unused (padding): left out; one below the
 *                                highest used id keeps its place in model.vocab,
 *                                as the loader wants ids without holes
 *   tokenizer.ggml.merges      "left right", split at the first space after the
 *                              first byte (llama.cpp's rule), in rank order
 *   tokenizer.ggml.{bos,eos}_token_id, add_bos_token, add_eos_token
 *                              a TemplateProcessing that adds them; add_bos
 *                              defaults to the style's (true for Llama 3)
 * Added tokens are matched verbatim (normalized false: llama.cpp's converter
 * stores them pre-normalized). Every value is checked here first, so a
 * message names the GGUF key and index rather than a JSON path. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "tokenizer/tok_internal.h"

/* llama.cpp's token types */
enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5, TT_BYTE = 6 };

typedef struct gguf_vocab {
    const char *label;
    const gguf_value *tokens, *types, *merges;
    const tok_pre_style *style;
    int64_t bos, eos; /* -1: none */
    bool add_bos, add_eos;
} gguf_vocab;

static ember_status check_text(const gguf_vocab *v, const char *key, uint64_t i, const gguf_str *s)
{
    if (memchr(s->s, '\0', s->len))
        return ember_fail(EMBER_ERR_FORMAT, "%s: %s[%llu] holds a NUL byte", v->label, key,
                          (unsigned long long)i);
    if (tok_utf8_valid_prefix(s->s, s->len) != s->len)
        return ember_fail(EMBER_ERR_FORMAT, "%s: %s[%llu] is not valid UTF-8", v->label, key,
                          (unsigned long long)i);
    return EMBER_OK;
}

/* An optional token id key: absent is -1; present, it must name a token. */
static ember_status token_id(const gguf_file *f, const gguf_vocab *v, const char *key, int64_t *out)
{
    uint32_t id;
    *out = -1;
    if (!gguf_find(f, key)) return EMBER_OK;
    ember_status st = gguf_get_u32(f, key, &id);
    if (st) return st;
    if (id >= v->tokens->n)
        return ember_fail(EMBER_ERR_FORMAT, "%s: %s is %u, but there are only %llu tokens", v->label,
                          key, id, (unsigned long long)v->tokens->n);
    *out = id;
    return EMBER_OK;
}

static ember_status optional_bool(const gguf_file *f, const char *key, bool *out)
{
    return gguf_find(f, key) ? gguf_get_bool(f, key, out) : EMBER_OK;
}

static ember_status read_keys(const gguf_file *f, gguf_vocab *v)
{
    const char *model, *pre = "default";
    ember_status st;
    v->label = gguf_label(f);
    if (!gguf_find(f, "tokenizer.ggml.model"))
        return ember_fail(EMBER_ERR_FORMAT, "%s: no tokenizer in the file (tokenizer.ggml.model is "
                          "missing): give a tokenizer.json", v->label);
    if ((st = gguf_get_str(f, "tokenizer.ggml.model", &model, NULL))) return st;
    if (strcmp(model, "gpt2"))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: tokenizer.ggml.model '%.64s' is not supported: "
                          "ember reads byte-level BPE tokenizers ('gpt2') only", v->label, model);
    if (gguf_find(f, "tokenizer.ggml.pre") && (st = gguf_get_str(f, "tokenizer.ggml.pre", &pre, NULL)))
        return st;
    if (!(v->style = tok_pre_style_find(pre)))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: tokenizer.ggml.pre '%.64s' is not a pre-tokenizer "
                          "ember knows (%s)", v->label, pre, tok_pre_style_names());
    if ((st = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &v->tokens)) ||
        (st = gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, &v->types)) ||
        (st = gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &v->merges)))
        return st;
    if (v->tokens->n == 0 || v->tokens->n > INT32_MAX)
        return ember_fail(EMBER_ERR_FORMAT, "%s: tokenizer.ggml.tokens has %llu tokens (expected 1 to "
                          "2^31-1)", v->label, (unsigned long long)v->tokens->n);
    if (v->types->n != v->tokens->n)
        return ember_fail(EMBER_ERR_FORMAT, "%s: tokenizer.ggml.token_type has %llu entries but "
                          "tokenizer.ggml.tokens has %llu", v->label,
                          (unsigned long long)v->types->n, (unsigned long long)v->tokens->n);
    v->add_bos = v->style->add_bos;
    v->add_eos = false;
    if ((st = token_id(f, v, "tokenizer.ggml.bos_token_id", &v->bos)) ||
        (st = token_id(f, v, "tokenizer.ggml.eos_token_id", &v->eos)) ||
        (st = optional_bool(f, "tokenizer.ggml.add_bos_token", &v->add_bos)) ||
        (st = optional_bool(f, "tokenizer.ggml.add_eos_token", &v->add_eos)))
        return st;
    if (v->add_bos && v->bos < 0)
        return ember_fail(EMBER_ERR_FORMAT, "%s: the tokenizer adds a BOS token (tokenizer.ggml."
                          "add_bos_token, or the default of pre-tokenizer '%s') but "
                          "tokenizer.ggml.bos_token_id is missing", v->label, v->style->name);
    if (v->add_eos && v->eos < 0)
        return ember_fail(EMBER_ERR_FORMAT, "%s: tokenizer.ggml.add_eos_token is true but "
                          "tokenizer.ggml.eos_token_id is missing", v->label);
    return EMBER_OK;
}

static ember_status put_tokens(tok_text *b, const gguf_vocab *v)
{
    /* the highest id that is not unused: unused ones below it stay in model.vocab */
    uint64_t top = 0;
    for (uint64_t i = 0; i < v->types->n; i++)
        if (gguf_arr_i(v->types, i) != TT_UNUSED) top = i;
    tok_text_puts(b, "\"added_tokens\":[");
    bool first = true;
    for (uint64_t i = 0; i < v->types->n; i++) {
        int64_t type = gguf_arr_i(v->types, i);
        const gguf_str *s = &v->tokens->arr_strs[i];
        if (type < TT_NORMAL || type > TT_BYTE)
            return ember_fail(EMBER_ERR_FORMAT, "%s: tokenizer.ggml.token_type[%llu] is %lld, not a "
                              "llama.cpp token type (1 to 6)", v->label, (unsigned long long)i,
                              (long long)type);
        ember_status st = check_text(v, "tokenizer.ggml.tokens", i, s);
        if (st) return st;
        if (type != TT_CONTROL && type != TT_USER_DEFINED) continue;
        if (!s->len)
            return ember_fail(EMBER_ERR_FORMAT, "%s: tokenizer.ggml.tokens[%llu] is an empty %s token",
                              v->label, (unsigned long long)i,
                              type == TT_CONTROL ? "control" : "user-defined");
        char head[48];
        snprintf(head, sizeof head, "%s{\"id\":%llu,\"content\":", first ? "" : ",", (unsigned long long)i);
        tok_text_puts(b, head);
        tok_text_string(b, s->s, s->len);
        tok_text_puts(b, ",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,"
                         "\"special\":");
        tok_text_puts(b, type == TT_CONTROL ? "true}" : "false}");
        first = false;
    }
    tok_text_puts(b, "],");
    tok_text_pre_style(b, v->style);
    tok_text_puts(b, ",\"post_processor\":");
    if (!v->add_bos && !v->add_eos) {
        tok_text_byte_level(b);
    } else {
        /* {"type":"TemplateProcessing","single":[bos?, A, eos?],"special_tokens":{...}} */
        char part[160];
        tok_text_puts(b, "{\"type\":\"Sequence\",\"processors\":[");
        tok_text_byte_level(b);
        tok_text_puts(b, ",{\"type\":\"TemplateProcessing\",\"single\":[");
        if (v->add_bos) tok_text_puts(b, "{\"SpecialToken\":{\"id\":\"bos\",\"type_id\":0}},");
        tok_text_puts(b, "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}");
        if (v->add_eos) tok_text_puts(b, ",{\"SpecialToken\":{\"id\":\"eos\",\"type_id\":0}}");
        tok_text_puts(b, "],\"special_tokens\":{");
        snprintf(part, sizeof part, "\"bos\":{\"id\":\"bos\",\"ids\":[%lld],\"tokens\":[\"bos\"]},"
                 "\"eos\":{\"id\":\"eos\",\"ids\":[%lld],\"tokens\":[\"eos\"]}}}]}",
                 (long long)(v->bos < 0 ? 0 : v->bos), (long long)(v->eos < 0 ? 0 : v->eos));
        tok_text_puts(b, part);
    }
    tok_text_puts(b, ",");
    tok_text_bpe_open(b, v->style->ignore_merges);
    tok_text_puts(b, "{");
    first = true;
    for (uint64_t i = 0; i < v->types->n; i++) {
        int64_t type = gguf_arr_i(v->types, i);
        if (type == TT_CONTROL || type == TT_USER_DEFINED || (type == TT_UNUSED && i > top)) continue;
        const gguf_str *s = &v->tokens->arr_strs[i];
        if (!first) tok_text_puts(b, ",");
        tok_text_string(b, s->s, s->len);
        char id[32];
        snprintf(id, sizeof id, ":%llu", (unsigned long long)i);
        tok_text_puts(b, id);
        first = false;
    }
    tok_text_puts(b, "}");
    return EMBER_OK;
}

static ember_status put_merges(tok_text *b, const gguf_vocab *v)
{
    tok_text_puts(b, ",\"merges\":[");
    for (uint64_t i = 0; i < v->merges->n; i++) {
        const gguf_str *s = &v->merges->arr_strs[i];
        ember_status st = check_text(v, "tokenizer.ggml.merges", i, s);
        if (st) return st;
        const char *sp = s->len > 1 ? memchr(s->s + 1, ' ', s->len - 1) : NULL;
        if (!sp || sp + 1 == s->s + s->len)
            return ember_fail(EMBER_ERR_FORMAT, "%s: tokenizer.ggml.merges[%llu] '%.64s' is not two "
                              "tokens separated by a space", v->label, (unsigned long long)i, s->s);
        tok_text_puts(b, i ? ",[" : "[");
        tok_text_string(b, s->s, (size_t)(sp - s->s));
        tok_text_puts(b, ",");
        tok_text_string(b, sp + 1, (size_t)(s->s + s->len - sp - 1));
        tok_text_puts(b, "]");
    }
    tok_text_puts(b, "]}}");
    return EMBER_OK;
}

ember_status et_tokenizer_json_from_gguf(const gguf_file *f, char **json, size_t *len)
{
    if (!f || !json || !len) return ember_fail(EMBER_ERR_INVALID_ARG, "et_tokenizer_json_from_gguf: NULL argument");
    *json = NULL;
    *len = 0;
    gguf_vocab v;
    memset(&v, 0, sizeof v);
    tok_text b = {0};
    ember_status st = read_keys(f, &v);
    if (!st) {
        tok_text_puts(&b, "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,");
        st = put_tokens(&b, &v);
    }
    if (!st) st = put_merges(&b, &v);
    if (!st) st = tok_text_status(&b);
    if (st) {
        free(b.s);
        return st;
    }
    *json = b.s;
    *len = b.n;
    return EMBER_OK;
}

ember_status et_tokenizer_load_gguf(const gguf_file *f, et_tokenizer **out)
{
    if (!f || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "et_tokenizer_load_gguf: NULL argument");
    *out = NULL;
    char *json;
    size_t len;
    ember_status st = et_tokenizer_json_from_gguf(f, &json, &len);
    if (st) return st;
    st = et_tokenizer_load_json(json, len, out);
    free(json);
    /* the loader's paths are the document's: model.vocab is the normal
     * tokens, added_tokens the control and user-defined ones, model.merges[i]
     * is tokenizer.ggml.merges[i] */
    if (st) ember_fail_prefix(st, "%s: its tokenizer (tokenizer.ggml.*, read as a tokenizer.json)",
                              gguf_label(f));
    return st;
}
