#include "check.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int check_failures_in_case;
static int cases_passed, cases_failed;
static const char *current_case;

void check_report(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    if (check_failures_in_case == 0)
        printf("FAIL %s: ", current_case);
    else
        printf("     %s: ", current_case);
    printf("%s:%d: ", file, line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    check_failures_in_case++;
}

void check_run(const char *name, void (*fn)(void))
{
    current_case = name;
    check_failures_in_case = 0;
    fn();
    if (check_failures_in_case == 0) {
        printf("PASS %s\n", name);
        cases_passed++;
    } else {
        cases_failed++;
    }
    fflush(stdout);
}

int check_summary(void)
{
    return cases_failed ? 1 : 0;
}

int check_error_has(const char *needle) { return strstr(ember_last_error(), needle) != NULL; }
