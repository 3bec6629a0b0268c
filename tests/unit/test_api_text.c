/* The public text API (include/ember_text.h) on the tiny test model: the
 * tokenizer round trip, template rendering, generation with stop ids and
 * cancellation, and a conversation that reuses its cache across turns. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember.h"

static const char *model_dir(void)
{
    const char *d = getenv("EMBER_TEST_MODEL");
    return d && *d ? d : "models/tiny";
}

static void test_tokenizer_round_trip(void)
{
    ember_tokenizer *tok = NULL;
    REQUIRE(ember_tokenizer_load(model_dir(), &tok) == EMBER_OK);
    const char text[] = "Hello, world! Ünïcode.";
    int32_t *ids = NULL;
    size_t n = 0;
    REQUIRE(ember_tokenizer_encode(tok, text, strlen(text), 0, &ids, &n) == EMBER_OK);
    CHECK(n > 0);
    char *back = NULL;
    REQUIRE(ember_tokenizer_decode(tok, ids, n, 0, &back, NULL) == EMBER_OK);
    CHECK(!strcmp(back, text));
    CHECK(ember_tokenizer_piece(tok, ids[0]) != NULL);
    CHECK(ember_tokenizer_find(tok, ember_tokenizer_piece(tok, ids[0])) == ids[0]);
    CHECK(ember_tokenizer_piece(tok, -1) == NULL);
    int32_t bad = ember_tokenizer_vocab_size(tok);
    char *none = NULL;
    CHECK(ember_tokenizer_decode(tok, &bad, 1, 0, &none, NULL) == EMBER_ERR_INVALID_ARG && !none);
    CHECK(strstr(ember_last_error(), "outside the vocabulary") != NULL);
    int32_t *bad_ids = NULL;
    size_t n_bad = 0;
    CHECK(ember_tokenizer_encode(tok, "\xff", 1, 0, &bad_ids, &n_bad) != EMBER_OK && !bad_ids);
    int32_t eot[8];
    size_t n_eot = 0;
    CHECK(ember_tokenizer_end_of_turn_ids(tok, model_dir(), eot, 8, &n_eot) == EMBER_OK);
    ember_free(back);
    ember_free(ids);
    ember_tokenizer_free(tok);
    CHECK(ember_tokenizer_load("no/such/dir", &tok) != EMBER_OK && tok == NULL);
}

static void test_template_render(void)
{
    ember_chat_template *t = NULL;
    REQUIRE(ember_chat_template_from_string(
                "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
                "{% if tools %}[{{ tools | length }} tools]{% endif %}"
                "{% if add_generation_prompt %}<assistant>{% endif %}",
                NULL, NULL, &t) == EMBER_OK);
    ember_chat_params p = ember_chat_default_params();
    char *out = NULL;
    REQUIRE(ember_chat_template_render(t, "[{\"role\": \"user\", \"content\": \"hi\"}]",
                                       "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]",
                                       &p, &out) == EMBER_OK);
    CHECK_MSG(!strcmp(out, "<user>hi[1 tools]<assistant>"), "got %s", out);
    ember_free(out);
    CHECK(ember_chat_template_render(t, "{\"role\": 1}", NULL, &p, &out) == EMBER_ERR_FORMAT && !out);
    CHECK(ember_chat_template_render(t, "[", NULL, &p, &out) != EMBER_OK && !out);
    ember_chat_template_free(t);
}

typedef struct counts {
    int deltas, calls, cancel_after;
    ember_session *s;
} counts;

static int count_text(void *user, ember_text_kind kind, const char *text, size_t len)
{
    counts *c = user;
    (void)kind;
    (void)text;
    (void)len;
    c->deltas++;
    if (c->cancel_after && c->deltas == c->cancel_after) ember_session_cancel(c->s);
    return 0;
}

static void test_generate_and_cancel(void)
{
    ember_model_params mp = ember_model_default_params();
    ember_model *m = NULL;
    ember_tokenizer *tok = NULL;
    ember_session *s = NULL;
    REQUIRE(ember_model_load(model_dir(), &mp, &m) == EMBER_OK);
    REQUIRE(ember_tokenizer_load(model_dir(), &tok) == EMBER_OK);
    ember_session_params sp = ember_session_default_params();
    sp.max_context = 256;
    REQUIRE(ember_session_create(m, &sp, &s) == EMBER_OK);
    int32_t prompt[3] = {1, 2, 3};
    counts c = {0, 0, 0, s};
    ember_generate_params gp = ember_generate_default_params();
    gp.temperature = 0;
    gp.max_tokens = 8;
    gp.parse_tools = 0;
    gp.on_text = count_text;
    gp.user = &c;
    ember_generate_result r;
    REQUIRE(ember_session_generate(s, tok, prompt, 3, &gp, &r) == EMBER_OK);
    CHECK(r.finish == EMBER_FINISH_LENGTH && r.completion_tokens == 8 && r.prompt_tokens == 3);
    CHECK(ember_session_position(s) == 3 + 7);
    /* a cancel from the callback (any thread may call it) stops at the next token */
    ember_session_reset(s);
    c.cancel_after = 2;
    c.deltas = 0;
    CHECK(ember_session_generate(s, tok, prompt, 3, &gp, &r) == EMBER_ERR_CANCELLED);
    CHECK(r.finish == EMBER_FINISH_CANCELLED && r.completion_tokens < 8);
    /* a cancel is taken once: the next generation runs */
    c.cancel_after = 0;
    ember_session_reset(s);
    CHECK(ember_session_generate(s, tok, prompt, 3, &gp, &r) == EMBER_OK);
    /* a stop id ends the reply and is not fed: stop at the greedy first id */
    ember_session_reset(s);
    REQUIRE(ember_session_prefill(s, prompt, 3) == EMBER_OK);
    const float *l = ember_session_logits(s);
    int32_t best = 0;
    for (int32_t v = 1; v < ember_model_vocab_size(m); v++)
        if (l[v] > l[best]) best = v;
    ember_session_reset(s);
    gp.stop_ids = &best;
    gp.n_stop_ids = 1;
    REQUIRE(ember_session_generate(s, NULL, prompt, 3, &gp, &r) == EMBER_OK);
    CHECK(r.finish == EMBER_FINISH_STOP && r.completion_tokens == 1 && ember_session_position(s) == 3);
    gp.max_tokens = -1;
    CHECK(ember_session_generate(s, tok, prompt, 3, &gp, &r) == EMBER_ERR_INVALID_ARG);
    ember_session_free(s);
    ember_tokenizer_free(tok);
    ember_model_free(m);
}

static void test_conversation_reuses_cache(void)
{
    ember_model_params mp = ember_model_default_params();
    ember_model *m = NULL;
    ember_tokenizer *tok = NULL;
    ember_chat_template *t = NULL;
    ember_conversation *conv = NULL;
    REQUIRE(ember_model_load(model_dir(), &mp, &m) == EMBER_OK);
    REQUIRE(ember_tokenizer_load(model_dir(), &tok) == EMBER_OK);
    REQUIRE(ember_chat_template_load(model_dir(), &t) == EMBER_OK);
    ember_conversation_params cp = ember_conversation_default_params();
    cp.session.max_context = 1024;
    cp.system = "Be brief.";
    cp.model_dir = model_dir();
    REQUIRE(ember_conversation_create(m, tok, t, &cp, &conv) == EMBER_OK);
    ember_generate_params gp = ember_generate_default_params();
    gp.temperature = 0;
    gp.max_tokens = 1; /* one token: the reply's text re-tokenizes as it was sampled */
    ember_generate_result r1, r2;
    REQUIRE(ember_conversation_add(conv, "user", "Hello there") == EMBER_OK);
    REQUIRE(ember_conversation_respond(conv, &gp, &r1) == EMBER_OK);
    CHECK(r1.cached_tokens == 0 && r1.prompt_tokens > 0);
    REQUIRE(ember_conversation_add(conv, "user", "And again") == EMBER_OK);
    REQUIRE(ember_conversation_respond(conv, &gp, &r2) == EMBER_OK);
    CHECK_MSG(r2.cached_tokens >= r1.prompt_tokens, "cached %d of %d (first prompt %d)",
              r2.cached_tokens, r2.prompt_tokens, r1.prompt_tokens);
    char *json = NULL;
    REQUIRE(ember_conversation_messages(conv, &json) == EMBER_OK);
    CHECK(strstr(json, "\"role\":\"assistant\"") != NULL && strstr(json, "And again") != NULL);
    ember_free(json);
    ember_conversation_clear(conv);
    REQUIRE(ember_conversation_messages(conv, &json) == EMBER_OK);
    CHECK(strstr(json, "Hello") == NULL && strstr(json, "Be brief.") != NULL);
    ember_free(json);
    ember_conversation_free(conv);
    cp.tools_json = "[{\"type\": \"function\"}]";
    CHECK(ember_conversation_create(m, tok, t, &cp, &conv) == EMBER_ERR_FORMAT && !conv);
    ember_chat_template_free(t);
    ember_tokenizer_free(tok);
    ember_model_free(m);
}

/* A template that renders every earlier reply as "ok": the next prompt
 * diverges inside the last reply, and the conversation goes back to its mark
 * after the previous prompt's last special token instead of starting over. */
static void test_conversation_rewinds_on_divergence(void)
{
    static const char tmpl[] =
        "{% for m in messages %}<|im_start|>{{ m.role }}\n"
        "{% if m.role == 'assistant' %}ok{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
    ember_model *m = NULL;
    ember_tokenizer *tok = NULL;
    ember_chat_template *t = NULL;
    ember_conversation *conv = NULL;
    REQUIRE(ember_model_load(model_dir(), NULL, &m) == EMBER_OK);
    REQUIRE(ember_tokenizer_load(model_dir(), &tok) == EMBER_OK);
    REQUIRE(ember_chat_template_from_string(tmpl, NULL, NULL, &t) == EMBER_OK);
    ember_conversation_params cp = ember_conversation_default_params();
    cp.session.max_context = 512;
    /* longer than the tiny model's window, so that its rings wrap */
    cp.system = "You are a careful assistant who answers every question in full sentences.";
    REQUIRE(ember_conversation_create(m, tok, t, &cp, &conv) == EMBER_OK);
    ember_generate_params gp = ember_generate_default_params();
    gp.temperature = 0;
    gp.max_tokens = 24;
    int32_t none = -1; /* no stop id: the reply runs its 24 tokens */
    gp.stop_ids = &none;
    gp.n_stop_ids = 1;
    ember_generate_result r1, r2, r3;
    REQUIRE(ember_conversation_add(conv, "user", "Hello there") == EMBER_OK);
    REQUIRE(ember_conversation_respond(conv, &gp, &r1) == EMBER_OK);
    REQUIRE(ember_conversation_add(conv, "user", "And again") == EMBER_OK);
    REQUIRE(ember_conversation_respond(conv, &gp, &r2) == EMBER_OK);
    /* back to after the first prompt's last <|im_start|>: "assistant\n" follows */
    int32_t *after = NULL;
    size_t n_after = 0;
    REQUIRE(ember_tokenizer_encode(tok, "assistant\n", 10, 0, &after, &n_after) == EMBER_OK);
    ember_free(after);
    int32_t tail = (int32_t)n_after;
    CHECK_MSG(r2.cached_tokens == r1.prompt_tokens - tail, "cached %d of %d (first prompt %d, %d after the mark)",
              r2.cached_tokens, r2.prompt_tokens, r1.prompt_tokens, tail);
    /* the same divergence again: the mark moved to the second prompt */
    REQUIRE(ember_conversation_add(conv, "user", "Once more") == EMBER_OK);
    REQUIRE(ember_conversation_respond(conv, &gp, &r3) == EMBER_OK);
    CHECK_MSG(r3.cached_tokens == r2.prompt_tokens - tail, "cached %d, second prompt %d",
              r3.cached_tokens, r2.prompt_tokens);
    ember_conversation_free(conv);
    ember_chat_template_free(t);
    ember_tokenizer_free(tok);
    ember_model_free(m);
}

int main(void)
{
    RUN(test_tokenizer_round_trip);
    RUN(test_template_render);
    RUN(test_generate_and_cancel);
    RUN(test_conversation_reuses_cache);
    RUN(test_conversation_rewinds_on_divergence);
    return check_summary();
}
