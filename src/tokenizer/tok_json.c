/* A focused JSON scanner for the two big parts of tokenizer.json:
 * model.vocab (an object of string -> id) and model.merges (an array of
 * "a b" strings or [a, b] pairs). A general DOM parser spends most of the
 * load time allocating a node per entry; this reads them straight into the
 * token pool and the merge table. The rest of the file (small) goes through
 * cJSON. Everything is bounds-checked: the input is untrusted. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

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

/* Merges are resolved in batches: for each one three strings (left, right,
 * and their join) must be found in the 151k-entry string table, and each
 * lookup is a cache miss or two. Hashing and prefetching the whole batch
 * before looking anything up lets those misses overlap. */
#define MERGE_BATCH 32

typedef struct {
    uint32_t off, split, len; /* in the batch buffer: left = [off, off+split), right = the rest */
    uint32_t joined_off, joined_len;
    uint64_t h_left, h_right, h_joined;
} pending_merge;

typedef struct {
    tok_buf text; /* the strings of the batch */
    pending_merge m[MERGE_BATCH];
    int32_t left[MERGE_BATCH], right[MERGE_BATCH], merged[MERGE_BATCH]; /* resolved ids */
    size_t n, first_rank;
} merge_batch;

/* Appends the join of the pending merge's two parts: the right part drops
 * its continuing-subword prefix. Without one, the join is the pair itself. */
static ember_status add_joined(const et_tokenizer *t, merge_batch *b, pending_merge *m)
{
    const char *right = b->text.p + m->off + m->split;
    size_t right_len = m->len - m->split, skip = 0;
    if (t->bpe.cont_prefix_len && right_len >= t->bpe.cont_prefix_len &&
        !memcmp(right, t->bpe.cont_prefix, t->bpe.cont_prefix_len))
        skip = t->bpe.cont_prefix_len;
    m->joined_off = m->off;
    m->joined_len = m->len;
    if (!skip) return EMBER_OK;
    size_t at = b->text.len;
    ember_status st = tok_buf_reserve(&b->text, m->len + 1);
    if (st != EMBER_OK) return st;
    const char *left = b->text.p + m->off; /* the reserve may have moved it */
    memcpy(b->text.p + at, left, m->split);
    memcpy(b->text.p + at + m->split, left + m->split + skip, right_len - skip);
    b->text.len = at + m->len - skip;
    m->joined_off = (uint32_t)at;
    m->joined_len = (uint32_t)(m->len - skip);
    return EMBER_OK;
}

/* Looks up every merge of the batch, then stores them in rank order (a
 * later duplicate pair overwrites an earlier one, as Hugging Face does). */
static ember_status flush_merges(et_tokenizer *t, merge_batch *b)
{
    const char *p = b->text.p;
    for (size_t k = 0; k < b->n; k++) {
        pending_merge *m = &b->m[k];
        m->h_left = tok_hash_bytes(p + m->off, m->split);
        m->h_right = tok_hash_bytes(p + m->off + m->split, m->len - m->split);
        m->h_joined = tok_hash_bytes(p + m->joined_off, m->joined_len);
        tok_map_prefetch(t, m->h_left);
        tok_map_prefetch(t, m->h_right);
        tok_map_prefetch(t, m->h_joined);
    }
    for (size_t k = 0; k < b->n; k++) {
        const pending_merge *m = &b->m[k];
        size_t rank = b->first_rank + k;
        const char *a = p + m->off, *r = a + m->split;
        size_t alen = m->split, rlen = m->len - m->split;
        int32_t left = tok_map_find_hashed(t, a, alen, m->h_left);
        int32_t right = tok_map_find_hashed(t, r, rlen, m->h_right);
        if (left < 0 || right < 0)
            return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: '%.*s' is not in the vocabulary",
                              rank, (int)(left < 0 ? alen : rlen), left < 0 ? a : r);
        int32_t merged = tok_map_find_hashed(t, p + m->joined_off, m->joined_len, m->h_joined);
        if (merged < 0)
            return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: the merge of '%.*s' and '%.*s' is not in the vocabulary",
                              rank, (int)alen, a, (int)rlen, r);
        b->left[k] = left;
        b->right[k] = right;
        b->merged[k] = merged;
        tok_merge_prefetch(t, left, right);
    }
    for (size_t k = 0; k < b->n; k++)
        tok_merge_put(t, b->left[k], b->right[k], (uint32_t)(b->first_rank + k), b->merged[k]);
    b->first_rank += b->n;
    b->n = 0;
    b->text.len = 0;
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
    merge_batch batch = {0};
    ember_status st = EMBER_OK;
    if (!eat(&c, '[')) return bad(&c, "model.merges: expected an array");
    if ((st = tok_merges_alloc(t, count_merges(json, span))) != EMBER_OK) return st;
    if (eat(&c, ']')) return EMBER_OK;
    for (size_t rank = 0;; rank++) {
        tok_buf *buf = &batch.text;
        size_t off = buf->len, split;
        skip_ws(&c);
        if (c.i < c.n && c.s[c.i] == '[') { /* ["a", "b"] */
            c.i++;
            if ((st = read_string(&c, buf)) != EMBER_OK) break;
            split = buf->len - off;
            if (!eat(&c, ',')) { st = bad(&c, "model.merges: expected a pair of strings"); break; }
            if ((st = read_string(&c, buf)) != EMBER_OK) break;
            if (!eat(&c, ']')) { st = bad(&c, "model.merges: expected a pair of strings"); break; }
        } else { /* "a b" */
            if ((st = read_string(&c, buf)) != EMBER_OK) break;
            size_t n = buf->len - off;
            char *str = n ? buf->p + off : NULL; /* "" leaves the buffer unallocated */
            char *sp = n ? memchr(str, ' ', n) : NULL;
            if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - str))) {
                st = ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: expected \"left right\" with one space", rank);
                break;
            }
            split = (size_t)(sp - str);
            memmove(sp, sp + 1, n - split - 1);
            buf->len--;
        }
        size_t len = buf->len - off;
        if (split == 0 || split == len) {
            st = ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: empty part", rank);
            break;
        }
        if (rank >= UINT32_MAX - 1 || rank > t->merge_mask / 3 * 2) { st = bad(&c, "model.merges: too many"); break; }
        pending_merge *m = &batch.m[batch.n++];
        *m = (pending_merge){.off = (uint32_t)off, .split = (uint32_t)split, .len = (uint32_t)len};
        if ((st = add_joined(t, &batch, m)) != EMBER_OK) break;
        if (batch.n == MERGE_BATCH && (st = flush_merges(t, &batch)) != EMBER_OK) break;
        if (eat(&c, ',')) continue;
        if (!eat(&c, ']')) st = bad(&c, "model.merges: expected ',' or ']'");
        break;
    }
    if (st == EMBER_OK) st = flush_merges(t, &batch);
    tok_buf_free(&batch.text);
    return st;
}
