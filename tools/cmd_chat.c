/* `ember chat`: an interactive conversation rendered with the model's own
 * chat template, over the public API's ember_conversation: each turn
 * re-renders the whole conversation (as a server would) and runs only the
 * tokens past what the session already holds.
 *
 * Replies stream to stdout; reasoning (<think>) goes to stderr; tool calls
 * print as one JSON line each, and the chat then asks for each result
 * ("tool NAME> ") before the model continues. Lines starting with '/' are
 * commands: /reset, /exit. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli_public.h"
#include "ember.h"
#include "ember_text.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember chat -m MODEL [--system TEXT] [--tools FILE.json] [-n 1024]\n"
            "                  [--think 0|1] [--max-context N] [sampling options] [options]\n"
            "  -m MODEL         a model directory or a GGUF file (its tokenizer and template inside)\n"
            "  reads one user message per line on stdin; /reset starts over, /exit ends\n"
            "  --tools FILE     a JSON array of OpenAI-style tools offered to the model\n"
            "  --think 0|1      pass enable_thinking to the template (default: not passed)\n"
            "  -n N             at most N tokens per reply (default 1024)\n"
            "  --prompt-cache FILE  keep the conversation (messages and the model's cache) in FILE,\n"
            "                   saved after every reply: a restarted chat continues it without\n"
            "                   running its prompt again\n%s%s",
            cli_sampling_usage, cli_common_usage);
}

/* The calls of one reply, in order, to ask for their results. */
typedef struct calls {
    char **id, **name;
    size_t n, cap;
    int failed;
} calls;

static void calls_clear(calls *k)
{
    for (size_t i = 0; i < k->n; i++) {
        free(k->id[i]);
        free(k->name[i]);
    }
    k->n = 0;
    k->failed = 0;
}

static int on_text(void *user, ember_text_kind kind, const char *text, size_t len)
{
    (void)user;
    FILE *f = kind == EMBER_TEXT_REASONING ? stderr : stdout;
    fwrite(text, 1, len, f);
    fflush(f);
    return 0;
}

/* Prints the call as an OpenAI tool_calls entry and keeps its id and name. */
static int on_tool_call(void *user, const ember_tool_call *call)
{
    calls *k = user;
    cJSON *line = cJSON_CreateObject(), *fn = cJSON_CreateObject();
    char *text = NULL;
    if (line && fn && cJSON_AddStringToObject(line, "id", call->id) &&
        cJSON_AddStringToObject(line, "type", "function") && cJSON_AddStringToObject(fn, "name", call->name) &&
        cJSON_AddStringToObject(fn, "arguments", call->arguments)) {
        cJSON_AddItemToObject(line, "function", fn);
        fn = NULL;
        text = cJSON_PrintUnformatted(line);
    }
    cJSON_Delete(line);
    cJSON_Delete(fn);
    if (text) printf("\n%s\n", text);
    fflush(stdout);
    free(text);
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 4;
        char **id = realloc(k->id, cap * sizeof *id);
        if (id) k->id = id;
        char **name = id ? realloc(k->name, cap * sizeof *name) : NULL;
        if (name) k->name = name;
        if (!id || !name) return k->failed = 1;
        k->cap = cap;
    }
    k->id[k->n] = strdup(call->id);
    k->name[k->n] = strdup(call->name);
    k->n++;
    if (!text || !k->id[k->n - 1] || !k->name[k->n - 1]) k->failed = 1;
    return k->failed;
}

/* One assistant reply appended to the conversation, with a line of timing
 * on stderr. 0 on success. */
static int respond(ember_conversation *conv, const ember_generate_params *gp, calls *k)
{
    ember_generate_result r;
    calls_clear(k);
    if (ember_conversation_respond(conv, gp, &r) || k->failed) {
        fprintf(stderr, "\nember chat: %s\n", k->failed ? "out of memory" : ember_last_error());
        return -1;
    }
    int32_t fresh = r.prompt_tokens - r.cached_tokens;
    double gen_ms = r.total_ms - r.prefill_ms;
    fprintf(stderr, "\n[%d of %d prompt tokens run, %.1f tok/s; %d tokens, %.1f tok/s; %s]\n", fresh,
            r.prompt_tokens, fresh / (r.prefill_ms / 1e3 + 1e-9), r.completion_tokens,
            r.completion_tokens / (gen_ms / 1e3 + 1e-9), ember_finish_name(r.finish));
    cli_print_speculation(stderr, &r);
    return 0;
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

int cmd_chat(int argc, char **argv)
{
    enum { OPT_SYSTEM = 1, OPT_TOOLS, OPT_THINK, OPT_MAX_CONTEXT, OPT_PROMPT_CACHE };
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},      {"system", required_argument, 0, OPT_SYSTEM},
        {"tools", required_argument, 0, OPT_TOOLS}, {"think", required_argument, 0, OPT_THINK},
        {"n", required_argument, 0, 'n'},
        {"max-context", required_argument, 0, OPT_MAX_CONTEXT},
        {"prompt-cache", required_argument, 0, OPT_PROMPT_CACHE},
        {"help", no_argument, 0, 'h'},             CLI_COMMON_OPTIONS, CLI_PROFILE_OPTIONS,
        CLI_SAMPLING_OPTIONS,                      {0, 0, 0, 0}};
    const char *dir = NULL, *system = NULL, *tools_path = NULL, *cache_path = NULL;
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
        case OPT_PROMPT_CACHE: cache_path = optarg; break;
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

    ember_model *model = NULL, *draft = NULL;
    ember_tokenizer *tok = NULL;
    ember_chat_template *tmpl = NULL;
    ember_conversation *conv = NULL;
    calls k = {0};
    char *line = NULL, *tools = NULL;
    size_t line_cap = 0;
    int rc = 1;
    ember_generate_params gp = ember_generate_default_params();
    gp.on_text = on_text;
    gp.on_tool_call = on_tool_call;
    gp.user = &k;

    if (tools_path && !(tools = cli_read_text(tools_path, "chat"))) goto done;
    if (ember_tokenizer_load(dir, &tok) || ember_chat_template_load(dir, &tmpl) ||
        cli_sampling_generate_params(&sampling, dir, &gp) ||
        cli_apply_profile(dir, profile, "chat", &mp, &sp) || ember_model_load(dir, &mp, &model) ||
        cli_sampling_load_draft(&sampling, &mp, &draft, &gp))
        goto fail;
    gp.max_tokens = (int32_t)max_tokens;
    ember_conversation_params cp = ember_conversation_default_params();
    cp.session = sp;
    cp.system = system;
    cp.tools_json = tools;
    cp.enable_thinking = think;
    cp.model_dir = dir; /* its end-of-turn ids */
    if (ember_conversation_create(model, tok, tmpl, &cp, &conv)) goto fail;
    if (cache_path && access(cache_path, F_OK) == 0) {
        if (ember_conversation_load(conv, cache_path)) goto fail;
        fprintf(stderr, "[continuing the conversation in %s: %d tokens cached]\n", cache_path,
                ember_conversation_cached_tokens(conv));
    }

    while (read_line(&line, &line_cap, "> ")) {
        if (!strcmp(line, "/exit")) break;
        if (!strcmp(line, "/reset")) {
            ember_conversation_clear(conv);
            continue;
        }
        if (!*line) continue;
        if (ember_conversation_add(conv, "user", line)) goto fail;
        /* the model answers, and again after each round of tool results */
        for (int ended = 0; !ended;) {
            if (respond(conv, &gp, &k)) goto done;
            if (cache_path && ember_conversation_save(conv, cache_path)) goto fail;
            printf("\n");
            fflush(stdout);
            if (!k.n) break;
            for (size_t i = 0; i < k.n && !ended; i++) {
                char ask[256];
                snprintf(ask, sizeof ask, "tool %s> ", k.name[i]);
                if (!read_line(&line, &line_cap, ask)) ended = 1;
                else if (ember_conversation_add_tool_result(conv, k.id[i], line)) goto fail;
            }
        }
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "ember chat: %s\n", ember_last_error());
done:
    calls_clear(&k);
    free(k.id);
    free(k.name);
    free(line);
    free(tools);
    ember_conversation_free(conv);
    ember_chat_template_free(tmpl);
    ember_tokenizer_free(tok);
    ember_model_free(draft);
    ember_model_free(model);
    return rc;
}
