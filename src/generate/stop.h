/* Stop strings over streamed text, and stop ids.
 *
 * Generated text arrives in deltas (one detokenized token at a time). A stop
 * string can straddle deltas, so the matcher holds back the longest suffix of
 * what it has seen that is still the beginning of some stop string, and emits
 * the rest. When a stop string is complete, the text before it is emitted and
 * the stop string itself is not (OpenAI semantics), and everything after is
 * dropped. The match is the stop string that completes first in the text
 * (ties: the one that starts first), so the result does not depend on how the
 * text is split into deltas. */
#ifndef EMBER_GENERATE_STOP_H
#define EMBER_GENERATE_STOP_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct et_stop et_stop;

typedef struct et_stop_result {
    const char *text; /* safe to emit now; valid until the next call on the matcher */
    size_t len;
    int stopped;      /* a stop string matched: text is what came before it */
    int which;        /* the index of the stop string that matched, else -1 */
} et_stop_result;

/* Copies the n stop strings (none may be empty; n may be 0). */
ember_status et_stop_create(const char *const *strings, size_t n, et_stop **out);
void et_stop_free(et_stop *s);

/* Feeds a delta. Once stopped, every later feed returns stopped with no text. */
ember_status et_stop_feed(et_stop *s, const char *delta, size_t n, et_stop_result *out);

/* The end of the stream: the held-back text (if not stopped) is emitted. */
void et_stop_finish(et_stop *s, et_stop_result *out);

/* Forgets the text seen so far (a new request with the same stop strings). */
void et_stop_reset(et_stop *s);

/* Whether id is one of the n stop ids (EOS, <|im_end|>, ...): a short list,
 * scanned. */
int et_stop_is_stop_id(const int32_t *stop_ids, size_t n, int32_t id);

#endif
