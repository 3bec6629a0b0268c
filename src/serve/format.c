#include "serve/format.h"

#include <stdlib.h>
#include <string.h>

static const char *object_name(const sv_job *j, int chunk)
{
    if (j->req.kind == SV_COMPLETION) return "text_completion";
    return chunk ? "chat.completion.chunk" : "chat.completion";
}

/* {id, object, created, model, choices: [choice]} (+ system_fingerprint). */
static cJSON *envelope(const sv_job *j, int chunk, cJSON *choice)
{
    cJSON *o = cJSON_CreateObject(), *choices = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "id", j->id);
    cJSON_AddStringToObject(o, "object", object_name(j, chunk));
    cJSON_AddNumberToObject(o, "created", (double)j->created);
    cJSON_AddStringToObject(o, "model", j->model_name);
    cJSON_AddItemToObject(o, "choices", choices);
    if (choice) cJSON_AddItemToArray(choices, choice);
    return o;
}

static cJSON *usage(const sv_job *j, int32_t prompt_tokens)
{
    cJSON *u = cJSON_CreateObject(), *details = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", prompt_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", j->completion_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", prompt_tokens + j->completion_tokens);
    cJSON_AddNumberToObject(details, "cached_tokens", j->cached_tokens);
    cJSON_AddItemToObject(u, "prompt_tokens_details", details);
    if (j->speculated) { /* an extension: clients ignore keys they do not know */
        cJSON *spec = cJSON_AddObjectToObject(u, "speculative");
        cJSON_AddNumberToObject(spec, "verify_passes", (double)j->spec_passes);
        cJSON_AddNumberToObject(spec, "drafted_tokens", (double)j->spec_drafted);
        cJSON_AddNumberToObject(spec, "accepted_tokens", (double)j->spec_accepted);
    }
    return u;
}

/* Writes `data: JSON\n\n` and frees o. */
static int send_chunk(sv_job *j, cJSON *o)
{
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return -1;
    size_t n = strlen(text);
    int rc = sv_job_write(j, "data: ", 6) || sv_job_write(j, text, n) || sv_job_write(j, "\n\n", 2);
    free(text);
    return rc ? -1 : 0;
}

/* A streamed chat choice {index, delta, logprobs, finish_reason}; the
 * first one also carries the assistant role. */
static cJSON *chat_delta(sv_job *j, cJSON **delta, const char *finish)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", 0);
    *delta = cJSON_AddObjectToObject(c, "delta");
    if (!j->sent_role) {
        cJSON_AddStringToObject(*delta, "role", "assistant");
        j->sent_role = 1;
    }
    cJSON_AddNullToObject(c, "logprobs");
    if (finish) cJSON_AddStringToObject(c, "finish_reason", finish);
    else cJSON_AddNullToObject(c, "finish_reason");
    return c;
}

static cJSON *text_choice(const char *text, size_t len, const char *finish)
{
    cJSON *c = cJSON_CreateObject();
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, text, len);
        copy[len] = '\0';
    }
    cJSON_AddStringToObject(c, "text", copy ? copy : "");
    free(copy);
    cJSON_AddNumberToObject(c, "index", 0);
    cJSON_AddNullToObject(c, "logprobs");
    if (finish) cJSON_AddStringToObject(c, "finish_reason", finish);
    else cJSON_AddNullToObject(c, "finish_reason");
    return c;
}

static cJSON *call_object(const et_toolcall_event *e)
{
    cJSON *call = cJSON_CreateObject(), *fn = cJSON_CreateObject();
    cJSON_AddStringToObject(call, "id", e->id);
    cJSON_AddStringToObject(call, "type", "function");
    cJSON_AddStringToObject(fn, "name", e->name);
    cJSON_AddStringToObject(fn, "arguments", e->arguments);
    cJSON_AddItemToObject(call, "function", fn);
    return call;
}

static int stream_event(sv_job *j, const et_toolcall_event *e)
{
    if (j->req.kind == SV_COMPLETION)
        return send_chunk(j, envelope(j, 1, text_choice(e->text, e->len, NULL)));
    cJSON *delta, *choice = chat_delta(j, &delta, NULL);
    if (e->kind == ET_TOOLCALL_CALL) {
        cJSON *calls = cJSON_AddArrayToObject(delta, "tool_calls"), *call = call_object(e);
        cJSON_AddNumberToObject(call, "index", cJSON_GetArraySize(j->calls));
        cJSON_AddItemToArray(calls, call);
        cJSON_AddItemToArray(j->calls, cJSON_CreateNull()); /* counts the calls sent */
    } else {
        char *copy = malloc(e->len + 1);
        if (!copy) {
            cJSON_Delete(choice);
            return -1;
        }
        memcpy(copy, e->text, e->len);
        copy[e->len] = '\0';
        cJSON_AddStringToObject(delta, e->kind == ET_TOOLCALL_CONTENT ? "content" : "reasoning_content",
                                copy);
        free(copy);
    }
    return send_chunk(j, envelope(j, 1, choice));
}

int sv_format_event(sv_job *j, const et_toolcall_event *e)
{
    if (!j->calls && !(j->calls = cJSON_CreateArray())) return -1;
    if (e->kind != ET_TOOLCALL_CALL && e->len == 0) return 0;
    if (j->req.stream) return stream_event(j, e);
    if (e->kind == ET_TOOLCALL_CALL) {
        cJSON_AddItemToArray(j->calls, call_object(e));
        return 0;
    }
    return e->kind == ET_TOOLCALL_CONTENT ? et_toolcall_text_append(&j->content, &j->n_content, e->text, e->len)
                                          : et_toolcall_text_append(&j->reasoning, &j->n_reasoning, e->text, e->len);
}

static void finish_stream(sv_job *j, const char *finish, int32_t prompt_tokens)
{
    cJSON *choice;
    if (j->req.kind == SV_COMPLETION) {
        choice = text_choice("", 0, finish);
    } else {
        cJSON *delta;
        choice = chat_delta(j, &delta, finish);
    }
    int rc = send_chunk(j, envelope(j, 1, choice));
    if (!rc && j->req.include_usage) {
        cJSON *o = envelope(j, 1, NULL);
        cJSON_AddItemToObject(o, "usage", usage(j, prompt_tokens));
        rc = send_chunk(j, o);
    }
    static const char done[] = "data: [DONE]\n\n";
    sv_job_finish(j, rc ? 500 : 200, done, sizeof done - 1);
}

void sv_format_finish(sv_job *j, const char *finish, int32_t prompt_tokens)
{
    if (j->req.stream) {
        finish_stream(j, finish, prompt_tokens);
        return;
    }
    cJSON *choice;
    if (j->req.kind == SV_COMPLETION) {
        choice = text_choice(j->content ? j->content : "", j->n_content, finish);
    } else {
        choice = cJSON_CreateObject();
        cJSON *msg = cJSON_CreateObject();
        cJSON_AddNumberToObject(choice, "index", 0);
        cJSON_AddItemToObject(choice, "message", msg);
        cJSON_AddStringToObject(msg, "role", "assistant");
        int has_calls = j->calls && cJSON_GetArraySize(j->calls) > 0;
        /* OpenAI sends null content beside tool calls when nothing was said */
        if (j->content || !has_calls) cJSON_AddStringToObject(msg, "content", j->content ? j->content : "");
        else cJSON_AddNullToObject(msg, "content");
        if (j->reasoning) cJSON_AddStringToObject(msg, "reasoning_content", j->reasoning);
        if (has_calls) {
            cJSON_AddItemToObject(msg, "tool_calls", j->calls);
            j->calls = NULL;
        }
        cJSON_AddNullToObject(choice, "logprobs");
        cJSON_AddStringToObject(choice, "finish_reason", finish);
    }
    cJSON *o = envelope(j, 0, choice);
    cJSON_AddItemToObject(o, "usage", usage(j, prompt_tokens));
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    sv_job_finish(j, text ? 200 : 500, text ? text : "", text ? strlen(text) : 0);
    free(text);
}

void sv_format_error(sv_job *j, const sv_error *e)
{
    char *text = sv_error_json(e);
    if (j->req.stream) {
        int rc = sv_job_write(j, "data: ", 6) || sv_job_write(j, text ? text : "{}", text ? strlen(text) : 2);
        static const char done[] = "\n\ndata: [DONE]\n\n";
        sv_job_finish(j, rc ? 500 : e->status, done, sizeof done - 1);
    } else {
        sv_job_finish(j, e->status, text ? text : "", text ? strlen(text) : 0);
    }
    free(text);
}
