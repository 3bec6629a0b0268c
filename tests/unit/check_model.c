/* The model helpers of check.h, apart from the harness itself (check.c):
 * the NEON cross build links check.c with the kernels alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

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

double check_rel_l2(const float *a, const float *b, int32_t n)
{
    double num = 0, den = 0;
    for (int32_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / den);
}
