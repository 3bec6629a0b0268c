/* The arena, byte buffers and string helpers of the template interpreter.
 * A parse or a render allocates everything from one arena and frees it in
 * one go, so no error path inside the interpreter can leak. */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_internal.h"

#define EJ_CHUNK_BYTES ((size_t)64 << 10)

struct ej_chunk {
    ej_chunk *next;
    size_t used, cap;
    alignas(max_align_t) unsigned char data[];
};

void ej_arena_init(ej_arena *a, size_t limit)
{
    a->head = NULL;
    a->total = 0;
    a->limit = limit;
}

void *ej_alloc(ej_arena *a, size_t n)
{
    const size_t align = alignof(max_align_t);
    n = n ? (n + align - 1) / align * align : align;
    ej_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > EJ_CHUNK_BYTES / 4 ? n : EJ_CHUNK_BYTES;
        if (n > a->limit || a->total > a->limit - n) {
            ember_fail(EMBER_ERR_NO_MEMORY, "template: more than %zu MiB of values",
                       a->limit >> 20);
            return NULL;
        }
        c = malloc(sizeof *c + cap);
        if (!c) {
            ember_fail(EMBER_ERR_NO_MEMORY, "template: out of memory");
            return NULL;
        }
        c->cap = cap;
        c->used = 0;
        a->total += cap;
        /* a big block goes behind the current chunk so its free space stays usable */
        if (a->head && cap != EJ_CHUNK_BYTES) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

void ej_arena_free(ej_arena *a)
{
    ej_chunk *c = a->head;
    while (c) {
        ej_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

bool ej_str_eq(ej_str a, ej_str b) { return a.n == b.n && (a.n == 0 || !memcmp(a.s, b.s, a.n)); }

bool ej_str_eqz(ej_str a, const char *z) { return ej_str_eq(a, (ej_str){z, strlen(z)}); }

char *ej_strdup_arena(ej_arena *a, const char *s, size_t n)
{
    char *p = ej_alloc(a, n + 1);
    if (p && n) memcpy(p, s, n);
    return p;
}

ember_status ej_buf_put(ej_buf *b, const char *s, size_t n)
{
    if (n == 0) return EMBER_OK;
    if (n > EJ_MAX_OUTPUT || b->n > EJ_MAX_OUTPUT - n)
        return ember_fail(EMBER_ERR_NO_MEMORY, "template: output longer than %zu MiB",
                          EJ_MAX_OUTPUT >> 20);
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return ember_fail(EMBER_ERR_NO_MEMORY, "template: out of memory");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return EMBER_OK;
}

ember_status ej_buf_putz(ej_buf *b, const char *z) { return ej_buf_put(b, z, strlen(z)); }

void ej_buf_free(ej_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}
