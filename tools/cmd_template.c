/* `ember template`: renders a model's chat template for a conversation.
 *   ember template -m MODEL --messages FILE.json [--tools FILE.json]
 *                  [--add-generation-prompt] [--enable-thinking 0|1]
 *   ember template -m MODEL --cases FILE.json
 * MODEL: a model directory or a GGUF file (tokenizer.chat_template).
 * --cases takes a JSON array of {messages, tools?, add_generation_prompt?,
 * enable_thinking?} and prints a JSON array with, per case, the rendered
 * string or {"error": message} (for comparing against transformers.js). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_public.h"
#include "ember.h"

enum { JSON_FILE_CAP = 256 << 20 };

/* The whole of a regular file of at most JSON_FILE_CAP bytes, NUL-terminated;
 * NULL with the reason printed. */
static char *read_text_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "error: %s: cannot open: %s\n", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    char *text = NULL;
    if (fstat(fileno(f), &sb) != 0)
        fprintf(stderr, "error: %s: cannot stat: %s\n", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        fprintf(stderr, "error: %s: not a regular file\n", path);
    else if (sb.st_size < 0 || (unsigned long long)sb.st_size > JSON_FILE_CAP)
        fprintf(stderr, "error: %s: file is %lld bytes, over the %zu-byte limit\n", path,
                (long long)sb.st_size, (size_t)JSON_FILE_CAP);
    else if (!(text = malloc((size_t)sb.st_size + 1)))
        fprintf(stderr, "error: %s: out of memory (%zu bytes)\n", path, (size_t)sb.st_size);
    else {
        *len = fread(text, 1, (size_t)sb.st_size, f);
        if (ferror(f)) {
            fprintf(stderr, "error: %s: read failed: %s\n", path, strerror(errno));
            free(text);
            text = NULL;
        } else {
            text[*len] = '\0';
        }
    }
    fclose(f);
    return text;
}

static cJSON *read_json_file(const char *path)
{
    size_t len = 0;
    char *text = read_text_file(path, &len);
    if (!text) return NULL;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j) fprintf(stderr, "error: %s: invalid JSON\n", path);
    return j;
}

/* Renders parsed messages and tools (NULL: none) with the public API, which
 * takes them as JSON text. Returns NULL with *text (ember_free), or the error. */
static const char *render(const ember_chat_template *t, const cJSON *messages, const cJSON *tools,
                          bool generation_prompt, int thinking, char **text)
{
    *text = NULL;
    if (!cJSON_IsArray(messages)) return "chat: messages must be a JSON array";
    char *m = cJSON_PrintUnformatted(messages);
    char *k = tools ? cJSON_PrintUnformatted(tools) : NULL;
    const char *err = "out of memory";
    if (m && (k || !tools)) {
        ember_chat_params p = ember_chat_default_params();
        p.add_generation_prompt = generation_prompt;
        p.enable_thinking = thinking;
        err = ember_chat_template_render(t, m, k, &p, text) == EMBER_OK ? NULL : ember_last_error();
    }
    cJSON_free(m);
    cJSON_free(k);
    return err;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ember template -m MODEL --messages FILE.json [--tools FILE.json]\n"
               "                      [--add-generation-prompt] [--enable-thinking 0|1]\n"
               "       ember template -m MODEL --cases FILE.json\n"
               "renders the model's chat template (tokenizer_config.json, chat_template.jinja;\n"
               "a GGUF file's tokenizer.chat_template)\n");
}

/* One case of --cases: the rendered text or {"error": ...}. */
static cJSON *render_case(const ember_chat_template *t, const cJSON *c)
{
    const cJSON *thinking = cJSON_GetObjectItemCaseSensitive(c, "enable_thinking");
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(c, "tools");
    char *text = NULL;
    const char *e = render(t, cJSON_GetObjectItemCaseSensitive(c, "messages"),
                           tools && !cJSON_IsNull(tools) ? tools : NULL,
                           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "add_generation_prompt")),
                           cJSON_IsBool(thinking) ? cJSON_IsTrue(thinking) : -1, &text);
    if (e) {
        cJSON *err = cJSON_CreateObject();
        if (err) cJSON_AddStringToObject(err, "error", e);
        return err;
    }
    cJSON *s = cJSON_CreateString(text);
    ember_free(text);
    return s;
}

static int run_cases(const ember_chat_template *t, const char *path)
{
    cJSON *cases = read_json_file(path);
    if (!cases) return 1;
    if (!cJSON_IsArray(cases)) {
        fprintf(stderr, "error: %s: expected a JSON array of cases\n", path);
        cJSON_Delete(cases);
        return 1;
    }
    cJSON *results = cJSON_CreateArray();
    const cJSON *c;
    int rc = results ? 0 : 1;
    cJSON_ArrayForEach(c, cases)
    {
        cJSON *r = rc ? NULL : render_case(t, c);
        if (!r || !cJSON_AddItemToArray(results, r)) rc = 1;
    }
    char *text = rc ? NULL : cJSON_PrintUnformatted(results);
    if (text) printf("%s\n", text);
    else rc = 1;
    free(text);
    cJSON_Delete(results);
    cJSON_Delete(cases);
    return rc;
}

int cmd_template(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},
        {"messages", required_argument, 0, 'M'},
        {"tools", required_argument, 0, 'T'},
        {"add-generation-prompt", no_argument, 0, 'g'},
        {"enable-thinking", required_argument, 0, 'e'},
        {"cases", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *dir = NULL, *messages_path = NULL, *tools_path = NULL, *cases_path = NULL;
    bool generation_prompt = false;
    int thinking = -1, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': dir = optarg; break;
        case 'M': messages_path = optarg; break;
        case 'T': tools_path = optarg; break;
        case 'g': generation_prompt = true; break;
        case 'c': cases_path = optarg; break;
        case 'e':
            if (strcmp(optarg, "0") && strcmp(optarg, "1")) {
                fprintf(stderr, "error: --enable-thinking takes 0 or 1\n");
                return 2;
            }
            thinking = optarg[0] == '1';
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!dir || (!messages_path && !cases_path)) {
        usage(stderr);
        return 2;
    }
    ember_chat_template *t;
    if (ember_chat_template_load(dir, &t) != EMBER_OK) {
        fprintf(stderr, "error: %s\n", ember_last_error());
        return 1;
    }
    if (cases_path) {
        int rc = run_cases(t, cases_path);
        ember_chat_template_free(t);
        return rc;
    }
    cJSON *messages = read_json_file(messages_path);
    cJSON *tools = tools_path ? read_json_file(tools_path) : NULL;
    int rc = 1;
    if (messages && (tools || !tools_path)) {
        char *text = NULL;
        const char *e = render(t, messages, tools, generation_prompt, thinking, &text);
        if (!e) {
            fputs(text, stdout);
            rc = 0;
        } else {
            fprintf(stderr, "error: %s\n", e);
        }
        ember_free(text);
    }
    cJSON_Delete(messages);
    cJSON_Delete(tools);
    ember_chat_template_free(t);
    return rc;
}
