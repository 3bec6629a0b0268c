/* Generated text -> content, reasoning and tool calls, incrementally.
 *
 * Text deltas go in; events come out through a callback:
 *   CONTENT    text safe to stream: never a piece that could still turn out
 *              to be the start of a tag ("<tool_ca" is held back until the
 *              next delta decides). A block that fails to parse (bad JSON, no
 *              name, unterminated at the end of the stream) comes out as
 *              CONTENT, verbatim with its tags, with `malformed` set.
 *   REASONING  the text inside <think>...</think> (Qwen3 and Spark emit their
 *              reasoning there), without the tags.
 *   CALL       one complete tool call: id ("call_0", "call_1", ... per
 *              parser), name, and the arguments as a compact JSON object.
 * The concatenated events do not depend on how the text is split into deltas.
 * Text between and around blocks (newlines included) is content, as is; the
 * server decides what to trim. Inside reasoning only </think> is a tag.
 *
 * Formats are pluggable: a format names its open and close tags and parses
 * the text between them. "hermes" is <tool_call>{"name": ..., "arguments":
 * {...}}</tool_call>, as Qwen2.5/Qwen3 and Spark-X2.5 emit it. */
#ifndef EMBER_GENERATE_TOOLCALL_H
#define EMBER_GENERATE_TOOLCALL_H

#include <stddef.h>

#include "base/status.h"

typedef struct et_toolcall_format {
    const char *name;
    const char *open_tag;
    const char *close_tag;
    /* Parses the text between the tags into a malloc'ed name and compact
     * JSON object of arguments; EMBER_ERR_FORMAT (message set) if malformed. */
    ember_status (*parse)(const char *body, size_t len, char **name, char **arguments);
} et_toolcall_format;

/* "hermes"; NULL for a name ember does not know. */
const et_toolcall_format *et_toolcall_format_named(const char *name);

typedef struct et_toolcall_params {
    const et_toolcall_format *format; /* NULL: hermes */
    int split_reasoning;              /* <think>...</think> as REASONING (default 1) */
    int start_in_reasoning;           /* the prompt ended inside <think> (default 0) */
} et_toolcall_params;

void et_toolcall_params_default(et_toolcall_params *p);

typedef enum et_toolcall_kind {
    ET_TOOLCALL_CONTENT,
    ET_TOOLCALL_REASONING,
    ET_TOOLCALL_CALL
} et_toolcall_kind;

/* Pointers are valid during the callback only. */
typedef struct et_toolcall_event {
    et_toolcall_kind kind;
    const char *text; /* CONTENT, REASONING: not NUL-terminated */
    size_t len;
    int malformed;    /* CONTENT: an unparsable block, verbatim */
    const char *why;  /* malformed: what was wrong */
    const char *id;   /* CALL: NUL-terminated */
    const char *name;
    const char *arguments;
} et_toolcall_event;

/* For sinks that keep a reply: appends len bytes of an event's text to *buf
 * (NUL-terminated, *n bytes long, grown with realloc). -1 when out of
 * memory, *buf then unchanged. */
int et_toolcall_text_append(char **buf, size_t *n, const char *text, size_t len);

/* Returns non-zero to stop: the feed then returns EMBER_ERR_CANCELLED. */
typedef int (*et_toolcall_sink)(void *user, const et_toolcall_event *event);

typedef struct et_toolcall et_toolcall;

ember_status et_toolcall_create(const et_toolcall_params *p, et_toolcall **out);
void et_toolcall_free(et_toolcall *tc);

ember_status et_toolcall_feed(et_toolcall *tc, const char *delta, size_t n, et_toolcall_sink sink, void *user);

/* The end of the stream: held-back text is flushed, an open block is
 * reported malformed, an open think block ends as reasoning. */
ember_status et_toolcall_finish(et_toolcall *tc, et_toolcall_sink sink, void *user);

/* Back to the start (a new response); call ids start again at call_0. */
void et_toolcall_reset(et_toolcall *tc);

#endif
