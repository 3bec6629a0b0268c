/* `ember template`: renders a model's chat template for a conversation.
 *   ember template -m DIR --messages FILE.json [--tools FILE.json]
 *                  [--add-generation-prompt] [--enable-thinking 0|1]
 *   ember template -m DIR --cases FILE.json
 * --cases takes a JSON array of {messages, tools?, add_generation_prompt?,
 * enable_thinking?} and prints a JSON array with, per case, the rendered
 * string or {"error": message} (for comparing against transformers.js). */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ember.h"
#include "io/read_file.h"
#include "text/chat.h"

static cJSON *read_json_file(const char *path)
{
    char *text;
    size_t len;
    if (io_read_text_file(path, (size_t)256 << 20, &text, &len) != EMBER_OK) {
        fprintf(stderr, "error: %s\n", ember_last_error());
        return NULL;
    }
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j) fprintf(stderr, "error: %s: invalid JSON\n", path);
    return j;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ember template -m DIR --messages FILE.json [--tools FILE.json]\n"
               "                      [--add-generation-prompt] [--enable-thinking 0|1]\n"
               "       ember template -m DIR --cases FILE.json\n"
               "renders the model's chat template (tokenizer_config.json, chat_template.jinja)\n");
}

/* One case of --cases: the rendered text or {"error": ...}. */
static cJSON *render_case(const et_chat_template *t, const cJSON *c)
{
    const cJSON *thinking = cJSON_GetObjectItemCaseSensitive(c, "enable_thinking");
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(c, "tools");
    et_chat_input in = {
        .messages = cJSON_GetObjectItemCaseSensitive(c, "messages"),
        .tools = tools && !cJSON_IsNull(tools) ? tools : NULL,
        .add_generation_prompt = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "add_generation_prompt")),
        .enable_thinking = cJSON_IsBool(thinking) ? cJSON_IsTrue(thinking) : -1,
    };
    char *text = NULL;
    if (et_chat_render(t, &in, &text) != EMBER_OK) {
        cJSON *err = cJSON_CreateObject();
        if (err) cJSON_AddStringToObject(err, "error", ember_last_error());
        return err;
    }
    cJSON *s = cJSON_CreateString(text);
    free(text);
    return s;
}

static int run_cases(const et_chat_template *t, const char *path)
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
    et_chat_template *t;
    if (et_chat_template_load(dir, &t) != EMBER_OK) {
        fprintf(stderr, "error: %s\n", ember_last_error());
        return 1;
    }
    if (cases_path) {
        int rc = run_cases(t, cases_path);
        et_chat_template_free(t);
        return rc;
    }
    cJSON *messages = read_json_file(messages_path);
    cJSON *tools = tools_path ? read_json_file(tools_path) : NULL;
    int rc = 1;
    if (messages && (tools || !tools_path)) {
        et_chat_input in = {messages, tools, generation_prompt, thinking, NULL};
        char *text = NULL;
        if (et_chat_render(t, &in, &text) == EMBER_OK) {
            fputs(text, stdout);
            rc = 0;
        } else {
            fprintf(stderr, "error: %s\n", ember_last_error());
        }
        free(text);
    }
    cJSON_Delete(messages);
    cJSON_Delete(tools);
    et_chat_template_free(t);
    return rc;
}
