/* A chat with one tool, over the public API only. The model may call
 * get_weather; the program answers the call and the model continues.
 *
 *     cc chat_tool.c $(pkg-config --cflags --libs ember) -o chat_tool
 *     ./chat_tool MODEL_DIR "What is the weather in Paris?" [auto|required]
 */
#include <stdio.h>
#include <string.h>

#include <ember.h>

static const char tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\","
    " \"description\": \"The current weather in a city\", \"parameters\": {\"type\": \"object\","
    " \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}]";

typedef struct turn {
    char call_id[32]; /* the last tool call of the reply, "" if none */
} turn;

static int on_text(void *user, ember_text_kind kind, const char *text, size_t len)
{
    (void)user;
    fprintf(kind == EMBER_TEXT_REASONING ? stderr : stdout, "%.*s", (int)len, text);
    fflush(stdout);
    return 0; /* non-zero would stop the reply */
}

static int on_tool_call(void *user, const ember_tool_call *call)
{
    turn *t = user;
    printf("\n[tool call %s: %s(%s)]\n", call->id, call->name, call->arguments);
    snprintf(t->call_id, sizeof t->call_id, "%s", call->id);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR MESSAGE [auto|required]\n", argv[0]);
        return 2;
    }
    ember_model *model = NULL;
    ember_tokenizer *tok = NULL;
    ember_chat_template *tmpl = NULL;
    ember_conversation *chat = NULL;
    ember_model_params mp = ember_model_default_params();
    if (ember_model_load(argv[1], &mp, &model) || ember_tokenizer_load(argv[1], &tok) ||
        ember_chat_template_load(argv[1], &tmpl))
        goto fail;

    ember_conversation_params cp = ember_conversation_default_params();
    cp.session.max_context = 1024;
    cp.system = "You are a helpful assistant.";
    cp.tools_json = tools;
    cp.model_dir = argv[1]; /* end-of-turn ids from its config files */
    if (ember_conversation_create(model, tok, tmpl, &cp, &chat) ||
        ember_conversation_add(chat, "user", argv[2]))
        goto fail;

    turn t = {""};
    ember_generate_params gp = ember_generate_default_params();
    if (ember_generate_params_from_model(argv[1], &gp)) goto fail;
    gp.max_tokens = 64;
    gp.tool_choice = argc > 3 ? argv[3] : "auto";
    gp.on_text = on_text;
    gp.on_tool_call = on_tool_call;
    gp.user = &t;
    for (int round = 0; round < 2; round++) {
        ember_generate_result r;
        t.call_id[0] = '\0';
        if (ember_conversation_respond(chat, &gp, &r)) goto fail;
        printf("\n[%s: %d prompt tokens (%d cached), %d generated, %.1f ms to first token]\n",
               ember_finish_name(r.finish), r.prompt_tokens, r.cached_tokens, r.completion_tokens,
               r.first_token_ms);
        if (!t.call_id[0]) break;
        /* answer the call, then let the model use the result */
        if (ember_conversation_add_tool_result(chat, t.call_id, "{\"temperature_c\": 18, \"sky\": \"clear\"}"))
            goto fail;
        gp.tool_choice = "auto";
    }
    ember_conversation_free(chat);
    ember_chat_template_free(tmpl);
    ember_tokenizer_free(tok);
    ember_model_free(model);
    return 0;
fail:
    fprintf(stderr, "chat_tool: %s\n", ember_last_error());
    ember_conversation_free(chat);
    ember_chat_template_free(tmpl);
    ember_tokenizer_free(tok);
    ember_model_free(model);
    return 1;
}
