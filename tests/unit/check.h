/* A minimal test harness. Each tests/unit/test_*.c is its own binary: it
 * lists its cases in main() with RUN(case) and returns check_summary().
 * Each case prints "PASS name" or "FAIL name: where what"; tests/run_all.sh
 * counts them. */
#ifndef EMBER_TESTS_CHECK_H
#define EMBER_TESTS_CHECK_H

#include <stdio.h>

#include "ember.h"

extern int check_failures_in_case;
void check_report(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void check_run(const char *name, void (*fn)(void));
int check_summary(void);

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) check_report(__FILE__, __LINE__, "%s", #cond);        \
    } while (0)

#define CHECK_MSG(cond, ...)                                               \
    do {                                                                   \
        if (!(cond)) check_report(__FILE__, __LINE__, __VA_ARGS__);        \
    } while (0)

/* Stops the case (not the binary) when a precondition fails. */
#define REQUIRE(cond)                                                      \
    do {                                                                   \
        if (!(cond)) { check_report(__FILE__, __LINE__, "%s", #cond); return; } \
    } while (0)

#define RUN(fn) check_run(#fn, fn)

/* ember_last_error() contains `needle`. */
int check_error_has(const char *needle);

/* A failing call: its status is `want` and its message contains `substr`. */
#define EXPECT_FAIL(expr, want, substr)                                                          \
    do {                                                                                         \
        ember_status s_ = (expr);                                                                \
        CHECK_MSG(s_ == (want), "%s: got '%s', want '%s' (message: %s)", #expr,                  \
                  ember_status_name(s_), ember_status_name(want), ember_last_error());           \
        CHECK_MSG(check_error_has(substr), "message '%s' lacks '%s'", ember_last_error(), (substr)); \
    } while (0)

/* The test model: $EMBER_TEST_MODEL, else the committed models/tiny. */
const char *check_model_dir(void);
/* Loads dir with its weights converted to `weights` (NONE: as stored);
 * NULL after printing why. */
ember_model *check_load_model(const char *dir, ember_type weights);
/* |a - b| / |b| over n floats (L2 norms): how logits runs compare. */
double check_rel_l2(const float *a, const float *b, int32_t n);

/* n pseudo-random ids in [0, vocab), the same for the same seed. */
void check_random_ids(int32_t *ids, int n, int32_t vocab, unsigned seed);

#endif
