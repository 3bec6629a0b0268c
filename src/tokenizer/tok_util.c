/* Growable buffers and lists used by the tokenizer's per-call scratch. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

ember_status tok_buf_reserve(tok_buf *b, size_t extra)
{
    if (extra <= b->cap - b->len) return EMBER_OK;
    if (extra > SIZE_MAX / 2 - b->len) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: buffer too large");
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory (%zu bytes)", cap);
    b->p = p;
    b->cap = cap;
    return EMBER_OK;
}

ember_status tok_buf_append(tok_buf *b, const void *data, size_t n)
{
    ember_status st = tok_buf_reserve(b, n + 1);
    if (st != EMBER_OK) return st;
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = 0; /* always NUL-terminated: handy for printing and lookups */
    return EMBER_OK;
}

void tok_buf_free(tok_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

ember_status tok_pieces_push(tok_pieces *l, size_t off, size_t len, uint8_t raw_bytes,
                             uint8_t first)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        tok_piece *v = realloc(l->v, cap * sizeof *v);
        if (!v) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (tok_piece){off, len, raw_bytes, first};
    return EMBER_OK;
}

void tok_pieces_free(tok_pieces *l)
{
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

ember_status tok_spans_push(tok_spans *s, size_t start, size_t end, bool match)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        tok_span *v = realloc(s->v, cap * sizeof *v);
        if (!v) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (tok_span){start, end, match};
    return EMBER_OK;
}
