/* The streaming detokenizer. It keeps a short window of recent ids and
 * decodes the window each push; the new bytes are those past what the window
 * already produced. Decoders acting on the first token only (Strip,
 * Metaspace) treat the window's first id the same way in both decodes, so
 * their effect cancels out except at the very start, where it is real.
 * Only complete UTF-8 characters are returned; an incomplete tail waits for
 * the next id, and bytes that can never complete come out as U+FFFD. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

struct et_detok {
    const et_tokenizer *tok;
    bool skip_special;
    int32_t *window;
    size_t n, cap;
    size_t done;        /* bytes of decode(window) already returned */
    tok_buf decoded, out;
};

ember_status et_detok_create(const et_tokenizer *tok, bool skip_special, et_detok **out)
{
    if (!tok || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "et_detok_create: NULL argument");
    et_detok *d = calloc(1, sizeof *d);
    if (!d) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
    d->tok = tok;
    d->skip_special = skip_special;
    *out = d;
    return EMBER_OK;
}

void et_detok_free(et_detok *d)
{
    if (!d) return;
    free(d->window);
    tok_buf_free(&d->decoded);
    tok_buf_free(&d->out);
    free(d);
}

/* Bytes of s[0, n) that form complete characters; an incomplete but still
 * possible sequence at the end is left out. Invalid bytes count as complete
 * (the caller turns them into U+FFFD). */
static size_t complete_prefix(const char *s, size_t n)
{
    size_t valid = tok_utf8_valid_prefix(s, n);
    size_t i = valid;
    while (i < n) {
        /* is what starts at i a truncated but so far valid sequence? */
        unsigned c = (unsigned char)s[i];
        size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
        if (need && i + need > n) {
            bool ok = true;
            for (size_t k = i + 1; k < n && ok; k++) {
                unsigned b = (unsigned char)s[k];
                unsigned lo = 0x80, hi = 0xBF;
                if (k == i + 1) {
                    if (c == 0xE0) lo = 0xA0;
                    if (c == 0xED) hi = 0x9F;
                    if (c == 0xF0) lo = 0x90;
                    if (c == 0xF4) hi = 0x8F;
                }
                ok = b >= lo && b <= hi;
            }
            if (ok) return i;
        }
        i++;
        i += tok_utf8_valid_prefix(s + i, n - i);
    }
    return n;
}

ember_status et_detok_push(et_detok *d, int32_t id, const char **text, size_t *len)
{
    if (!d || !text || !len) return ember_fail(EMBER_ERR_INVALID_ARG, "et_detok_push: NULL argument");
    *text = "";
    *len = 0;
    const et_tokenizer *t = d->tok;
    if (id < 0 || (size_t)id >= t->n_ids)
        return ember_fail(EMBER_ERR_INVALID_ARG, "et_detok_push: id %d is out of range [0, %zu)", (int)id, t->n_ids);
    if (d->skip_special && t->special[id]) return EMBER_OK;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        int32_t *w = realloc(d->window, cap * sizeof *w);
        if (!w) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
        d->window = w;
        d->cap = cap;
    }
    d->window[d->n++] = id;
    d->decoded.len = 0;
    ember_status st = tok_decode_into(t, d->window, d->n, false, true, &d->decoded);
    if (st != EMBER_OK) {
        d->n--;
        return st;
    }
    if (d->decoded.len < d->done) d->done = d->decoded.len; /* a decoder took bytes back */
    size_t fresh = d->decoded.len - d->done;
    size_t ready = complete_prefix(d->decoded.p + d->done, fresh);
    d->out.len = 0;
    if ((st = tok_append_lossy(&d->out, d->decoded.p + d->done, ready)) != EMBER_OK) return st;
    d->done += ready;
    if (d->done == d->decoded.len && d->n > 1) {
        /* everything returned: keep only the last id as context */
        d->window[0] = d->window[d->n - 1];
        d->n = 1;
        d->decoded.len = 0;
        if ((st = tok_decode_into(t, d->window, 1, false, true, &d->decoded)) != EMBER_OK) return st;
        d->done = d->decoded.len;
    }
    *text = d->out.p;
    *len = d->out.len;
    return EMBER_OK;
}

ember_status et_detok_flush(et_detok *d, const char **text, size_t *len)
{
    if (!d || !text || !len) return ember_fail(EMBER_ERR_INVALID_ARG, "et_detok_flush: NULL argument");
    d->out.len = 0;
    ember_status st = tok_append_lossy(&d->out, d->decoded.p ? d->decoded.p + d->done : "", d->decoded.len - d->done);
    if (st != EMBER_OK) return st;
    d->done = d->decoded.len;
    d->n = 0;
    d->done = 0;
    d->decoded.len = 0;
    *text = d->out.p;
    *len = d->out.len;
    return EMBER_OK;
}
