/* Added tokens: parsed from "added_tokens", kept in two byte tries (the
 * ones matched on the raw text and the "normalized" ones matched after the
 * normalizer), and found leftmost-longest as Hugging Face does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tok_internal.h"

/* The list of children being searched is named by its parent's index (-1:
 * the root for s[0]), never by a pointer: growing the node array moves it. */
static int32_t *children(tok_trie *t, int32_t parent, uint8_t first_byte)
{
    return parent < 0 ? &t->root[first_byte] : &t->nodes[parent].first_child;
}

ember_status tok_trie_insert(tok_trie *t, const char *s, size_t n, int32_t added_index)
{
    int32_t parent = -1;
    for (size_t i = 0;; i++) {
        /* find the child for s[i] among the siblings */
        int32_t node = *children(t, parent, (uint8_t)s[0]);
        while (node >= 0 && t->nodes[node].byte != (uint8_t)s[i]) node = t->nodes[node].next_sibling;
        if (node < 0) {
            if (t->n == t->cap) {
                size_t cap = t->cap ? t->cap * 2 : 256;
                tok_trie_node *v = realloc(t->nodes, cap * sizeof *v);
                if (!v) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory (added tokens)");
                t->nodes = v;
                t->cap = cap;
            }
            int32_t *link = children(t, parent, (uint8_t)s[0]);
            node = (int32_t)t->n++;
            t->nodes[node] = (tok_trie_node){-1, *link, -1, (uint8_t)s[i]};
            *link = node;
        }
        if (i + 1 == n) {
            t->nodes[node].added = added_index;
            return EMBER_OK;
        }
        parent = node;
    }
}

void tok_trie_free(tok_trie *t)
{
    free(t->nodes);
    t->nodes = NULL;
    t->n = t->cap = 0;
}

static bool is_word_char(uint32_t cp)
{
    if (cp == '_') return true;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
           (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}

static size_t prev_char(const char *s, size_t i, uint32_t *cp)
{
    size_t k = i - 1;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
    tok_utf8_decode(s + k, i - k, cp);
    return k;
}

bool tok_added_find(const et_tokenizer *t, const tok_trie *trie, const char *s, size_t n,
                    size_t from, size_t *a, size_t *b, int32_t *added)
{
    if (!trie->n) return false;
    for (size_t i = from; i < n; i++) {
        int32_t node = trie->root[(uint8_t)s[i]];
        if (node < 0) continue;
        int32_t best = -1;
        size_t best_end = 0;
        for (size_t j = i;;) {
            if (trie->nodes[node].added >= 0) {
                best = trie->nodes[node].added;
                best_end = j + 1;
            }
            if (++j >= n) break;
            int32_t c = trie->nodes[node].first_child;
            while (c >= 0 && trie->nodes[c].byte != (uint8_t)s[j]) c = trie->nodes[c].next_sibling;
            if (c < 0) break;
            node = c;
        }
        if (best < 0) continue;
        const tok_added *tk = &t->added[best];
        if (tk->single_word) {
            uint32_t cp;
            bool left_ok = i == 0 || (prev_char(s, i, &cp), !is_word_char(cp));
            bool right_ok = best_end == n || (tok_utf8_decode(s + best_end, n - best_end, &cp), !is_word_char(cp));
            if (!left_ok || !right_ok) {
                i = best_end - 1; /* matching resumes after the rejected match */
                continue;
            }
        }
        size_t start = i, end = best_end;
        if (tk->lstrip)
            while (start > from) {
                uint32_t cp;
                size_t k = prev_char(s, start, &cp);
                if (!tok_is_whitespace(cp)) break;
                start = k;
            }
        if (tk->rstrip)
            while (end < n) {
                uint32_t cp;
                size_t k = tok_utf8_decode(s + end, n - end, &cp);
                if (!tok_is_whitespace(cp)) break;
                end += k;
            }
        *a = start;
        *b = end;
        *added = best;
        return true;
    }
    return false;
}

/* Reads "added_tokens": appends each content to the pool and records it.
 * Ids are checked against the id space later, once it is known. */
ember_status tok_added_parse(et_tokenizer *t, const cJSON *arr, tok_buf *pool)
{
    if (!arr || cJSON_IsNull(arr)) return EMBER_OK;
    if (!cJSON_IsArray(arr)) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: added_tokens: expected an array");
    size_t n = (size_t)cJSON_GetArraySize(arr);
    t->added = calloc(n ? n : 1, sizeof *t->added);
    if (!t->added) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory (added tokens)");
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        char path[TOK_PATH_MAX];
        snprintf(path, sizeof path, "added_tokens[%zu]", t->n_added);
        tok_added *a = &t->added[t->n_added];
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        const char *content;
        ember_status st = tok_json_string(it, "content", path, &content);
        if (st != EMBER_OK) return st;
        if (!content || !content[0]) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.content: missing or empty", path);
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > INT32_MAX || id->valuedouble != (double)(int32_t)id->valuedouble)
            return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.id: expected an integer in [0, 2^31)", path);
        a->id = (int32_t)id->valuedouble;
        if ((st = tok_json_bool(it, "special", false, path, &a->special)) != EMBER_OK ||
            (st = tok_json_bool(it, "lstrip", false, path, &a->lstrip)) != EMBER_OK ||
            (st = tok_json_bool(it, "rstrip", false, path, &a->rstrip)) != EMBER_OK ||
            (st = tok_json_bool(it, "single_word", false, path, &a->single_word)) != EMBER_OK ||
            (st = tok_json_bool(it, "normalized", !a->special, path, &a->normalized)) != EMBER_OK)
            return st;
        size_t len = strlen(content);
        if (tok_utf8_valid_prefix(content, len) != len)
            return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.content: invalid UTF-8", path);
        size_t off = pool->len;
        if ((st = tok_buf_append(pool, content, len + 1)) != EMBER_OK) return st;
        if (pool->len > UINT32_MAX) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: too large");
        a->off = (uint32_t)off;
        a->len = len;
        t->n_added++;
    }
    return EMBER_OK;
}
