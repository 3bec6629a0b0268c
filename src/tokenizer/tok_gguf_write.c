/* Writing a byte-level BPE tokenizer as llama.cpp's tokenizer.ggml.* GGUF
 * keys (tok_gguf_write.h): the token list with llama.cpp's token types, the
 * merges in their "a b" form, the special ids. Shared by the Spark and the
 * Qwen3-TTS GGUF writers. */
#include "tokenizer/tok_gguf_write.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/json_text.h"

/* llama.cpp's token types */

void tok_gguf_vocab_free(tok_gguf_vocab *v)
{
    for (int32_t i = 0; i < v->n; i++)
        if (v->owned && v->owned[i]) free(v->text[i]);
    if (v->merge_owned)
        for (size_t i = 0; i < v->n_merges; i++) free(v->merge_owned[i]);
    free(v->text);
    free(v->owned);
    free(v->type);
    free(v->merges);
    free(v->merge_owned);
}

ember_status tok_gguf_vocab_alloc(tok_gguf_vocab *v, int32_t n)
{
    memset(v, 0, sizeof *v);
    v->n = n;
    v->text = calloc((size_t)n, sizeof *v->text);
    v->owned = calloc((size_t)n, sizeof *v->owned);
    v->type = calloc((size_t)n, sizeof *v->type);
    if (!v->text || !v->owned || !v->type)
        return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory for a vocab of %d tokens", n);
    return EMBER_OK;
}

ember_status tok_gguf_vocab_set(tok_gguf_vocab *v, int32_t id, const char *text, int32_t type)
{
    v->text[id] = strdup(text);
    if (!v->text[id]) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    v->owned[id] = true;
    v->type[id] = type;
    return EMBER_OK;
}

/* Every id not yet given a token becomes "[PADn]", unused (as llama.cpp's
 * converter pads a vocab shorter than the embedding). */
ember_status tok_gguf_vocab_fill_gaps(tok_gguf_vocab *v)
{
    char pad[32];
    for (int32_t i = 0; i < v->n; i++) {
        if (v->text[i]) continue;
        snprintf(pad, sizeof pad, "[PAD%d]", i);
        ember_status st = tok_gguf_vocab_set(v, i, pad, TOK_UNUSED);
        if (st) return st;
    }
    return EMBER_OK;
}

ember_status tok_gguf_vocab_emit(gguf_writer *w, const tok_gguf_vocab *v, const char *pre,
                                 int32_t bos, int32_t eos, int32_t pad)
{
    ember_status st;
    if ((st = gguf_set_str(w, "tokenizer.ggml.model", "gpt2")) ||
        (st = gguf_set_str(w, "tokenizer.ggml.pre", pre)) ||
        (st = gguf_set_str_arr(w, "tokenizer.ggml.tokens", (const char *const *)v->text, NULL,
                               (size_t)v->n)) ||
        (st = gguf_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v->type, (size_t)v->n)) ||
        (st = gguf_set_str_arr(w, "tokenizer.ggml.merges", v->merges, NULL, v->n_merges)))
        return st;
    if (bos >= 0 && (st = gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos))) return st;
    if (eos >= 0 && (st = gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos))) return st;
    if (pad >= 0 && (st = gguf_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)pad))) return st;
    return EMBER_OK;
}

static ember_status put_token(tok_gguf_vocab *v, const char *label, const char *text, double id_d,
                              int32_t type)
{
    if (!(id_d >= 0 && id_d < 9.0e15) || id_d != (double)(int64_t)id_d)
        return ember_fail(EMBER_ERR_FORMAT, "%s: token '%.60s' has an id that is not a "
                          "non-negative integer", label, text);
    if (id_d >= v->n)
        return ember_fail(EMBER_ERR_FORMAT, "%s: token '%.60s' has id %.0f, outside the model's "
                          "vocab of %d", label, text, id_d, v->n);
    int32_t id = (int32_t)id_d;
    if (v->text[id]) {
        if (strcmp(v->text[id], text))
            return ember_fail(EMBER_ERR_FORMAT, "%s: id %d is given to both '%.60s' and '%.60s'",
                              label, id, v->text[id], text);
        v->type[id] = type; /* an added token restating a vocab entry */
        return EMBER_OK;
    }
    v->text[id] = (char *)text; /* borrowed from the cJSON tree */
    v->type[id] = type;
    return EMBER_OK;
}

static ember_status merges_from(tok_gguf_vocab *v, const cJSON *merges, const char *label)
{
    size_t n = (size_t)cJSON_GetArraySize(merges), i = 0;
    v->merges = calloc(n ? n : 1, sizeof *v->merges);
    v->merge_owned = calloc(n ? n : 1, sizeof *v->merge_owned);
    if (!v->merges || !v->merge_owned) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    const cJSON *mg;
    cJSON_ArrayForEach(mg, merges) {
        if (cJSON_IsString(mg)) {
            v->merges[i] = mg->valuestring;
        } else if (cJSON_IsArray(mg) && cJSON_GetArraySize(mg) == 2 &&
                   cJSON_IsString(mg->child) && cJSON_IsString(mg->child->next)) {
            const char *a = mg->child->valuestring, *b = mg->child->next->valuestring;
            if (strchr(a, ' ') || strchr(b, ' '))
                return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: merge %zu has a part with a space, "
                                  "which GGUF's \"a b\" merge form cannot hold", label, i);
            size_t la = strlen(a), lb = strlen(b);
            char *j = malloc(la + lb + 2);
            if (!j) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
            memcpy(j, a, la);
            j[la] = ' ';
            memcpy(j + la + 1, b, lb + 1);
            v->merge_owned[i] = j;
            v->merges[i] = j;
        } else {
            return ember_fail(EMBER_ERR_FORMAT, "%s: model.merges entry %zu is neither \"a b\" "
                              "nor [\"a\", \"b\"]", label, i);
        }
        v->n_merges = ++i;
    }
    return EMBER_OK;
}

ember_status tok_gguf_vocab_from_json(tok_gguf_vocab *v, const cJSON *root, const char *label,
                                        int32_t n_vocab)
{
    ember_status st = tok_gguf_vocab_alloc(v, n_vocab);
    if (st) return st;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsObject(model))
        return ember_fail(EMBER_ERR_FORMAT, "%s: missing \"model\" object", label);
    if (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "BPE")))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: model.type is not \"BPE\"; only byte-level "
                          "BPE tokenizers can be written as a gpt2 GGUF vocab", label);
    if (!cJSON_IsObject(map) || !cJSON_IsArray(merges))
        return ember_fail(EMBER_ERR_FORMAT, "%s: model.vocab must be an object and model.merges "
                          "a list", label);
    const cJSON *e;
    cJSON_ArrayForEach(e, map) {
        if (!cJSON_IsNumber(e))
            return ember_fail(EMBER_ERR_FORMAT, "%s: model.vocab['%.60s'] is not a number", label,
                              e->string);
        if ((st = put_token(v, label, e->string, e->valuedouble, TOK_NORMAL))) return st;
    }
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!cJSON_IsArray(added)) added = NULL;
    cJSON_ArrayForEach(e, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        const cJSON *special = cJSON_GetObjectItemCaseSensitive(e, "special");
        if (!cJSON_IsNumber(id) || !cJSON_IsString(content))
            return ember_fail(EMBER_ERR_FORMAT, "%s: an added_tokens entry lacks a numeric \"id\" "
                              "or a string \"content\"", label);
        if ((st = put_token(v, label, content->valuestring, id->valuedouble,
                            cJSON_IsTrue(special) ? TOK_CONTROL : TOK_USER_DEFINED)))
            return st;
    }
    if ((st = merges_from(v, merges, label))) return st;
    return tok_gguf_vocab_fill_gaps(v);
}

ember_status tok_gguf_put_json(gguf_writer *w, const char *json, size_t len, const char *label,
                               int32_t n_vocab, const char *pre, int32_t bos, int32_t eos, int32_t pad)
{
    tok_gguf_vocab v;
    cJSON *root = NULL;
    memset(&v, 0, sizeof v);
    ember_status st = io_json_parse(json, len, label, "tokenizer", &root);
    if (!st) st = tok_gguf_vocab_from_json(&v, root, label, n_vocab);
    if (!st) st = tok_gguf_vocab_emit(w, &v, pre, bos, eos, pad);
    tok_gguf_vocab_free(&v); /* borrows from root: free it first */
    cJSON_Delete(root);
    return st;
}
