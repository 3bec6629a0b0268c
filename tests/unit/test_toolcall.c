/* The tool-call / reasoning splitter: calls, several calls, think blocks,
 * malformed blocks as flagged content, and the same events (once adjacent
 * text of one kind is joined) however the text is split into deltas: at
 * every byte position, and one byte at a time. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "generate/toolcall.h"

/* The events as one string: C[content] M[malformed] R[reasoning]
 * T[id|name|arguments], adjacent text of one kind joined. */
typedef struct transcript {
    char text[8192];
    size_t len;
    char open; /* the kind letter of the text segment being written, or 0 */
    int cancel_after; /* >0: the sink asks to stop at that event */
    int events;
} transcript;

static void put(transcript *t, const char *s, size_t n)
{
    if (t->len + n >= sizeof t->text) n = sizeof t->text - 1 - t->len;
    memcpy(t->text + t->len, s, n);
    t->len += n;
    t->text[t->len] = '\0';
}

static void close_segment(transcript *t)
{
    if (t->open) put(t, "]", 1);
    t->open = 0;
}

static int record(void *user, const et_toolcall_event *ev)
{
    transcript *t = user;
    t->events++;
    if (ev->kind == ET_TOOLCALL_CALL) {
        close_segment(t);
        put(t, "T[", 2);
        put(t, ev->id, strlen(ev->id));
        put(t, "|", 1);
        put(t, ev->name, strlen(ev->name));
        put(t, "|", 1);
        put(t, ev->arguments, strlen(ev->arguments));
        put(t, "]", 1);
    } else {
        char kind = ev->kind == ET_TOOLCALL_REASONING ? 'R' : ev->malformed ? 'M' : 'C';
        if (ev->malformed != (ev->why != NULL)) put(t, "!why!", 5);
        if (t->open != kind) {
            close_segment(t);
            char head[2] = {kind, '['};
            put(t, head, 2);
            t->open = kind;
        }
        put(t, ev->text, ev->len);
    }
    return t->cancel_after > 0 && t->events >= t->cancel_after;
}

/* Runs the parser over text cut at the given positions (ascending). */
static int run(const et_toolcall_params *p, const char *text, const size_t *cuts, int n_cuts, transcript *t)
{
    memset(t, 0, sizeof *t);
    et_toolcall *tc = NULL;
    if (et_toolcall_create(p, &tc) != EMBER_OK) return 0;
    size_t len = strlen(text), at = 0;
    int ok = 1;
    for (int i = 0; i <= n_cuts; i++) {
        size_t end = i < n_cuts ? cuts[i] : len;
        ok &= et_toolcall_feed(tc, text + at, end - at, record, t) == EMBER_OK;
        at = end;
    }
    ok &= et_toolcall_finish(tc, record, t) == EMBER_OK;
    close_segment(t);
    et_toolcall_free(tc);
    return ok;
}

/* The whole text at once must give `want`; so must every 2-piece split and
 * the byte-at-a-time feed. */
static void expect_with(const et_toolcall_params *p, const char *text, const char *want)
{
    transcript t;
    REQUIRE(run(p, text, NULL, 0, &t));
    CHECK_MSG(strcmp(t.text, want) == 0, "text %s\n  got  %s\n  want %s", text, t.text, want);
    size_t len = strlen(text);
    for (size_t cut = 0; cut <= len; cut++) {
        REQUIRE(run(p, text, &cut, 1, &t));
        CHECK_MSG(strcmp(t.text, want) == 0, "split at %zu: got %s", cut, t.text);
    }
    size_t *cuts = malloc((len + 1) * sizeof *cuts);
    REQUIRE(cuts);
    for (size_t i = 0; i < len; i++) cuts[i] = i + 1;
    int ok = run(p, text, cuts, (int)len, &t);
    free(cuts);
    REQUIRE(ok);
    CHECK_MSG(strcmp(t.text, want) == 0, "byte at a time: got %s", t.text);
}

static void expect(const char *text, const char *want)
{
    et_toolcall_params p;
    et_toolcall_params_default(&p);
    expect_with(&p, text, want);
}

static void plain_text_passes_through(void)
{
    expect("Hello, world! a < b and <b>bold</b>", "C[Hello, world! a < b and <b>bold</b>]");
    expect("", "");
    expect("ends with a partial tag <tool_ca", "C[ends with a partial tag <tool_ca]");
    expect("ends with <thi", "C[ends with <thi]");
    expect("<<tool_call", "C[<<tool_call]");
}

static void one_call_with_text_around(void)
{
    expect("Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n"
           "</tool_call>\nDone.",
           "C[Let me check.\n]T[call_0|get_weather|{\"city\":\"Paris\",\"days\":3}]C[\nDone.]");
}

static void several_calls(void)
{
    expect("<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
           "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, 2.5, \"s\"], \"y\": null}}\n</tool_call>",
           "T[call_0|a|{}]C[\n]T[call_1|b|{\"x\":[1,2.5,\"s\"],\"y\":null}]");
}

static void arguments_forms(void)
{
    /* a JSON string holding the object is decoded */
    expect("<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": [1, 2]}\"}</tool_call>",
           "T[call_0|f|{\"a\":[1,2]}]");
    /* absent or null arguments are an empty object */
    expect("<tool_call>{\"name\": \"now\"}</tool_call>", "T[call_0|now|{}]");
    expect("<tool_call>{\"name\": \"now\", \"arguments\": null}</tool_call>", "T[call_0|now|{}]");
    /* UTF-8 stays UTF-8 */
    expect("<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac\"}}</tool_call>",
           "T[call_0|search|{\"q\":\"h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac\"}]");
}

static void think_blocks_are_reasoning(void)
{
    expect("<think>\nThe user wants weather.\n</think>\n\nSure.", "R[\nThe user wants weather.\n]C[\n\nSure.]");
    /* a tool call inside reasoning is reasoning text */
    expect("<think>maybe <tool_call>{\"name\": \"x\"}</tool_call></think>ok",
           "R[maybe <tool_call>{\"name\": \"x\"}</tool_call>]C[ok]");
    /* unterminated reasoning stays reasoning */
    expect("<think>still thinking", "R[still thinking]");
    expect("<think>a</think><think>b</think>c", "R[ab]C[c]");
    /* thinking, then a call */
    expect("<think>call it</think>\n<tool_call>{\"name\": \"f\", \"arguments\": {\"k\": 1}}</tool_call>",
           "R[call it]C[\n]T[call_0|f|{\"k\":1}]");

    et_toolcall_params p;
    et_toolcall_params_default(&p);
    p.start_in_reasoning = 1; /* the template opened <think> in the prompt */
    expect_with(&p, "reasoning</think>answer", "R[reasoning]C[answer]");
    p.start_in_reasoning = 0;
    p.split_reasoning = 0;
    expect_with(&p, "<think>x</think>y", "C[<think>x</think>y]");
}

static void malformed_blocks_are_flagged_content(void)
{
    expect("<tool_call>{\"name\": }</tool_call>after", "M[<tool_call>{\"name\": }</tool_call>]C[after]");
    expect("<tool_call>{\"arguments\": {}}</tool_call>", "M[<tool_call>{\"arguments\": {}}</tool_call>]");
    expect("<tool_call>{\"name\": \"\"}</tool_call>", "M[<tool_call>{\"name\": \"\"}</tool_call>]");
    expect("<tool_call>{\"name\": 3}</tool_call>", "M[<tool_call>{\"name\": 3}</tool_call>]");
    expect("<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",
           "M[<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>]");
    expect("<tool_call>{\"name\": \"f\", \"arguments\": \"not json\"}</tool_call>",
           "M[<tool_call>{\"name\": \"f\", \"arguments\": \"not json\"}</tool_call>]");
    expect("<tool_call>{\"name\": \"f\"} trailing</tool_call>", "M[<tool_call>{\"name\": \"f\"} trailing</tool_call>]");
    expect("<tool_call>[1, 2]</tool_call>", "M[<tool_call>[1, 2]</tool_call>]");
    expect("<tool_call></tool_call>", "M[<tool_call></tool_call>]");
    /* unterminated at the end of the stream */
    expect("text <tool_call>{\"name\": \"x\"", "C[text ]M[<tool_call>{\"name\": \"x\"]");
    expect("<tool_call>", "M[<tool_call>]");
    /* a malformed block between good ones does not disturb numbering */
    expect("<tool_call>{\"name\": \"a\"}</tool_call><tool_call>{</tool_call><tool_call>{\"name\": \"b\"}</tool_call>",
           "T[call_0|a|{}]M[<tool_call>{</tool_call>]T[call_1|b|{}]");
}

static void ids_restart_after_reset_and_cancel_works(void)
{
    et_toolcall_params p;
    et_toolcall_params_default(&p);
    et_toolcall *tc = NULL;
    REQUIRE(et_toolcall_create(&p, &tc) == EMBER_OK);
    transcript t;
    memset(&t, 0, sizeof t);
    const char *call = "<tool_call>{\"name\": \"f\"}</tool_call>";
    CHECK(et_toolcall_feed(tc, call, strlen(call), record, &t) == EMBER_OK);
    CHECK(et_toolcall_feed(tc, call, strlen(call), record, &t) == EMBER_OK);
    et_toolcall_reset(tc);
    CHECK(et_toolcall_feed(tc, call, strlen(call), record, &t) == EMBER_OK);
    CHECK_MSG(strcmp(t.text, "T[call_0|f|{}]T[call_1|f|{}]T[call_0|f|{}]") == 0, "got %s", t.text);

    memset(&t, 0, sizeof t);
    t.cancel_after = 1;
    et_toolcall_reset(tc);
    CHECK(et_toolcall_feed(tc, "hi <think>x</think>", 19, record, &t) == EMBER_ERR_CANCELLED);
    et_toolcall_free(tc);

    CHECK(et_toolcall_format_named("hermes") != NULL);
    CHECK(et_toolcall_format_named("nope") == NULL);
    et_toolcall_format bad = {"bad", "", "</x>", NULL};
    p.format = &bad;
    CHECK(et_toolcall_create(&p, &tc) == EMBER_ERR_INVALID_ARG);
}

int main(void)
{
    RUN(plain_text_passes_through);
    RUN(one_call_with_text_around);
    RUN(several_calls);
    RUN(arguments_forms);
    RUN(think_blocks_are_reasoning);
    RUN(malformed_blocks_are_flagged_content);
    RUN(ids_restart_after_reset_and_cancel_works);
    return check_summary();
}
