/* The text side of generation (text/textgen.h) on the tiny model's
 * tokenizer: the sampled ids are forced with one-hot logits, so every
 * expected event follows from the text the ids spell. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "generate/textgen.h"

#define TINY "models/tiny"

typedef struct seen {
    char content[1024], reasoning[256];
    int calls;
    char name[64], args[256];
} seen;

static int collect(void *user, const et_toolcall_event *e)
{
    seen *s = user;
    if (e->kind == ET_TOOLCALL_CALL) {
        s->calls++;
        snprintf(s->name, sizeof s->name, "%s", e->name);
        snprintf(s->args, sizeof s->args, "%s", e->arguments);
    } else {
        char *dst = e->kind == ET_TOOLCALL_CONTENT ? s->content : s->reasoning;
        size_t cap = e->kind == ET_TOOLCALL_CONTENT ? sizeof s->content : sizeof s->reasoning;
        size_t at = strlen(dst);
        if (at + e->len < cap) {
            memcpy(dst + at, e->text, e->len);
            dst[at + e->len] = '\0';
        }
    }
    return 0;
}

/* Runs the ids of `text` (then the extra id, if >= 0) through a generator
 * as forced samples; returns the finish reason and the number of steps. */
static et_finish run(const et_tokenizer *tok, const et_textgen_params *p, const char *text,
                     int32_t extra, seen *s, int *steps)
{
    int32_t *ids = NULL, vocab = (int32_t)et_tokenizer_vocab_size(tok);
    size_t n = 0;
    et_textgen *g = NULL;
    et_finish f = ET_FINISH_NONE;
    float *logits = malloc((size_t)vocab * sizeof *logits);
    memset(s, 0, sizeof *s);
    *steps = 0;
    if (!logits || et_tokenizer_encode(tok, text, strlen(text), false, &ids, &n) ||
        et_textgen_create(tok, vocab, p, collect, s, &g) || et_textgen_begin(g, NULL, 0)) {
        CHECK_MSG(0, "setup: %s", ember_last_error());
        goto done;
    }
    for (size_t i = 0; i <= n && !f; i++) {
        int32_t want = i < n ? ids[i] : extra, got;
        if (want < 0) break;
        for (int32_t v = 0; v < vocab; v++) logits[v] = v == want ? 10.0f : 0.0f;
        CHECK(et_textgen_step(g, logits, &got, &f) == EMBER_OK);
        CHECK(got == want);
        (*steps)++;
    }
    CHECK(et_textgen_end(g, &f) == EMBER_OK);
    CHECK(et_textgen_count(g) == *steps);
done:
    et_textgen_free(g);
    free(ids);
    free(logits);
    return f;
}

static et_tokenizer *tiny_tok(void)
{
    et_tokenizer *tok = NULL;
    if (et_tokenizer_load(TINY, &tok)) check_report(__FILE__, __LINE__, "%s", ember_last_error());
    return tok;
}

static void params(et_textgen_params *p)
{
    et_textgen_params_default(p);
    p->sampling.temperature = 0.0f;
}

static void plain_text_streams_as_content(void)
{
    et_tokenizer *tok = tiny_tok();
    et_textgen_params p;
    seen s;
    int steps;
    REQUIRE(tok);
    params(&p);
    CHECK(run(tok, &p, "The model reads the prompt.", -1, &s, &steps) == ET_FINISH_STOP);
    CHECK(!strcmp(s.content, "The model reads the prompt."));
    CHECK(s.calls == 0 && !s.reasoning[0]);
    et_tokenizer_free(tok);
}

static void stop_id_ends_without_its_text(void)
{
    et_tokenizer *tok = tiny_tok();
    et_textgen_params p;
    seen s;
    int steps;
    REQUIRE(tok);
    int32_t im_end = et_tokenizer_find(tok, "<|im_end|>");
    REQUIRE(im_end >= 0);
    params(&p);
    p.stop_ids = &im_end;
    p.n_stop_ids = 1;
    CHECK(run(tok, &p, "Hello", im_end, &s, &steps) == ET_FINISH_STOP);
    CHECK(!strcmp(s.content, "Hello"));
    et_tokenizer_free(tok);
}

static void stop_string_cuts_the_text(void)
{
    et_tokenizer *tok = tiny_tok();
    et_textgen_params p;
    seen s;
    int steps;
    const char *stop = "thinks";
    REQUIRE(tok);
    params(&p);
    p.stop = &stop;
    p.n_stop = 1;
    CHECK(run(tok, &p, "The model thinks about the request", -1, &s, &steps) == ET_FINISH_STOP);
    CHECK_MSG(!strcmp(s.content, "The model "), "content '%s'", s.content);
    et_tokenizer_free(tok);
}

static void max_tokens_is_length(void)
{
    et_tokenizer *tok = tiny_tok();
    et_textgen_params p;
    seen s;
    int steps;
    REQUIRE(tok);
    params(&p);
    p.max_tokens = 3;
    CHECK(run(tok, &p, "The model reads the prompt and answers.", -1, &s, &steps) == ET_FINISH_LENGTH);
    CHECK(steps == 3 && strlen(s.content) > 0);
    et_tokenizer_free(tok);
}

static void tool_calls_and_reasoning_are_parsed(void)
{
    et_tokenizer *tok = tiny_tok();
    et_textgen_params p;
    seen s;
    int steps;
    REQUIRE(tok);
    params(&p);
    p.parse_tools = 1;
    CHECK(run(tok, &p,
              "<think>\nthe user wants the weather\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
              "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
              -1, &s, &steps) == ET_FINISH_TOOL_CALLS);
    CHECK(s.calls == 1 && !strcmp(s.name, "get_weather"));
    CHECK_MSG(!strcmp(s.args, "{\"city\":\"Paris\"}"), "arguments %s", s.args);
    CHECK_MSG(strstr(s.reasoning, "the user wants the weather") != NULL, "reasoning '%s'", s.reasoning);
    CHECK(strstr(s.content, "tool_call") == NULL);
    et_tokenizer_free(tok);
}

static void model_files_give_stop_ids_and_defaults(void)
{
    et_tokenizer *tok = tiny_tok();
    int32_t ids[8];
    size_t n = 0;
    REQUIRE(tok);
    CHECK(et_model_stop_ids(TINY, tok, ids, 8, &n) == EMBER_OK);
    /* config.json eos_token_id 505 and tokenizer_config's eos <|im_end|>: one id */
    CHECK(n == 1 && ids[0] == et_tokenizer_find(tok, "<|im_end|>"));
    et_sampler_params sp;
    et_sampler_params_default(&sp);
    CHECK(et_model_sampling_defaults(TINY, &sp) == EMBER_OK);
    CHECK(sp.temperature == 0.0f); /* no generation_config.json: greedy, as HF */
    CHECK(et_model_stop_ids("/nonexistent", tok, ids, 8, &n) == EMBER_OK && n == 0);
    et_tokenizer_free(tok);
}

int main(void)
{
    RUN(plain_text_streams_as_content);
    RUN(stop_id_ends_without_its_text);
    RUN(stop_string_cuts_the_text);
    RUN(max_tokens_is_length);
    RUN(tool_calls_and_reasoning_are_parsed);
    RUN(model_files_give_stop_ids_and_defaults);
    return check_summary();
}
