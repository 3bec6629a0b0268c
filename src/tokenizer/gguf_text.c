/* The chat template, end-of-turn ids and sampling defaults of a GGUF model
 * file (gguf_text.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/gguf_text.h"

/* The token texts llama.cpp treats as ending generation whatever the
 * eos/eot keys say (its llama-vocab.cpp keeps such a list, since converters
 * record one id where chat models end turns with another). */
static const char *const EOG_TEXTS[] = {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>",
                                        "<|end_of_text|>", "<end_of_turn>", "<|end|>"};
#define N_EOG (sizeof EOG_TEXTS / sizeof EOG_TEXTS[0])

/* The token list, or NULL when absent or not an array of strings (the
 * tokenizer's loader reports that; here it only means no texts). */
static const gguf_value *token_list(const gguf_file *f)
{
    const gguf_value *v = gguf_find(f, "tokenizer.ggml.tokens");
    return v && v->type == GGUF_TYPE_ARRAY && v->arr_type == GGUF_TYPE_STRING ? v : NULL;
}

/* An optional token id key: *id -1 when absent or past the token list. */
static ember_status optional_id(const gguf_file *f, const char *key, int64_t *id)
{
    const gguf_value *tokens = token_list(f);
    uint32_t v;
    *id = -1;
    if (!gguf_find(f, key)) return EMBER_OK;
    ember_status st = gguf_get_u32(f, key, &v);
    if (st) return st;
    if (!tokens || v < tokens->n) *id = v;
    return EMBER_OK;
}

static ember_status dup_text(const gguf_file *f, const char *key, const char *s, size_t len, char **out)
{
    if (memchr(s, '\0', len))
        return ember_fail(EMBER_ERR_FORMAT, "%s: %s holds a NUL byte", gguf_label(f), key);
    *out = strdup(s);
    return *out ? EMBER_OK : ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", gguf_label(f));
}

ember_status et_gguf_chat_source(const gguf_file *f, et_chat_source *out)
{
    static const char *const ids[2] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"};
    const char *label = gguf_label(f), *s;
    size_t len;
    ember_status st;
    memset(out, 0, sizeof *out);
    if (!gguf_find(f, "tokenizer.chat_template"))
        return ember_fail(EMBER_ERR_IO, "%s: no chat template (tokenizer.chat_template)", label);
    if ((st = gguf_get_str(f, "tokenizer.chat_template", &s, &len)) ||
        (st = dup_text(f, "tokenizer.chat_template", s, len, &out->main)))
        goto fail;
    snprintf(out->main_label, sizeof out->main_label, "%.500s: tokenizer.chat_template", label);
    if (gguf_find(f, "tokenizer.chat_template.tool_use")) {
        if ((st = gguf_get_str(f, "tokenizer.chat_template.tool_use", &s, &len)) ||
            (st = dup_text(f, "tokenizer.chat_template.tool_use", s, len, &out->tool_use)))
            goto fail;
        snprintf(out->tool_use_label, sizeof out->tool_use_label,
                 "%.500s: tokenizer.chat_template.tool_use", label);
    }
    /* special[0] is bos_token, special[1] eos_token (chat.h) */
    const gguf_value *tokens = token_list(f);
    for (int i = 0; i < 2; i++) {
        int64_t id;
        if ((st = optional_id(f, ids[i], &id))) goto fail;
        if (id < 0 || !tokens) continue;
        const gguf_str *t = &tokens->arr_strs[id];
        if (t->len && (st = dup_text(f, "tokenizer.ggml.tokens", t->s, t->len, &out->special[i])))
            goto fail;
    }
    return EMBER_OK;
fail:
    et_chat_source_free(out);
    return st;
}

static void add_id(int32_t *ids, size_t cap, size_t *n, int64_t id)
{
    if (id < 0 || id > INT32_MAX) return;
    for (size_t i = 0; i < *n; i++)
        if (ids[i] == id) return;
    if (*n < cap) ids[(*n)++] = (int32_t)id;
}

ember_status et_gguf_stop_ids(const gguf_file *f, int32_t *ids, size_t cap, size_t *n)
{
    static const char *const keys[] = {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                       "tokenizer.ggml.eom_token_id"};
    *n = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        int64_t id;
        ember_status st = optional_id(f, keys[k], &id);
        if (st) return st;
        add_id(ids, cap, n, id);
    }
    const gguf_value *tokens = token_list(f);
    for (uint64_t i = 0; tokens && i < tokens->n; i++) {
        const gguf_str *t = &tokens->arr_strs[i];
        if (t->len < 5 || t->s[0] != '<') continue; /* every name is "<...>" */
        for (size_t k = 0; k < N_EOG; k++)
            if (!strcmp(t->s, EOG_TEXTS[k])) add_id(ids, cap, n, (int64_t)i);
    }
    return EMBER_OK;
}

/* An optional number of any scalar GGUF numeric type. */
static ember_status number(const gguf_file *f, const char *key, bool *present, double *out)
{
    const gguf_value *v = gguf_find(f, key);
    *present = v != NULL;
    if (!v) return EMBER_OK;
    switch (v->type) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_UINT16: case GGUF_TYPE_UINT32: case GGUF_TYPE_UINT64:
        *out = (double)v->u;
        return EMBER_OK;
    case GGUF_TYPE_INT8: case GGUF_TYPE_INT16: case GGUF_TYPE_INT32: case GGUF_TYPE_INT64:
        *out = (double)v->i;
        return EMBER_OK;
    case GGUF_TYPE_FLOAT32: case GGUF_TYPE_FLOAT64:
        *out = v->f;
        if (*out == *out) return EMBER_OK;
        return ember_fail(EMBER_ERR_FORMAT, "%s: key '%s' is NaN", gguf_label(f), key);
    default:
        return ember_fail(EMBER_ERR_FORMAT, "%s: key '%s' is %s, expected a number", gguf_label(f),
                          key, gguf_type_name(v->type));
    }
}

ember_status et_gguf_sampling_defaults(const gguf_file *f, et_sampler_params *p)
{
    bool has;
    double v;
    ember_status st = number(f, "general.sampling.temp", &has, &v);
    if (st) return st;
    if (!has || !(v > 0)) {
        p->temperature = 0.0f; /* as a model directory without do_sample */
    } else {
        p->temperature = (float)v;
        if ((st = number(f, "general.sampling.top_k", &has, &v))) return st;
        if (has) p->top_k = v < 0 ? 0 : v > INT32_MAX ? INT32_MAX : (int32_t)v;
        if ((st = number(f, "general.sampling.top_p", &has, &v))) return st;
        if (has) p->top_p = (float)v;
        if ((st = number(f, "general.sampling.min_p", &has, &v))) return st;
        if (has) p->min_p = (float)v;
    }
    if ((st = number(f, "general.sampling.penalty_repeat", &has, &v))) return st;
    if (has) p->repetition_penalty = (float)v;
    return EMBER_OK;
}
