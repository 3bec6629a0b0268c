/* Normalizers: NFC/NFD/NFKC/NFKD (utf8proc), Lowercase, Replace, Prepend,
 * Strip, StripAccents and Sequence. Each maps a UTF-8 string to a new one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tok_internal.h"

static const struct {
    const char *name;
    tok_norm_type type;
} norm_names[] = {
    {"NFC", NORM_NFC}, {"NFD", NORM_NFD}, {"NFKC", NORM_NFKC}, {"NFKD", NORM_NFKD},
    {"Lowercase", NORM_LOWERCASE}, {"Replace", NORM_REPLACE}, {"Prepend", NORM_PREPEND},
    {"Strip", NORM_STRIP}, {"StripAccents", NORM_STRIP_ACCENTS}, {"Sequence", NORM_SEQUENCE},
};

ember_status tok_normalizer_parse(const cJSON *j, const char *path, int depth, tok_normalizer *out)
{
    memset(out, 0, sizeof *out);
    if (depth > TOK_MAX_DEPTH) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: nested too deeply", path);
    ember_status st;
    const char *type = tok_json_type(j, path, &st);
    if (!type) return st;
    size_t k = 0, nn = sizeof norm_names / sizeof norm_names[0];
    while (k < nn && strcmp(norm_names[k].name, type)) k++;
    if (k == nn) return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer.json: %s.type: unsupported normalizer '%s'", path, type);
    out->type = norm_names[k].type;
    char sub[TOK_PATH_MAX];
    switch (out->type) {
    case NORM_REPLACE: {
        snprintf(sub, sizeof sub, "%s.pattern", path);
        if ((st = tok_pattern_parse(cJSON_GetObjectItemCaseSensitive(j, "pattern"), sub, &out->pattern)) != EMBER_OK)
            return st;
        const char *content;
        if ((st = tok_json_string(j, "content", path, &content)) != EMBER_OK) return st;
        if (!content) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.content: missing", path);
        return tok_json_dup(content, &out->content, &out->content_len);
    }
    case NORM_PREPEND: {
        const char *content;
        if ((st = tok_json_string(j, "prepend", path, &content)) != EMBER_OK) return st;
        if (!content) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.prepend: missing", path);
        return tok_json_dup(content, &out->content, &out->content_len);
    }
    case NORM_STRIP:
        if ((st = tok_json_bool(j, "strip_left", true, path, &out->left)) != EMBER_OK) return st;
        return tok_json_bool(j, "strip_right", true, path, &out->right);
    case NORM_SEQUENCE: {
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(j, "normalizers");
        if (!cJSON_IsArray(items)) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.normalizers: expected an array", path);
        size_t n = (size_t)cJSON_GetArraySize(items);
        out->items = calloc(n ? n : 1, sizeof *out->items);
        if (!out->items) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
        const cJSON *it;
        cJSON_ArrayForEach(it, items) {
            snprintf(sub, sizeof sub, "%s.normalizers[%zu]", path, out->n_items);
            st = tok_normalizer_parse(it, sub, depth + 1, &out->items[out->n_items]);
            out->n_items++; /* counted even on failure: free() cleans it up */
            if (st != EMBER_OK) return st;
        }
        return EMBER_OK;
    }
    default: return EMBER_OK;
    }
}

void tok_normalizer_free(tok_normalizer *n)
{
    if (!n) return;
    tok_pattern_free(&n->pattern);
    free(n->content);
    for (size_t i = 0; i < n->n_items; i++) tok_normalizer_free(&n->items[i]);
    free(n->items);
    memset(n, 0, sizeof *n);
}

static bool all_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return false;
    return true;
}

static ember_status unicode_form(tok_norm_type type, const char *in, size_t n, tok_buf *out)
{
    /* ASCII is invariant under every normalization form. */
    if (all_ascii(in, n)) return tok_buf_append(out, in, n);
    int opts = UTF8PROC_STABLE;
    if (type == NORM_NFC) opts |= UTF8PROC_COMPOSE;
    else if (type == NORM_NFD) opts |= UTF8PROC_DECOMPOSE;
    else if (type == NORM_NFKC) opts |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    else opts |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    utf8proc_uint8_t *res = NULL;
    utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)in, (utf8proc_ssize_t)n, &res, (utf8proc_option_t)opts);
    if (r < 0) {
        free(res);
        return ember_fail(r == UTF8PROC_ERROR_NOMEM ? EMBER_ERR_NO_MEMORY : EMBER_ERR_INVALID_ARG,
                          "tokenizer: normalization failed: %s", utf8proc_errmsg(r));
    }
    ember_status st = tok_buf_append(out, res, (size_t)r);
    free(res);
    return st;
}

static ember_status lowercase(const char *in, size_t n, tok_buf *out)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = tok_utf8_decode(in + i, n - i, &cp);
        char enc[8];
        size_t m;
        if (cp == 0x130) { /* İ lowercases to "i" + combining dot above */
            memcpy(enc, "i\xCC\x87", 3);
            m = 3;
        } else
            m = tok_utf8_encode((uint32_t)utf8proc_tolower((utf8proc_int32_t)cp), enc);
        ember_status st = tok_buf_append(out, enc, m);
        if (st != EMBER_OK) return st;
        i += k;
    }
    return EMBER_OK;
}

static ember_status replace_all(const tok_normalizer *nz, const char *in, size_t n, tok_buf *out,
                                pcre2_match_data *md)
{
    size_t pos = 0, from = 0;
    for (;;) {
        bool found;
        size_t a, b;
        ember_status st = tok_pattern_find(&nz->pattern, in, n, from, md, &found, &a, &b);
        if (st != EMBER_OK) return st;
        if (!found) break;
        if (b == a) { /* an empty match replaces nothing; step one character */
            uint32_t cp;
            from = a < n ? a + tok_utf8_decode(in + a, n - a, &cp) : n + 1;
            if (from > n) break;
            continue;
        }
        if ((st = tok_buf_append(out, in + pos, a - pos)) != EMBER_OK) return st;
        if ((st = tok_buf_append(out, nz->content, nz->content_len)) != EMBER_OK) return st;
        pos = from = b;
    }
    return tok_buf_append(out, in + pos, n - pos);
}

static ember_status strip_ws(const tok_normalizer *nz, const char *in, size_t n, tok_buf *out)
{
    size_t a = 0, b = n;
    while (nz->left && a < b) {
        uint32_t cp;
        size_t k = tok_utf8_decode(in + a, b - a, &cp);
        if (!tok_is_whitespace(cp)) break;
        a += k;
    }
    while (nz->right && b > a) {
        size_t s = b - 1;
        while (s > a && ((unsigned char)in[s] & 0xC0) == 0x80) s--;
        uint32_t cp;
        tok_utf8_decode(in + s, b - s, &cp);
        if (!tok_is_whitespace(cp)) break;
        b = s;
    }
    return tok_buf_append(out, in + a, b - a);
}

static ember_status strip_accents(const char *in, size_t n, tok_buf *out)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = tok_utf8_decode(in + i, n - i, &cp);
        if (utf8proc_category((utf8proc_int32_t)cp) != UTF8PROC_CATEGORY_MN) {
            ember_status st = tok_buf_append(out, in + i, k);
            if (st != EMBER_OK) return st;
        }
        i += k;
    }
    return EMBER_OK;
}

ember_status tok_normalize(const tok_normalizer *nz, const char *in, size_t n, tok_buf *out,
                           tok_buf *tmp, pcre2_match_data *md)
{
    out->len = 0;
    ember_status st = tok_buf_append(out, "", 0);
    if (st != EMBER_OK) return st;
    switch (nz->type) {
    case NORM_NFC: case NORM_NFD: case NORM_NFKC: case NORM_NFKD:
        return unicode_form(nz->type, in, n, out);
    case NORM_LOWERCASE: return lowercase(in, n, out);
    case NORM_REPLACE: return replace_all(nz, in, n, out, md);
    case NORM_PREPEND:
        if (n && (st = tok_buf_append(out, nz->content, nz->content_len)) != EMBER_OK) return st;
        return tok_buf_append(out, in, n);
    case NORM_STRIP: return strip_ws(nz, in, n, out);
    case NORM_STRIP_ACCENTS: return strip_accents(in, n, out);
    case NORM_SEQUENCE: {
        /* Ping-pong between out and tmp; the result ends up in out. */
        if ((st = tok_buf_append(out, in, n)) != EMBER_OK) return st;
        for (size_t i = 0; i < nz->n_items; i++) {
            tmp->len = 0;
            if ((st = tok_buf_append(tmp, out->p, out->len)) != EMBER_OK) return st;
            tok_buf inner = {0};
            st = tok_normalize(&nz->items[i], tmp->p, tmp->len, out, &inner, md);
            tok_buf_free(&inner);
            if (st != EMBER_OK) return st;
        }
        return EMBER_OK;
    }
    }
    return EMBER_OK;
}
