/* How many tokens to draft next, from the acceptance measured so far.
 *
 * Model: each drafted token is accepted with probability a once the ones
 * before it were (drafts go wrong where the copy diverges, and everything
 * after that is wrong too). A step with K drafts then yields
 * E(K) = 1 + a + ... + a^K tokens and costs 1 + row_cost*K one-row steps
 * (the weights are read once for all rows; each extra row adds its
 * attention and its share of the compute), so K is chosen to maximise
 * E(K) / cost(K) within 1..draft_max. cost(K) is measured: the time of
 * passes of K+1 rows over that of one-row passes (running means), and the
 * prior 1 + row_cost*K until both are seen (a small model held in cache is
 * compute-bound and pays nearly per row; a large one streaming its weights
 * pays little). a is estimated as
 * accepted / (accepted + rejected) over recent steps (each step's counts
 * decay geometrically, so the policy follows a conversation that moves
 * from copying to free text and back). */
#ifndef EMBER_SPECULATE_ADAPT_H
#define EMBER_SPECULATE_ADAPT_H

#include <stdint.h>

enum { SPEC_MAX_DRAFT = 64 };

typedef struct spec_adapt {
    int32_t draft_max;
    float row_cost;           /* the prior: an extra row's cost, in one-row passes */
    double accepted, rejected; /* decayed counts of drafts (a rejection ends a step) */
    double pass_ms[SPEC_MAX_DRAFT + 2]; /* by rows: running mean of a pass's time; 0 unseen */
} spec_adapt;

/* Starts at an acceptance of 2/3 (a copied span usually goes on) and no
 * timing; draft_max is capped at SPEC_MAX_DRAFT. */
void spec_adapt_init(spec_adapt *a, int32_t draft_max, float row_cost);

/* The measured acceptance estimate a, in (0, 1). */
double spec_adapt_rate(const spec_adapt *a);

/* The drafts to ask for next: argmax of E(K) / cost(K), 1..draft_max. */
int32_t spec_adapt_k(const spec_adapt *a);

/* One verify step: `drafted` tokens were proposed and the first `accepted`
 * of them agreed (0 <= accepted <= drafted). A step with no drafts tells
 * nothing about acceptance and changes nothing. */
void spec_adapt_update(spec_adapt *a, int32_t drafted, int32_t accepted);

/* A verify pass over `rows` rows took ms milliseconds. */
void spec_adapt_time(spec_adapt *a, int32_t rows, double ms);

/* cost(K): a pass with K drafts over a one-row pass, measured or prior. */
double spec_adapt_cost(const spec_adapt *a, int32_t k);

/* E(K) / cost at acceptance `rate`: what spec_adapt_k maximises. */
double spec_expected_speedup(double rate, int32_t k, double cost);

#endif
