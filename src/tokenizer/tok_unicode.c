/* UTF-8 helpers and the ByteLevel byte <-> character table. */
#include <string.h>

#include "tokenizer/tok_internal.h"

/* Length of the valid sequence starting at s[i] (0 when invalid or cut). */
static size_t utf8_seq_len(const unsigned char *s, size_t n, size_t i)
{
    unsigned c = s[i];
    if (c < 0x80) return 1;
    size_t need;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;      /* no overlong forms */
        if (c == 0xED) hi = 0x9F;      /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;      /* nothing above U+10FFFF */
    } else
        return 0;
    if (i + need > n) return 0;
    if (s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t k = 2; k < need; k++)
        if ((s[i + k] & 0xC0) != 0x80) return 0;
    return need;
}

size_t tok_utf8_valid_prefix(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        /* ASCII runs dominate real text: skip them eight bytes at a time. */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, u + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        size_t l = utf8_seq_len(u, n, i);
        if (!l) return i;
        i += l;
    }
    return n;
}

size_t tok_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (!n) { *cp = 0; return 0; }
    unsigned c = u[0];
    if (c < 0x80 || n < 2) { *cp = c; return 1; }
    if (c < 0xE0) { *cp = ((c & 0x1Fu) << 6) | (u[1] & 0x3Fu); return 2; }
    if (c < 0xF0 || n < 4) {
        if (n < 3) { *cp = c; return 1; }
        *cp = ((c & 0x0Fu) << 12) | ((u[1] & 0x3Fu) << 6) | (u[2] & 0x3Fu);
        return 3;
    }
    *cp = ((c & 0x07u) << 18) | ((u[1] & 0x3Fu) << 12) | ((u[2] & 0x3Fu) << 6) | (u[3] & 0x3Fu);
    return 4;
}

size_t tok_utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* GPT-2's table: printable Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF)
 * map to themselves, the other 68 bytes to U+0100.. in byte order. */
static bool byte_is_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

uint32_t tok_byte_to_char(uint8_t b)
{
    if (byte_is_printable(b)) return b;
    uint32_t k = 0; /* rank of b among the non-printable bytes */
    for (unsigned x = 0; x < b; x++)
        if (!byte_is_printable(x)) k++;
    return 0x100 + k;
}

int tok_char_to_byte(uint32_t cp)
{
    if (cp < 0x100) return byte_is_printable(cp) ? (int)cp : -1;
    if (cp >= 0x100 + 68) return -1;
    uint32_t k = cp - 0x100;
    for (unsigned x = 0; x < 256; x++)
        if (!byte_is_printable(x) && k-- == 0) return (int)x;
    return -1;
}

ember_status tok_append_lossy(tok_buf *out, const char *s, size_t n)
{
    static const char replacement[3] = {(char)0xEF, (char)0xBF, (char)0xBD};
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t good = tok_utf8_valid_prefix(s + i, n - i);
        ember_status st = tok_buf_append(out, s + i, good);
        if (st != EMBER_OK) return st;
        i += good;
        if (i >= n) break;
        /* A maximal invalid subpart: the lead byte plus the continuation
         * bytes that could still have been part of a valid sequence. */
        size_t j = i + 1;
        unsigned c = u[i];
        size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 1;
        unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
        unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        if (need > 1 && j < n && u[j] >= lo && u[j] <= hi) {
            j++;
            while (j < i + need && j < n && (u[j] & 0xC0) == 0x80) j++;
        }
        st = tok_buf_append(out, replacement, 3);
        if (st != EMBER_OK) return st;
        i = j;
    }
    return tok_buf_append(out, "", 0); /* keeps the buffer NUL-terminated */
}

bool tok_is_whitespace(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}
