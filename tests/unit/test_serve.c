/* The server's pieces without sockets: request validation (each bad field
 * named in the error), the OpenAI shapes written for tool calls (streamed
 * deltas and the whole message), and admission's KV arithmetic against the
 * bytes a session really allocates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "ember.h"
#include "llm/batch.h"
#include "serve/format.h"
#include "serve/request.h"
#include "generate/textgen.h"

static int parse(sv_kind kind, const char *body, sv_request *r, sv_error *e)
{
    return sv_request_parse(kind, body, strlen(body), 512, r, e);
}

static void request_fields_are_read(void)
{
    sv_request r;
    sv_error e;
    const char *body =
        "{\"model\":\"tiny\",\"messages\":[{\"role\":\"developer\",\"content\":\"Be brief.\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_0\",\"type\":\"function\","
        "\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_0\",\"content\":\"ok\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"max_completion_tokens\":9,"
        "\"temperature\":0.5,\"top_p\":0.9,\"seed\":42,\"stop\":[\"x\",\"y\"],\"stream\":true,"
        "\"stream_options\":{\"include_usage\":true},\"logit_bias\":{\"7\":-5},\"user\":\"ignored\"}";
    REQUIRE(parse(SV_CHAT, body, &r, &e) == 0);
    CHECK(!strcmp(r.model, "tiny") && r.max_tokens == 9 && r.stream && r.include_usage);
    CHECK(r.set.temperature && r.temperature == 0.5f && r.set.top_p && r.set.seed && r.seed == 42);
    CHECK(r.n_stop == 2 && !strcmp(r.stop[1], "y") && r.n_bias == 1 && r.bias[0].id == 7);
    CHECK(cJSON_GetArraySize(r.messages) == 4 && cJSON_GetArraySize(r.tools) == 1);
    const cJSON *m0 = cJSON_GetArrayItem(r.messages, 0), *m1 = cJSON_GetArrayItem(r.messages, 1);
    const cJSON *m2 = cJSON_GetArrayItem(r.messages, 2);
    CHECK(!strcmp(cJSON_GetObjectItem(m0, "role")->valuestring, "system")); /* developer */
    CHECK(!strcmp(cJSON_GetObjectItem(m1, "content")->valuestring, "ab"));  /* parts joined */
    /* arguments sent as a JSON string reach the template as an object */
    const cJSON *args = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(m2, "tool_calls"), 0), "function"),
        "arguments");
    CHECK(cJSON_IsObject(args) && cJSON_GetObjectItem(args, "x")->valueint == 1);
    sv_request_free(&r);

    REQUIRE(parse(SV_COMPLETION, "{\"model\":\"m\",\"prompt\":[1,2,511]}", &r, &e) == 0);
    CHECK(r.n_prompt_ids == 3 && r.prompt_ids[2] == 511 && !r.prompt && r.max_tokens == 0);
    sv_request_free(&r);
    REQUIRE(parse(SV_COMPLETION, "{\"model\":\"m\",\"prompt\":[\"only one\"]}", &r, &e) == 0);
    CHECK(r.prompt && !strcmp(r.prompt, "only one"));
    sv_request_free(&r);
    /* tool_choice none: the tools are not offered */
    REQUIRE(parse(SV_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                           "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"none\"}",
                  &r, &e) == 0);
    CHECK(r.tools == NULL);
    sv_request_free(&r);
}

static void bad_fields_are_named(void)
{
    static const struct {
        sv_kind kind;
        const char *body, *param;
        int status;
    } cases[] = {
        {SV_CHAT, "", "", 400},
        {SV_CHAT, "{\"model\":\"m\"", "", 400},
        {SV_CHAT, "{\"messages\":[]}", "model", 400},
        {SV_CHAT, "{\"model\":\"m\",\"messages\":[]}", "messages", 400},
        {SV_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}", "messages[0].content", 400},
        {SV_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":1}]}", "messages[1]", 400},
        {SV_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"function\":{}}]}]}",
         "messages[0].tool_calls[0].function", 400},
        {SV_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_p\":0}", "top_p", 400},
        {SV_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":1.5}", "max_tokens", 400},
        {SV_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"presence_penalty\":-3}", "presence_penalty", 400},
        {SV_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":\"\"}", "stop", 400},
        {SV_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"always\"}", "tool_choice", 400},
        {SV_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":1}", "stream", 400},
        {SV_COMPLETION, "{\"model\":\"m\",\"prompt\":[1,512]}", "prompt", 400},
        {SV_COMPLETION, "{\"model\":\"m\",\"prompt\":[\"a\",\"b\"]}", "prompt", 400},
        {SV_COMPLETION, "{\"model\":\"m\",\"prompt\":\"a\",\"logit_bias\":{\"600\":1}}", "logit_bias", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sv_request r;
        sv_error e;
        memset(&e, 0, sizeof e);
        int rc = parse(cases[i].kind, cases[i].body, &r, &e);
        CHECK_MSG(rc == -1 && e.status == cases[i].status && !strcmp(e.param, cases[i].param),
                  "case %zu: rc %d status %d param '%s' (%s)", i, rc, e.status, e.param, e.message);
        char *json = sv_error_json(&e);
        cJSON *o = json ? cJSON_Parse(json) : NULL;
        const cJSON *err = cJSON_GetObjectItem(o, "error");
        CHECK_MSG(cJSON_IsString(cJSON_GetObjectItem(err, "message")) &&
                      cJSON_IsString(cJSON_GetObjectItem(err, "type")) &&
                      cJSON_GetObjectItem(err, "param") && cJSON_GetObjectItem(err, "code"),
                  "case %zu: error object %s", i, json ? json : "(null)");
        cJSON_Delete(o);
        free(json);
    }
    /* deep nesting is refused before parsing */
    char deep[400];
    int n = snprintf(deep, sizeof deep, "{\"model\":\"m\",\"messages\":");
    for (int i = 0; i < 100; i++) deep[n++] = '[';
    deep[n] = '\0';
    sv_request r;
    sv_error e;
    CHECK(parse(SV_CHAT, deep, &r, &e) == -1 && strstr(e.message, "deeper") != NULL);
}

static sv_job *test_job(int stream)
{
    sv_job *j = sv_job_create();
    sv_request r;
    sv_error e;
    if (!j || parse(SV_CHAT, stream ? "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":true}"
                                    : "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                    &r, &e)) {
        sv_job_unref(j);
        return NULL;
    }
    j->req = r;
    snprintf(j->id, sizeof j->id, "chatcmpl-1");
    j->model_name = "m";
    return j;
}

static void tool_calls_take_the_openai_shapes(void)
{
    const et_toolcall_event say = {ET_TOOLCALL_CONTENT, "Let me check.", 13, 0, NULL, NULL, NULL, NULL};
    const et_toolcall_event call = {ET_TOOLCALL_CALL, NULL, 0, 0, NULL, "call_0", "get_weather", "{\"city\":\"Paris\"}"};
    /* streamed: a content delta (with the role), a tool_calls delta with
     * index 0, the finish chunk, [DONE] */
    sv_job *j = test_job(1);
    REQUIRE(j);
    CHECK(sv_format_event(j, &say) == 0 && sv_format_event(j, &call) == 0);
    sv_format_finish(j, "tool_calls", 5);
    REQUIRE(j->done && j->status == 200);
    char *text = malloc(j->n_out + 1);
    memcpy(text, j->out, j->n_out);
    text[j->n_out] = '\0';
    int events = 0, saw_role = 0, saw_call = 0, saw_finish = 0;
    for (char *ev = text, *next; ev && *ev; ev = next) {
        next = strstr(ev, "\n\n");
        REQUIRE(next);
        *next = '\0';
        next += 2;
        events++;
        CHECK(!strncmp(ev, "data: ", 6));
        if (!strcmp(ev + 6, "[DONE]")) {
            CHECK(*next == '\0');
            break;
        }
        cJSON *o = cJSON_Parse(ev + 6);
        const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
        const cJSON *d = cJSON_GetObjectItem(c, "delta");
        if (cJSON_GetObjectItem(d, "role")) saw_role++;
        const cJSON *tc = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "tool_calls"), 0);
        if (tc) {
            const cJSON *fn = cJSON_GetObjectItem(tc, "function");
            saw_call = cJSON_GetObjectItem(tc, "index")->valueint == 0 &&
                       !strcmp(cJSON_GetObjectItem(tc, "id")->valuestring, "call_0") &&
                       !strcmp(cJSON_GetObjectItem(fn, "name")->valuestring, "get_weather") &&
                       !strcmp(cJSON_GetObjectItem(fn, "arguments")->valuestring, "{\"city\":\"Paris\"}");
        }
        const cJSON *fin = cJSON_GetObjectItem(c, "finish_reason");
        if (cJSON_IsString(fin)) saw_finish = !strcmp(fin->valuestring, "tool_calls");
        cJSON_Delete(o);
    }
    CHECK_MSG(events == 4 && saw_role == 1 && saw_call && saw_finish, "events %d role %d call %d finish %d",
              events, saw_role, saw_call, saw_finish);
    free(text);
    sv_job_unref(j);

    /* not streamed: one chat.completion whose message holds the calls */
    j = test_job(0);
    REQUIRE(j);
    CHECK(sv_format_event(j, &call) == 0);
    sv_format_finish(j, "tool_calls", 5);
    cJSON *o = cJSON_ParseWithLength(j->out, j->n_out);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    const cJSON *msg = cJSON_GetObjectItem(c, "message");
    const cJSON *tc = cJSON_GetArrayItem(cJSON_GetObjectItem(msg, "tool_calls"), 0);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(msg, "content")));
    CHECK(tc && !strcmp(cJSON_GetObjectItem(tc, "type")->valuestring, "function"));
    CHECK(!strcmp(cJSON_GetObjectItem(c, "finish_reason")->valuestring, "tool_calls"));
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "usage"), "prompt_tokens")->valueint == 5);
    cJSON_Delete(o);
    sv_job_unref(j);
}

#define TOOLS2                                                                                     \
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}},"                 \
    "{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}]"

static int parse_choice(const char *tools_and_choice, sv_request *r, sv_error *e)
{
    char body[1024];
    snprintf(body, sizeof body, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]%s}",
             tools_and_choice);
    memset(e, 0, sizeof *e);
    return parse(SV_CHAT, body, r, e);
}

/* tool_choice: required forces every tool's name, a named function only
 * its own (and one call); a name not in tools, or no tools, is a 400 that
 * names tool_choice. */
static void tool_choice_is_checked_against_tools(void)
{
    sv_request r;
    sv_error e;
    REQUIRE(parse_choice("," TOOLS2 ",\"tool_choice\":\"required\"", &r, &e) == 0);
    CHECK(r.n_force_tools == 2 && !strcmp(r.force_tools[0], "get_weather") &&
          !strcmp(r.force_tools[1], "get_time") && !r.single_call);
    sv_request_free(&r);
    REQUIRE(parse_choice("," TOOLS2 ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}",
                         &r, &e) == 0);
    CHECK(r.n_force_tools == 1 && !strcmp(r.force_tools[0], "get_time") && r.single_call);
    sv_request_free(&r);
    REQUIRE(parse_choice("," TOOLS2 ",\"tool_choice\":\"auto\"", &r, &e) == 0);
    CHECK(r.n_force_tools == 0 && r.tools);
    sv_request_free(&r);
    REQUIRE(parse_choice("," TOOLS2 ",\"tool_choice\":\"none\"", &r, &e) == 0);
    CHECK(r.n_force_tools == 0 && !r.tools);
    sv_request_free(&r);
    static const char *const bad[] = {
        "," TOOLS2 ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_date\"}}",
        ",\"tool_choice\":\"required\"",
        ",\"tools\":[],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}",
        "," TOOLS2 ",\"tool_choice\":{\"type\":\"code\",\"function\":{\"name\":\"get_time\"}}",
        "," TOOLS2 ",\"tool_choice\":\"always\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_MSG(parse_choice(bad[i], &r, &e) == -1 && e.status == 400 && !strcmp(e.param, "tool_choice"),
                  "case %zu: status %d param '%s'", i, e.status, e.param);
    }
    CHECK(strstr((parse_choice(bad[0], &r, &e), e.message), "get_date") != NULL);
}

typedef struct calls_seen {
    int calls;
    char name[64], args[256], content[512];
} calls_seen;

static int collect_calls(void *user, const et_toolcall_event *ev)
{
    calls_seen *c = user;
    if (ev->kind == ET_TOOLCALL_CALL) {
        c->calls++;
        snprintf(c->name, sizeof c->name, "%s", ev->name);
        snprintf(c->args, sizeof c->args, "%s", ev->arguments);
    } else if (ev->kind == ET_TOOLCALL_CONTENT) {
        size_t at = strlen(c->content);
        snprintf(c->content + at, sizeof c->content - at, "%.*s", (int)ev->len, ev->text);
    }
    return 0;
}

/* The ids of text (malloc'd) and their count. */
static int32_t *ids_of(const et_tokenizer *tok, const char *text, size_t *n)
{
    int32_t *ids = NULL;
    *n = 0;
    if (et_tokenizer_encode(tok, text, strlen(text), false, &ids, n)) CHECK_MSG(0, "%s", ember_last_error());
    return ids;
}

/* Generates greedily from one-hot logits: for as many steps as the opening
 * of a call of `expect` has tokens they spell `talk`, then `rest`, then the
 * model's end id forever. */
static et_finish generate_wanting(const et_tokenizer *tok, const char *const *names, size_t n_names,
                                  int single, const char *expect, const char *talk, const char *rest,
                                  int32_t max_tokens, calls_seen *seen)
{
    const int32_t vocab = (int32_t)et_tokenizer_vocab_size(tok), end = et_tokenizer_find(tok, "<|im_end|>");
    et_textgen_params p;
    et_textgen_params_default(&p);
    p.sampling.temperature = 0;
    p.parse_tools = 1;
    p.force_tools = names;
    p.n_force_tools = n_names;
    p.single_call = single;
    p.stop_ids = &end;
    p.n_stop_ids = 1;
    p.max_tokens = max_tokens;
    char opening[256];
    /* up to the colon: the space belongs to the arguments' first token */
    snprintf(opening, sizeof opening, "<tool_call>\n{\"name\": \"%s\", \"arguments\":", expect);
    size_t n_open, n_talk, n_rest;
    int32_t *open_ids = ids_of(tok, opening, &n_open), *talk_ids = ids_of(tok, talk, &n_talk);
    int32_t *rest_ids = ids_of(tok, rest, &n_rest), id;
    float *logits = malloc((size_t)vocab * sizeof *logits);
    et_textgen *g = NULL;
    et_finish f = ET_FINISH_NONE;
    memset(seen, 0, sizeof *seen);
    if (!logits || !n_open || et_textgen_create(tok, vocab, &p, collect_calls, seen, &g) ||
        et_textgen_begin(g, NULL, 0)) {
        CHECK_MSG(0, "setup: %s", ember_last_error());
        goto done;
    }
    for (size_t i = 0; !f; i++) {
        for (int32_t v = 0; v < vocab; v++) logits[v] = 0.0f;
        if (i < n_open) logits[i < n_talk ? talk_ids[i] : end] = 10.0f;
        else logits[i - n_open < n_rest ? rest_ids[i - n_open] : end] = 10.0f;
        if (et_textgen_step(g, logits, &id, &f)) break;
    }
    CHECK_MSG((size_t)et_textgen_forced(g) == n_open, "forced %d, the opening has %zu tokens",
              et_textgen_forced(g), n_open);
    CHECK(et_textgen_end(g, &f) == EMBER_OK);
done:
    et_textgen_free(g);
    free(open_ids);
    free(talk_ids);
    free(rest_ids);
    free(logits);
    return f;
}

/* The forced opening in generation: whatever the logits say, the reply
 * calls a function the tool_choice allows, and the arguments are what the
 * model generates after the opening. */
static void tool_choice_forces_the_call(void)
{
    const char *dir = getenv("EMBER_TEST_MODEL");
    et_tokenizer *tok = NULL;
    REQUIRE(et_tokenizer_load(dir && *dir ? dir : "models/tiny", &tok) == EMBER_OK);
    static const char *const both[] = {"get_weather", "get_time"};
    const char *const *time_only = both + 1;
    calls_seen c;
    /* a model that wants to end at once: still a call of the named function,
     * with no arguments (it ended right after the opening) */
    et_finish f = generate_wanting(tok, time_only, 1, 1, "get_time", "", "", 0, &c);
    CHECK_MSG(f == ET_FINISH_TOOL_CALLS && c.calls == 1 && !strcmp(c.name, "get_time") && !strcmp(c.args, ""),
              "finish %d calls %d name %s args '%s' content '%s'", f, c.calls, c.name, c.args, c.content);
    /* a model that would talk instead: forced into the call; what it then
     * writes is the (non-JSON) arguments, cut by max_tokens */
    f = generate_wanting(tok, time_only, 1, 1, "get_time", "Sure thing, hello there friend",
                         "it is late, very late indeed, and later still it gets", 40, &c);
    CHECK_MSG(f == ET_FINISH_LENGTH && c.calls == 1 && !strcmp(c.name, "get_time") && !c.content[0] &&
                  !strncmp(c.args, "it is late", 10),
              "finish %d calls %d name %s args '%s' content '%s'", f, c.calls, c.name, c.args, c.content);
    /* required: the model picks among the names (the one its logits spell)
     * and its JSON arguments parse */
    static const char args[] = " {\"city\": \"Paris\"}}\n</tool_call>";
    static const char weather[] = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\":";
    static const char time_call[] = "<tool_call>\n{\"name\": \"get_time\", \"arguments\":";
    f = generate_wanting(tok, both, 2, 0, "get_weather", weather, args, 0, &c);
    CHECK_MSG(f == ET_FINISH_TOOL_CALLS && c.calls == 1 && !strcmp(c.name, "get_weather") &&
                  !strcmp(c.args, "{\"city\":\"Paris\"}"),
              "finish %d calls %d name %s args '%s'", f, c.calls, c.name, c.args);
    f = generate_wanting(tok, both, 2, 0, "get_time", time_call, args, 0, &c);
    CHECK_MSG(f == ET_FINISH_TOOL_CALLS && c.calls == 1 && !strcmp(c.name, "get_time"),
              "finish %d calls %d name %s args '%s'", f, c.calls, c.name, c.args);
    /* named: the name is forced even where the logits spell another; one
     * call ends the reply before the text that follows it */
    f = generate_wanting(tok, time_only, 1, 1, "get_time", weather, "{}}\n</tool_call> and more", 0, &c);
    CHECK_MSG(f == ET_FINISH_TOOL_CALLS && c.calls == 1 && !strcmp(c.name, "get_time") &&
                  !strcmp(c.args, "{}") && !c.content[0],
              "finish %d calls %d name %s args '%s' content '%s'", f, c.calls, c.name, c.args, c.content);
    /* a closed block whose arguments are not JSON: the call, arguments verbatim */
    f = generate_wanting(tok, time_only, 1, 1, "get_time", "", "{city: Paris}}\n</tool_call>", 0, &c);
    CHECK_MSG(f == ET_FINISH_TOOL_CALLS && c.calls == 1 && !strcmp(c.args, "{city: Paris}"),
              "finish %d calls %d args '%s' content '%s'", f, c.calls, c.args, c.content);
    et_tokenizer_free(tok);
}

/* What admission reserves is what a session of that length allocates. */
static void admission_bytes_equal_session_bytes(void)
{
    const char *dir = getenv("EMBER_TEST_MODEL");
    ember_model *m = NULL;
    REQUIRE(ember_model_load(dir && *dir ? dir : "models/tiny", NULL, &m) == EMBER_OK);
    static const int32_t lengths[] = {1, 2, 14, 15, 16, 17, 100, 4096};
    static const ember_type types[] = {EMBER_TYPE_F32, EMBER_TYPE_F16, EMBER_TYPE_Q8_0};
    for (size_t t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
            ember_session_params sp = ember_session_default_params();
            sp.max_context = lengths[i];
            sp.kv_type = types[t];
            sp.n_threads = 1;
            ember_session *s = NULL;
            REQUIRE(ember_session_create(m, &sp, &s) == EMBER_OK);
            CHECK_MSG(llm_session_kv_bytes(m, lengths[i], types[t]) == ember_session_cache_bytes(s),
                      "type %zu length %d: %zu vs %zu", t, lengths[i],
                      llm_session_kv_bytes(m, lengths[i], types[t]), ember_session_cache_bytes(s));
            ember_session_free(s);
        }
    CHECK(llm_session_kv_bytes(m, 10, EMBER_TYPE_Q4_0) == 0);
    ember_model_free(m);
}

int main(void)
{
    RUN(request_fields_are_read);
    RUN(bad_fields_are_named);
    RUN(tool_calls_take_the_openai_shapes);
    RUN(tool_choice_is_checked_against_tools);
    RUN(tool_choice_forces_the_call);
    RUN(admission_bytes_equal_session_bytes);
    return check_summary();
}
