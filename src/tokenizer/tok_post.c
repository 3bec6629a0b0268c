/* Post-processors: TemplateProcessing (the "single" template), Bert and
 * Roberta processing (cls ... sep), ByteLevel (nothing to do for ids) and
 * Sequence. Each wraps the encoded ids in special tokens when the caller
 * asks for add_special. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

static ember_status push_id(int32_t **v, size_t *n, int32_t id)
{
    int32_t *nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
    nv[(*n)++] = id;
    *v = nv;
    return EMBER_OK;
}

static ember_status check_id(const et_tokenizer *t, double v, const char *path)
{
    if (v < 0 || v >= (double)t->n_ids || v != (double)(int32_t)v)
        return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: id %g is not a token id (vocab size %zu)", path, v, t->n_ids);
    return EMBER_OK;
}

static ember_status parse_template(const et_tokenizer *t, const cJSON *j, const char *path, tok_post *out)
{
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(j, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(j, "special_tokens");
    if (!cJSON_IsArray(single)) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.single: expected an array", path);
    bool seen_a = false;
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, single) {
        char sub[TOK_PATH_MAX];
        snprintf(sub, sizeof sub, "%s.single[%zu]", path, i++);
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(it, "Sequence");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "SpecialToken");
        if (seq) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(seq, "id");
            if (!cJSON_IsString(id) || strcmp(id->valuestring, "A") || seen_a)
                return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer.json: %s: the single template must hold sequence A exactly once", sub);
            seen_a = true;
            continue;
        }
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(sp, "id");
        if (!cJSON_IsString(name)) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: expected Sequence or SpecialToken", sub);
        const cJSON *entry = cJSON_GetObjectItemCaseSensitive(specials, name->valuestring);
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(entry, "ids");
        if (!cJSON_IsArray(ids))
            return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: special token '%s' is not in special_tokens", sub, name->valuestring);
        const cJSON *idv;
        cJSON_ArrayForEach(idv, ids) {
            ember_status st = cJSON_IsNumber(idv) ? check_id(t, idv->valuedouble, sub)
                                                  : ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: ids must be numbers", sub);
            if (st == EMBER_OK)
                st = seen_a ? push_id(&out->after, &out->n_after, (int32_t)idv->valuedouble)
                            : push_id(&out->before, &out->n_before, (int32_t)idv->valuedouble);
            if (st != EMBER_OK) return st;
        }
    }
    if (!seen_a) return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer.json: %s.single: no sequence A", path);
    return EMBER_OK;
}

/* Bert/Roberta: "cls": [token, id], "sep": [token, id]. */
static ember_status parse_pair_token(const et_tokenizer *t, const cJSON *j, const char *key, const char *path,
                                     int32_t **v, size_t *n)
{
    const cJSON *pair = cJSON_GetObjectItemCaseSensitive(j, key);
    const cJSON *id = cJSON_GetArrayItem(pair, 1);
    if (!cJSON_IsArray(pair) || !cJSON_IsNumber(id))
        return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.%s: expected [token, id]", path, key);
    char sub[TOK_PATH_MAX];
    snprintf(sub, sizeof sub, "%s.%s", path, key);
    ember_status st = check_id(t, id->valuedouble, sub);
    return st == EMBER_OK ? push_id(v, n, (int32_t)id->valuedouble) : st;
}

ember_status tok_post_parse(const et_tokenizer *t, const cJSON *j, const char *path, int depth, tok_post *out)
{
    memset(out, 0, sizeof *out);
    if (depth > TOK_MAX_DEPTH) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: nested too deeply", path);
    ember_status st;
    const char *type = tok_json_type(j, path, &st);
    if (!type) return st;
    if (!strcmp(type, "TemplateProcessing")) {
        out->type = POST_TEMPLATE;
        return parse_template(t, j, path, out);
    }
    if (!strcmp(type, "BertProcessing") || !strcmp(type, "RobertaProcessing")) {
        out->type = POST_TEMPLATE;
        if ((st = parse_pair_token(t, j, "cls", path, &out->before, &out->n_before)) != EMBER_OK) return st;
        return parse_pair_token(t, j, "sep", path, &out->after, &out->n_after);
    }
    if (!strcmp(type, "ByteLevel")) {
        out->type = POST_BYTE_LEVEL;
        return EMBER_OK;
    }
    if (!strcmp(type, "Sequence")) {
        out->type = POST_SEQUENCE;
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(j, "processors");
        if (!cJSON_IsArray(items)) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.processors: expected an array", path);
        size_t n = (size_t)cJSON_GetArraySize(items);
        out->items = calloc(n ? n : 1, sizeof *out->items);
        if (!out->items) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
        const cJSON *it;
        cJSON_ArrayForEach(it, items) {
            char sub[TOK_PATH_MAX];
            snprintf(sub, sizeof sub, "%s.processors[%zu]", path, out->n_items);
            st = tok_post_parse(t, it, sub, depth + 1, &out->items[out->n_items]);
            out->n_items++;
            if (st != EMBER_OK) return st;
        }
        return EMBER_OK;
    }
    return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer.json: %s.type: unsupported post-processor '%s'", path, type);
}

void tok_post_free(tok_post *p)
{
    if (!p) return;
    free(p->before);
    free(p->after);
    for (size_t i = 0; i < p->n_items; i++) tok_post_free(&p->items[i]);
    free(p->items);
    memset(p, 0, sizeof *p);
}

ember_status tok_post_apply(const tok_post *p, tok_scratch *s, size_t from)
{
    ember_status st;
    if (p->type == POST_SEQUENCE) {
        for (size_t i = 0; i < p->n_items; i++)
            if ((st = tok_post_apply(&p->items[i], s, from)) != EMBER_OK) return st;
        return EMBER_OK;
    }
    if (p->type != POST_TEMPLATE) return EMBER_OK;
    size_t body = s->n_ids - from;
    for (size_t i = 0; i < p->n_before; i++) /* make room, then shift the body right */
        if ((st = tok_ids_push(s, 0)) != EMBER_OK) return st;
    if (p->n_before) {
        memmove(s->ids + from + p->n_before, s->ids + from, body * sizeof *s->ids);
        memcpy(s->ids + from, p->before, p->n_before * sizeof *s->ids);
    }
    for (size_t i = 0; i < p->n_after; i++)
        if ((st = tok_ids_push(s, p->after[i])) != EMBER_OK) return st;
    return EMBER_OK;
}
