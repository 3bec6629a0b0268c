/* A minimal test harness. Each tests/unit/test_*.c is its own binary: it
 * lists its cases in main() with RUN(case) and returns check_summary().
 * Each case prints "PASS name" or "FAIL name: where what"; tests/run_all.sh
 * counts them. */
#ifndef EMBER_TESTS_CHECK_H
#define EMBER_TESTS_CHECK_H

#include <stdio.h>

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

#endif
