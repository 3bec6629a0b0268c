#include "serve/request.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sv_error_set(sv_error *e, int status, const char *type, const char *param, const char *code,
                 const char *fmt, ...)
{
    va_list ap;
    e->status = status;
    e->type = type;
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

char *sv_error_json(const sv_error *e)
{
    cJSON *root = cJSON_CreateObject(), *err = cJSON_AddObjectToObject(root, "error");
    char *text = NULL;
    if (err && cJSON_AddStringToObject(err, "message", e->message) &&
        cJSON_AddStringToObject(err, "type", e->type ? e->type : "invalid_request_error") &&
        (e->param[0] ? cJSON_AddStringToObject(err, "param", e->param)
                     : cJSON_AddNullToObject(err, "param")) &&
        (e->code ? cJSON_AddStringToObject(err, "code", e->code) : cJSON_AddNullToObject(err, "code")))
        text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

/* A 400 whose message is the field's name followed by what is wrong. */
static int bad(sv_error *e, const char *param, const char *what)
{
    return sv_error_set(e, 400, "invalid_request_error", param, NULL, "%s %s", param, what);
}

/* The deepest nesting of arrays and objects in the text (strings skipped),
 * so a body of a million '[' is refused before the parser recurses. */
static int nesting_exceeds(const char *s, size_t n, int limit)
{
    int depth = 0, in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > limit) return 1;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 0;
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* A number field in [lo, hi]; absent: 0 and *present stays 0. */
static int get_number(const cJSON *root, const char *key, double lo, double hi, int integral,
                      double *out, int *present, sv_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return bad(e, key, "must be a number");
    if (integral && v->valuedouble != floor(v->valuedouble))
        return bad(e, key, "must be an integer");
    if (v->valuedouble < lo || v->valuedouble > hi) {
        return sv_error_set(e, 400, "invalid_request_error", key, NULL, "%s must be in [%g, %g]",
                            key, lo, hi);
    }
    *out = v->valuedouble;
    if (present) *present = 1;
    return 0;
}

static int get_bool(const cJSON *root, const char *key, int *out, sv_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return bad(e, key, "must be a boolean");
    *out = cJSON_IsTrue(v);
    return 0;
}

/* Message content: a string, null, or an array of {"type":"text","text":...}
 * parts (joined). Returns a new cJSON string or null. */
static cJSON *content_text(const cJSON *content, const char *param, sv_error *e)
{
    if (!content || cJSON_IsNull(content)) return cJSON_CreateNull();
    if (cJSON_IsString(content)) return cJSON_CreateString(content->valuestring);
    if (!cJSON_IsArray(content)) {
        bad(e, param, "must be a string, null or an array of text parts");
        return NULL;
    }
    size_t total = 1;
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text)) {
            bad(e, param, "parts must be {\"type\": \"text\", \"text\": ...} (only text is supported)");
            return NULL;
        }
        total += strlen(text->valuestring);
    }
    char *joined = malloc(total), *p = joined;
    if (!joined) {
        sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
        return NULL;
    }
    cJSON_ArrayForEach(part, content) {
        const char *t = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
        size_t n = strlen(t);
        memcpy(p, t, n);
        p += n;
    }
    *p = '\0';
    cJSON *out = cJSON_CreateString(joined);
    free(joined);
    return out;
}

/* An assistant message's tool_calls: [{id, type: function, function: {name,
 * arguments}}], copied with arguments kept as the client sent them. */
static cJSON *copy_tool_calls(const cJSON *calls, const char *param, sv_error *e)
{
    char where[256];
    if (!cJSON_IsArray(calls)) {
        bad(e, param, "must be an array");
        return NULL;
    }
    cJSON *out = cJSON_CreateArray();
    const cJSON *call;
    int i = 0;
    cJSON_ArrayForEach(call, calls) {
        snprintf(where, sizeof where, "%s[%d].function", param, i++);
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(call, "id");
        if (!cJSON_IsObject(fn) || !cJSON_IsString(name) ||
            (args && !cJSON_IsString(args) && !cJSON_IsObject(args))) {
            bad(e, where, "needs a string name and string or object arguments");
            cJSON_Delete(out);
            return NULL;
        }
        cJSON *c = cJSON_CreateObject(), *f = cJSON_CreateObject();
        cJSON_AddItemToArray(out, c);
        if (cJSON_IsString(id)) cJSON_AddStringToObject(c, "id", id->valuestring);
        cJSON_AddStringToObject(c, "type", "function");
        cJSON_AddItemToObject(c, "function", f);
        cJSON_AddStringToObject(f, "name", name->valuestring);
        /* The templates render an object's JSON; a string is parsed when it
         * holds an object (what the model emitted), else kept verbatim. */
        cJSON *parsed = cJSON_IsString(args) ? cJSON_Parse(args->valuestring) : NULL;
        if (parsed && cJSON_IsObject(parsed)) cJSON_AddItemToObject(f, "arguments", parsed);
        else {
            cJSON_Delete(parsed);
            cJSON_AddItemToObject(f, "arguments", args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject());
        }
    }
    return out;
}

static int parse_messages(const cJSON *root, sv_request *r, sv_error *e)
{
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool"};
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0)
        return bad(e, "messages", "must be a non-empty array");
    r->messages = cJSON_CreateArray();
    const cJSON *m;
    int i = 0;
    char where[160];
    cJSON_ArrayForEach(m, msgs) {
        snprintf(where, sizeof where, "messages[%d]", i++);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role))
            return bad(e, where, "must be an object with a string role");
        size_t k = 0;
        while (k < sizeof roles / sizeof *roles && strcmp(roles[k], role->valuestring)) k++;
        if (k == sizeof roles / sizeof *roles)
            return bad(e, where, "role must be system, developer, user, assistant or tool");
        cJSON *out = cJSON_CreateObject();
        cJSON_AddItemToArray(r->messages, out);
        /* developer is OpenAI's newer name for system */
        cJSON_AddStringToObject(out, "role", k == 1 ? "system" : role->valuestring);
        char cwhere[192];
        snprintf(cwhere, sizeof cwhere, "%s.content", where);
        cJSON *content = content_text(cJSON_GetObjectItemCaseSensitive(m, "content"), cwhere, e);
        if (!content) return -1;
        if (cJSON_IsNull(content) && strcmp(role->valuestring, "assistant")) {
            cJSON_Delete(content);
            return bad(e, cwhere, "is required for this role");
        }
        cJSON_AddItemToObject(out, "content", cJSON_IsNull(content) ? cJSON_CreateString("") : content);
        if (cJSON_IsNull(content)) cJSON_Delete(content);
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        if (calls && !cJSON_IsNull(calls) && !strcmp(role->valuestring, "assistant")) {
            snprintf(cwhere, sizeof cwhere, "%s.tool_calls", where);
            cJSON *copy = copy_tool_calls(calls, cwhere, e);
            if (!copy) return -1;
            cJSON_AddItemToObject(out, "tool_calls", copy);
        }
        const char *const keep[] = {"tool_call_id", "name", "reasoning_content"};
        for (size_t j = 0; j < sizeof keep / sizeof *keep; j++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, keep[j]);
            if (cJSON_IsString(v)) cJSON_AddStringToObject(out, keep[j], v->valuestring);
        }
    }
    return 0;
}

/* The function a tool_choice object names ({"type": "function",
 * "function": {"name": ...}}), NULL when it is not of that shape. */
static const char *named_choice(const cJSON *choice)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(choice, "type");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(choice, "function"), "name");
    if (!cJSON_IsObject(choice) || (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "function"))) ||
        !cJSON_IsString(name))
        return NULL;
    return name->valuestring;
}

/* tool_choice required / named: the names the reply must call (see
 * sv_request.force_tools), checked against the tools. */
static int parse_tool_choice(const cJSON *choice, sv_request *r, sv_error *e)
{
    const char *named = cJSON_IsString(choice) ? NULL : named_choice(choice);
    if (!named && !(cJSON_IsString(choice) && !strcmp(choice->valuestring, "required"))) return 0;
    if (!r->tools) return bad(e, "tool_choice", "requires tools: there is no function to call");
    int n = cJSON_GetArraySize(r->tools);
    if (!(r->force_tools = calloc((size_t)n, sizeof *r->force_tools)))
        return sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    const cJSON *t;
    cJSON_ArrayForEach(t, r->tools) {
        const char *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "function"), "name")->valuestring;
        if (!named || !strcmp(named, name)) r->force_tools[r->n_force_tools++] = name;
        if (named && r->n_force_tools) break;
    }
    if (named && !r->n_force_tools)
        return sv_error_set(e, 400, "invalid_request_error", "tool_choice", NULL,
                            "tool_choice names the function '%.200s', which is not in tools", named);
    r->single_call = named != NULL;
    return 0;
}

static int parse_tools(const cJSON *root, sv_request *r, sv_error *e)
{
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
    const cJSON *choice = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
    char where[160];
    if (choice && !cJSON_IsNull(choice)) {
        if (cJSON_IsString(choice) ? strcmp(choice->valuestring, "none") &&
                                         strcmp(choice->valuestring, "auto") &&
                                         strcmp(choice->valuestring, "required")
                                   : !named_choice(choice))
            return bad(e, "tool_choice", "must be none, auto, required or a named function");
        if (cJSON_IsString(choice) && !strcmp(choice->valuestring, "none")) return 0;
    }
    if (!tools || cJSON_IsNull(tools)) return parse_tool_choice(choice, r, e);
    if (!cJSON_IsArray(tools)) return bad(e, "tools", "must be an array");
    const cJSON *t;
    int i = 0;
    cJSON_ArrayForEach(t, tools) {
        snprintf(where, sizeof where, "tools[%d]", i++);
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") || !cJSON_IsObject(fn) ||
            !cJSON_IsString(name) || (params && !cJSON_IsObject(params)))
            return bad(e, where, "must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
        if (!name->valuestring[0] || strlen(name->valuestring) > 64)
            return bad(e, where, "function.name must have 1 to 64 characters");
    }
    if (cJSON_GetArraySize(tools) > 0 && !(r->tools = cJSON_Duplicate(tools, 1)))
        return sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    return parse_tool_choice(choice, r, e);
}

static int parse_prompt(const cJSON *root, int32_t vocab, sv_request *r, sv_error *e)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
    /* a list of one prompt is the same as that prompt */
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && !cJSON_IsNumber(p->child)) p = p->child;
    if (cJSON_IsString(p)) {
        r->prompt = dup_string(p->valuestring);
        return r->prompt ? 0 : sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    int n = cJSON_GetArraySize(p);
    if (!cJSON_IsArray(p) || n == 0)
        return bad(e, "prompt", "must be a string or one non-empty array of token ids");
    r->prompt_ids = malloc((size_t)n * sizeof *r->prompt_ids);
    if (!r->prompt_ids) return sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    const cJSON *v;
    cJSON_ArrayForEach(v, p) {
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
            v->valuedouble >= vocab)
            return sv_error_set(e, 400, "invalid_request_error", "prompt", NULL,
                                "prompt: token ids must be integers in [0, %d)", vocab);
        r->prompt_ids[r->n_prompt_ids++] = (int32_t)v->valuedouble;
    }
    return 0;
}

static int parse_stop(const cJSON *root, sv_request *r, sv_error *e)
{
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(root, "stop"), *s;
    if (!stop || cJSON_IsNull(stop)) return 0;
    if (cJSON_IsString(stop)) {
        if (!*stop->valuestring) return bad(e, "stop", "must not be empty");
        r->stop[r->n_stop++] = dup_string(stop->valuestring);
        return r->stop[0] ? 0 : sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    if (!cJSON_IsArray(stop) || cJSON_GetArraySize(stop) > SV_MAX_STOP)
        return bad(e, "stop", "must be a string or an array of at most 4 strings");
    cJSON_ArrayForEach(s, stop) {
        if (!cJSON_IsString(s) || !*s->valuestring)
            return bad(e, "stop", "must hold non-empty strings");
        if (!(r->stop[r->n_stop++] = dup_string(s->valuestring)))
            return sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    return 0;
}

static int parse_bias(const cJSON *root, int32_t vocab, sv_request *r, sv_error *e)
{
    const cJSON *bias = cJSON_GetObjectItemCaseSensitive(root, "logit_bias"), *b;
    if (!bias || cJSON_IsNull(bias)) return 0;
    if (!cJSON_IsObject(bias) || cJSON_GetArraySize(bias) > SV_MAX_BIAS)
        return bad(e, "logit_bias", "must be an object of at most 300 token ids");
    cJSON_ArrayForEach(b, bias) {
        char *end;
        long id = strtol(b->string, &end, 10);
        if (end == b->string || *end || id < 0 || id >= vocab || !cJSON_IsNumber(b) ||
            b->valuedouble < -100 || b->valuedouble > 100)
            return sv_error_set(e, 400, "invalid_request_error", "logit_bias", NULL,
                                "logit_bias: keys must be token ids in [0, %d), values in [-100, 100]",
                                vocab);
        r->bias[r->n_bias].id = (int32_t)id;
        r->bias[r->n_bias++].bias = (float)b->valuedouble;
    }
    return 0;
}

/* The speculative-decoding extension: "speculate" and "draft_max". */
static int parse_speculate(const cJSON *root, sv_request *r, sv_error *e)
{
    static const char *const names[] = {"off", "ngram", "draft"};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "speculate");
    if (v && !cJSON_IsNull(v)) {
        for (int i = 0; cJSON_IsString(v) && i < 3; i++)
            if (!strcmp(v->valuestring, names[i])) r->speculate = (sv_speculate)(SV_SPECULATE_OFF + i);
        if (!r->speculate) return bad(e, "speculate", "must be \"off\", \"ngram\" or \"draft\"");
    }
    double k = 0;
    if (get_number(root, "draft_max", 1, 64, 1, &k, NULL, e)) return -1;
    r->draft_max = (int32_t)k;
    return 0;
}

static int parse_fields(sv_kind kind, const cJSON *root, int32_t vocab, sv_request *r, sv_error *e)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    double v = 0;
    int set = 0;
    if (!cJSON_IsString(model)) return bad(e, "model", "must be a string");
    if (!(r->model = dup_string(model->valuestring)))
        return sv_error_set(e, 500, "server_error", NULL, NULL, "out of memory");
    if (kind == SV_CHAT ? parse_messages(root, r, e) || parse_tools(root, r, e)
                        : parse_prompt(root, vocab, r, e))
        return -1;
    /* max_completion_tokens is the newer name; either one caps the reply */
    if (get_number(root, "max_tokens", 1, 1 << 24, 1, &v, NULL, e)) return -1;
    r->max_tokens = (int32_t)v;
    v = 0;
    if (get_number(root, "max_completion_tokens", 1, 1 << 24, 1, &v, NULL, e)) return -1;
    if (v > 0) r->max_tokens = (int32_t)v;
    if (get_number(root, "n", 1, 1, 1, &v, NULL, e)) return -1;
    if (get_number(root, "temperature", 0, 2, 0, &v, &r->set.temperature, e)) return -1;
    r->temperature = (float)v;
    if (get_number(root, "top_p", 0, 1, 0, &v, &r->set.top_p, e)) return -1;
    if (r->set.top_p && v <= 0) return bad(e, "top_p", "must be greater than 0");
    r->top_p = (float)v;
    if (get_number(root, "top_k", 0, 1 << 24, 1, &v, &r->set.top_k, e)) return -1;
    r->top_k = (int32_t)v;
    v = 0;
    if (get_number(root, "presence_penalty", -2, 2, 0, &v, NULL, e)) return -1;
    r->presence_penalty = (float)v;
    v = 0;
    if (get_number(root, "frequency_penalty", -2, 2, 0, &v, NULL, e)) return -1;
    r->frequency_penalty = (float)v;
    if (get_number(root, "seed", -9007199254740991.0, 9007199254740991.0, 1, &v, &r->set.seed, e))
        return -1;
    r->seed = (uint64_t)(int64_t)v;
    if (get_bool(root, "stream", &r->stream, e)) return -1;
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (opts && !cJSON_IsNull(opts)) {
        if (!cJSON_IsObject(opts)) return bad(e, "stream_options", "must be an object");
        if (get_bool(opts, "include_usage", &r->include_usage, e)) {
            snprintf(e->param, sizeof e->param, "stream_options.include_usage");
            return -1;
        }
    }
    (void)set;
    return parse_stop(root, r, e) || parse_bias(root, vocab, r, e) || parse_speculate(root, r, e) ? -1 : 0;
}

int sv_request_parse(sv_kind kind, const char *body, size_t len, int32_t vocab, sv_request *r,
                     sv_error *e)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    if (nesting_exceeds(body, len, SV_MAX_NESTING))
        return sv_error_set(e, 400, "invalid_request_error", NULL, NULL,
                            "the body nests arrays and objects deeper than %d", SV_MAX_NESTING);
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return sv_error_set(e, 400, "invalid_request_error", NULL, NULL,
                            "the body is not a JSON object");
    }
    int rc = parse_fields(kind, root, vocab, r, e);
    cJSON_Delete(root);
    if (rc) sv_request_free(r);
    return rc;
}

void sv_request_free(sv_request *r)
{
    free(r->model);
    cJSON_Delete(r->messages);
    cJSON_Delete(r->tools);
    free(r->force_tools);
    free(r->prompt);
    free(r->prompt_ids);
    for (size_t i = 0; i < r->n_stop; i++) free(r->stop[i]);
    memset(r, 0, sizeof *r);
}
