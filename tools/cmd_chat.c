/* `ember chat`: an interactive conversation rendered with the model's own
 * chat template. Each turn re-renders the whole conversation (as a server
 * would) and prefills only the tokens past what the session already holds;
 * when the rendering diverges from the cached tokens (a template that drops
 * old reasoning, a re-tokenized reply) the session starts over.
 *
 * Replies stream to stdout; reasoning (<think>) goes to stderr; tool calls
 * print as one JSON line each, and the chat then asks for each result
 * ("tool NAME> ") before the model continues. Lines starting with '/' are
 * commands: /reset, /exit. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "ember.h"
#include "io/json_text.h"
#include "io/read_file.h"
#include "text/chat.h"
#include "text/textgen.h"
#include "text/tokenizer.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember chat -m MODEL [--system TEXT] [--tools FILE.json] [-n 1024]\n"
            "                  [--think 0|1] [--max-context N] [sampling options] [options]\n"
            "  -m MODEL         a model directory or a GGUF file (its tokenizer and template inside)\n"
            "  reads one user message per line on stdin; /reset starts over, /exit ends\n"
            "  --tools FILE     a JSON array of OpenAI-style tools offered to the model\n"
            "  --think 0|1      pass enable_thinking to the template (default: not passed)\n"
            "  -n N             at most N tokens per reply (default 1024)\n%s%s",
            cli_sampling_usage, cli_common_usage);
}

/* What one reply collected: its text, reasoning and calls, for the history. */
typedef struct reply {
    char *content, *reasoning;
    size_t n_content, n_reasoning;
    cJSON *calls; /* OpenAI tool_calls array */
    int failed;
} reply;

static int on_event(void *user, const et_toolcall_event *e)
{
    reply *r = user;
    if (e->kind == ET_TOOLCALL_CONTENT) {
        fwrite(e->text, 1, e->len, stdout);
        fflush(stdout);
        if (et_toolcall_text_append(&r->content, &r->n_content, e->text, e->len)) r->failed = 1;
    } else if (e->kind == ET_TOOLCALL_REASONING) {
        fwrite(e->text, 1, e->len, stderr);
        if (et_toolcall_text_append(&r->reasoning, &r->n_reasoning, e->text, e->len)) r->failed = 1;
    } else {
        cJSON *call = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        cJSON_AddStringToObject(call, "id", e->id);
        cJSON_AddStringToObject(call, "type", "function");
        cJSON_AddStringToObject(fn, "name", e->name);
        cJSON_AddStringToObject(fn, "arguments", e->arguments);
        cJSON_AddItemToObject(call, "function", fn);
        char *line = cJSON_PrintUnformatted(call);
        if (line) printf("\n%s\n", line);
        fflush(stdout);
        free(line);
        cJSON_AddItemToArray(r->calls, call);
    }
    return r->failed;
}

/* A chat: the model, its session, and the tokens the session holds. */
typedef struct chat {
    ember_model *model;
    ember_session *s;
    et_tokenizer *tok;
    et_chat_template *tmpl;
    et_textgen *gen;
    reply r;
    int32_t *held; /* the tokens in the session, in order */
    size_t n_held, cap_held;
    float *logits;
    int32_t vocab;
} chat;

static int hold(chat *c, const int32_t *ids, size_t n)
{
    if (c->n_held + n > c->cap_held) {
        size_t cap = (c->n_held + n) * 2;
        int32_t *grown = realloc(c->held, cap * sizeof *grown);
        if (!grown) return -1;
        c->held = grown;
        c->cap_held = cap;
    }
    memcpy(c->held + c->n_held, ids, n * sizeof *ids);
    c->n_held += n;
    return 0;
}

/* Brings the session to `ids`: prefills only past the common prefix when the
 * session holds a prefix of them, else starts over. Returns the tokens
 * prefilled, or -1. */
static long sync_prompt(chat *c, const int32_t *ids, size_t n)
{
    size_t same = 0;
    while (same < n && same < c->n_held && ids[same] == c->held[same]) same++;
    if (same < c->n_held || same == n) { /* diverged (or nothing new to run: redo the last) */
        ember_session_reset(c->s);
        c->n_held = 0;
        same = 0;
    }
    if (ember_session_prefill(c->s, ids + same, n - same) != EMBER_OK) return -1;
    if (hold(c, ids + same, n - same)) return -1;
    return (long)(n - same);
}

/* One assistant reply to `messages`; appends it to messages. 0 on success. */
static int respond(chat *c, cJSON *messages, const cJSON *tools, int think, long max_tokens)
{
    et_chat_input in = {messages, tools, true, think, NULL};
    char *prompt = NULL;
    int32_t *ids = NULL;
    size_t n_ids;
    int rc = -1;
    free(c->r.content);
    free(c->r.reasoning);
    cJSON_Delete(c->r.calls);
    memset(&c->r, 0, sizeof c->r);
    c->r.calls = cJSON_CreateArray();
    if (et_chat_render(c->tmpl, &in, &prompt) ||
        et_tokenizer_encode(c->tok, prompt, strlen(prompt), false, &ids, &n_ids))
        goto fail;
    double t0 = cli_now_s();
    long fresh = sync_prompt(c, ids, n_ids);
    if (fresh < 0 || et_textgen_begin(c->gen, ids, n_ids)) goto fail;
    double t1 = cli_now_s();
    et_finish finish = ET_FINISH_NONE;
    for (long i = 0; i < max_tokens; i++) {
        int32_t next;
        memcpy(c->logits, ember_session_logits(c->s), (size_t)c->vocab * sizeof *c->logits);
        if (et_textgen_step(c->gen, c->logits, &next, &finish)) goto fail;
        if (finish) break;
        if (ember_session_decode(c->s, next) != EMBER_OK || hold(c, &next, 1)) goto fail;
    }
    if (et_textgen_end(c->gen, &finish) || c->r.failed) goto fail;
    double t2 = cli_now_s();
    int32_t n_out = et_textgen_count(c->gen);
    fprintf(stderr, "\n[%ld of %zu prompt tokens run, %.1f tok/s; %d tokens, %.1f tok/s; %s]\n",
            fresh, n_ids, fresh / (t1 - t0 + 1e-9), n_out, n_out / (t2 - t1 + 1e-9),
            et_finish_name(finish));
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "role", "assistant");
    cJSON_AddStringToObject(msg, "content", c->r.content ? c->r.content : "");
    if (c->r.reasoning) cJSON_AddStringToObject(msg, "reasoning_content", c->r.reasoning);
    if (cJSON_GetArraySize(c->r.calls)) {
        cJSON_AddItemToObject(msg, "tool_calls", c->r.calls);
        c->r.calls = NULL;
    }
    cJSON_AddItemToArray(messages, msg);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "\nember chat: %s\n", ember_last_error());
done:
    free(prompt);
    free(ids);
    return rc;
}

/* Reads one line (without its newline) into *line; 0 at end of input. */
static int read_line(char **line, size_t *cap, const char *prompt)
{
    if (isatty(STDIN_FILENO)) {
        fputs(prompt, stderr);
        fflush(stderr);
    }
    ssize_t n = getline(line, cap, stdin);
    if (n < 0) return 0;
    if (n > 0 && (*line)[n - 1] == '\n') (*line)[n - 1] = '\0';
    return 1;
}

static cJSON *message(const char *role, const char *content)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", content);
    return m;
}

static cJSON *load_tools(const char *path)
{
    char *text;
    size_t len;
    cJSON *tools = NULL;
    if (io_read_text_file(path, (size_t)16 << 20, &text, &len)) return NULL;
    ember_status st = io_json_parse(text, len, path, "tools", &tools);
    free(text);
    if (!st && !cJSON_IsArray(tools)) {
        cJSON_Delete(tools);
        ember_fail(EMBER_ERR_FORMAT, "%s: tools must be a JSON array of tool objects", path);
        return NULL;
    }
    return st ? NULL : tools;
}

int cmd_chat(int argc, char **argv)
{
    enum { OPT_SYSTEM = 1, OPT_TOOLS, OPT_THINK, OPT_MAX_CONTEXT };
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},      {"system", required_argument, 0, OPT_SYSTEM},
        {"tools", required_argument, 0, OPT_TOOLS}, {"think", required_argument, 0, OPT_THINK},
        {"n", required_argument, 0, 'n'},
        {"max-context", required_argument, 0, OPT_MAX_CONTEXT},
        {"help", no_argument, 0, 'h'},             CLI_COMMON_OPTIONS, CLI_PROFILE_OPTIONS,
        CLI_SAMPLING_OPTIONS,                      {0, 0, 0, 0}};
    const char *dir = NULL, *system = NULL, *tools_path = NULL;
    long max_tokens = 1024;
    int think = -1;
    ember_model_params mp = ember_model_default_params();
    ember_session_params sp = ember_session_default_params();
    cli_sampling sampling;
    cli_sampling_init(&sampling);
    cli_profile profile = CLI_PROFILE_AUTO;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "m:n:h", opts, NULL)) != -1) {
        int r;
        switch (opt) {
        case 'm': dir = optarg; break;
        case OPT_SYSTEM: system = optarg; break;
        case OPT_TOOLS: tools_path = optarg; break;
        case OPT_THINK: think = atoi(optarg) != 0; break;
        case 'n': max_tokens = strtol(optarg, NULL, 10); break;
        case OPT_MAX_CONTEXT: sp.max_context = (int32_t)strtol(optarg, NULL, 10); break;
        case 'h': usage(stdout); return 0;
        default:
            if ((r = cli_profile_option(opt, optarg, "chat", &profile)) == 1) break;
            if (r == 0 && (r = cli_sampling_option(opt, optarg, "chat", &sampling)) == 1) break;
            if (r == 0 && (r = cli_common_option(opt, optarg, "chat", &mp, &sp)) == 1) break;
            if (r == 0) usage(stderr);
            return 2;
        }
    }
    if (!dir || max_tokens <= 0) {
        usage(stderr);
        return 2;
    }

    chat c = {0};
    cJSON *tools = NULL, *messages = cJSON_CreateArray();
    char *line = NULL;
    size_t line_cap = 0;
    int rc = 1;
    int32_t stop_ids[16];
    et_textgen_params gp;
    et_textgen_params_default(&gp);
    gp.parse_tools = 1;
    gp.max_tokens = (int32_t)max_tokens;
    gp.stop_ids = stop_ids;
    gp.start_in_reasoning = 0;

    if (tools_path && !(tools = load_tools(tools_path))) goto fail;
    if (et_tokenizer_load(dir, &c.tok) || et_chat_template_load(dir, &c.tmpl) ||
        et_model_stop_ids(dir, c.tok, stop_ids, 16, &gp.n_stop_ids) ||
        cli_sampling_params(&sampling, dir, &gp) ||
        cli_apply_profile(dir, profile, "chat", &mp, &sp) || ember_model_load(dir, &mp, &c.model))
        goto fail;
    if (sp.max_context > ember_model_max_positions(c.model))
        sp.max_context = ember_model_max_positions(c.model);
    c.vocab = ember_model_vocab_size(c.model);
    if (ember_session_create(c.model, &sp, &c.s) ||
        et_textgen_create(c.tok, c.vocab, &gp, on_event, &c.r, &c.gen))
        goto fail;
    if (!(c.logits = malloc((size_t)c.vocab * sizeof *c.logits))) {
        ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    if (system) cJSON_AddItemToArray(messages, message("system", system));

    while (read_line(&line, &line_cap, "> ")) {
        if (!strcmp(line, "/exit")) break;
        if (!strcmp(line, "/reset")) {
            while (cJSON_GetArraySize(messages) > (system ? 1 : 0))
                cJSON_DeleteItemFromArray(messages, cJSON_GetArraySize(messages) - 1);
            continue;
        }
        if (!*line) continue;
        cJSON_AddItemToArray(messages, message("user", line));
        /* the model answers, and again after each round of tool results */
        for (;;) {
            if (respond(&c, messages, tools, think, max_tokens)) goto done;
            printf("\n");
            fflush(stdout);
            const cJSON *last = cJSON_GetArrayItem(messages, cJSON_GetArraySize(messages) - 1);
            const cJSON *calls = cJSON_GetObjectItemCaseSensitive(last, "tool_calls");
            if (!calls) break;
            const cJSON *call;
            int ended = 0;
            cJSON_ArrayForEach(call, calls) {
                const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
                char ask[256];
                snprintf(ask, sizeof ask, "tool %s> ", cJSON_IsString(name) ? name->valuestring : "?");
                if (!read_line(&line, &line_cap, ask)) {
                    ended = 1;
                    break;
                }
                cJSON *result = message("tool", line);
                cJSON_AddStringToObject(result, "tool_call_id",
                                        cJSON_GetObjectItemCaseSensitive(call, "id")->valuestring);
                cJSON_AddItemToArray(messages, result);
            }
            if (ended) break;
        }
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "ember chat: %s\n", ember_last_error());
done:
    free(line);
    free(c.logits);
    free(c.held);
    free(c.r.content);
    free(c.r.reasoning);
    cJSON_Delete(c.r.calls);
    et_textgen_free(c.gen);
    et_chat_template_free(c.tmpl);
    et_tokenizer_free(c.tok);
    ember_session_free(c.s);
    ember_model_free(c.model);
    cJSON_Delete(messages);
    cJSON_Delete(tools);
    return rc;
}
