/* The drafting side of speculative decoding: the n-gram drafter (prompt
 * lookup, src/speculate/ngram.c) on hand-made sequences whose answer is
 * read off by eye, and the draft-length policy (src/speculate/adapt.c):
 * drafts that keep being accepted push K to draft_max, drafts that keep
 * being rejected take it down to 1. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "speculate/adapt.h"
#include "speculate/ngram.h"

#define N(a) (sizeof(a) / sizeof *(a))

static int same(const int32_t *a, const int32_t *b, int32_t n)
{
    return !memcmp(a, b, (size_t)n * sizeof *a);
}

static void drafts_the_continuation_of_the_latest_match(void)
{
    int32_t out[8];
    /* [1 2] occurs ending at 2 and at 5: the later one is followed by 4 1 2 */
    const int32_t seq[] = {1, 2, 3, 1, 2, 4, 1, 2};
    const int32_t want[] = {4, 1, 2};
    CHECK(ngram_draft(seq, N(seq), 8, out) == 3 && same(out, want, 3));
    CHECK(ngram_draft(seq, N(seq), 2, out) == 2 && same(out, want, 2)); /* capped at max_draft */
}

static void prefers_the_longest_suffix(void)
{
    int32_t out[8];
    /* [4 1 2] matches only at the start (then 30); [1 2] alone would pick 31 */
    const int32_t seq[] = {4, 1, 2, 30, 5, 1, 2, 31, 4, 1, 2};
    CHECK(ngram_draft(seq, N(seq), 1, out) == 1 && out[0] == 30);
    /* only the last token recurs: a unigram match */
    const int32_t uni[] = {7, 8, 9, 7};
    const int32_t want[] = {8, 9, 7};
    CHECK(ngram_draft(uni, N(uni), 5, out) == 3 && same(out, want, 3));
}

static void no_match_drafts_nothing(void)
{
    int32_t out[8] = {0};
    const int32_t seq[] = {1, 2, 3, 4, 5};
    CHECK(ngram_draft(seq, N(seq), 8, out) == 0);
    CHECK(ngram_draft(seq, 1, 8, out) == 0);  /* nothing earlier to match */
    CHECK(ngram_draft(seq, 0, 8, out) == 0);
    CHECK(ngram_draft(seq, N(seq), 0, out) == 0);
    const int32_t run[] = {6, 6, 6}; /* [6 6] ends at 2: one token follows it */
    CHECK(ngram_draft(run, N(run), 8, out) == 1 && out[0] == 6);
}

static void accepted_drafts_grow_k(void)
{
    spec_adapt a;
    spec_adapt_init(&a, 8, 0.1f);
    for (int i = 0; i < 100; i++) spec_adapt_update(&a, spec_adapt_k(&a), spec_adapt_k(&a));
    CHECK_MSG(spec_adapt_k(&a) == 8, "k %d at rate %.3f", spec_adapt_k(&a), spec_adapt_rate(&a));
    CHECK(spec_adapt_rate(&a) > 0.95);
    spec_adapt_init(&a, 3, 0.1f);
    for (int i = 0; i < 100; i++) spec_adapt_update(&a, 3, 3);
    CHECK(spec_adapt_k(&a) == 3); /* never past draft_max */
}

static void rejected_drafts_shrink_k(void)
{
    spec_adapt a;
    spec_adapt_init(&a, 8, 0.1f);
    for (int i = 0; i < 100; i++) spec_adapt_update(&a, spec_adapt_k(&a), 0);
    CHECK_MSG(spec_adapt_k(&a) == 1, "k %d at rate %.3f", spec_adapt_k(&a), spec_adapt_rate(&a));
    CHECK(spec_adapt_rate(&a) < 0.05);
    const double before = spec_adapt_rate(&a);
    spec_adapt_update(&a, 0, 0); /* a step without drafts says nothing */
    CHECK(spec_adapt_rate(&a) == before);
}

static void half_acceptance_settles_between(void)
{
    /* every step: the first half of the drafts agree, then one is wrong */
    spec_adapt a;
    spec_adapt_init(&a, 8, 0.1f);
    for (int i = 0; i < 200; i++) {
        int32_t k = spec_adapt_k(&a);
        spec_adapt_update(&a, k, k / 2);
    }
    int32_t k = spec_adapt_k(&a);
    CHECK_MSG(k > 1 && k < 8, "k %d at rate %.3f", k, spec_adapt_rate(&a));
    /* E(K) at rate 1/2: 1 + 1/2 + 1/4 = 1.75 tokens for K = 2 with free rows */
    CHECK(spec_expected_speedup(0.5, 2, 1) == 1.75);
    CHECK(spec_expected_speedup(0.5, 2, 1.5) == 1.75 / 1.5);
}

static void measured_cost_shortens_drafts(void)
{
    /* at acceptance ~0.8 cheap rows (the prior) favour long drafts; passes
     * measured to cost nearly a step per row favour short ones */
    spec_adapt a;
    spec_adapt_init(&a, 8, 0.1f);
    for (int i = 0; i < 100; i++) spec_adapt_update(&a, 5, i % 5 ? 5 : 4);
    const int32_t prior_k = spec_adapt_k(&a);
    CHECK(fabs(spec_adapt_cost(&a, 3) - 1.3) < 1e-6);
    for (int32_t rows = 1; rows <= 9; rows++) spec_adapt_time(&a, rows, 10.0 * rows);
    CHECK(spec_adapt_cost(&a, 3) == 4.0);
    const int32_t measured_k = spec_adapt_k(&a);
    CHECK_MSG(prior_k == 8 && measured_k < prior_k, "k %d with the prior, %d measured (rate %.2f)",
              prior_k, measured_k, spec_adapt_rate(&a));
    spec_adapt_time(&a, 4, 10.0 * 4 + 10.0); /* a running mean, not the last time */
    CHECK(spec_adapt_cost(&a, 3) > 4.0 && spec_adapt_cost(&a, 3) < 5.0);
}

int main(void)
{
    RUN(drafts_the_continuation_of_the_latest_match);
    RUN(prefers_the_longest_suffix);
    RUN(no_match_drafts_nothing);
    RUN(accepted_drafts_grow_k);
    RUN(rejected_drafts_shrink_k);
    RUN(half_acceptance_settles_between);
    RUN(measured_cost_shortens_drafts);
    return check_summary();
}
