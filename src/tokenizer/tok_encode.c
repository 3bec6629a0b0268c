/* Encoding: added tokens on the raw text, then per remaining section the
 * normalizer, the "normalized" added tokens, the pre-tokenizer and BPE; the
 * post-processor last. Everything mutable lives in a per-call scratch, so
 * one tokenizer serves many threads. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

ember_status tok_scratch_init(tok_scratch *s)
{
    memset(s, 0, sizeof *s);
    s->md = pcre2_match_data_create(1, NULL);
    return s->md ? EMBER_OK : ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
}

void tok_scratch_free(tok_scratch *s)
{
    tok_buf_free(&s->arena);
    tok_buf_free(&s->norm);
    tok_buf_free(&s->tmp);
    tok_buf_free(&s->word);
    tok_pieces_free(&s->p0);
    tok_pieces_free(&s->p1);
    tok_pieces_free(&s->p2);
    free(s->spans.v);
    pcre2_match_data_free(s->md);
    free(s->syms);
    free(s->heap);
    free(s->ids);
    memset(s, 0, sizeof *s);
}

ember_status tok_ids_push(tok_scratch *s, int32_t id)
{
    if (s->n_ids == s->cap_ids) {
        size_t cap = s->cap_ids ? s->cap_ids * 2 : 256;
        int32_t *v = realloc(s->ids, cap * sizeof *v);
        if (!v) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory (ids)");
        s->ids = v;
        s->cap_ids = cap;
    }
    s->ids[s->n_ids++] = id;
    return EMBER_OK;
}

/* Pre-tokenizes and BPE-encodes text that holds no added token. */
static ember_status encode_plain(const et_tokenizer *t, tok_scratch *s, const char *text, size_t n, bool first)
{
    if (!n) return EMBER_OK;
    ember_status st;
    s->arena.len = 0;
    if ((st = tok_buf_append(&s->arena, text, n)) != EMBER_OK) return st;
    s->p0.n = 0;
    if ((st = tok_pieces_push(&s->p0, 0, n, 0, first)) != EMBER_OK) return st;
    tok_pieces *pieces = &s->p0;
    if (t->pretok) {
        if ((st = tok_pretokenize(t->pretok, &s->arena, &s->p0, &s->p1, &s->p2, s->md)) != EMBER_OK) return st;
        pieces = &s->p1;
    }
    for (size_t i = 0; i < pieces->n; i++) {
        const tok_piece *p = &pieces->v[i];
        if ((st = tok_bpe_piece(t, s, s->arena.p + p->off, p->len, p->raw_bytes)) != EMBER_OK) return st;
    }
    return EMBER_OK;
}

/* A section of the raw text between added tokens. */
static ember_status encode_section(const et_tokenizer *t, tok_scratch *s, const char *text, size_t n, bool first)
{
    if (!n) return EMBER_OK;
    ember_status st;
    if (t->normalizer) {
        if ((st = tok_normalize(t->normalizer, text, n, &s->norm, &s->tmp, s->md)) != EMBER_OK) return st;
        text = s->norm.p;
        n = s->norm.len;
    }
    /* The normalized text stays in s->norm while its parts are encoded
     * (encode_plain only uses the arena). */
    size_t pos = 0;
    for (;;) {
        size_t a, b;
        int32_t k;
        bool found = tok_added_find(t, &t->trie_norm, text, n, pos, &a, &b, &k);
        size_t end = found ? a : n;
        if ((st = encode_plain(t, s, text + pos, end - pos, first && pos == 0)) != EMBER_OK) return st;
        if (!found) return EMBER_OK;
        if ((st = tok_ids_push(s, t->added[k].id)) != EMBER_OK) return st;
        pos = b;
    }
}

ember_status et_tokenizer_encode(const et_tokenizer *tok, const char *text, size_t len,
                                 bool add_special, int32_t **ids, size_t *n_ids)
{
    if (!tok || (!text && len) || !ids || !n_ids)
        return ember_fail(EMBER_ERR_INVALID_ARG, "et_tokenizer_encode: NULL argument");
    *ids = NULL;
    *n_ids = 0;
    if (!text) text = "";
    size_t valid = tok_utf8_valid_prefix(text, len);
    if (valid != len)
        return ember_fail(EMBER_ERR_INVALID_ARG, "et_tokenizer_encode: the text is not valid UTF-8 (at byte %zu)", valid);
    tok_scratch s;
    ember_status st = tok_scratch_init(&s);
    size_t pos = 0;
    while (st == EMBER_OK) {
        size_t a, b;
        int32_t k;
        bool found = tok_added_find(tok, &tok->trie_raw, text, len, pos, &a, &b, &k);
        size_t end = found ? a : len;
        st = encode_section(tok, &s, text + pos, end - pos, pos == 0);
        if (st != EMBER_OK || !found) break;
        st = tok_ids_push(&s, tok->added[k].id);
        pos = b;
    }
    if (st == EMBER_OK && add_special && tok->post) st = tok_post_apply(tok->post, &s, 0);
    if (st == EMBER_OK) {
        *ids = s.ids; /* hand the buffer over */
        *n_ids = s.n_ids;
        s.ids = NULL;
    }
    tok_scratch_free(&s);
    return st;
}
