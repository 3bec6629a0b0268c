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

const char *check_model_dir(void)
{
    const char *d = getenv("EMBER_TEST_MODEL");
    return d && *d ? d : "models/tiny";
}

ember_model *check_load_model(const char *dir, ember_type weights)
{
    ember_model_params mp = ember_model_default_params();
    mp.weight_type = weights;
    ember_model *m = NULL;
    if (ember_model_load(dir, &mp, &m) != EMBER_OK) printf("     cannot load %s: %s\n", dir, ember_last_error());
    return m;
}

void check_random_ids(int32_t *ids, int n, int32_t vocab, unsigned seed)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        ids[i] = (int32_t)((seed >> 8) % (unsigned)vocab);
    }
}
