/* The incremental tool-call and reasoning splitter (see toolcall.h), and the
 * hermes format.
 *
 * Unprocessed text lives in one buffer. Outside a block, the earliest tag in
 * it splits it: the text before is emitted, and a suffix that could still
 * grow into a tag is held back. Inside a call block the buffer keeps the
 * block from its open tag on, so an unparsable or unterminated block can be
 * given back verbatim. */
#include "generate/toolcall.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- hermes: <tool_call>{"name": ..., "arguments": {...}}</tool_call> ---- */

static char *dup_cjson_print(const cJSON *item)
{
    char *printed = cJSON_PrintUnformatted(item);
    if (!printed) return NULL;
    char *copy = strdup(printed);
    cJSON_free(printed);
    return copy;
}

/* The arguments as a compact JSON object: an object as is, a string holding
 * an object decoded (some models quote them), absent or null as {}. */
static ember_status hermes_arguments(const cJSON *args, char **out)
{
    if (!args || cJSON_IsNull(args)) {
        *out = strdup("{}");
        return *out ? EMBER_OK : ember_fail(EMBER_ERR_NO_MEMORY, "tool call: out of memory");
    }
    if (cJSON_IsString(args)) {
        cJSON *decoded = cJSON_Parse(args->valuestring);
        if (!decoded || !cJSON_IsObject(decoded)) {
            cJSON_Delete(decoded);
            return ember_fail(EMBER_ERR_FORMAT, "tool call: \"arguments\" is a string that is not a JSON object");
        }
        *out = dup_cjson_print(decoded);
        cJSON_Delete(decoded);
    } else if (cJSON_IsObject(args)) {
        *out = dup_cjson_print(args);
    } else {
        return ember_fail(EMBER_ERR_FORMAT, "tool call: \"arguments\" is neither an object nor a string");
    }
    return *out ? EMBER_OK : ember_fail(EMBER_ERR_NO_MEMORY, "tool call: out of memory");
}

static ember_status hermes_parse(const char *body, size_t len, char **name, char **arguments)
{
    *name = *arguments = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!root) return ember_fail(EMBER_ERR_FORMAT, "tool call: the block is not valid JSON");
    size_t used = end && end >= body && end <= body + len ? (size_t)(end - body) : len;
    for (size_t i = used; i < len; i++) {
        if (!strchr(" \t\r\n", body[i]) || body[i] == '\0') {
            cJSON_Delete(root);
            return ember_fail(EMBER_ERR_FORMAT, "tool call: text after the JSON object (byte %zu)", i);
        }
    }
    ember_status st = EMBER_OK;
    const cJSON *jname = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (!cJSON_IsObject(root)) {
        st = ember_fail(EMBER_ERR_FORMAT, "tool call: the block is not a JSON object");
    } else if (!cJSON_IsString(jname) || !jname->valuestring[0]) {
        st = ember_fail(EMBER_ERR_FORMAT, "tool call: no \"name\" string");
    } else {
        st = hermes_arguments(cJSON_GetObjectItemCaseSensitive(root, "arguments"), arguments);
        if (st == EMBER_OK) {
            *name = strdup(jname->valuestring);
            if (!*name) st = ember_fail(EMBER_ERR_NO_MEMORY, "tool call: out of memory");
        }
    }
    cJSON_Delete(root);
    if (st != EMBER_OK) {
        free(*arguments);
        *arguments = NULL;
    }
    return st;
}

static const et_toolcall_format hermes = {"hermes", "<tool_call>", "</tool_call>", hermes_parse};

const et_toolcall_format *et_toolcall_format_named(const char *name)
{
    if (name && strcmp(name, hermes.name) == 0) return &hermes;
    return NULL;
}

/* ---- the splitter ---------------------------------------------------------- */

static const char think_open[] = "<think>", think_close[] = "</think>";

typedef enum mode { IN_CONTENT, IN_REASONING, IN_CALL } mode;

struct et_toolcall {
    const et_toolcall_format *fmt;
    size_t open_len, close_len;
    int split_reasoning, start_in_reasoning;
    mode mode;
    char *buf; /* unprocessed text; IN_CALL: the block from its open tag on */
    size_t len, cap;
    size_t call_scanned; /* IN_CALL: bytes of buf searched for the close tag */
    unsigned long n_calls;
};

void et_toolcall_params_default(et_toolcall_params *p)
{
    p->format = NULL;
    p->split_reasoning = 1;
    p->start_in_reasoning = 0;
}

void et_toolcall_reset(et_toolcall *tc)
{
    if (!tc) return;
    tc->mode = tc->split_reasoning && tc->start_in_reasoning ? IN_REASONING : IN_CONTENT;
    tc->len = tc->call_scanned = 0;
    tc->n_calls = 0;
}

ember_status et_toolcall_create(const et_toolcall_params *p, et_toolcall **out)
{
    if (!p || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "tool calls: NULL argument");
    *out = NULL;
    const et_toolcall_format *fmt = p->format ? p->format : &hermes;
    if (!fmt->open_tag || !fmt->open_tag[0] || !fmt->close_tag || !fmt->close_tag[0] || !fmt->parse)
        return ember_fail(EMBER_ERR_INVALID_ARG, "tool calls: format '%s' lacks tags or a parser",
                          fmt->name ? fmt->name : "?");
    et_toolcall *tc = calloc(1, sizeof *tc);
    if (!tc) return ember_fail(EMBER_ERR_NO_MEMORY, "tool calls: out of memory");
    tc->fmt = fmt;
    tc->open_len = strlen(fmt->open_tag);
    tc->close_len = strlen(fmt->close_tag);
    tc->split_reasoning = p->split_reasoning;
    tc->start_in_reasoning = p->start_in_reasoning;
    tc->cap = 256;
    tc->buf = malloc(tc->cap);
    if (!tc->buf) {
        free(tc);
        return ember_fail(EMBER_ERR_NO_MEMORY, "tool calls: out of memory");
    }
    et_toolcall_reset(tc);
    *out = tc;
    return EMBER_OK;
}

void et_toolcall_free(et_toolcall *tc)
{
    if (!tc) return;
    free(tc->buf);
    free(tc);
}

static ember_status deliver(et_toolcall_sink sink, void *user, const et_toolcall_event *ev)
{
    if (sink && sink(user, ev)) return ember_fail(EMBER_ERR_CANCELLED, "tool calls: cancelled by the caller");
    return EMBER_OK;
}

static ember_status emit_text(et_toolcall_kind kind, const char *text, size_t len, const char *why,
                              et_toolcall_sink sink, void *user)
{
    if (!len) return EMBER_OK;
    et_toolcall_event ev = {kind, text, len, why != NULL, why, NULL, NULL, NULL};
    return deliver(sink, user, &ev);
}

/* A whole block (open tag, body, close tag) at block[0..len): a call, or the
 * block verbatim as malformed content. */
static ember_status emit_block(et_toolcall *tc, const char *block, size_t len, et_toolcall_sink sink, void *user)
{
    char *name = NULL, *args = NULL;
    ember_status st = tc->fmt->parse(block + tc->open_len, len - tc->open_len - tc->close_len, &name, &args);
    if (st == EMBER_ERR_FORMAT) return emit_text(ET_TOOLCALL_CONTENT, block, len, ember_last_error(), sink, user);
    if (st != EMBER_OK) return st;
    char id[32];
    snprintf(id, sizeof id, "call_%lu", tc->n_calls++);
    et_toolcall_event ev = {ET_TOOLCALL_CALL, NULL, 0, 0, NULL, id, name, args};
    st = deliver(sink, user, &ev);
    free(name);
    free(args);
    return st;
}

/* The longest proper prefix of `tag` that ends text[0..n). */
static size_t partial_tag(const char *text, size_t n, const char *tag)
{
    size_t k = strlen(tag) - 1;
    if (k > n) k = n;
    for (; k > 0; k--)
        if (memcmp(text + n - k, tag, k) == 0) return k;
    return 0;
}

/* Processes as much of buf as can be decided; `at_end`: nothing more comes. */
static ember_status process(et_toolcall *tc, int at_end, et_toolcall_sink sink, void *user)
{
    size_t pos = 0;
    ember_status st = EMBER_OK;
    while (st == EMBER_OK) {
        const char *rest = tc->buf + pos;
        size_t n = tc->len - pos;
        if (tc->mode == IN_CALL) {
            /* the close tag may straddle what was searched: back up by its length */
            size_t from = tc->call_scanned > tc->open_len + tc->close_len ? tc->call_scanned - tc->close_len
                                                                          : tc->open_len;
            const char *at = from <= n ? memmem(rest + from, n - from, tc->fmt->close_tag, tc->close_len) : NULL;
            if (!at) {
                tc->call_scanned = n;
                break;
            }
            size_t block = (size_t)(at - rest) + tc->close_len;
            pos += block;
            tc->mode = IN_CONTENT;
            tc->call_scanned = 0;
            st = emit_block(tc, rest, block, sink, user);
            continue;
        }
        /* the tags that end this mode, and what each starts */
        const char *tags[2];
        mode next[2];
        int n_tags = 0;
        if (tc->mode == IN_REASONING) {
            tags[n_tags] = think_close, next[n_tags++] = IN_CONTENT;
        } else {
            tags[n_tags] = tc->fmt->open_tag, next[n_tags++] = IN_CALL;
            if (tc->split_reasoning) tags[n_tags] = think_open, next[n_tags++] = IN_REASONING;
        }
        et_toolcall_kind kind = tc->mode == IN_REASONING ? ET_TOOLCALL_REASONING : ET_TOOLCALL_CONTENT;
        const char *first = NULL;
        int which = -1;
        for (int t = 0; t < n_tags; t++) {
            const char *at = memmem(rest, n, tags[t], strlen(tags[t]));
            if (at && (!first || at < first)) first = at, which = t;
        }
        if (!first) {
            size_t hold = 0;
            for (int t = 0; t < n_tags && !at_end; t++) {
                size_t k = partial_tag(rest, n, tags[t]);
                if (k > hold) hold = k;
            }
            pos += n - hold;
            st = emit_text(kind, rest, n - hold, NULL, sink, user);
            break;
        }
        size_t before = (size_t)(first - rest);
        tc->mode = next[which];
        /* a call block keeps its open tag in the buffer; a think tag is dropped */
        pos += before + (tc->mode == IN_CALL ? 0 : strlen(tags[which]));
        st = emit_text(kind, rest, before, NULL, sink, user);
    }
    memmove(tc->buf, tc->buf + pos, tc->len - pos);
    tc->len -= pos;
    return st;
}

ember_status et_toolcall_feed(et_toolcall *tc, const char *delta, size_t n, et_toolcall_sink sink, void *user)
{
    if (!tc || (n && !delta)) return ember_fail(EMBER_ERR_INVALID_ARG, "tool calls: NULL argument");
    if (tc->len + n > tc->cap) {
        size_t cap = tc->cap;
        while (cap < tc->len + n) cap *= 2;
        char *b = realloc(tc->buf, cap);
        if (!b) return ember_fail(EMBER_ERR_NO_MEMORY, "tool calls: out of memory for %zu bytes", cap);
        tc->buf = b;
        tc->cap = cap;
    }
    if (n) memcpy(tc->buf + tc->len, delta, n);
    tc->len += n;
    return process(tc, 0, sink, user);
}

ember_status et_toolcall_finish(et_toolcall *tc, et_toolcall_sink sink, void *user)
{
    if (!tc) return ember_fail(EMBER_ERR_INVALID_ARG, "tool calls: NULL argument");
    ember_status st = process(tc, 1, sink, user);
    if (st == EMBER_OK && tc->mode == IN_CALL) {
        char why[96];
        snprintf(why, sizeof why, "tool call: no %s before the end of the text", tc->fmt->close_tag);
        st = emit_text(ET_TOOLCALL_CONTENT, tc->buf, tc->len, why, sink, user);
        tc->len = 0;
        tc->call_scanned = 0;
        tc->mode = IN_CONTENT;
    }
    return st;
}

int et_toolcall_text_append(char **buf, size_t *n, const char *text, size_t len)
{
    char *grown = realloc(*buf, *n + len + 1);
    if (!grown) return -1;
    memcpy(grown + *n, text, len);
    *n += len;
    grown[*n] = '\0';
    *buf = grown;
    return 0;
}
