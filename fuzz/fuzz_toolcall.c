/* libFuzzer target: the tool-call / reasoning splitter. The first byte picks
 * the options and the second seeds where the rest is cut into deltas. Any
 * input must give events without a crash, leak or undefined behaviour; the
 * events must not depend on the cutting (compared as a running hash of the
 * event stream with adjacent text of one kind joined); every call must carry
 * a non-empty name and arguments that are a JSON object. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "generate/toolcall.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct digest {
    uint64_t h;
    int last; /* kind of the text run being hashed, -1 after a call */
} digest;

static void mix_bytes(digest *d, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) d->h = (d->h ^ b[i]) * 0x100000001b3ull;
}

static int on_event(void *user, const et_toolcall_event *ev)
{
    digest *d = user;
    if (ev->kind == ET_TOOLCALL_CALL) {
        if (!ev->name[0]) __builtin_trap();
        cJSON *args = cJSON_Parse(ev->arguments);
        if (!cJSON_IsObject(args)) __builtin_trap();
        cJSON_Delete(args);
        mix_bytes(d, "\x01", 1);
        mix_bytes(d, ev->id, strlen(ev->id) + 1);
        mix_bytes(d, ev->name, strlen(ev->name) + 1);
        mix_bytes(d, ev->arguments, strlen(ev->arguments) + 1);
        d->last = -1;
        return 0;
    }
    int kind = (int)ev->kind * 2 + ev->malformed;
    if (ev->len == 0 || (ev->malformed && !ev->why)) __builtin_trap();
    if (kind != d->last) {
        unsigned char marker[2] = {2, (unsigned char)kind};
        mix_bytes(d, marker, 2);
        d->last = kind;
    }
    mix_bytes(d, ev->text, ev->len);
    return 0;
}

static uint64_t run(const et_toolcall_params *p, const char *text, size_t n, uint32_t cut_seed)
{
    et_toolcall *tc = NULL;
    if (et_toolcall_create(p, &tc) != EMBER_OK) __builtin_trap();
    digest d = {0xcbf29ce484222325ull, -1};
    size_t at = 0;
    while (at < n) {
        size_t step = n - at;
        if (cut_seed) {
            cut_seed = cut_seed * 1664525u + 1013904223u;
            size_t want = 1 + (cut_seed >> 24) % 9;
            if (want < step) step = want;
        }
        if (et_toolcall_feed(tc, text + at, step, on_event, &d) != EMBER_OK) __builtin_trap();
        at += step;
    }
    if (et_toolcall_finish(tc, on_event, &d) != EMBER_OK) __builtin_trap();
    et_toolcall_free(tc);
    return d.h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    et_toolcall_params p;
    et_toolcall_params_default(&p);
    p.split_reasoning = !(data[0] & 1);
    p.start_in_reasoning = (data[0] >> 1) & 1;
    const char *text = (const char *)data + 2;
    size_t n = size - 2;
    uint64_t whole = run(&p, text, n, 0);
    if (run(&p, text, n, 0x9e37u + data[1]) != whole) __builtin_trap();
    if (run(&p, text, n, 1u + data[1] * 7919u) != whole) __builtin_trap();
    return 0;
}
