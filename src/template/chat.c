/* Chat templates from a model directory or GGUF file, rendered the way
 * transformers.js's apply_chat_template renders them (same variables, same
 * template choice). Finding the template (et_chat_source) is apart from
 * parsing it, so ember's GGUF writer stores exactly the text this reads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/gguf.h"
#include "io/json_text.h"
#include "io/read_file.h"
#include "template/chat.h"
#include "tokenizer/gguf_text.h"
#include "template/jinja.h"

/* The special-token variables transformers.js passes when the config has
 * them, in et_chat_source.special's order. */
static const char *const SPECIAL_TOKENS[ET_CHAT_N_SPECIAL] = {
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"};
#define N_SPECIAL ET_CHAT_N_SPECIAL

struct et_chat_template {
    ej_template *main;     /* "default", or the only template */
    ej_template *tool_use; /* used when tools are given; NULL if none */
    char *special[N_SPECIAL];
};

void et_chat_template_free(et_chat_template *t)
{
    if (!t) return;
    ej_free(t->main);
    ej_free(t->tool_use);
    for (size_t i = 0; i < N_SPECIAL; i++) free(t->special[i]);
    free(t);
}

static ember_status dup_special(char **slot, const char *value)
{
    if (!value || !*value) return EMBER_OK; /* "" counts as absent, as in transformers.js */
    *slot = strdup(value);
    return *slot ? EMBER_OK : ember_fail(EMBER_ERR_NO_MEMORY, "chat template: out of memory");
}

static ember_status parse_named(const char *src, const char *label, ej_template **out)
{
    ember_status st = ej_parse(src, strlen(src), out);
    if (st) ember_fail_prefix(st, "%s", label);
    return st;
}

ember_status et_chat_template_from_source(const et_chat_source *s, et_chat_template **out)
{
    if (!s || !s->main || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "et_chat_template_from_source: no template");
    *out = NULL;
    et_chat_template *t = calloc(1, sizeof *t);
    if (!t) return ember_fail(EMBER_ERR_NO_MEMORY, "chat template: out of memory");
    ember_status st = parse_named(s->main, s->main_label, &t->main);
    if (!st && s->tool_use) st = parse_named(s->tool_use, s->tool_use_label, &t->tool_use);
    for (size_t i = 0; i < N_SPECIAL && !st; i++) st = dup_special(&t->special[i], s->special[i]);
    if (st) {
        et_chat_template_free(t);
        return st;
    }
    *out = t;
    return EMBER_OK;
}

ember_status et_chat_template_from_string(const char *src, const char *bos, const char *eos,
                                          et_chat_template **out)
{
    if (!src || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "et_chat_template_from_string: NULL argument");
    et_chat_source s;
    memset(&s, 0, sizeof s);
    s.main = (char *)src; /* borrowed: from_source only reads */
    snprintf(s.main_label, sizeof s.main_label, "chat template");
    s.special[0] = (char *)bos;
    s.special[1] = (char *)eos;
    return et_chat_template_from_source(&s, out);
}

void et_chat_source_free(et_chat_source *s)
{
    if (!s) return;
    free(s->main);
    free(s->tool_use);
    for (size_t i = 0; i < N_SPECIAL; i++) free(s->special[i]);
    memset(s, 0, sizeof *s);
}

/* Reads dir/name; a missing file gives EMBER_OK with *text NULL. */
static ember_status read_optional(const char *dir, const char *name, char **text, size_t *len, char *path,
                                  size_t path_cap)
{
    *text = NULL;
    snprintf(path, path_cap, "%s/%s", dir, name);
    if (access(path, F_OK) != 0 && errno == ENOENT) return EMBER_OK;
    return io_read_text_file(path, (size_t)64 << 20, text, len);
}

/* "chat_template": a string, or [{name, template}, ...]. */
static ember_status source_from_value(et_chat_source *s, const cJSON *ct, const char *path)
{
    if (cJSON_IsString(ct)) {
        snprintf(s->main_label, sizeof s->main_label, "%s", path);
        s->main = strdup(ct->valuestring);
        return s->main ? EMBER_OK : ember_fail(EMBER_ERR_NO_MEMORY, "chat template: out of memory");
    }
    if (!cJSON_IsArray(ct))
        return ember_fail(EMBER_ERR_FORMAT, "%s: chat_template must be a string or a list of {name, template}", path);
    const cJSON *item;
    cJSON_ArrayForEach(item, ct)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(item, "template");
        if (!cJSON_IsString(name) || !cJSON_IsString(src))
            return ember_fail(EMBER_ERR_FORMAT, "%s: chat_template entries need string 'name' and 'template'", path);
        bool is_main = !strcmp(name->valuestring, "default");
        if (!is_main && strcmp(name->valuestring, "tool_use")) continue;
        char **slot = is_main ? &s->main : &s->tool_use;
        char *label = is_main ? s->main_label : s->tool_use_label;
        if (*slot) continue;
        snprintf(label, sizeof s->main_label, "%.500s: chat_template '%s'", path, name->valuestring);
        if (!(*slot = strdup(src->valuestring))) return ember_fail(EMBER_ERR_NO_MEMORY, "chat template: out of memory");
    }
    if (!s->main)
        return ember_fail(EMBER_ERR_FORMAT, "%s: chat_template has several templates but none named 'default'", path);
    return EMBER_OK;
}

static ember_status read_special_tokens(et_chat_source *s, const cJSON *config, const char *path)
{
    for (size_t i = 0; i < N_SPECIAL; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, SPECIAL_TOKENS[i]);
        if (!v || cJSON_IsNull(v)) continue;
        if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
        if (!cJSON_IsString(v))
            return ember_fail(EMBER_ERR_FORMAT, "%s: %s must be a string or an object with a string 'content'", path,
                              SPECIAL_TOKENS[i]);
        ember_status st = dup_special(&s->special[i], v->valuestring);
        if (st) return st;
    }
    return EMBER_OK;
}

static ember_status source_from_dir(et_chat_source *s, const char *dir)
{
    char path[4096];
    char *text;
    size_t len;
    cJSON *config = NULL;
    ember_status st = read_optional(dir, "tokenizer_config.json", &text, &len, path, sizeof path);
    if (st) return st;
    if (text) {
        st = io_json_parse(text, len, path, "config", &config);
        free(text);
        if (st) return st;
        if (!cJSON_IsObject(config)) st = ember_fail(EMBER_ERR_FORMAT, "%s: not a JSON object", path);
        if (!st) st = read_special_tokens(s, config, path);
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(config, "chat_template");
        if (!st && ct && !cJSON_IsNull(ct)) st = source_from_value(s, ct, path);
        cJSON_Delete(config);
        if (st || s->main) return st;
    }
    st = read_optional(dir, "chat_template.jinja", &text, &len, path, sizeof path);
    if (st) return st;
    if (text) {
        snprintf(s->main_label, sizeof s->main_label, "%s", path);
        s->main = text;
        return EMBER_OK;
    }
    st = read_optional(dir, "chat_template.json", &text, &len, path, sizeof path);
    if (st) return st;
    if (!text) return ember_fail(EMBER_ERR_IO, "%s: no chat template (tokenizer_config.json chat_template, chat_template.jinja or chat_template.json)", dir);
    st = io_json_parse(text, len, path, "chat template", &config);
    free(text);
    if (st) return st;
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(config, "chat_template");
    st = ct ? source_from_value(s, ct, path) : ember_fail(EMBER_ERR_FORMAT, "%s: no 'chat_template' key", path);
    cJSON_Delete(config);
    return st;
}

ember_status et_chat_source_load(const char *path, et_chat_source *out)
{
    if (!path || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "et_chat_source_load: NULL argument");
    memset(out, 0, sizeof *out);
    ember_status st;
    if (gguf_is_gguf_file(path)) { /* a .gguf model carries its template */
        gguf_file *f = NULL;
        st = gguf_open(path, &f);
        if (!st) st = et_gguf_chat_source(f, out);
        gguf_close(f);
    } else {
        st = source_from_dir(out, path);
    }
    if (st) et_chat_source_free(out);
    return st;
}

ember_status et_chat_template_load(const char *path, et_chat_template **out)
{
    if (!path || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "et_chat_template_load: NULL argument");
    *out = NULL;
    et_chat_source s;
    ember_status st = et_chat_source_load(path, &s);
    if (!st) st = et_chat_template_from_source(&s, out);
    et_chat_source_free(&s);
    return st;
}

/* Sets key to item in obj, replacing an earlier value (later ones win, as
 * in the JavaScript object literal transformers.js builds). */
static bool put(cJSON *obj, const char *key, cJSON *item)
{
    if (!item) return false;
    if (cJSON_GetObjectItemCaseSensitive(obj, key)) return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item);
    return cJSON_AddItemToObject(obj, key, item);
}

static cJSON *reference(const cJSON *v)
{
    if (cJSON_IsArray(v)) return cJSON_CreateArrayReference(v->child);
    if (cJSON_IsObject(v)) return cJSON_CreateObjectReference(v->child);
    return cJSON_Duplicate(v, true);
}

ember_status et_chat_render(const et_chat_template *t, const et_chat_input *in, char **out)
{
    if (!t || !in || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "et_chat_render: NULL argument");
    *out = NULL;
    if (!cJSON_IsArray(in->messages)) return ember_fail(EMBER_ERR_INVALID_ARG, "chat: messages must be a JSON array");
    if (in->extra && !cJSON_IsObject(in->extra)) return ember_fail(EMBER_ERR_INVALID_ARG, "chat: extra must be a JSON object");
    cJSON *ctx = cJSON_CreateObject();
    bool ok = ctx != NULL;
    ok = ok && put(ctx, "messages", reference(in->messages));
    ok = ok && put(ctx, "add_generation_prompt", cJSON_CreateBool(in->add_generation_prompt));
    ok = ok && put(ctx, "tools", in->tools ? reference(in->tools) : cJSON_CreateNull());
    ok = ok && put(ctx, "documents", cJSON_CreateNull());
    for (size_t i = 0; ok && i < N_SPECIAL; i++)
        if (t->special[i]) ok = put(ctx, SPECIAL_TOKENS[i], cJSON_CreateString(t->special[i]));
    const cJSON *e;
    if (in->extra)
        cJSON_ArrayForEach(e, in->extra) if (ok) ok = put(ctx, e->string, reference(e));
    if (ok && in->enable_thinking >= 0) ok = put(ctx, "enable_thinking", cJSON_CreateBool(in->enable_thinking != 0));
    if (!ok) {
        cJSON_Delete(ctx);
        return ember_fail(EMBER_ERR_NO_MEMORY, "chat: out of memory");
    }
    const ej_template *tmpl = in->tools && t->tool_use ? t->tool_use : t->main;
    ember_status st = ej_render(tmpl, ctx, out, NULL);
    cJSON_Delete(ctx);
    return st;
}

ember_status et_chat_message_ends(const et_chat_template *t, const et_chat_input *in,
                                  const char *rendered, size_t cap, size_t **ends, size_t *n)
{
    *ends = NULL;
    *n = 0;
    if (!t || !in || !rendered || !cJSON_IsArray(in->messages))
        return ember_fail(EMBER_ERR_INVALID_ARG, "et_chat_message_ends: bad arguments");
    const size_t total = (size_t)cJSON_GetArraySize(in->messages), len = strlen(rendered);
    const size_t first = total > cap ? total - cap : 1;
    if (total < 2 || first >= total) return EMBER_OK;
    cJSON *head = cJSON_CreateArray();
    size_t *out = malloc((total - first) * sizeof *out);
    ember_status st = head && out ? EMBER_OK : ember_fail(EMBER_ERR_NO_MEMORY, "chat: out of memory");
    const cJSON *m = in->messages->child;
    for (size_t k = 1; !st && k < total; k++, m = m->next) {
        /* head: references to the first k messages (no copies) */
        if (!cJSON_AddItemReferenceToArray(head, (cJSON *)m)) {
            st = ember_fail(EMBER_ERR_NO_MEMORY, "chat: out of memory");
            break;
        }
        if (k < first) continue;
        et_chat_input part = *in;
        part.messages = head;
        part.add_generation_prompt = false;
        char *text = NULL;
        if (et_chat_render(t, &part, &text)) continue; /* this prefix renders no boundary */
        size_t at = strlen(text);
        if (at > 0 && at < len && !memcmp(text, rendered, at) && (*n == 0 || at > out[*n - 1])) out[(*n)++] = at;
        free(text);
    }
    cJSON_Delete(head);
    if (st || *n == 0) {
        free(out);
        *n = 0;
        return st;
    }
    *ends = out;
    return EMBER_OK;
}
