/* UTF-8 decoding plus the few Unicode rules the reference takes from
 * JavaScript: its whitespace set (trim, split, \s), UTF-16 lengths, and case
 * mapping (through utf8proc's simple mappings). */
#include <string.h>

#include <utf8proc.h>

#include "template/jinja_internal.h"

uint32_t ej_utf8_next(const char *s, size_t n, size_t *i)
{
    const unsigned char *p = (const unsigned char *)s + *i;
    size_t left = n - *i;
    uint32_t c = p[0];
    size_t len;
    uint32_t min;
    if (c < 0x80) {
        *i += 1;
        return c;
    } else if ((c & 0xe0) == 0xc0) {
        len = 2, c &= 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3, c &= 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4, c &= 0x07, min = 0x10000;
    } else {
        *i += 1;
        return 0xfffd;
    }
    if (left < len) {
        *i += 1;
        return 0xfffd;
    }
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xc0) != 0x80) {
            *i += 1;
            return 0xfffd;
        }
        c = (c << 6) | (p[k] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c < 0xe000)) {
        *i += 1;
        return 0xfffd;
    }
    *i += len;
    return c;
}

size_t ej_utf8_put(char out[4], uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

bool ej_js_space(uint32_t cp)
{
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0d)) return true;
    if (cp < 0xa0) return false;
    return cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000 || cp == 0xfeff;
}

size_t ej_utf16_length(ej_str s)
{
    size_t units = 0;
    for (size_t i = 0; i < s.n;) units += ej_utf8_next(s.s, s.n, &i) >= 0x10000 ? 2 : 1;
    return units;
}

size_t ej_trim_start(ej_str s)
{
    size_t i = 0;
    while (i < s.n) {
        size_t j = i;
        if (!ej_js_space(ej_utf8_next(s.s, s.n, &j))) break;
        i = j;
    }
    return i;
}

size_t ej_trim_end(ej_str s)
{
    size_t end = 0;
    for (size_t i = 0; i < s.n;)
        if (!ej_js_space(ej_utf8_next(s.s, s.n, &i))) end = i;
    return end;
}

ember_status ej_case_map(ej_arena *a, ej_str s, bool upper, ej_str *out)
{
    /* JavaScript's full mapping can grow a string (ß -> SS): allow for it */
    char *p = ej_alloc(a, s.n * 3 + 1);
    if (!p) return EMBER_ERR_NO_MEMORY;
    size_t o = 0;
    for (size_t i = 0; i < s.n;) {
        size_t start = i;
        uint32_t c = ej_utf8_next(s.s, s.n, &i);
        if (c == 0xfffd && i - start == 1 && (unsigned char)s.s[start] >= 0x80) {
            p[o++] = s.s[start]; /* an invalid byte stays as it is */
            continue;
        }
        if (upper && c == 0xdf) {
            p[o++] = 'S';
            p[o++] = 'S';
            continue;
        }
        uint32_t m = (uint32_t)(upper ? utf8proc_toupper((utf8proc_int32_t)c)
                                      : utf8proc_tolower((utf8proc_int32_t)c));
        o += ej_utf8_put(p + o, m);
    }
    out->s = p;
    out->n = o;
    return EMBER_OK;
}
