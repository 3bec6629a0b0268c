/* Decoders: ids -> token strings -> the decoder chain (ByteLevel,
 * ByteFallback, Fuse, Strip, Replace, Metaspace, BPEDecoder, Sequence) ->
 * one string. The chain works on a list of byte strings in an arena, as
 * tokenizers' decode_chain works on a Vec<String>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

ember_status tok_decoder_parse(const cJSON *j, const char *path, int depth, tok_decoder *out)
{
    memset(out, 0, sizeof *out);
    if (depth > TOK_MAX_DEPTH) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: nested too deeply", path);
    ember_status st;
    const char *type = tok_json_type(j, path, &st);
    if (!type) return st;
    char sub[TOK_PATH_MAX];
    if (!strcmp(type, "ByteLevel")) { out->type = DEC_BYTE_LEVEL; return EMBER_OK; }
    if (!strcmp(type, "ByteFallback")) { out->type = DEC_BYTE_FALLBACK; return EMBER_OK; }
    if (!strcmp(type, "Fuse")) { out->type = DEC_FUSE; return EMBER_OK; }
    if (!strcmp(type, "Strip")) {
        out->type = DEC_STRIP;
        const cJSON *start = cJSON_GetObjectItemCaseSensitive(j, "start");
        const cJSON *stop = cJSON_GetObjectItemCaseSensitive(j, "stop");
        if ((start && (!cJSON_IsNumber(start) || start->valuedouble < 0 || start->valuedouble > 1e6)) ||
            (stop && (!cJSON_IsNumber(stop) || stop->valuedouble < 0 || stop->valuedouble > 1e6)))
            return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: start/stop must be small counts", path);
        out->start = start ? (size_t)start->valuedouble : 0;
        out->stop = stop ? (size_t)stop->valuedouble : 0;
        return tok_json_char(j, "content", " ", path, out->replacement, &out->replacement_len);
    }
    if (!strcmp(type, "Replace")) {
        out->type = DEC_REPLACE;
        snprintf(sub, sizeof sub, "%s.pattern", path);
        if ((st = tok_pattern_parse(cJSON_GetObjectItemCaseSensitive(j, "pattern"), sub, &out->pattern)) != EMBER_OK) return st;
        const char *content;
        if ((st = tok_json_string(j, "content", path, &content)) != EMBER_OK) return st;
        if (!content) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.content: missing", path);
        return tok_json_dup(content, &out->content, &out->content_len);
    }
    if (!strcmp(type, "Metaspace")) {
        out->type = DEC_METASPACE;
        if ((st = tok_json_char(j, "replacement", "\xE2\x96\x81", path, out->replacement, &out->replacement_len)) != EMBER_OK)
            return st;
        const char *scheme;
        if ((st = tok_json_string(j, "prepend_scheme", path, &scheme)) != EMBER_OK) return st;
        bool aps;
        if ((st = tok_json_bool(j, "add_prefix_space", true, path, &aps)) != EMBER_OK) return st;
        out->prepend_scheme = scheme ? (!strcmp(scheme, "never") ? PREPEND_NEVER : PREPEND_ALWAYS)
                                     : (aps ? PREPEND_ALWAYS : PREPEND_NEVER);
        return EMBER_OK;
    }
    if (!strcmp(type, "BPEDecoder")) {
        out->type = DEC_BPE;
        const char *suffix;
        if ((st = tok_json_string(j, "suffix", path, &suffix)) != EMBER_OK) return st;
        return tok_json_dup(suffix ? suffix : "</w>", &out->content, &out->content_len);
    }
    if (!strcmp(type, "Sequence")) {
        out->type = DEC_SEQUENCE;
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(j, "decoders");
        if (!cJSON_IsArray(items)) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.decoders: expected an array", path);
        size_t n = (size_t)cJSON_GetArraySize(items);
        out->items = calloc(n ? n : 1, sizeof *out->items);
        if (!out->items) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
        const cJSON *it;
        cJSON_ArrayForEach(it, items) {
            snprintf(sub, sizeof sub, "%s.decoders[%zu]", path, out->n_items);
            st = tok_decoder_parse(it, sub, depth + 1, &out->items[out->n_items]);
            out->n_items++;
            if (st != EMBER_OK) return st;
        }
        return EMBER_OK;
    }
    return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer.json: %s.type: unsupported decoder '%s'", path, type);
}

void tok_decoder_free(tok_decoder *d)
{
    if (!d) return;
    tok_pattern_free(&d->pattern);
    free(d->content);
    for (size_t i = 0; i < d->n_items; i++) tok_decoder_free(&d->items[i]);
    free(d->items);
    memset(d, 0, sizeof *d);
}

typedef struct {
    tok_buf arena;
    tok_pieces a, b;
    pcre2_match_data *md;
    bool raw;
} dec_ctx;

static ember_status emit(dec_ctx *c, tok_pieces *out, const char *s, size_t n)
{
    size_t off = c->arena.len;
    ember_status st = tok_buf_append(&c->arena, s, n);
    return st == EMBER_OK ? tok_pieces_push(out, off, n, 0, 0) : st;
}

/* Appends to the arena; the new bytes are [off, arena.len). */
static ember_status byte_level_token(dec_ctx *c, size_t off, size_t n)
{
    size_t start = c->arena.len;
    ember_status st = tok_buf_reserve(&c->arena, n + 1);
    if (st != EMBER_OK) return st;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = tok_utf8_decode(c->arena.p + off + i, n - i, &cp);
        int b = tok_char_to_byte(cp);
        if (b < 0) { /* not a ByteLevel token: its own bytes */
            c->arena.len = start;
            memcpy(c->arena.p + start, c->arena.p + off, n);
            c->arena.len = start + n;
            return EMBER_OK;
        }
        c->arena.p[c->arena.len++] = (char)b;
        i += k;
    }
    return EMBER_OK;
}

static int hex_digit(char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

static ember_status flush_bytes(dec_ctx *c, tok_pieces *out, size_t start)
{
    size_t n = c->arena.len - start;
    if (!n) return EMBER_OK;
    if (!c->raw && tok_utf8_valid_prefix(c->arena.p + start, n) != n) {
        /* invalid: one U+FFFD per byte, as tokenizers' ByteFallback does */
        c->arena.len = start;
        for (size_t i = 0; i < n; i++) {
            ember_status st = tok_buf_append(&c->arena, "\xEF\xBF\xBD", 3);
            if (st != EMBER_OK) return st;
        }
    }
    return tok_pieces_push(out, start, c->arena.len - start, 0, 0);
}

static ember_status apply(const tok_decoder *d, dec_ctx *c, tok_pieces *in, tok_pieces *out)
{
    ember_status st = EMBER_OK;
    out->n = 0;
    switch (d->type) {
    case DEC_BYTE_LEVEL: {
        size_t start = c->arena.len;
        for (size_t i = 0; i < in->n && st == EMBER_OK; i++) st = byte_level_token(c, in->v[i].off, in->v[i].len);
        return st == EMBER_OK ? tok_pieces_push(out, start, c->arena.len - start, 0, 0) : st;
    }
    case DEC_BYTE_FALLBACK: {
        size_t start = SIZE_MAX;
        for (size_t i = 0; i < in->n && st == EMBER_OK; i++) {
            const char *s = c->arena.p + in->v[i].off;
            int hi = 0, lo = 0;
            bool is_byte = in->v[i].len == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' &&
                           (hi = hex_digit(s[3])) >= 0 && (lo = hex_digit(s[4])) >= 0;
            if (is_byte) {
                if (start == SIZE_MAX) start = c->arena.len;
                char byte = (char)(hi * 16 + lo);
                st = tok_buf_append(&c->arena, &byte, 1);
                continue;
            }
            if (start != SIZE_MAX) {
                if ((st = flush_bytes(c, out, start)) != EMBER_OK) return st;
                start = SIZE_MAX;
            }
            st = tok_pieces_push(out, in->v[i].off, in->v[i].len, 0, 0);
        }
        if (st == EMBER_OK && start != SIZE_MAX) st = flush_bytes(c, out, start);
        return st;
    }
    case DEC_FUSE: {
        size_t start = c->arena.len;
        for (size_t i = 0; i < in->n && st == EMBER_OK; i++) {
            if ((st = tok_buf_reserve(&c->arena, in->v[i].len + 1)) != EMBER_OK) return st;
            memcpy(c->arena.p + c->arena.len, c->arena.p + in->v[i].off, in->v[i].len);
            c->arena.len += in->v[i].len;
        }
        return tok_pieces_push(out, start, c->arena.len - start, 0, 0);
    }
    case DEC_STRIP:
        for (size_t i = 0; i < in->n && st == EMBER_OK; i++) {
            tok_piece p = in->v[i];
            const char *ch = d->replacement;
            size_t cl = d->replacement_len;
            for (size_t k = 0; k < d->start && p.len >= cl && !memcmp(c->arena.p + p.off, ch, cl); k++) {
                p.off += cl;
                p.len -= cl;
            }
            for (size_t k = 0; k < d->stop && p.len >= cl && !memcmp(c->arena.p + p.off + p.len - cl, ch, cl); k++)
                p.len -= cl;
            st = tok_pieces_push(out, p.off, p.len, 0, 0);
        }
        return st;
    case DEC_REPLACE:
    case DEC_METASPACE:
    case DEC_BPE:
        for (size_t i = 0; i < in->n && st == EMBER_OK; i++) {
            size_t start = c->arena.len, pos = 0, from = 0, n = in->v[i].len;
            tok_pattern lit = {0};
            const tok_pattern *pat = &d->pattern;
            const char *rep = d->content;
            size_t rep_len = d->content_len;
            if (d->type == DEC_METASPACE) {
                lit = (tok_pattern){(char *)d->replacement, d->replacement_len, NULL};
                pat = &lit;
                /* tokenizers drops the replacement chars of the first token */
                bool drop = i == 0 && d->prepend_scheme != PREPEND_NEVER;
                rep = drop ? "" : " ";
                rep_len = drop ? 0 : 1;
            } else if (d->type == DEC_BPE) {
                lit = (tok_pattern){d->content, d->content_len, NULL};
                pat = &lit;
                rep = i + 1 == in->n ? "" : " ";
                rep_len = i + 1 == in->n ? 0 : 1;
            }
            for (;;) {
                bool found;
                size_t a, b;
                /* re-read the arena pointer each time: appending may move it */
                if ((st = tok_pattern_find(pat, c->arena.p + in->v[i].off, n, from, c->md, &found, &a, &b)) != EMBER_OK)
                    return st;
                if (!found || a == b) break;
                if ((st = tok_buf_reserve(&c->arena, (a - pos) + rep_len + 1)) != EMBER_OK) return st;
                memcpy(c->arena.p + c->arena.len, c->arena.p + in->v[i].off + pos, a - pos);
                memcpy(c->arena.p + c->arena.len + (a - pos), rep, rep_len);
                c->arena.len += (a - pos) + rep_len;
                pos = from = b;
            }
            if ((st = tok_buf_reserve(&c->arena, n - pos + 1)) != EMBER_OK) return st;
            memcpy(c->arena.p + c->arena.len, c->arena.p + in->v[i].off + pos, n - pos);
            c->arena.len += n - pos;
            st = tok_pieces_push(out, start, c->arena.len - start, 0, 0);
        }
        return st;
    case DEC_SEQUENCE: {
        tok_pieces tmp = {0};
        tok_pieces *src = in;
        for (size_t k = 0; k < d->n_items && st == EMBER_OK; k++) {
            tok_pieces *dst = src == &tmp ? out : &tmp;
            st = apply(&d->items[k], c, src, dst);
            src = dst;
        }
        if (st == EMBER_OK && src != out) {
            out->n = 0;
            for (size_t i = 0; i < src->n && st == EMBER_OK; i++) st = tok_pieces_push(out, src->v[i].off, src->v[i].len, 0, 0);
        }
        tok_pieces_free(&tmp);
        return st;
    }
    }
    return st;
}

ember_status tok_decode_into(const et_tokenizer *t, const int32_t *ids, size_t n,
                             bool skip_special, bool raw, tok_buf *out)
{
    dec_ctx c = {.raw = raw};
    ember_status st = EMBER_OK;
    c.md = pcre2_match_data_create(1, NULL);
    /* the arena is never NULL, so offsets into it are always defined */
    if (!c.md || tok_buf_append(&c.arena, "", 0) != EMBER_OK) {
        pcre2_match_data_free(c.md);
        tok_buf_free(&c.arena);
        return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
    }
    for (size_t i = 0; i < n && st == EMBER_OK; i++) {
        int32_t id = ids[i];
        if (id < 0 || (size_t)id >= t->n_ids) {
            st = ember_fail(EMBER_ERR_INVALID_ARG, "tokenizer: decode: id %d at position %zu is out of range [0, %zu)",
                            (int)id, i, t->n_ids);
            break;
        }
        if (t->tok_off[id] == UINT32_MAX || (skip_special && t->special[id])) continue;
        st = emit(&c, &c.a, t->pool + t->tok_off[id], t->tok_len[id]);
    }
    tok_pieces *res = &c.a;
    if (st == EMBER_OK && t->decoder) {
        st = apply(t->decoder, &c, &c.a, &c.b);
        res = &c.b;
    }
    for (size_t i = 0; i < res->n && st == EMBER_OK; i++) {
        /* without a decoder tokens are joined with spaces (as tokenizers does) */
        if (!t->decoder && i && (st = tok_buf_append(out, " ", 1)) != EMBER_OK) break;
        const char *s = c.arena.p + res->v[i].off;
        st = raw ? tok_buf_append(out, s, res->v[i].len) : tok_append_lossy(out, s, res->v[i].len);
    }
    if (st == EMBER_OK) st = tok_buf_append(out, "", 0);
    tok_buf_free(&c.arena);
    tok_pieces_free(&c.a);
    tok_pieces_free(&c.b);
    pcre2_match_data_free(c.md);
    return st;
}
