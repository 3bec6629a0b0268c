#include "speculate/adapt.h"

#include <string.h>

/* Each step's counts weigh this much less per later step: about the last
 * twenty steps decide. */
#define SPEC_DECAY 0.95

/* A pass time's running mean weighs a new one this much (after the first):
 * steady against a shared machine's noise, quick enough to follow a context
 * that grows. */
#define SPEC_TIME_WEIGHT 0.1

void spec_adapt_init(spec_adapt *a, int32_t draft_max, float row_cost)
{
    memset(a, 0, sizeof *a);
    a->draft_max = draft_max < 1 ? 1 : draft_max > SPEC_MAX_DRAFT ? SPEC_MAX_DRAFT : draft_max;
    a->row_cost = row_cost > 0 ? row_cost : 0;
    a->accepted = 2;
    a->rejected = 1;
}

double spec_adapt_rate(const spec_adapt *a) { return a->accepted / (a->accepted + a->rejected); }

double spec_expected_speedup(double rate, int32_t k, double cost)
{
    double tokens = 0, term = 1;
    for (int32_t i = 0; i <= k; i++, term *= rate) tokens += term;
    return tokens / cost;
}

void spec_adapt_time(spec_adapt *a, int32_t rows, double ms)
{
    if (rows < 1 || rows > SPEC_MAX_DRAFT + 1 || !(ms > 0)) return;
    double *m = &a->pass_ms[rows];
    *m = *m > 0 ? *m + SPEC_TIME_WEIGHT * (ms - *m) : ms;
}

double spec_adapt_cost(const spec_adapt *a, int32_t k)
{
    if (k >= 0 && k <= SPEC_MAX_DRAFT && a->pass_ms[1] > 0 && a->pass_ms[k + 1] > 0)
        return a->pass_ms[k + 1] / a->pass_ms[1];
    return 1 + a->row_cost * k;
}

int32_t spec_adapt_k(const spec_adapt *a)
{
    const double rate = spec_adapt_rate(a);
    int32_t best = 1;
    double best_gain = spec_expected_speedup(rate, 1, spec_adapt_cost(a, 1));
    for (int32_t k = 2; k <= a->draft_max; k++) {
        double gain = spec_expected_speedup(rate, k, spec_adapt_cost(a, k));
        if (gain > best_gain) {
            best = k;
            best_gain = gain;
        }
    }
    return best;
}

void spec_adapt_update(spec_adapt *a, int32_t drafted, int32_t accepted)
{
    if (drafted < 1) return;
    if (accepted < 0) accepted = 0;
    if (accepted > drafted) accepted = drafted;
    a->accepted = a->accepted * SPEC_DECAY + accepted;
    a->rejected = a->rejected * SPEC_DECAY + (accepted < drafted);
    /* keep the estimate inside (0, 1) whatever the history */
    if (a->rejected < 1e-3) a->rejected = 1e-3;
    if (a->accepted < 1e-3) a->accepted = 1e-3;
}
