/* String and Regex patterns of tokenizer.json (Split, Replace), compiled
 * with PCRE2 (UTF + UCP, JIT when available).
 *
 * tokenizer.json regexes are written for Oniguruma. PCRE2 reads them as they
 * are except for a few escapes whose meaning differs; those are rewritten:
 *   \s, \S  Unicode White_Space exactly (PCRE2's UCP \s also takes U+180E)
 *   \h, \H  Oniguruma's hex digit (PCRE2's \h is horizontal space) */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

#define WHITE_SPACE_SET "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"

static ember_status translate(const char *src, size_t n, tok_buf *out)
{
    int class_depth = 0;
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && st == EMBER_OK; i++) {
        char ch = src[i];
        if (ch == '\\' && i + 1 < n) {
            char e = src[++i];
            const char *rep = NULL;
            if (e == 's') rep = class_depth ? WHITE_SPACE_SET : "[" WHITE_SPACE_SET "]";
            else if (e == 'S') rep = class_depth ? "\\S" : "[^" WHITE_SPACE_SET "]";
            else if (e == 'h') rep = class_depth ? "0-9A-Fa-f" : "[0-9A-Fa-f]";
            else if (e == 'H') rep = class_depth ? "\\x{0}-/:-@G-`g-\\x{10FFFF}" : "[^0-9A-Fa-f]";
            if (rep) {
                st = tok_buf_append(out, rep, strlen(rep));
            } else {
                char two[2] = {'\\', e};
                st = tok_buf_append(out, two, 2);
            }
            continue;
        }
        if (ch == '[') {
            /* POSIX classes like [:alpha:] nest a bracket inside a class */
            if (class_depth && i + 1 < n && src[i + 1] == ':') {
                const char *close = memchr(src + i + 2, ']', n - i - 2);
                if (close) {
                    size_t k = (size_t)(close - src) + 1 - i;
                    st = tok_buf_append(out, src + i, k);
                    i += k - 1;
                    continue;
                }
            }
            class_depth++;
            st = tok_buf_append(out, "[", 1);
            /* a ']' right after '[' or '[^' is a literal */
            if (i + 1 < n && src[i + 1] == '^') { st = tok_buf_append(out, "^", 1); i++; }
            if (st == EMBER_OK && i + 1 < n && src[i + 1] == ']') { st = tok_buf_append(out, "\\]", 2); i++; }
            continue;
        }
        if (ch == ']' && class_depth) class_depth--;
        st = tok_buf_append(out, &ch, 1);
    }
    return st;
}

ember_status tok_regex_compile(const char *source, size_t len, const char *path, pcre2_code **out)
{
    tok_buf pat = {0};
    ember_status st = translate(source, len, &pat);
    if (st == EMBER_OK) st = tok_buf_append(&pat, "", 0);
    if (st != EMBER_OK) {
        tok_buf_free(&pat);
        return st;
    }
    int err;
    PCRE2_SIZE err_off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat.p, pat.len, PCRE2_UTF | PCRE2_UCP, &err, &err_off, NULL);
    tok_buf_free(&pat);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer.json: %s: regex '%.*s' does not compile: %s",
                          path, (int)(len > 200 ? 200 : len), source, (const char *)msg);
    }
    /* JIT is an optimisation: if it is unavailable the interpreter runs. */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    *out = re;
    return EMBER_OK;
}

ember_status tok_pattern_parse(const cJSON *j, const char *path, tok_pattern *out)
{
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(j))
        return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: expected {\"String\": ...} or {\"Regex\": ...}", path);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "String");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "Regex");
    if (cJSON_IsString(s)) {
        if (!s->valuestring[0]) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.String: empty pattern", path);
        return tok_json_dup(s->valuestring, &out->literal, &out->literal_len);
    }
    if (cJSON_IsString(r)) return tok_regex_compile(r->valuestring, strlen(r->valuestring), path, &out->re);
    return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: expected {\"String\": ...} or {\"Regex\": ...}", path);
}

void tok_pattern_free(tok_pattern *p)
{
    free(p->literal);
    pcre2_code_free(p->re);
    memset(p, 0, sizeof *p);
}

ember_status tok_regex_find(const pcre2_code *re, const char *s, size_t n, size_t from,
                            pcre2_match_data *md, bool *found, size_t *mstart, size_t *mend)
{
    *found = false;
    if (from > n) return EMBER_OK;
    /* The subject was validated as UTF-8 once, up front. */
    int rc = pcre2_match(re, (PCRE2_SPTR)s, n, from, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH) return EMBER_OK;
    if (rc < 0) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(rc, msg, sizeof msg);
        return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer: regex match failed: %s", (const char *)msg);
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    *found = true;
    *mstart = ov[0];
    *mend = ov[1] < ov[0] ? ov[0] : ov[1]; /* \K can put the end first */
    return EMBER_OK;
}

ember_status tok_pattern_find(const tok_pattern *p, const char *s, size_t n, size_t from,
                              pcre2_match_data *md, bool *found, size_t *mstart, size_t *mend)
{
    if (p->re) return tok_regex_find(p->re, s, n, from, md, found, mstart, mend);
    *found = false;
    if (from >= n || p->literal_len > n - from) return EMBER_OK;
    const char *hit = memmem(s + from, n - from, p->literal, p->literal_len);
    if (!hit) return EMBER_OK;
    *found = true;
    *mstart = (size_t)(hit - s);
    *mend = *mstart + p->literal_len;
    return EMBER_OK;
}
