/* The incremental stop-string matcher (see stop.h). */
#include "generate/stop.h"

#include <stdlib.h>
#include <string.h>

struct et_stop {
    char **strings;
    size_t *lens;
    size_t n, max_len;
    char *buf;       /* text seen and not yet returned, after `emitted` bytes already returned */
    size_t len, cap;
    size_t emitted;  /* bytes at the front of buf returned by the last call */
    int stopped;
};

void et_stop_free(et_stop *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) free(s->strings[i]);
    free(s->strings);
    free(s->lens);
    free(s->buf);
    free(s);
}

ember_status et_stop_create(const char *const *strings, size_t n, et_stop **out)
{
    if (!out || (n && !strings)) return ember_fail(EMBER_ERR_INVALID_ARG, "stop strings: NULL argument");
    *out = NULL;
    for (size_t i = 0; i < n; i++)
        if (!strings[i] || !strings[i][0])
            return ember_fail(EMBER_ERR_INVALID_ARG, "stop strings: [%zu] is empty", i);
    et_stop *s = calloc(1, sizeof *s);
    if (!s) return ember_fail(EMBER_ERR_NO_MEMORY, "stop strings: out of memory");
    s->strings = calloc(n ? n : 1, sizeof *s->strings);
    s->lens = calloc(n ? n : 1, sizeof *s->lens);
    s->cap = 64;
    s->buf = malloc(s->cap);
    if (!s->strings || !s->lens || !s->buf) {
        et_stop_free(s);
        return ember_fail(EMBER_ERR_NO_MEMORY, "stop strings: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        s->lens[i] = strlen(strings[i]);
        s->strings[i] = malloc(s->lens[i] + 1);
        if (!s->strings[i]) {
            s->n = i;
            et_stop_free(s);
            return ember_fail(EMBER_ERR_NO_MEMORY, "stop strings: out of memory");
        }
        memcpy(s->strings[i], strings[i], s->lens[i] + 1);
        if (s->lens[i] > s->max_len) s->max_len = s->lens[i];
    }
    s->n = n;
    *out = s;
    return EMBER_OK;
}

void et_stop_reset(et_stop *s)
{
    if (!s) return;
    s->len = s->emitted = 0;
    s->stopped = 0;
}

int et_stop_is_stop_id(const int32_t *stop_ids, size_t n, int32_t id)
{
    for (size_t i = 0; i < n; i++)
        if (stop_ids[i] == id) return 1;
    return 0;
}

/* The longest k < the longest stop string such that the last k bytes of
 * buf[0..n) begin some stop string. */
static size_t held_back(const et_stop *s, const char *buf, size_t n)
{
    size_t k = s->max_len ? s->max_len - 1 : 0;
    if (k > n) k = n;
    for (; k > 0; k--)
        for (size_t i = 0; i < s->n; i++)
            if (s->lens[i] > k && memcmp(buf + n - k, s->strings[i], k) == 0) return k;
    return 0;
}

ember_status et_stop_feed(et_stop *s, const char *delta, size_t n, et_stop_result *out)
{
    if (!s || !out || (n && !delta)) return ember_fail(EMBER_ERR_INVALID_ARG, "stop strings: NULL argument");
    *out = (et_stop_result){"", 0, s->stopped, -1};
    if (s->stopped) return EMBER_OK;
    /* drop what the last call returned, keep the held-back tail */
    memmove(s->buf, s->buf + s->emitted, s->len - s->emitted);
    s->len -= s->emitted;
    s->emitted = 0;
    if (s->len + n > s->cap) {
        size_t cap = s->cap;
        while (cap < s->len + n) cap *= 2;
        char *b = realloc(s->buf, cap);
        if (!b) return ember_fail(EMBER_ERR_NO_MEMORY, "stop strings: out of memory for %zu bytes", cap);
        s->buf = b;
        s->cap = cap;
    }
    if (n) memcpy(s->buf + s->len, delta, n);
    s->len += n;

    /* A match cannot lie inside the held-back tail alone (it would have been
     * found by the last call), nor start before it (that beginning would have
     * been held back: the tail is the longest suffix that begins a stop
     * string). So the first match in buf is the first in the text. */
    size_t best_end = (size_t)-1, best_start = 0;
    int which = -1;
    for (size_t i = 0; i < s->n; i++) {
        const char *at = memmem(s->buf, s->len, s->strings[i], s->lens[i]);
        if (!at) continue;
        size_t start = (size_t)(at - s->buf), end = start + s->lens[i];
        if (end < best_end || (end == best_end && start < best_start)) {
            best_end = end;
            best_start = start;
            which = (int)i;
        }
    }
    if (which >= 0) {
        s->stopped = 1;
        s->emitted = s->len; /* everything is consumed; the tail is dropped */
        *out = (et_stop_result){s->buf, best_start, 1, which};
        return EMBER_OK;
    }
    s->emitted = s->len - held_back(s, s->buf, s->len);
    out->text = s->buf;
    out->len = s->emitted;
    return EMBER_OK;
}

void et_stop_finish(et_stop *s, et_stop_result *out)
{
    *out = (et_stop_result){"", 0, s ? s->stopped : 0, -1};
    if (!s || s->stopped) return;
    memmove(s->buf, s->buf + s->emitted, s->len - s->emitted);
    s->len -= s->emitted;
    s->emitted = s->len;
    out->text = s->buf;
    out->len = s->len;
}
