/* Template source -> tokens, as @huggingface/jinja's lexer does it: first the
 * preprocessing transformers.js asks for (drop one final newline,
 * lstrip_blocks, trim_blocks, remove {% generation %} tags), then one pass
 * that alternates between raw text and the inside of {{ }}, {% %} and {# #}.
 * Every output byte remembers its offset in the original source so errors
 * can say line and column. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_internal.h"

ember_status ej_fail_at(ember_status st, const char *src, size_t len, uint32_t pos,
                        const char *fmt, ...)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < len; i++) {
        if (src[i] == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)src[i] & 0xc0) != 0x80) {
            col++;
        }
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ember_fail(st, "template:%zu:%zu: %s", line, col, msg);
}

/* Text with, for each byte, its offset in the original source. */
typedef struct pp_text {
    char *s;
    uint32_t *at;
    size_t n;
} pp_text;

static ember_status pp_new(ej_arena *a, size_t cap, pp_text *t)
{
    t->s = ej_alloc(a, cap + 1);
    t->at = ej_alloc(a, (cap + 1) * sizeof *t->at);
    t->n = 0;
    return t->s && t->at ? EMBER_OK : EMBER_ERR_NO_MEMORY;
}

static void pp_copy(pp_text *dst, const pp_text *src, size_t i)
{
    dst->s[dst->n] = src->s[i];
    dst->at[dst->n++] = src->at[i];
}

/* Is there a JavaScript line start (for ^ with the m flag) at offset i? */
static bool line_start(const pp_text *t, size_t i)
{
    if (i == 0) return true;
    char c = t->s[i - 1];
    if (c == '\n' || c == '\r') return true;
    /* U+2028 / U+2029 end in E2 80 A8 / A9 */
    return i >= 3 && (unsigned char)t->s[i - 3] == 0xe2 && (unsigned char)t->s[i - 2] == 0x80 &&
           ((unsigned char)c == 0xa8 || (unsigned char)c == 0xa9);
}

/* template.replace(/^[ \t]*({[#%-])/gm, "$1") */
static ember_status lstrip_blocks(ej_arena *a, const pp_text *in, pp_text *out)
{
    if (pp_new(a, in->n, out)) return EMBER_ERR_NO_MEMORY;
    for (size_t i = 0; i < in->n;) {
        if (line_start(in, i)) {
            size_t j = i;
            while (j < in->n && (in->s[j] == ' ' || in->s[j] == '\t')) j++;
            if (j + 1 < in->n && in->s[j] == '{' &&
                (in->s[j + 1] == '#' || in->s[j + 1] == '%' || in->s[j + 1] == '-'))
                i = j;
        }
        /* copy up to and including the next line terminator byte */
        do {
            pp_copy(out, in, i);
        } while (++i < in->n && !line_start(in, i));
    }
    return EMBER_OK;
}

/* template.replace(/([#%-]})\n/g, "$1") */
static ember_status trim_blocks(ej_arena *a, const pp_text *in, pp_text *out)
{
    if (pp_new(a, in->n, out)) return EMBER_ERR_NO_MEMORY;
    for (size_t i = 0; i < in->n; i++) {
        pp_copy(out, in, i);
        char c = in->s[i];
        if ((c == '#' || c == '%' || c == '-') && i + 2 < in->n && in->s[i + 1] == '}' &&
            in->s[i + 2] == '\n') {
            pp_copy(out, in, i + 1);
            i += 2; /* skip the newline */
        }
    }
    return EMBER_OK;
}

static size_t skip_js_space(const char *s, size_t n, size_t i)
{
    while (i < n) {
        size_t j = i;
        if (!ej_js_space(ej_utf8_next(s, n, &j))) break;
        i = j;
    }
    return i;
}

/* Length of a {%-? \s* (end)?generation \s* -?%} tag at i, or 0; sets the strips. */
static size_t generation_tag(const char *s, size_t n, size_t i, bool *lstrip, bool *rstrip)
{
    if (i + 2 > n || s[i] != '{' || s[i + 1] != '%') return 0;
    size_t j = i + 2;
    *lstrip = j < n && s[j] == '-';
    if (*lstrip) j++;
    j = skip_js_space(s, n, j);
    if (j + 3 <= n && !memcmp(s + j, "end", 3)) j += 3;
    if (j + 10 > n || memcmp(s + j, "generation", 10)) return 0;
    j = skip_js_space(s, n, j + 10);
    *rstrip = j < n && s[j] == '-';
    if (*rstrip) j++;
    if (j + 2 > n || s[j] != '%' || s[j + 1] != '}') return 0;
    return j + 2 - i;
}

/* /(\s*){%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/gs: the tag goes, the
 * whitespace around it stays unless the tag's '-' asks to strip it. */
static ember_status strip_generation(ej_arena *a, const pp_text *in, pp_text *out)
{
    if (pp_new(a, in->n, out)) return EMBER_ERR_NO_MEMORY;
    size_t kept_from = 0; /* output bytes before this belong to an earlier match */
    for (size_t i = 0; i < in->n;) {
        bool lstrip, rstrip;
        size_t len = generation_tag(in->s, in->n, i, &lstrip, &rstrip);
        if (!len) {
            pp_copy(out, in, i++);
            continue;
        }
        if (lstrip) {
            /* drop the whitespace run just before the tag */
            size_t ws = ej_trim_end((ej_str){out->s + kept_from, out->n - kept_from});
            out->n = kept_from + ws;
        }
        size_t after = skip_js_space(in->s, in->n, i + len);
        if (!rstrip)
            for (size_t k = i + len; k < after; k++) pp_copy(out, in, k);
        i = after;
        kept_from = out->n;
    }
    return EMBER_OK;
}

typedef struct lexer {
    ej_arena *a;
    const char *orig;
    size_t orig_len;
    pp_text t;
    size_t i;
    ej_token *toks;
    size_t n, cap;
    int curly_depth;
} lexer;

static ember_status lex_fail(lexer *L, size_t i, const char *msg, const char *detail)
{
    uint32_t pos = i < L->t.n ? L->t.at[i] : (uint32_t)L->orig_len;
    return ej_fail_at(EMBER_ERR_FORMAT, L->orig, L->orig_len, pos, "%s%s", msg, detail);
}

static ember_status push(lexer *L, ej_tok_type type, const char *s, size_t n, size_t at)
{
    if (L->n + 2 > L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 64;
        ej_token *grown = ej_alloc(L->a, cap * sizeof *grown);
        if (!grown) return EMBER_ERR_NO_MEMORY;
        if (L->n) memcpy(grown, L->toks, L->n * sizeof *grown);
        L->toks = grown;
        L->cap = cap;
    }
    ej_token *t = &L->toks[L->n++];
    t->type = type;
    t->text.s = s;
    t->text.n = n;
    t->pos = at < L->t.n ? L->t.at[at] : (uint32_t)L->orig_len;
    return EMBER_OK;
}

static ej_tok_type last_type(const lexer *L) { return L->n ? L->toks[L->n - 1].type : EJT_EOF; }

static bool starts(const lexer *L, const char *z)
{
    size_t k = strlen(z);
    return L->i + k <= L->t.n && !memcmp(L->t.s + L->i, z, k);
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_word(char c)
{
    return is_digit(c) || c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* The {%- / {{- / {#- strip: the text before loses its trailing whitespace. */
static void strip_trailing(lexer *L)
{
    if (L->n && L->toks[L->n - 1].type == EJT_TEXT) {
        ej_token *t = &L->toks[L->n - 1];
        t->text.n = ej_trim_end(t->text);
        if (t->text.n == 0) L->n--;
    }
}

static int hex_value(char c)
{
    if (is_digit(c)) return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static ember_status read_hex(lexer *L, size_t digits, uint32_t *out)
{
    uint32_t v = 0;
    for (size_t k = 0; k < digits; k++) {
        int h = L->i + k < L->t.n ? hex_value(L->t.s[L->i + k]) : -1;
        if (h < 0) return lex_fail(L, L->i, "invalid hexadecimal escape sequence", "");
        v = v * 16 + (uint32_t)h;
    }
    L->i += digits;
    *out = v;
    return EMBER_OK;
}

/* A quoted string literal with JavaScript-style escapes, L->i after the quote. */
static ember_status lex_string(lexer *L, char quote)
{
    size_t start = L->i - 1;
    char *buf = ej_alloc(L->a, L->t.n - L->i + 1);
    if (!buf) return EMBER_ERR_NO_MEMORY;
    size_t o = 0;
    for (;;) {
        if (L->i >= L->t.n) return lex_fail(L, start, "unterminated string literal", "");
        char c = L->t.s[L->i];
        if (c == quote) break;
        if (c != '\\') {
            buf[o++] = c;
            L->i++;
            continue;
        }
        if (++L->i >= L->t.n) return lex_fail(L, start, "unterminated string literal", "");
        char e = L->t.s[L->i++];
        uint32_t cp = 0;
        switch (e) {
        case 'n': buf[o++] = '\n'; break;
        case 't': buf[o++] = '\t'; break;
        case 'r': buf[o++] = '\r'; break;
        case 'b': buf[o++] = '\b'; break;
        case 'f': buf[o++] = '\f'; break;
        case 'v': buf[o++] = '\v'; break;
        case '\'': case '"': case '\\': buf[o++] = e; break;
        case 'x':
        case 'u':
            if (read_hex(L, e == 'x' ? 2 : 4, &cp)) return EMBER_ERR_FORMAT;
            if (cp >= 0xd800 && cp < 0xdc00 && starts(L, "\\u")) {
                /* a surrogate pair written as two escapes is one character */
                size_t save = L->i;
                uint32_t lo = 0;
                L->i += 2;
                if (!read_hex(L, 4, &lo) && lo >= 0xdc00 && lo < 0xe000)
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                else
                    L->i = save;
            }
            if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd; /* a lone surrogate */
            o += ej_utf8_put(buf + o, cp);
            break;
        default: {
            char d[2] = {e, 0};
            return lex_fail(L, L->i - 2, "unexpected escaped character: ", d);
        }
        }
    }
    L->i++; /* the closing quote */
    return push(L, EJT_STRING, buf, o, start);
}

static const struct {
    const char *seq;
    ej_tok_type type;
} symbols[] = {
    {"{%", EJT_OPEN_STMT}, {"%}", EJT_CLOSE_STMT}, {"{{", EJT_OPEN_EXPR}, {"}}", EJT_CLOSE_EXPR},
    {"(", EJT_LPAREN}, {")", EJT_RPAREN}, {"{", EJT_LBRACE}, {"}", EJT_RBRACE},
    {"[", EJT_LBRACKET}, {"]", EJT_RBRACKET}, {",", EJT_COMMA}, {".", EJT_DOT},
    {":", EJT_COLON}, {"|", EJT_PIPE}, {"<=", EJT_CMP}, {">=", EJT_CMP}, {"==", EJT_CMP},
    {"!=", EJT_CMP}, {"<", EJT_CMP}, {">", EJT_CMP}, {"+", EJT_ADD}, {"-", EJT_ADD},
    {"~", EJT_ADD}, {"**", EJT_POW}, {"*", EJT_MUL}, {"//", EJT_MUL}, {"/", EJT_MUL},
    {"%", EJT_MUL}, {"=", EJT_EQUALS},
};

static size_t digits_at(const lexer *L, size_t i)
{
    size_t j = i;
    while (j < L->t.n && is_digit(L->t.s[j])) j++;
    return j - i;
}

/* One step of the reference's main loop; L->i advances. */
static ember_status lex_step(lexer *L)
{
    const char *s = L->t.s;
    size_t n = L->t.n;
    ej_tok_type last = last_type(L);
    if (last == EJT_EOF || last == EJT_CLOSE_STMT || last == EJT_CLOSE_EXPR || last == EJT_COMMENT) {
        size_t start = L->i;
        while (L->i < n && !(s[L->i] == '{' && L->i + 1 < n &&
                             (s[L->i + 1] == '%' || s[L->i + 1] == '{' || s[L->i + 1] == '#')))
            L->i++;
        if (L->i > start) return push(L, EJT_TEXT, s + start, L->i - start, start);
    }
    if (starts(L, "{#")) {
        size_t start = L->i;
        L->i += 2;
        bool strip_before = L->i < n && s[L->i] == '-';
        if (strip_before) L->i++;
        size_t body = L->i;
        while (!(L->i + 1 < n && s[L->i] == '#' && s[L->i + 1] == '}')) {
            if (L->i + 2 >= n) return lex_fail(L, start, "missing end of comment tag", "");
            L->i++;
        }
        bool strip_after = L->i > body && s[L->i - 1] == '-';
        if (strip_before) strip_trailing(L);
        if (push(L, EJT_COMMENT, s + body, L->i - body, start)) return EMBER_ERR_NO_MEMORY;
        L->i += 2;
        if (strip_after) L->i = skip_js_space(s, n, L->i);
        return EMBER_OK;
    }
    if (starts(L, "{%-") || starts(L, "{{-")) {
        bool stmt = s[L->i + 1] == '%';
        strip_trailing(L);
        if (!stmt) L->curly_depth = 0;
        L->i += 3;
        return push(L, stmt ? EJT_OPEN_STMT : EJT_OPEN_EXPR, s + L->i - 3, 2, L->i - 3);
    }
    L->i = skip_js_space(s, n, L->i);
    if (L->i >= n) return lex_fail(L, n, "unexpected end of template", "");
    if (starts(L, "-%}") || starts(L, "-}}")) {
        bool stmt = s[L->i + 1] == '%';
        L->i += 3;
        if (push(L, stmt ? EJT_CLOSE_STMT : EJT_CLOSE_EXPR, s + L->i - 2, 2, L->i - 3))
            return EMBER_ERR_NO_MEMORY;
        L->i = skip_js_space(s, n, L->i);
        return EMBER_OK;
    }
    char c = s[L->i];
    last = last_type(L);
    if (c == '-' || c == '+') {
        if (last == EJT_TEXT || last == EJT_EOF) {
            char d[2] = {c, 0};
            return lex_fail(L, L->i, "unexpected character: ", d);
        }
        if (last != EJT_IDENT && last != EJT_NUMBER && last != EJT_STRING && last != EJT_RPAREN &&
            last != EJT_RBRACKET) {
            /* a sign: a negative number literal, or a unary operator */
            size_t start = L->i++;
            size_t k = digits_at(L, L->i);
            L->i += k;
            if (k && L->i + 1 < n && s[L->i] == '.' && is_digit(s[L->i + 1]))
                L->i += 1 + digits_at(L, L->i + 1);
            return push(L, k ? EJT_NUMBER : EJT_UNARY, s + start, L->i - start, start);
        }
    }
    for (size_t k = 0; k < sizeof symbols / sizeof symbols[0]; k++) {
        if (symbols[k].type == EJT_CLOSE_EXPR && L->curly_depth > 0) continue;
        if (!starts(L, symbols[k].seq)) continue;
        size_t len = strlen(symbols[k].seq);
        if (symbols[k].type == EJT_OPEN_EXPR) L->curly_depth = 0;
        if (symbols[k].type == EJT_LBRACE) L->curly_depth++;
        if (symbols[k].type == EJT_RBRACE) L->curly_depth--;
        L->i += len;
        return push(L, symbols[k].type, s + L->i - len, len, L->i - len);
    }
    if (c == '\'' || c == '"') {
        L->i++;
        return lex_string(L, c);
    }
    if (is_digit(c)) {
        size_t start = L->i;
        L->i += digits_at(L, L->i);
        if (last != EJT_DOT && L->i + 1 < n && s[L->i] == '.' && is_digit(s[L->i + 1]))
            L->i += 1 + digits_at(L, L->i + 1);
        return push(L, EJT_NUMBER, s + start, L->i - start, start);
    }
    if (is_word(c)) {
        size_t start = L->i;
        while (L->i < n && is_word(s[L->i])) L->i++;
        return push(L, EJT_IDENT, s + start, L->i - start, start);
    }
    size_t j = L->i;
    uint32_t cp = ej_utf8_next(s, n, &j);
    char d[16];
    if (cp >= 0x20 && cp < 0x7f)
        snprintf(d, sizeof d, "'%c'", (char)cp);
    else
        snprintf(d, sizeof d, "U+%04X", (unsigned)cp);
    return lex_fail(L, L->i, "unexpected character ", d);
}

ember_status ej_lex(ej_arena *a, const char *src, size_t len, ej_token **out, size_t *n_out)
{
    if (len > UINT32_MAX / 2) return ember_fail(EMBER_ERR_INVALID_ARG, "template: too large");
    pp_text raw, s1, s2, s3;
    if (pp_new(a, len, &raw)) return EMBER_ERR_NO_MEMORY;
    for (size_t i = 0; i < len; i++) {
        raw.s[i] = src[i];
        raw.at[i] = (uint32_t)i;
    }
    raw.n = len && src[len - 1] == '\n' ? len - 1 : len;
    if (lstrip_blocks(a, &raw, &s1) || trim_blocks(a, &s1, &s2) || strip_generation(a, &s2, &s3))
        return EMBER_ERR_NO_MEMORY;
    lexer L = {.a = a, .orig = src, .orig_len = len, .t = s3};
    while (L.i < L.t.n) {
        ember_status st = lex_step(&L);
        if (st) return st;
    }
    if (push(&L, EJT_EOF, "", 0, L.t.n)) return EMBER_ERR_NO_MEMORY;
    *out = L.toks;
    *n_out = L.n;
    return EMBER_OK;
}
