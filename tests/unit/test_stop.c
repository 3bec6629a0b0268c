/* Stop strings over streamed text: what is emitted before a match, what is
 * held back, and the same result however the text is split into deltas (at
 * every byte position, and one byte at a time). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "generate/stop.h"

typedef struct outcome {
    char text[512];
    size_t len;
    int stopped, which;
} outcome;

static void take(outcome *o, const et_stop_result *r)
{
    if (o->len + r->len < sizeof o->text) {
        memcpy(o->text + o->len, r->text, r->len);
        o->len += r->len;
    }
    o->text[o->len] = '\0';
    if (r->stopped && !o->stopped) {
        o->stopped = 1;
        o->which = r->which;
    }
}

/* Feeds text cut at the given positions, then finishes. */
static int run(et_stop *s, const char *text, const size_t *cuts, int n_cuts, outcome *o)
{
    memset(o, 0, sizeof *o);
    o->which = -1;
    et_stop_reset(s);
    size_t len = strlen(text), at = 0;
    et_stop_result r;
    for (int i = 0; i <= n_cuts; i++) {
        size_t end = i < n_cuts ? cuts[i] : len;
        if (et_stop_feed(s, text + at, end - at, &r) != EMBER_OK) return 0;
        take(o, &r);
        at = end;
    }
    et_stop_finish(s, &r);
    take(o, &r);
    return 1;
}

static void expect(const char *const *stops, size_t n_stops, const char *text, const char *want, int want_which)
{
    et_stop *s = NULL;
    REQUIRE(et_stop_create(stops, n_stops, &s) == EMBER_OK);
    outcome o;
    size_t len = strlen(text);
    REQUIRE(run(s, text, NULL, 0, &o));
    CHECK_MSG(strcmp(o.text, want) == 0 && o.which == want_which && o.stopped == (want_which >= 0),
              "'%s': emitted '%s' (stop %d), want '%s' (stop %d)", text, o.text, o.which, want, want_which);
    for (size_t cut = 0; cut <= len; cut++) {
        REQUIRE(run(s, text, &cut, 1, &o));
        CHECK_MSG(strcmp(o.text, want) == 0 && o.which == want_which, "'%s' split at %zu: '%s' (stop %d)", text, cut,
                  o.text, o.which);
    }
    size_t cuts[256];
    REQUIRE(len < 256);
    for (size_t i = 0; i < len; i++) cuts[i] = i + 1;
    REQUIRE(run(s, text, cuts, (int)len, &o));
    CHECK_MSG(strcmp(o.text, want) == 0 && o.which == want_which, "'%s' byte at a time: '%s' (stop %d)", text, o.text,
              o.which);
    et_stop_free(s);
}

static void text_before_the_stop_is_emitted(void)
{
    const char *stops[] = {"END", "\n\nUser:"};
    expect(stops, 2, "Hello END world", "Hello ", 0);
    expect(stops, 2, "Answer: 42\n\nUser: more", "Answer: 42", 1);
    expect(stops, 2, "ENDgame", "", 0);
    expect(stops, 2, "no stop here, EN", "no stop here, EN", -1);
    expect(stops, 2, "\n\nUse", "\n\nUse", -1);
    expect(stops, 0, "anything END", "anything END", -1);
}

static void first_completed_match_wins(void)
{
    /* "bc" is complete one byte before "abcd" could be */
    const char *stops[] = {"abcd", "bc"};
    expect(stops, 2, "xabcd", "xa", 1);
    /* at the same end, the longer (earlier starting) one */
    const char *same_end[] = {"cd", "bcd"};
    expect(same_end, 2, "abcde", "a", 1);
    /* a held-back prefix that overlaps itself */
    const char *overlap[] = {"aab"};
    expect(overlap, 1, "aaab", "a", 0);
    expect(overlap, 1, "aaaa", "aaaa", -1);
}

static void utf8_stop_strings(void)
{
    const char *stops[] = {"\xe6\x97\xa5\xe6\x9c\xac"}; /* 日本 */
    expect(stops, 1, "\xe3\x81\x93\xe3\x82\x93\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "\xe3\x81\x93\xe3\x82\x93", 0);
    expect(stops, 1, "\xe6\x97\xa5\xe6\x97\xa5\xe6\x9c\xac", "\xe6\x97\xa5", 0);
}

static void holds_back_only_what_could_match(void)
{
    const char *stops[] = {"</answer>"};
    et_stop *s = NULL;
    REQUIRE(et_stop_create(stops, 1, &s) == EMBER_OK);
    et_stop_result r;
    REQUIRE(et_stop_feed(s, "text </ans", 10, &r) == EMBER_OK);
    CHECK(r.len == 5 && memcmp(r.text, "text ", 5) == 0 && !r.stopped);
    REQUIRE(et_stop_feed(s, "wer", 3, &r) == EMBER_OK); /* "</answer" still begins the stop */
    CHECK(r.len == 0 && !r.stopped);
    REQUIRE(et_stop_feed(s, "!", 1, &r) == EMBER_OK); /* now it cannot */
    CHECK(r.len == 9 && memcmp(r.text, "</answer!", 9) == 0);
    REQUIRE(et_stop_feed(s, "ok</answer> tail", 16, &r) == EMBER_OK);
    CHECK(r.len == 2 && memcmp(r.text, "ok", 2) == 0 && r.stopped && r.which == 0);
    REQUIRE(et_stop_feed(s, "more", 4, &r) == EMBER_OK);
    CHECK(r.len == 0 && r.stopped);
    et_stop_finish(s, &r);
    CHECK(r.len == 0 && r.stopped);
    et_stop_free(s);
}

static void stop_ids_and_bad_input(void)
{
    const int32_t ids[] = {151645, 151643};
    CHECK(et_stop_is_stop_id(ids, 2, 151643));
    CHECK(!et_stop_is_stop_id(ids, 2, 0));
    CHECK(!et_stop_is_stop_id(NULL, 0, 5));
    et_stop *s = NULL;
    const char *empty[] = {"ok", ""};
    CHECK(et_stop_create(empty, 2, &s) == EMBER_ERR_INVALID_ARG && s == NULL);
    const char *null_entry[] = {NULL};
    CHECK(et_stop_create(null_entry, 1, &s) == EMBER_ERR_INVALID_ARG);
}

int main(void)
{
    RUN(text_before_the_stop_is_emitted);
    RUN(first_completed_match_wins);
    RUN(utf8_stop_strings);
    RUN(holds_back_only_what_could_match);
    RUN(stop_ids_and_bad_input);
    return check_summary();
}
