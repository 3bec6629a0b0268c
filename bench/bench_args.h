/* Command-line values shared by the benchmark programs of bench/: lists
 * of counts and weight formats. */
#ifndef EMBER_BENCH_ARGS_H
#define EMBER_BENCH_ARGS_H

#include <stdlib.h>
#include <string.h>

#include "ember.h"

/* "2,4,8" into out[0..): at most max values, each in [lo, hi]; the count,
 * or -1 for a malformed list. */
static inline int bench_int_list(const char *s, long lo, long hi, int *out, int max)
{
    int n = 0;
    for (const char *p = s; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < lo || v > hi || n == max || (*end && *end != ',')) return -1;
        out[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* A weight format's command-line name (none, f32, bf16, q8_0, q4_0) into
 * *t; -1 for another. */
static inline int bench_parse_dtype(const char *s, ember_type *t)
{
    static const struct {
        const char *name;
        ember_type type;
    } types[] = {{"none", EMBER_TYPE_NONE}, {"f32", EMBER_TYPE_F32}, {"bf16", EMBER_TYPE_BF16},
                 {"q8_0", EMBER_TYPE_Q8_0}, {"q4_0", EMBER_TYPE_Q4_0}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!strcmp(s, types[i].name)) {
            *t = types[i].type;
            return 0;
        }
    return -1;
}

#endif
