/* The chat-template interpreter, one construct at a time, with expected
 * output worked out by hand from @huggingface/jinja's semantics (the engine
 * transformers.js uses), plus the error paths: syntax errors with
 * line:col, unsupported constructs, runtime errors and runaway recursion. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "template/chat.h"
#include "template/jinja.h"

/* Renders src against the JSON context (NULL: none); NULL on error. */
static char *render(const char *src, const char *context)
{
    ej_template *t;
    if (ej_parse(src, strlen(src), &t) != EMBER_OK) return NULL;
    cJSON *ctx = context ? cJSON_Parse(context) : NULL;
    char *out = NULL;
    if (ej_render(t, ctx, &out, NULL) != EMBER_OK) out = NULL;
    cJSON_Delete(ctx);
    ej_free(t);
    return out;
}

#define EXPECT(src, ctx, want)                                                                 \
    do {                                                                                       \
        char *got_ = render(src, ctx);                                                         \
        CHECK_MSG(got_ && !strcmp(got_, want), "%s\n  want [%s]\n  got  [%s] (%s)", src, want, \
                  got_ ? got_ : "(error)", got_ ? "" : ember_last_error());                    \
        free(got_);                                                                            \
    } while (0)

/* Rendering fails and the message contains `needle`. */
#define EXPECT_ERROR(src, ctx, needle)                                                         \
    do {                                                                                       \
        char *got_ = render(src, ctx);                                                         \
        CHECK_MSG(!got_ && strstr(ember_last_error(), needle), "%s: want error with [%s], got [%s]", \
                  src, needle, got_ ? got_ : ember_last_error());                              \
        free(got_);                                                                            \
    } while (0)

static void test_text_and_output(void)
{
    EXPECT("plain text", NULL, "plain text");
    EXPECT("a{{ 'b' }}c", NULL, "abc");
    EXPECT("{{ x }}-{{ y }}", "{\"x\": 1, \"y\": \"two\"}", "1-two");
    EXPECT("[{{ none }}][{{ undefined_thing }}][{{ true }}][{{ False }}]", NULL, "[][][true][false]");
    EXPECT("{{ 'line\\nbreak' }}|{{ \"q\\\"q\" }}|{{ '\\u00e9' }}", NULL, "line\nbreak|q\"q|\xc3\xa9");
    EXPECT("{{ 'a' 'b' }}", NULL, "ab");
    EXPECT("x{# a comment #}y", NULL, "xy");
    EXPECT("ends with one newline\n", NULL, "ends with one newline");
}

static void test_whitespace_control(void)
{
    EXPECT("a  {{- 'b' -}}  c", NULL, "abc");
    EXPECT("a\n  {%- if true %}b{% endif -%}\n  c", NULL, "abc");
    /* trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it */
    EXPECT("{% if true %}\nyes\n{% endif %}\nafter", NULL, "yes\nafter");
    EXPECT("<\n    {% if true %}x{% endif %}>", NULL, "<\nx>");
    EXPECT("  {{ 'expr keeps indentation' }}", NULL, "  expr keeps indentation");
    EXPECT("a {#- c -#} b", NULL, "ab");
}

static void test_numbers(void)
{
    EXPECT("{{ 1 + 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }}", NULL, "3 3 -4 1 -1 1024");
    EXPECT("{{ 1.0 }} {{ 2.5 }} {{ 10 / 2 }} {{ 1 / 4 }} {{ 3 * 1.5 }} {{ -0.0 }}", NULL, "1.0 2.5 5.0 0.25 4.5 -0.0");
    EXPECT("{{ big }} {{ small }} {{ big|tojson }}", "{\"big\": 1e21, \"small\": 1e-7}", "1e+21 1e-7 1e+21");
    EXPECT("{{ x }} {{ x|tojson }} {{ [x, 2.0]|tojson }}", "{\"x\": 2.0}", "2 2 [2, 2]");
    EXPECT("{{ 0.1 + 0.2 }}", NULL, "0.30000000000000004");
    /* ~ and string + use JavaScript's String(): 2.0 is just 2 there */
    EXPECT("{{ 1 ~ 2.0 ~ 'x' }}", NULL, "12x");
    EXPECT("{{ 'n=' + 2.0 }}", NULL, "n=2");
}

static void test_if_and_tests(void)
{
    const char *t = "{% if x > 2 %}big{% elif x == 2 %}two{% else %}small{% endif %}";
    EXPECT(t, "{\"x\": 3}", "big");
    EXPECT(t, "{\"x\": 2}", "two");
    EXPECT(t, "{\"x\": 1}", "small");
    EXPECT("{{ x is defined }} {{ y is undefined }} {{ n is none }} {{ s is string }} {{ x is number }}",
           "{\"x\": 1, \"n\": null, \"s\": \"a\"}", "true true true true true");
    EXPECT("{{ 3 is odd }} {{ 4 is even }} {{ d is mapping }} {{ l is iterable }} {{ b is boolean }} {{ b is true }}",
           "{\"d\": {}, \"l\": [], \"b\": true}", "true true true true true true");
    EXPECT("{{ x is not none }} {{ 1.5 is integer }}", "{\"x\": 0}", "true false");
    EXPECT("{{ 'a' in 'cat' }} {{ 'z' not in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }}", NULL,
           "true true true true");
    EXPECT("{{ [] or 'empty' }} {{ 'a' and 'b' }} {{ not '' }}", NULL, "empty b true");
    EXPECT("{{ 'yes' if x else 'no' }}|{{ 'only' if x }}|", "{\"x\": false}", "no||");
    EXPECT("{{ none == undefined_var }} {{ '1' == 1 }} {{ [] == [] }}", NULL, "true true false");
}

static void test_for_loops(void)
{
    EXPECT("{% for x in xs %}{{ loop.index }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}",
           "{\"xs\": [\"a\", \"b\", \"c\"]}", "1a,2b,3c");
    EXPECT("{% for x in xs %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.length }} {% endfor %}",
           "{\"xs\": [5, 6]}", "02true2 11false2 ");
    EXPECT("{% for x in xs %}x{% else %}none{% endfor %}", "{\"xs\": []}", "none");
    EXPECT("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", "{\"d\": {\"b\": 1, \"a\": 2}}", "b=1;a=2;");
    EXPECT("{% for k in d %}{{ k }}{% endfor %}", "{\"d\": {\"x\": 1, \"1\": 2, \"0\": 3}}", "01x");
    EXPECT("{% for x in xs if x is odd %}{{ x }}{% endfor %}", "{\"xs\": [1, 2, 3, 4, 5]}", "135");
    EXPECT("{% for x in xs %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}", "{\"xs\": [1, 2, 3, 4]}", "12");
    /* the reference drops the output of an iteration that continue/break leaves */
    EXPECT("{% for x in xs %}<{{ x }}{% if x == 2 %}{% continue %}{% endif %}>{% endfor %}", "{\"xs\": [1, 2, 3]}",
           "<1><3>");
    EXPECT("{% for i in range(3) %}{{ i }}{% endfor %}|{% for i in range(1, 7, 2) %}{{ i }}{% endfor %}", NULL,
           "012|135");
    /* a set inside a loop stays inside the loop */
    EXPECT("{% set v = 'out' %}{% for x in [1] %}{% set v = 'in' %}{{ v }}{% endfor %}{{ v }}", NULL, "inout");
}

static void test_set_and_namespace(void)
{
    EXPECT("{% set a = 'x' %}{% set b, c = [1, 2] %}{{ a }}{{ b }}{{ c }}", NULL, "x12");
    EXPECT("{% set block %}in {{ 'a block' }}{% endset %}[{{ block }}]", NULL, "[in a block]");
    EXPECT("{% set ns = namespace(n=0) %}{% for x in [1, 2, 3] %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}",
           NULL, "6");
    EXPECT_ERROR("{% set s = 'str' %}{% set s.x = 1 %}", NULL, "non-namespace");
}

static void test_macros(void)
{
    EXPECT("{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}"
           "{{ greet('Ann') }} {{ greet('Bo', 'Hi') }} {{ greet(greeting='Yo', name='Cy') }}",
           NULL, "Hello, Ann! Hi, Bo! Yo, Cy!");
    EXPECT("{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}inside{% endcall %}", NULL, "[inside]");
    EXPECT("{% macro m() %}{{ varargs|length }}{% endmacro %}{{ m(1, 2, 3) }}", NULL, "3");
    EXPECT_ERROR("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", NULL, "not more than 1");
}

static void test_filters(void)
{
    EXPECT("{{ d|tojson }}", "{\"d\": {\"a\": [1, \"x\", null, true], \"b\": \"\\u00fc\"}}",
           "{\"a\": [1, \"x\", null, true], \"b\": \"\xc3\xbc\"}");
    EXPECT("{{ d|tojson(indent=2) }}", "{\"d\": {\"a\": [1], \"e\": {}}}", "{\n  \"a\": [\n    1\n  ],\n  \"e\": {}\n}");
    EXPECT("{{ 'é\"'|tojson(ensure_ascii=true) }}", NULL, "\"\\u00e9\\\"\"");
    EXPECT("{{ '  pad  '|trim }}|{{ 'abc'|length }}|{{ 'abc'|upper }}|{{ 'ABC'|lower }}|{{ 'hello world'|title }}",
           NULL, "pad|3|ABC|abc|Hello World");
    EXPECT("{{ ['a', 'b']|join(', ') }}|{{ [1, 2]|join }}|{{ xs|first }}{{ xs|last }}", "{\"xs\": [7, 8, 9]}",
           "a, b|12|79");
    EXPECT("{{ 'aXbX'|replace('X', '-') }}|{{ 'aaa'.replace('a', 'b', 2) }}", NULL, "a-b-|bba");
    EXPECT("{{ missing|default('dflt') }}|{{ ''|default('e', true) }}|{{ 'set'|default('no') }}", NULL, "dflt|e|set");
    EXPECT("{{ '42'|int + 1 }}|{{ 'x'|int }}|{{ 3.9|int }}|{{ '2.5'|float }}", NULL, "43|0|3|2.5");
    EXPECT("{{ xs|map(attribute='n')|join(',') }}|{{ xs|selectattr('ok')|length }}",
           "{\"xs\": [{\"n\": 1, \"ok\": true}, {\"n\": 2, \"ok\": false}]}", "1,2|1");
    EXPECT("{{ [3, 1, 2]|sort|join }}|{{ [1, 2]|reverse|join }}|{{ {'a': 1}|items|length }}", NULL, "123|21|1");
    EXPECT("{{ 'capital city'|capitalize }}|{{ 'a\nb'|indent }}", NULL, "Capital city|a\n    b");
}

static void test_strings_and_slices(void)
{
    EXPECT("{{ 'a,b,,c'.split(',')|length }}|{{ ' x  y '.split()|join('+') }}|{{ 'a-b-c'.split('-', 1)[1] }}", NULL,
           "4|x+y|b-c");
    EXPECT("{{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }}", NULL, "true true");
    /* the reference ignores strip's argument and trims all whitespace */
    EXPECT("[{{ '\n  x \n'.strip('\n') }}][{{ '  x'.lstrip('\n') }}][{{ 'x \n'.rstrip() }}]", NULL, "[x][x][x]");
    EXPECT("{{ 'abcdef'[1:3] }} {{ 'abc'[::-1] }} {{ [1, 2, 3, 4][-2:]|join }} {{ [1, 2, 3][::2]|join }} {{ 'abc'[-1] }}",
           NULL, "bc cba 34 13 c");
    EXPECT("{{ 'h\xc3\xa9llo'[::-1] }} {{ 'h\xc3\xa9'|length }}", NULL, "oll\xc3\xa9h 2");
    EXPECT("{{ d.get('a') }}{{ d.get('z', 'dz') }}{{ d['a'] }}{{ d.a }}{{ d.keys()|join }}", "{\"d\": {\"a\": 1}}",
           "1dz11a");
    EXPECT("{{ [1, [2, 'x']] }} {{ {'k': none} }}", NULL, "[1, [2, \"x\"]] {\"k\": null}");
}

static void test_syntax_errors(void)
{
    ej_template *t = NULL;
    const char *bad = "line one\n{% if x %}\n  {{ x + }}\n{% endif %}";
    CHECK(ej_parse(bad, strlen(bad), &t) == EMBER_ERR_FORMAT && !t);
    CHECK_MSG(strstr(ember_last_error(), "template:3:") != NULL, "%s", ember_last_error());
    const char *unclosed = "{% for x in xs %}no end";
    CHECK(ej_parse(unclosed, strlen(unclosed), &t) == EMBER_ERR_FORMAT);
    CHECK_MSG(strstr(ember_last_error(), "endfor") != NULL, "%s", ember_last_error());
    const char *unsupported[][2] = {
        {"{% include 'x.html' %}", "template:1:4: unsupported statement 'include'"},
        {"{% extends 'base' %}", "unsupported statement 'extends'"},
        {"{{ x|wordwrap }}", "template:1:6: unsupported filter 'wordwrap'"},
        {"{{ x is divisibleby }}", "unsupported test 'divisibleby'"},
        {"{{ 'unterminated }}", "unterminated string"},
        {"{{ x $ y }}", "unexpected character '$'"},
        {"{# never closed", "comment"},
    };
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        t = NULL;
        CHECK(ej_parse(unsupported[i][0], strlen(unsupported[i][0]), &t) != EMBER_OK && !t);
        CHECK_MSG(strstr(ember_last_error(), unsupported[i][1]) != NULL, "%s -> %s", unsupported[i][0],
                  ember_last_error());
    }
}

static void test_runtime_errors(void)
{
    EXPECT_ERROR("a{{ raise_exception('Roles must alternate') }}", NULL, "Roles must alternate");
    EXPECT_ERROR("\n{{ x + 1 }}", NULL, "template:2:6: Cannot perform operation + on undefined values");
    EXPECT_ERROR("{{ none.x + 'a' }}", NULL, "undefined values");
    EXPECT_ERROR("{{ 5() }}", NULL, "not a function");
    EXPECT_ERROR("{% for x in 5 %}{% endfor %}", NULL, "iterable");
    EXPECT_ERROR("{{ 'a' < 1 }}", NULL, "Unknown operator");
    EXPECT_ERROR("{{ {'a': 1}|tojson(indent='x') }}", NULL, "indent");
    EXPECT_ERROR("{{ x }}", "{\"true\": 1}", "already declared");
}

static void test_limits(void)
{
    /* unbounded recursion stops at the call-depth limit */
    EXPECT_ERROR("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, "nested deeper");
    /* so does absurdly nested syntax, at parse time */
    size_t depth = 5000;
    char *deep = malloc(2 * depth + 16);
    REQUIRE(deep);
    strcpy(deep, "{{ ");
    for (size_t i = 0; i < depth; i++) strcat(deep + 3 + i, "(");
    size_t n = strlen(deep);
    deep[n++] = '1';
    for (size_t i = 0; i < depth; i++) deep[n++] = ')';
    strcpy(deep + n, " }}");
    ej_template *t = NULL;
    CHECK(ej_parse(deep, strlen(deep), &t) == EMBER_ERR_FORMAT && !t);
    CHECK_MSG(strstr(ember_last_error(), "nesting deeper") != NULL, "%s", ember_last_error());
    free(deep);
    /* a runaway loop stops at the step or memory limit instead of hanging */
    EXPECT_ERROR("{% for a in range(9000000) %}{% for b in range(9000000) %}{% endfor %}{% endfor %}", NULL,
                 "more than");
}

static void test_chat_layer(void)
{
    et_chat_template *t = NULL;
    REQUIRE(et_chat_template_from_string("{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}"
                                         "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"
                                         "{{ tools is none }}{{ enable_thinking }}{{ eos_token }}",
                                         "<s>", NULL, &t) == EMBER_OK);
    cJSON *msgs = cJSON_Parse("[{\"role\": \"user\", \"content\": \"hi\"}]");
    et_chat_input in = {msgs, NULL, true, 0, NULL};
    char *out = NULL;
    CHECK(et_chat_render(t, &in, &out) == EMBER_OK);
    CHECK_MSG(out && !strcmp(out, "<s><user>hi<assistant>truefalse"), "%s", out ? out : ember_last_error());
    free(out);
    in.enable_thinking = -1;
    in.add_generation_prompt = false;
    CHECK(et_chat_render(t, &in, &out) == EMBER_OK);
    CHECK_MSG(out && !strcmp(out, "<s><user>hitrue"), "%s", out ? out : ember_last_error());
    free(out);
    cJSON_Delete(msgs);
    et_chat_template_free(t);
    CHECK(et_chat_template_load("/nonexistent-dir-for-test", &t) != EMBER_OK && !t);
}

int main(void)
{
    RUN(test_text_and_output);
    RUN(test_whitespace_control);
    RUN(test_numbers);
    RUN(test_if_and_tests);
    RUN(test_for_loops);
    RUN(test_set_and_namespace);
    RUN(test_macros);
    RUN(test_filters);
    RUN(test_strings_and_slices);
    RUN(test_syntax_errors);
    RUN(test_runtime_errors);
    RUN(test_limits);
    RUN(test_chat_layer);
    return check_summary();
}
