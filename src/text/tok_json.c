/* A focused JSON scanner for the two big parts of tokenizer.json:
 * model.vocab (an object of string -> id) and model.merges (an array of
 * "a b" strings or [a, b] pairs). A general DOM parser spends most of the
 * load time allocating a node per entry; this reads them straight into the
 * token pool and the merge table. The rest of the file (small) goes through
 * cJSON. Everything is bounds-checked: the input is untrusted. */
#include <stdlib.h>
#include <string.h>

#include "text/tok_internal.h"

typedef struct {
    const char *s;
    size_t i, n;
} scan;

static ember_status bad(const scan *c, const char *what)
{
    return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s at byte %zu", what, c->i);
}

static void skip_ws(scan *c)
{
    while (c->i < c->n) {
        char ch = c->s[c->i];
        if (ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t') return;
        c->i++;
    }
}

static bool eat(scan *c, char ch)
{
    skip_ws(c);
    if (c->i < c->n && c->s[c->i] == ch) {
        c->i++;
        return true;
    }
    return false;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char ch = p[k];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Reads a JSON string at the cursor into out (appended, not terminated).
 * Escapes are decoded; raw bytes must be valid UTF-8 without controls. */
static ember_status read_string(scan *c, tok_buf *out)
{
    skip_ws(c);
    if (c->i >= c->n || c->s[c->i] != '"') return bad(c, "expected a string");
    c->i++;
    for (;;) {
        size_t start = c->i;
        while (c->i < c->n && c->s[c->i] != '"' && c->s[c->i] != '\\' &&
               (unsigned char)c->s[c->i] >= 0x20)
            c->i++;
        size_t run = c->i - start;
        if (run) {
            if (tok_utf8_valid_prefix(c->s + start, run) != run) return bad(c, "invalid UTF-8 in a string");
            ember_status st = tok_buf_reserve(out, run + 1);
            if (st != EMBER_OK) return st;
            memcpy(out->p + out->len, c->s + start, run);
            out->len += run;
        }
        if (c->i >= c->n) return bad(c, "unterminated string");
        char ch = c->s[c->i];
        if (ch == '"') {
            c->i++;
            return EMBER_OK;
        }
        if (ch != '\\') return bad(c, "control character in a string");
        if (c->i + 1 >= c->n) return bad(c, "unterminated escape");
        char e = c->s[c->i + 1];
        char one;
        c->i += 2;
        switch (e) {
        case '"': one = '"'; break;
        case '\\': one = '\\'; break;
        case '/': one = '/'; break;
        case 'b': one = '\b'; break;
        case 'f': one = '\f'; break;
        case 'n': one = '\n'; break;
        case 'r': one = '\r'; break;
        case 't': one = '\t'; break;
        case 'u': {
            if (c->i + 4 > c->n) return bad(c, "truncated \\u escape");
            int v = hex4(c->s + c->i);
            if (v < 0) return bad(c, "bad \\u escape");
            c->i += 4;
            uint32_t cp = (uint32_t)v;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                int lo = c->i + 6 <= c->n && c->s[c->i] == '\\' && c->s[c->i + 1] == 'u'
                             ? hex4(c->s + c->i + 2) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) return bad(c, "unpaired surrogate in a \\u escape");
                c->i += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF)
                return bad(c, "unpaired surrogate in a \\u escape");
            char u[4];
            size_t k = tok_utf8_encode(cp, u);
            ember_status st = tok_buf_reserve(out, k + 1);
            if (st != EMBER_OK) return st;
            memcpy(out->p + out->len, u, k);
            out->len += k;
            continue;
        }
        default: return bad(c, "unknown escape");
        }
        ember_status st = tok_buf_reserve(out, 2);
        if (st != EMBER_OK) return st;
        out->p[out->len++] = one;
    }
}

/* Skips one JSON value by its structure only: strings are stepped over
 * without decoding and scalars are not checked. That is enough to find the
 * spans; the vocab/merges parsers and cJSON (for the rest) validate. */
static ember_status skip_value(scan *c, int depth)
{
    (void)depth;
    skip_ws(c);
    if (c->i >= c->n) return bad(c, "unexpected end of JSON");
    char first = c->s[c->i];
    if (first != '{' && first != '[' && first != '"') { /* number, true, false, null */
        size_t start = c->i;
        while (c->i < c->n && !strchr(",}] \n\r\t", c->s[c->i])) c->i++;
        return c->i > start ? EMBER_OK : bad(c, "unexpected character");
    }
    size_t level = 0;
    do {
        if (c->i >= c->n) return bad(c, "unexpected end of JSON");
        char ch = c->s[c->i];
        if (ch == '"') {
            c->i++;
            for (;;) {
                const char *q = memchr(c->s + c->i, '"', c->n - c->i);
                if (!q) return bad(c, "unterminated string");
                size_t at = (size_t)(q - c->s), bs = 0;
                while (at - bs > c->i && c->s[at - bs - 1] == '\\') bs++;
                c->i = at + 1;
                if (bs % 2 == 0) break; /* not an escaped quote */
            }
            continue;
        }
        if (ch == '{' || ch == '[') level++;
        else if (ch == '}' || ch == ']') level--;
        c->i++;
    } while (level);
    return EMBER_OK;
}

/* Walks the top-level object and the "model" object to find the spans of
 * model.vocab and model.merges. The whole document is validated on the way. */
ember_status tok_json_locate_model(const char *json, size_t len, tok_span_json *vocab,
                                   tok_span_json *merges)
{
    scan c = {json, 0, len};
    tok_buf key = {0};
    ember_status st = EMBER_OK;
    *vocab = *merges = (tok_span_json){0, 0};
    if (!eat(&c, '{')) return bad(&c, "expected a JSON object");
    if (eat(&c, '}')) goto done;
    for (;;) {
        key.len = 0;
        if ((st = read_string(&c, &key)) != EMBER_OK) goto out;
        if (!eat(&c, ':')) { st = bad(&c, "expected ':'"); goto out; }
        skip_ws(&c);
        bool is_model = key.len == 5 && !memcmp(key.p, "model", 5);
        if (is_model && c.i < c.n && c.s[c.i] == '{') {
            c.i++;
            if (!eat(&c, '}')) {
                for (;;) {
                    key.len = 0;
                    if ((st = read_string(&c, &key)) != EMBER_OK) goto out;
                    if (!eat(&c, ':')) { st = bad(&c, "expected ':'"); goto out; }
                    skip_ws(&c);
                    size_t start = c.i;
                    if ((st = skip_value(&c, 2)) != EMBER_OK) goto out;
                    if (key.len == 5 && !memcmp(key.p, "vocab", 5)) *vocab = (tok_span_json){start, c.i};
                    if (key.len == 6 && !memcmp(key.p, "merges", 6)) *merges = (tok_span_json){start, c.i};
                    if (eat(&c, ',')) continue;
                    if (!eat(&c, '}')) { st = bad(&c, "expected ',' or '}'"); goto out; }
                    break;
                }
            }
        } else if ((st = skip_value(&c, 1)) != EMBER_OK)
            goto out;
        if (eat(&c, ',')) continue;
        if (!eat(&c, '}')) { st = bad(&c, "expected ',' or '}'"); goto out; }
        break;
    }
done:
    skip_ws(&c);
    if (c.i != c.n) st = bad(&c, "trailing data after the JSON object");
out:
    tok_buf_free(&key);
    return st;
}

ember_status tok_json_parse_vocab(const char *json, tok_span_json span, tok_buf *pool,
                                  tok_vocab_entry **entries, size_t *n)
{
    scan c = {json, span.start, span.end};
    tok_vocab_entry *v = NULL;
    size_t count = 0, cap = 0;
    ember_status st = EMBER_OK;
    *entries = NULL;
    *n = 0;
    if (!eat(&c, '{')) return bad(&c, "model.vocab: expected an object");
    if (eat(&c, '}')) return EMBER_OK;
    for (;;) {
        if (count == cap) {
            cap = cap ? cap * 2 : 1024;
            tok_vocab_entry *nv = realloc(v, cap * sizeof *nv);
            if (!nv) { st = ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory (vocab)"); break; }
            v = nv;
        }
        size_t off = pool->len;
        if ((st = read_string(&c, pool)) != EMBER_OK) break;
        size_t slen = pool->len - off;
        if ((st = tok_buf_append(pool, "", 0)) != EMBER_OK) break;
        pool->len++; /* keep the terminator */
        if (pool->len > UINT32_MAX) { st = bad(&c, "model.vocab: too large"); break; }
        if (!eat(&c, ':')) { st = bad(&c, "model.vocab: expected ':'"); break; }
        skip_ws(&c);
        int64_t id = 0;
        size_t digits = 0;
        while (c.i < c.n && c.s[c.i] >= '0' && c.s[c.i] <= '9' && digits < 10) {
            id = id * 10 + (c.s[c.i++] - '0');
            digits++;
        }
        if (!digits || id > INT32_MAX || (c.i < c.n && strchr("0123456789.eE", c.s[c.i]))) {
            st = ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.vocab[\"%s\"]: the id must be an integer in [0, 2^31)",
                            pool->p + off);
            break;
        }
        v[count++] = (tok_vocab_entry){(uint32_t)off, (uint32_t)slen, (int32_t)id};
        if (eat(&c, ',')) continue;
        if (!eat(&c, '}')) st = bad(&c, "model.vocab: expected ',' or '}'");
        break;
    }
    if (st != EMBER_OK) {
        free(v);
        return st;
    }
    *entries = v;
    *n = count;
    return EMBER_OK;
}

/* Resolves one merge (its two parts sit in buf) and stores it with its rank. */
static ember_status add_merge(et_tokenizer *t, const tok_buf *buf, size_t split, size_t rank)
{
    const char *a = buf->p, *b = buf->p + split;
    size_t alen = split, blen = buf->len - split;
    int32_t left = tok_map_find(t, a, alen), right = tok_map_find(t, b, blen);
    if (left < 0 || right < 0)
        return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: '%.*s' is not in the vocabulary",
                          rank, (int)(left < 0 ? alen : blen), left < 0 ? a : b);
    /* The merged token drops the right part's continuing-subword prefix. */
    size_t skip = 0;
    if (t->bpe.cont_prefix_len && blen >= t->bpe.cont_prefix_len &&
        !memcmp(b, t->bpe.cont_prefix, t->bpe.cont_prefix_len))
        skip = t->bpe.cont_prefix_len;
    char small[256];
    char *joined = alen + blen - skip <= sizeof small ? small : malloc(alen + blen - skip);
    if (!joined) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
    memcpy(joined, a, alen);
    memcpy(joined + alen, b + skip, blen - skip);
    int32_t merged = tok_map_find(t, joined, alen + blen - skip);
    if (joined != small) free(joined);
    if (merged < 0)
        return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: the merge of '%.*s' and '%.*s' is not in the vocabulary",
                          rank, (int)alen, a, (int)blen, b);
    tok_merge_put(t, left, right, (uint32_t)rank, merged);
    return EMBER_OK;
}

/* Counts the entries of the merges array cheaply (to size the table). */
static size_t count_merges(const char *json, tok_span_json span)
{
    size_t n = 1;
    bool in_str = false;
    int depth = 0;
    for (size_t i = span.start; i < span.end; i++) {
        char ch = json[i];
        if (in_str) {
            if (ch == '\\') i++;
            else if (ch == '"') in_str = false;
        } else if (ch == '"') in_str = true;
        else if (ch == '[') depth++;
        else if (ch == ']') depth--;
        else if (ch == ',' && depth == 1) n++;
    }
    return n;
}

ember_status tok_json_parse_merges(et_tokenizer *t, const char *json, tok_span_json span)
{
    scan c = {json, span.start, span.end};
    tok_buf buf = {0};
    ember_status st = EMBER_OK;
    if (!eat(&c, '[')) return bad(&c, "model.merges: expected an array");
    if ((st = tok_merges_alloc(t, count_merges(json, span))) != EMBER_OK) return st;
    if (eat(&c, ']')) return EMBER_OK;
    for (size_t rank = 0;; rank++) {
        buf.len = 0;
        size_t split;
        skip_ws(&c);
        if (c.i < c.n && c.s[c.i] == '[') { /* ["a", "b"] */
            c.i++;
            if ((st = read_string(&c, &buf)) != EMBER_OK) break;
            split = buf.len;
            if (!eat(&c, ',')) { st = bad(&c, "model.merges: expected a pair of strings"); break; }
            if ((st = read_string(&c, &buf)) != EMBER_OK) break;
            if (!eat(&c, ']')) { st = bad(&c, "model.merges: expected a pair of strings"); break; }
        } else { /* "a b" */
            if ((st = read_string(&c, &buf)) != EMBER_OK) break;
            char *sp = buf.len ? memchr(buf.p, ' ', buf.len) : NULL;
            if (!sp || memchr(sp + 1, ' ', buf.len - (size_t)(sp + 1 - buf.p))) {
                st = ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: expected \"left right\" with one space", rank);
                break;
            }
            split = (size_t)(sp - buf.p);
            memmove(sp, sp + 1, buf.len - split - 1);
            buf.len--;
        }
        if (split == 0 || split == buf.len) {
            st = ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: empty part", rank);
            break;
        }
        if (rank >= UINT32_MAX - 1 || rank > t->merge_mask / 2) { st = bad(&c, "model.merges: too many"); break; }
        if ((st = add_merge(t, &buf, split, rank)) != EMBER_OK) break;
        if (eat(&c, ',')) continue;
        if (!eat(&c, ']')) st = bad(&c, "model.merges: expected ',' or ']'");
        break;
    }
    tok_buf_free(&buf);
    return st;
}
