/* Pre-tokenizers: Split, ByteLevel, Metaspace, Digits, Whitespace,
 * WhitespaceSplit, Punctuation, BertPreTokenizer and Sequence. Each turns a
 * list of pieces into a finer one; new strings go to the call's arena. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tok_internal.h"

/* GPT-2's pre-tokenizer regex, as ByteLevel(use_regex=true) uses it. */
static const char gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char whitespace_regex[] = "\\w+|[^\\w\\s]+";

static const struct {
    const char *name;
    tok_pretok_type type;
} pretok_names[] = {
    {"Split", PRE_SPLIT}, {"ByteLevel", PRE_BYTE_LEVEL}, {"Metaspace", PRE_METASPACE},
    {"Digits", PRE_DIGITS}, {"Whitespace", PRE_WHITESPACE}, {"WhitespaceSplit", PRE_WHITESPACE_SPLIT},
    {"Punctuation", PRE_PUNCTUATION}, {"BertPreTokenizer", PRE_BERT}, {"Sequence", PRE_SEQUENCE},
};

static ember_status parse_behavior(const cJSON *j, const char *path, tok_split_behavior dflt,
                                   tok_split_behavior *out)
{
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    const char *s;
    ember_status st = tok_json_string(j, "behavior", path, &s);
    if (st != EMBER_OK) return st;
    *out = dflt;
    if (!s) return EMBER_OK;
    for (int k = 0; k < 5; k++)
        if (!strcmp(s, names[k])) { *out = (tok_split_behavior)k; return EMBER_OK; }
    return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer.json: %s.behavior: unknown behavior '%s'", path, s);
}

static ember_status parse_prepend_scheme(const cJSON *j, const char *path, tok_prepend_scheme *out)
{
    const char *s;
    ember_status st = tok_json_string(j, "prepend_scheme", path, &s);
    if (st != EMBER_OK) return st;
    *out = PREPEND_ALWAYS;
    if (!s) { /* older files: add_prefix_space */
        bool aps;
        if ((st = tok_json_bool(j, "add_prefix_space", true, path, &aps)) != EMBER_OK) return st;
        *out = aps ? PREPEND_ALWAYS : PREPEND_NEVER;
        return EMBER_OK;
    }
    if (!strcmp(s, "always")) *out = PREPEND_ALWAYS;
    else if (!strcmp(s, "first")) *out = PREPEND_FIRST;
    else if (!strcmp(s, "never")) *out = PREPEND_NEVER;
    else return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer.json: %s.prepend_scheme: unknown scheme '%s'", path, s);
    return EMBER_OK;
}

ember_status tok_pretok_parse(const cJSON *j, const char *path, int depth, tok_pretok *out)
{
    memset(out, 0, sizeof *out);
    if (depth > TOK_MAX_DEPTH) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: nested too deeply", path);
    ember_status st;
    const char *type = tok_json_type(j, path, &st);
    if (!type) return st;
    size_t k = 0, nn = sizeof pretok_names / sizeof pretok_names[0];
    while (k < nn && strcmp(pretok_names[k].name, type)) k++;
    if (k == nn) return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer.json: %s.type: unsupported pre-tokenizer '%s'", path, type);
    out->type = pretok_names[k].type;
    char sub[TOK_PATH_MAX];
    switch (out->type) {
    case PRE_SPLIT:
        snprintf(sub, sizeof sub, "%s.pattern", path);
        if ((st = tok_pattern_parse(cJSON_GetObjectItemCaseSensitive(j, "pattern"), sub, &out->pattern)) != EMBER_OK) return st;
        if ((st = parse_behavior(j, path, SPLIT_ISOLATED, &out->behavior)) != EMBER_OK) return st;
        return tok_json_bool(j, "invert", false, path, &out->invert);
    case PRE_BYTE_LEVEL:
        if ((st = tok_json_bool(j, "add_prefix_space", true, path, &out->add_prefix_space)) != EMBER_OK) return st;
        if ((st = tok_json_bool(j, "use_regex", true, path, &out->use_regex)) != EMBER_OK) return st;
        if (!out->use_regex) return EMBER_OK;
        snprintf(sub, sizeof sub, "%s (GPT-2 regex)", path);
        return tok_regex_compile(gpt2_regex, sizeof gpt2_regex - 1, sub, &out->pattern.re);
    case PRE_METASPACE:
        if ((st = tok_json_char(j, "replacement", "\xE2\x96\x81", path, out->replacement, &out->replacement_len)) != EMBER_OK)
            return st;
        if ((st = parse_prepend_scheme(j, path, &out->prepend_scheme)) != EMBER_OK) return st;
        return tok_json_bool(j, "split", true, path, &out->split);
    case PRE_DIGITS:
        return tok_json_bool(j, "individual_digits", false, path, &out->individual_digits);
    case PRE_WHITESPACE:
        return tok_regex_compile(whitespace_regex, sizeof whitespace_regex - 1, path, &out->pattern.re);
    case PRE_PUNCTUATION:
        return parse_behavior(j, path, SPLIT_ISOLATED, &out->behavior);
    case PRE_SEQUENCE: {
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(j, "pretokenizers");
        if (!cJSON_IsArray(items)) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.pretokenizers: expected an array", path);
        size_t n = (size_t)cJSON_GetArraySize(items);
        out->items = calloc(n ? n : 1, sizeof *out->items);
        if (!out->items) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
        const cJSON *it;
        cJSON_ArrayForEach(it, items) {
            snprintf(sub, sizeof sub, "%s.pretokenizers[%zu]", path, out->n_items);
            st = tok_pretok_parse(it, sub, depth + 1, &out->items[out->n_items]);
            out->n_items++;
            if (st != EMBER_OK) return st;
        }
        return EMBER_OK;
    }
    default: return EMBER_OK;
    }
}

void tok_pretok_free(tok_pretok *p)
{
    if (!p) return;
    tok_pattern_free(&p->pattern);
    for (size_t i = 0; i < p->n_items; i++) tok_pretok_free(&p->items[i]);
    free(p->items);
    memset(p, 0, sizeof *p);
}

/* Appends the gap before [a, b) (if any) and the match itself to seq. */
static ember_status add_match(tok_spans *seq, size_t *prev, size_t a, size_t b)
{
    ember_status st = EMBER_OK;
    if (*prev < a) st = tok_spans_push(seq, *prev, a, false);
    if (st == EMBER_OK) st = tok_spans_push(seq, a, b, true);
    *prev = b;
    return st;
}

/* Matches of a pattern in piece p, as a covering span sequence. */
static ember_status pattern_spans(const tok_pattern *pat, const tok_buf *arena, const tok_piece *p,
                                  pcre2_match_data *md, tok_spans *seq)
{
    const char *s = arena->p + p->off;
    size_t prev = p->off, from = 0;
    seq->n = 0;
    for (;;) {
        bool found;
        size_t a, b;
        ember_status st = tok_pattern_find(pat, s, p->len, from, md, &found, &a, &b);
        if (st != EMBER_OK) return st;
        if (!found) break;
        if (a == b) { /* empty match: step one character, keep nothing */
            uint32_t cp;
            if (a >= p->len) break;
            from = a + tok_utf8_decode(s + a, p->len - a, &cp);
            continue;
        }
        if ((st = add_match(seq, &prev, p->off + a, p->off + b)) != EMBER_OK) return st;
        from = b;
    }
    return prev < p->off + p->len ? tok_spans_push(seq, prev, p->off + p->len, false) : EMBER_OK;
}

typedef bool (*char_pred)(uint32_t cp);

static bool is_ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static bool is_ws(uint32_t c) { return tok_is_whitespace(c); }
static bool is_punct(uint32_t c)
{
    if (c < 0x80) return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
    utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)c);
    return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

/* Every character satisfying pred is a match of its own. */
static ember_status pred_spans(char_pred pred, const tok_buf *arena, const tok_piece *p, tok_spans *seq)
{
    const char *s = arena->p + p->off;
    size_t prev = p->off;
    seq->n = 0;
    for (size_t i = 0; i < p->len;) {
        uint32_t cp;
        size_t k = tok_utf8_decode(s + i, p->len - i, &cp);
        if (pred(cp)) {
            ember_status st = add_match(seq, &prev, p->off + i, p->off + i + k);
            if (st != EMBER_OK) return st;
        }
        i += k;
    }
    return prev < p->off + p->len ? tok_spans_push(seq, prev, p->off + p->len, false) : EMBER_OK;
}

/* A piece whose ByteLevel mapping is pending gets it written out, for the
 * pre-tokenizers that run after a ByteLevel one. */
static ember_status materialize(tok_buf *arena, tok_piece *p)
{
    if (!p->raw_bytes) return EMBER_OK;
    size_t off = arena->len;
    ember_status st = tok_buf_reserve(arena, p->len * 2 + 1);
    if (st != EMBER_OK) return st;
    for (size_t i = 0; i < p->len; i++) {
        char enc[4];
        size_t k = tok_utf8_encode(tok_byte_to_char((uint8_t)arena->p[p->off + i]), enc);
        memcpy(arena->p + arena->len, enc, k);
        arena->len += k;
    }
    p->off = off;
    p->len = arena->len - off;
    p->raw_bytes = 0;
    return EMBER_OK;
}

static ember_status prepend_to(tok_buf *arena, tok_piece *p, const char *pre, size_t n)
{
    size_t off = arena->len;
    ember_status st = tok_buf_reserve(arena, n + p->len + 1);
    if (st != EMBER_OK) return st;
    memcpy(arena->p + arena->len, pre, n);
    memcpy(arena->p + arena->len + n, arena->p + p->off, p->len);
    arena->len += n + p->len;
    p->off = off;
    p->len += n;
    return EMBER_OK;
}

static ember_status metaspace(const tok_pretok *pt, tok_buf *arena, tok_piece p, tok_spans *seq,
                              tok_pieces *out)
{
    /* spaces -> the replacement character */
    size_t off = arena->len;
    ember_status st = tok_buf_reserve(arena, p.len * pt->replacement_len + pt->replacement_len + 1);
    if (st != EMBER_OK) return st;
    bool starts = p.len >= pt->replacement_len && !memcmp(arena->p + p.off, pt->replacement, pt->replacement_len);
    bool prepend = !(p.len && arena->p[p.off] == ' ') && !starts &&
                   (pt->prepend_scheme == PREPEND_ALWAYS || (pt->prepend_scheme == PREPEND_FIRST && p.first));
    char *w = arena->p + arena->len;
    if (prepend) { memcpy(w, pt->replacement, pt->replacement_len); w += pt->replacement_len; }
    for (size_t i = 0; i < p.len; i++) {
        char c = arena->p[p.off + i];
        if (c == ' ') { memcpy(w, pt->replacement, pt->replacement_len); w += pt->replacement_len; }
        else *w++ = c;
    }
    arena->len = (size_t)(w - arena->p);
    tok_piece q = {off, arena->len - off, 0, p.first};
    if (!pt->split) return tok_pieces_push(out, q.off, q.len, 0, q.first);
    tok_pattern lit = {(char *)pt->replacement, pt->replacement_len, NULL};
    if ((st = pattern_spans(&lit, arena, &q, NULL, seq)) != EMBER_OK) return st;
    return tok_split_by(&q, seq, SPLIT_MERGED_WITH_NEXT, false, out);
}

static ember_status apply_one(const tok_pretok *pt, tok_buf *arena, tok_piece p, tok_spans *seq,
                              pcre2_match_data *md, tok_pieces *out)
{
    ember_status st;
    if ((st = materialize(arena, &p)) != EMBER_OK) return st;
    switch (pt->type) {
    case PRE_SPLIT:
        if ((st = pattern_spans(&pt->pattern, arena, &p, md, seq)) != EMBER_OK) return st;
        return tok_split_by(&p, seq, pt->behavior, pt->invert, out);
    case PRE_BYTE_LEVEL: {
        if (pt->add_prefix_space && !(p.len && arena->p[p.off] == ' ') &&
            (st = prepend_to(arena, &p, " ", 1)) != EMBER_OK)
            return st;
        size_t first_out = out->n;
        if (!pt->use_regex) st = tok_pieces_push(out, p.off, p.len, 1, p.first);
        else if ((st = pattern_spans(&pt->pattern, arena, &p, md, seq)) == EMBER_OK)
            st = tok_split_by(&p, seq, SPLIT_ISOLATED, false, out);
        if (st != EMBER_OK) return st;
        for (size_t i = first_out; i < out->n; i++) out->v[i].raw_bytes = 1;
        return EMBER_OK;
    }
    case PRE_METASPACE: return metaspace(pt, arena, p, seq, out);
    case PRE_DIGITS:
        if ((st = pred_spans(is_ascii_digit, arena, &p, seq)) != EMBER_OK) return st;
        return tok_split_by(&p, seq, pt->individual_digits ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS, false, out);
    case PRE_WHITESPACE:
        if ((st = pattern_spans(&pt->pattern, arena, &p, md, seq)) != EMBER_OK) return st;
        return tok_split_by(&p, seq, SPLIT_REMOVED, true, out);
    case PRE_WHITESPACE_SPLIT:
        if ((st = pred_spans(is_ws, arena, &p, seq)) != EMBER_OK) return st;
        return tok_split_by(&p, seq, SPLIT_REMOVED, false, out);
    case PRE_PUNCTUATION:
        if ((st = pred_spans(is_punct, arena, &p, seq)) != EMBER_OK) return st;
        return tok_split_by(&p, seq, pt->behavior, false, out);
    case PRE_BERT: {
        size_t first_out = out->n;
        if ((st = pred_spans(is_ws, arena, &p, seq)) != EMBER_OK) return st;
        if ((st = tok_split_by(&p, seq, SPLIT_REMOVED, false, out)) != EMBER_OK) return st;
        /* then punctuation, isolated, inside each of those pieces */
        size_t end = out->n;
        for (size_t i = first_out; i < end; i++) {
            tok_piece q = out->v[i];
            if ((st = pred_spans(is_punct, arena, &q, seq)) != EMBER_OK) return st;
            if ((st = tok_split_by(&q, seq, SPLIT_ISOLATED, false, out)) != EMBER_OK) return st;
        }
        memmove(out->v + first_out, out->v + end, (out->n - end) * sizeof *out->v);
        out->n -= end - first_out;
        return EMBER_OK;
    }
    case PRE_SEQUENCE: break; /* handled by tok_pretokenize */
    }
    return EMBER_OK;
}

ember_status tok_pretokenize(const tok_pretok *pt, tok_buf *arena, tok_pieces *in,
                             tok_pieces *out, tok_pieces *tmp, pcre2_match_data *md)
{
    tok_spans seq = {0};
    ember_status st = EMBER_OK;
    out->n = 0;
    if (pt->type != PRE_SEQUENCE) {
        for (size_t i = 0; i < in->n && st == EMBER_OK; i++)
            st = apply_one(pt, arena, in->v[i], &seq, md, out);
        free(seq.v);
        return st;
    }
    /* Sequence: each step reads the previous one's pieces; the lists
     * alternate between tmp and out (never writing over `in`). */
    tok_pieces *src = in;
    for (size_t k = 0; k < pt->n_items && st == EMBER_OK; k++) {
        tok_pieces *dst = src == tmp ? out : tmp;
        if (pt->items[k].type == PRE_SEQUENCE) {
            tok_pieces inner = {0};
            st = tok_pretokenize(&pt->items[k], arena, src, dst, &inner, md);
            tok_pieces_free(&inner);
        } else {
            dst->n = 0;
            for (size_t i = 0; i < src->n && st == EMBER_OK; i++)
                st = apply_one(&pt->items[k], arena, src->v[i], &seq, md, dst);
        }
        src = dst;
    }
    if (st == EMBER_OK && src != out) {
        out->n = 0;
        for (size_t i = 0; i < src->n && st == EMBER_OK; i++)
            st = tok_pieces_push(out, src->v[i].off, src->v[i].len, src->v[i].raw_bytes, src->v[i].first);
    }
    free(seq.v);
    return st;
}
