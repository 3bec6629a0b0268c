/* The BPE model on one pre-tokenized piece: split into initial symbols
 * (characters, or bytes for ByteLevel pieces), then apply merges lowest rank
 * first (leftmost on ties) with a binary heap of candidate pairs whose
 * entries are checked lazily when popped. All memory is the call's scratch. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

static ember_status ensure_syms(tok_scratch *s, size_t n)
{
    if (n <= s->syms_cap) return EMBER_OK;
    size_t cap = s->syms_cap ? s->syms_cap : 64;
    while (cap < n) cap *= 2;
    tok_sym *v = realloc(s->syms, cap * sizeof *v);
    if (!v) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory (BPE symbols)");
    s->syms = v;
    s->syms_cap = cap;
    return EMBER_OK;
}

static bool heap_less(const tok_heap_item *a, const tok_heap_item *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static ember_status heap_push(tok_scratch *s, tok_heap_item it)
{
    if (s->heap_n == s->heap_cap) {
        size_t cap = s->heap_cap ? s->heap_cap * 2 : 64;
        tok_heap_item *v = realloc(s->heap, cap * sizeof *v);
        if (!v) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory (BPE heap)");
        s->heap = v;
        s->heap_cap = cap;
    }
    size_t i = s->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_less(&it, &s->heap[parent])) break;
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = it;
    return EMBER_OK;
}

static tok_heap_item heap_pop(tok_scratch *s)
{
    tok_heap_item top = s->heap[0];
    tok_heap_item last = s->heap[--s->heap_n];
    size_t i = 0, n = s->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_less(&s->heap[c + 1], &s->heap[c])) c++;
        if (!heap_less(&s->heap[c], &last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n) s->heap[i] = last;
    return top;
}

static ember_status push_pair(const et_tokenizer *t, tok_scratch *s, int32_t pos)
{
    int32_t next = s->syms[pos].next;
    if (next < 0) return EMBER_OK;
    const tok_merge *m = tok_merge_find(t, s->syms[pos].id, s->syms[next].id);
    if (!m) return EMBER_OK;
    return heap_push(s, (tok_heap_item){m->rank, pos, s->syms[pos].id, s->syms[next].id});
}

/* Adds one symbol; fuse_unk joins it to a preceding unknown symbol. */
static void add_sym(const et_tokenizer *t, tok_scratch *s, size_t *n, int32_t id, uint32_t len)
{
    if (id == t->bpe.unk_id && t->bpe.fuse_unk && *n && s->syms[*n - 1].id == id) {
        s->syms[*n - 1].len += len;
        return;
    }
    s->syms[*n] = (tok_sym){id, (int32_t)*n - 1, (int32_t)*n + 1, len};
    (*n)++;
}

/* Initial symbols from characters: vocab lookup, else byte fallback, else
 * unk (a character with neither is dropped, as tokenizers does). */
static ember_status char_symbols(const et_tokenizer *t, tok_scratch *s, const char *text, size_t n,
                                 size_t *count)
{
    ember_status st;
    if ((st = ensure_syms(s, n + 1)) != EMBER_OK) return st;
    *count = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = tok_utf8_decode(text + i, n - i, &cp);
        bool last = i + k == n;
        int32_t id;
        if (!t->bpe.cont_prefix_len && !(last && t->bpe.eow_suffix_len)) {
            id = tok_map_find(t, text + i, k);
        } else {
            s->word.len = 0;
            if ((i && (st = tok_buf_append(&s->word, t->bpe.cont_prefix, t->bpe.cont_prefix_len)) != EMBER_OK) ||
                (st = tok_buf_append(&s->word, text + i, k)) != EMBER_OK ||
                (last && (st = tok_buf_append(&s->word, t->bpe.eow_suffix, t->bpe.eow_suffix_len)) != EMBER_OK))
                return st;
            id = tok_map_find(t, s->word.p, s->word.len);
        }
        if (id >= 0) {
            add_sym(t, s, count, id, (uint32_t)k);
        } else {
            bool bytes_ok = t->bpe.byte_fallback;
            for (size_t b = 0; bytes_ok && b < k; b++) bytes_ok = t->byte_fallback_ids[(uint8_t)text[i + b]] >= 0;
            if (bytes_ok) {
                for (size_t b = 0; b < k; b++) add_sym(t, s, count, t->byte_fallback_ids[(uint8_t)text[i + b]], 1);
            } else if (t->bpe.unk_id >= 0) {
                add_sym(t, s, count, t->bpe.unk_id, (uint32_t)k);
            }
        }
        i += k;
    }
    return EMBER_OK;
}

static ember_status materialized(tok_scratch *s, const char *text, size_t n)
{
    s->word.len = 0;
    ember_status st = tok_buf_reserve(&s->word, n * 2 + 1);
    if (st != EMBER_OK) return st;
    for (size_t i = 0; i < n; i++) {
        char enc[4];
        size_t k = tok_utf8_encode(tok_byte_to_char((uint8_t)text[i]), enc);
        memcpy(s->word.p + s->word.len, enc, k);
        s->word.len += k;
    }
    return EMBER_OK;
}

ember_status tok_bpe_piece(const et_tokenizer *t, tok_scratch *s, const char *text, size_t n,
                           bool raw_bytes)
{
    ember_status st;
    if (!n) return EMBER_OK;
    bool fast_bytes = raw_bytes && !t->bpe.cont_prefix_len && !t->bpe.eow_suffix_len;
    for (size_t i = 0; fast_bytes && i < n; i++) fast_bytes = t->byte_level_ids[(uint8_t)text[i]] >= 0;
    if (t->bpe.ignore_merges) { /* a piece that is a token is kept whole */
        const char *w = text;
        size_t wn = n;
        if (raw_bytes) {
            if ((st = materialized(s, text, n)) != EMBER_OK) return st;
            w = s->word.p;
            wn = s->word.len;
        }
        int32_t whole = tok_map_find(t, w, wn);
        if (whole >= 0) return tok_ids_push(s, whole);
    }
    if (raw_bytes && !fast_bytes) {
        /* a byte without a token of its own: go through the characters */
        if ((st = materialized(s, text, n)) != EMBER_OK) return st;
        tok_buf word = s->word;
        s->word = (tok_buf){0};
        st = tok_bpe_piece(t, s, word.p, word.len, false);
        tok_buf_free(&s->word);
        s->word = word;
        return st;
    }

    size_t count = 0;
    if (fast_bytes) {
        if ((st = ensure_syms(s, n + 1)) != EMBER_OK) return st;
        for (size_t i = 0; i < n; i++)
            s->syms[i] = (tok_sym){t->byte_level_ids[(uint8_t)text[i]], (int32_t)i - 1, (int32_t)i + 1, 1};
        count = n;
    } else if ((st = char_symbols(t, s, text, n, &count)) != EMBER_OK) {
        return st;
    }
    if (!count) return EMBER_OK;
    s->syms[count - 1].next = -1;

    if (count > 1) {
        s->heap_n = 0;
        for (size_t i = 0; i + 1 < count; i++)
            if ((st = push_pair(t, s, (int32_t)i)) != EMBER_OK) return st;
        while (s->heap_n) {
            tok_heap_item it = heap_pop(s);
            tok_sym *a = &s->syms[it.pos];
            /* stale: the left symbol was merged away or changed, or its right neighbour did */
            if (a->len == 0 || a->id != it.left_id || a->next < 0) continue;
            tok_sym *b = &s->syms[a->next];
            if (b->id != it.right_id) continue;
            const tok_merge *m = tok_merge_find(t, a->id, b->id);
            a->id = m->merged;
            a->len += b->len;
            b->len = 0;
            a->next = b->next;
            if (b->next >= 0) s->syms[b->next].prev = it.pos;
            if (a->prev >= 0 && (st = push_pair(t, s, a->prev)) != EMBER_OK) return st;
            if ((st = push_pair(t, s, it.pos)) != EMBER_OK) return st;
        }
    }
    for (int32_t i = 0; i >= 0; i = s->syms[i].next)
        if ((st = tok_ids_push(s, s->syms[i].id)) != EMBER_OK) return st;
    return EMBER_OK;
}
