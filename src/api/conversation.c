/* ember_conversation (include/ember_text.h): messages as cJSON, the chat
 * template rendered every turn, and a session whose cached tokens are
 * reused: only the tokens past the common prefix of the new prompt and what
 * the session holds are run.
 *
 * The history rarely re-renders the last reply token for token (templates
 * drop old reasoning, re-serialise tool calls), so the prompt usually
 * diverges inside it. The session is then taken back to the previous
 * prompt's last special token (<|im_start|> of "assistant\n": the text
 * after it may tokenize differently once the reply follows it), where a
 * snapshot of the sliding layers' rings was kept (full layers keep every
 * position anyway), instead of starting over. A prompt that diverges
 * earlier (a cleared conversation, a new one loaded from a file) goes back
 * to a second snapshot, at the end of the system part (the system message
 * and tools rendered alone, back to their last special token): what an
 * agent's conversations share. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/api_internal.h"
#include "base/status.h"
#include "ember_text.h"
#include "io/json_text.h"
#include "llm/state_file.h"
#include "template/chat.h"

#define MAX_EOT 16

struct ember_conversation {
    const ember_tokenizer *tok;
    const et_chat_template *tmpl;
    ember_session *s;
    cJSON *messages, *tools;
    char **tool_names;
    size_t n_tool_names;
    int enable_thinking;
    int has_system;
    int32_t eot[MAX_EOT];
    size_t n_eot;
    api_ids held; /* the tokens in the session, in order */
    /* resume points: the rings at the end of the system part, and after
     * the last prompt's last special token (pos 0: none) */
    llm_ring_snapshot points[2];
    /* the reply being collected */
    char *content, *reasoning;
    size_t n_content, n_reasoning;
    cJSON *calls;
    int oom;
};

ember_conversation_params ember_conversation_default_params(void)
{
    ember_conversation_params p;
    memset(&p, 0, sizeof p);
    p.session = ember_session_default_params();
    p.enable_thinking = -1;
    return p;
}

static cJSON *message(const char *role, const char *content)
{
    cJSON *m = cJSON_CreateObject();
    if (m && (!cJSON_AddStringToObject(m, "role", role) ||
              !cJSON_AddStringToObject(m, "content", content))) {
        cJSON_Delete(m);
        m = NULL;
    }
    return m;
}

static void forget_points(ember_conversation *c)
{
    for (int i = 0; i < 2; i++) llm_ring_snapshot_free(&c->points[i]);
}

/* Where the system part of the prompt ids[0..n) ends: the system message
 * and tools rendered alone are a prefix of it, taken back to their last
 * special token (the text after one may tokenize differently once more
 * follows). 0: no system message, or its rendering is not a prefix. */
static size_t system_end(const ember_conversation *c, const cJSON *tools, const int32_t *ids, size_t n)
{
    cJSON *first = c->has_system ? cJSON_CreateArray() : NULL;
    if (!first || !cJSON_AddItemReferenceToArray(first, cJSON_GetArrayItem(c->messages, 0))) {
        cJSON_Delete(first);
        return 0;
    }
    et_chat_input in = {first, (cJSON *)tools, false, c->enable_thinking, NULL};
    char *text = NULL;
    int32_t *sys = NULL;
    size_t m = 0, end = 0;
    if (!et_chat_render(c->tmpl, &in, &text) && !ember_tokenizer_encode(c->tok, text, strlen(text), 0, &sys, &m) &&
        m <= n && !memcmp(sys, ids, m * sizeof *ids))
        end = m;
    while (end > 0 && !ember_tokenizer_is_special(c->tok, ids[end - 1])) end--;
    cJSON_Delete(first);
    free(text);
    free(sys);
    return end;
}

void ember_conversation_free(ember_conversation *c)
{
    if (!c) return;
    ember_session_free(c->s);
    cJSON_Delete(c->messages);
    cJSON_Delete(c->tools);
    cJSON_Delete(c->calls);
    for (size_t i = 0; i < c->n_tool_names; i++) free(c->tool_names[i]);
    free(c->tool_names);
    free(c->held.ids);
    forget_points(c);
    free(c->content);
    free(c->reasoning);
    free(c);
}

static ember_status read_tools(ember_conversation *c, const char *json)
{
    ember_status st = io_json_parse(json, strlen(json), "ember_conversation", "tools", &c->tools);
    if (st) return st;
    if (!cJSON_IsArray(c->tools)) return ember_fail(EMBER_ERR_FORMAT, "tools must be a JSON array");
    int n = cJSON_GetArraySize(c->tools);
    if (n && !(c->tool_names = calloc((size_t)n, sizeof *c->tool_names)))
        return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    const cJSON *tool;
    cJSON_ArrayForEach(tool, c->tools) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tool, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn ? fn : tool, "name");
        if (!cJSON_IsString(name) || !*name->valuestring)
            return ember_fail(EMBER_ERR_FORMAT, "tools[%zu] has no function name", c->n_tool_names);
        if (!(c->tool_names[c->n_tool_names] = strdup(name->valuestring)))
            return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
        c->n_tool_names++;
    }
    return EMBER_OK;
}

ember_status ember_conversation_create(const ember_model *model, const ember_tokenizer *tok,
                                       const ember_chat_template *tmpl,
                                       const ember_conversation_params *p,
                                       ember_conversation **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_conversation_create: out is NULL");
    *out = NULL;
    if (!model || !tok || !tmpl)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_conversation_create: a NULL argument");
    ember_conversation_params dp = ember_conversation_default_params();
    if (!p) p = &dp;
    ember_conversation *c = calloc(1, sizeof *c);
    if (!c) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    c->tok = tok;
    c->tmpl = (const et_chat_template *)(const void *)tmpl;
    c->enable_thinking = p->enable_thinking < 0 ? -1 : p->enable_thinking != 0;
    ember_status st = EMBER_OK;
    if (!(c->messages = cJSON_CreateArray())) st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    if (!st && p->tools_json) st = read_tools(c, p->tools_json);
    if (!st && p->system) {
        cJSON *m = message("system", p->system);
        if (!m) st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
        else cJSON_AddItemToArray(c->messages, m);
        c->has_system = 1;
    }
    if (!st && p->model_dir) st = ember_tokenizer_end_of_turn_ids(tok, p->model_dir, c->eot, MAX_EOT, &c->n_eot);
    if (!st && !p->model_dir) {
        static const char *const names[] = {"<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>"};
        for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
            int32_t id = ember_tokenizer_find(tok, names[i]);
            if (id >= 0) c->eot[c->n_eot++] = id;
        }
    }
    if (!st) {
        ember_session_params sp = p->session;
        if (sp.max_context > ember_model_max_positions(model)) sp.max_context = ember_model_max_positions(model);
        st = ember_session_create(model, &sp, &c->s);
    }
    if (st) {
        ember_conversation_free(c);
        return st;
    }
    *out = c;
    return EMBER_OK;
}

ember_status ember_conversation_add(ember_conversation *c, const char *role, const char *content)
{
    if (!c || !role || !content)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_conversation_add: a NULL argument");
    cJSON *m = message(role, content);
    if (!m) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    cJSON_AddItemToArray(c->messages, m);
    return EMBER_OK;
}

ember_status ember_conversation_add_tool_result(ember_conversation *c, const char *tool_call_id,
                                                const char *content)
{
    if (!c || !tool_call_id || !content)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_conversation_add_tool_result: a NULL argument");
    cJSON *m = message("tool", content);
    if (!m || !cJSON_AddStringToObject(m, "tool_call_id", tool_call_id)) {
        cJSON_Delete(m);
        return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    }
    cJSON_AddItemToArray(c->messages, m);
    return EMBER_OK;
}

/* Collects the reply for the history. */
static int collect(void *user, const et_toolcall_event *e)
{
    ember_conversation *c = user;
    if (e->kind == ET_TOOLCALL_CONTENT) {
        if (et_toolcall_text_append(&c->content, &c->n_content, e->text, e->len)) c->oom = 1;
    } else if (e->kind == ET_TOOLCALL_REASONING) {
        if (et_toolcall_text_append(&c->reasoning, &c->n_reasoning, e->text, e->len)) c->oom = 1;
    } else {
        cJSON *call = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        if (!call || !fn || !cJSON_AddStringToObject(call, "id", e->id) ||
            !cJSON_AddStringToObject(call, "type", "function") ||
            !cJSON_AddStringToObject(fn, "name", e->name) ||
            !cJSON_AddStringToObject(fn, "arguments", e->arguments)) {
            cJSON_Delete(call);
            cJSON_Delete(fn);
            c->oom = 1;
        } else {
            cJSON_AddItemToObject(call, "function", fn);
            cJSON_AddItemToArray(c->calls, call);
        }
    }
    return c->oom;
}

static void reply_clear(ember_conversation *c)
{
    free(c->content);
    free(c->reasoning);
    cJSON_Delete(c->calls);
    c->content = c->reasoning = NULL;
    c->n_content = c->n_reasoning = 0;
    c->calls = NULL;
    c->oom = 0;
}

ember_status ember_conversation_respond(ember_conversation *c, const ember_generate_params *p,
                                        ember_generate_result *res)
{
    if (res) memset(res, 0, sizeof *res);
    if (!c) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_conversation_respond: c is NULL");
    ember_generate_params gp = p ? *p : ember_generate_default_params();
    if (!gp.n_stop_ids) {
        gp.stop_ids = c->eot;
        gp.n_stop_ids = c->n_eot;
    }
    int no_tools = gp.tool_choice && !strcmp(gp.tool_choice, "none");
    if (!gp.n_tool_names) {
        gp.tool_names = (const char *const *)c->tool_names;
        gp.n_tool_names = c->n_tool_names;
    }
    reply_clear(c);
    if (!(c->calls = cJSON_CreateArray())) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    et_chat_input in = {c->messages, no_tools ? NULL : c->tools, true, c->enable_thinking, NULL};
    char *prompt = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    ember_status st = et_chat_render(c->tmpl, &in, &prompt);
    if (!st) st = ember_tokenizer_encode(c->tok, prompt, strlen(prompt), 0, &ids, &n);
    free(prompt);
    if (!st && !n) st = ember_fail(EMBER_ERR_INVALID_ARG, "the conversation renders to no tokens");
    if (st) {
        free(ids);
        return st;
    }
    size_t same = 0;
    while (same < n && same < c->held.n && ids[same] == c->held.ids[same]) same++;
    if (same < c->held.n || same == n) { /* diverged, or nothing new to run */
        int back = 1; /* the latest resume point the prompt still agrees with */
        while (back >= 0 && !(c->points[back].pos > 0 && (size_t)c->points[back].pos <= same &&
                              (size_t)c->points[back].pos < n && (size_t)c->points[back].pos <= c->held.n))
            back--;
        if (back >= 0 && llm_session_rewind(c->s, c->points[back].pos, &c->points[back]) == EMBER_OK) {
            same = (size_t)c->points[back].pos;
            if (back == 0) llm_ring_snapshot_free(&c->points[1]); /* past the divergence */
        } else { /* start over */
            ember_session_reset(c->s);
            forget_points(c);
            same = 0;
        }
        c->held.n = same;
    }
    for (size_t i = c->held.n; !st && i < n; i++) st = api_ids_push(&c->held, ids[i]);
    size_t mark = n; /* after the prompt's last special token */
    while (mark > same + 1 && !ember_tokenizer_is_special(c->tok, ids[mark - 1])) mark--;
    /* the system part's end, when it is among the tokens to run */
    size_t sys = c->points[0].pos ? 0 : system_end(c, no_tools ? NULL : c->tools, ids, n);
    api_hooks hooks = {collect, c, &c->held, {sys > same && sys < mark ? &c->points[0] : NULL, &c->points[1]},
                       {sys, mark}};
    if (!st) st = api_generate(c->s, c->tok, ids, n, same, &gp, &hooks, res);
    free(ids);
    if (!st && c->oom) st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    if (st) { /* what the session holds is no longer known exactly */
        ember_session_reset(c->s);
        c->held.n = 0;
        forget_points(c);
        reply_clear(c);
        return st;
    }
    cJSON *msg = message("assistant", c->content ? c->content : "");
    if (!msg || (c->reasoning && !cJSON_AddStringToObject(msg, "reasoning_content", c->reasoning))) {
        cJSON_Delete(msg);
        reply_clear(c);
        return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    }
    if (cJSON_GetArraySize(c->calls)) {
        cJSON_AddItemToObject(msg, "tool_calls", c->calls);
        c->calls = NULL;
    }
    cJSON_AddItemToArray(c->messages, msg);
    reply_clear(c);
    return EMBER_OK;
}

ember_status ember_conversation_messages(const ember_conversation *c, char **json)
{
    if (json) *json = NULL;
    if (!c || !json) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_conversation_messages: a NULL argument");
    if (!(*json = cJSON_PrintUnformatted(c->messages))) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    return EMBER_OK;
}

void ember_conversation_clear(ember_conversation *c)
{
    if (!c) return;
    while (cJSON_GetArraySize(c->messages) > c->has_system)
        cJSON_DeleteItemFromArray(c->messages, cJSON_GetArraySize(c->messages) - 1);
}

int32_t ember_conversation_cached_tokens(const ember_conversation *c)
{
    return c ? ember_session_position(c->s) : 0;
}

void ember_conversation_cancel(ember_conversation *c)
{
    if (c) ember_session_cancel(c->s);
}

ember_status ember_conversation_save(const ember_conversation *c, const char *path)
{
    if (!c || !path) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_conversation_save: a NULL argument");
    if (c->held.n != (size_t)ember_session_position(c->s))
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_conversation_save: the cache is not in a known state");
    char *messages = cJSON_PrintUnformatted(c->messages);
    if (!messages) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    llm_ring_snapshot points[2];
    size_t n_points = 0;
    for (int i = 0; i < 2; i++)
        if (c->points[i].pos > 0 && (size_t)c->points[i].pos <= c->held.n &&
            (!n_points || c->points[i].pos > points[n_points - 1].pos))
            points[n_points++] = c->points[i];
    ember_status st = llm_state_save(c->s, c->held.ids, points, n_points, messages, strlen(messages), path);
    free(messages);
    return st;
}

ember_status ember_conversation_load(ember_conversation *c, const char *path)
{
    if (!c || !path) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_conversation_load: a NULL argument");
    llm_saved saved;
    ember_status st = llm_state_load(c->s, path, &saved);
    if (st) return st;
    cJSON *messages = NULL;
    if (!saved.app) st = ember_fail(EMBER_ERR_FORMAT, "%s: holds no conversation (a session's file?)", path);
    if (!st) st = io_json_parse(saved.app, saved.app_bytes, path, "messages", &messages);
    if (!st && !cJSON_IsArray(messages)) st = ember_fail(EMBER_ERR_FORMAT, "%s: messages are not a JSON array", path);
    if (st) { /* the session already took the file's rows */
        cJSON_Delete(messages);
        llm_saved_free(&saved);
        ember_session_reset(c->s);
        c->held.n = 0;
        forget_points(c);
        return st;
    }
    cJSON_Delete(c->messages);
    c->messages = messages;
    const cJSON *first = cJSON_GetArrayItem(messages, 0);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(first, "role");
    c->has_system = cJSON_IsString(role) && !strcmp(role->valuestring, "system");
    free(c->held.ids);
    c->held.ids = saved.tokens;
    c->held.n = c->held.cap = saved.n_tokens;
    saved.tokens = NULL;
    forget_points(c);
    /* the latest is the end of the last prompt; an earlier one the system
     * part's (any other resume points of a file go) */
    for (size_t k = saved.n_snaps, i = 2; k-- > 0 && i-- > 0;) {
        c->points[i] = saved.snaps[k];
        memset(&saved.snaps[k], 0, sizeof saved.snaps[k]);
    }
    llm_saved_free(&saved);
    return EMBER_OK;
}
