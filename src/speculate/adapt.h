/* How many tokens to draft next, from the acceptance measured so far.
 *
 * Model: each drafted token is accepted with probability a once the ones
 * before it were (drafts go wrong where the copy diverges, and everything
 * after that is wrong too). A step with K drafts then yields
 * E(K) = 1 + a + ... + a^K tokens and costs 1 + row_cost*K one-row steps
 * (the weights are read once for all rows; each extra row adds its
 * attention and its share of the compute), so K is chosen to maximise
 * E(K) / (1 + row_cost*K) within 1..draft_max. a is estimated as
 * accepted / (accepted + rejected) over recent steps (each step's counts
 * decay geometrically, so the policy follows a conversation that moves
 * from copying to free text and back). */
#ifndef EMBER_SPECULATE_ADAPT_H
#define EMBER_SPECULATE_ADAPT_H

#include <stdint.h>

typedef struct spec_adapt {
    int32_t draft_max;
    float row_cost;           /* an extra verify row's cost, in one-row steps */
    double accepted, rejected; /* decayed counts of drafts (a rejection ends a step) */
} spec_adapt;

/* Starts at an acceptance of 2/3 (a copied span usually goes on). */
void spec_adapt_init(spec_adapt *a, int32_t draft_max, float row_cost);

/* The measured acceptance estimate a, in (0, 1). */
double spec_adapt_rate(const spec_adapt *a);

/* The drafts to ask for next: argmax of E(K) / (1 + row_cost*K), 1..draft_max. */
int32_t spec_adapt_k(const spec_adapt *a);

/* One verify step: `drafted` tokens were proposed and the first `accepted`
 * of them agreed (0 <= accepted <= drafted). A step with no drafts tells
 * nothing about acceptance and changes nothing. */
void spec_adapt_update(spec_adapt *a, int32_t drafted, int32_t accepted);

/* E(K) / (1 + row_cost*K) at acceptance `rate`: what spec_adapt_k maximises. */
double spec_expected_speedup(double rate, int32_t k, double row_cost);

#endif
