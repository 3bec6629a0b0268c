/* The n-gram drafter of speculative decoding (prompt lookup): an agent's
 * next tokens are often a copy of something already in its context (a name
 * from the user's words, a JSON key, a line of code), so the continuation of
 * the most recent earlier occurrence of the last few tokens is a cheap
 * guess that the verify step then checks. It needs no model and no state
 * besides the sequence itself. */
#ifndef EMBER_SPECULATE_NGRAM_H
#define EMBER_SPECULATE_NGRAM_H

#include <stddef.h>
#include <stdint.h>

/* The longest and shortest suffix the lookup tries to match. */
enum { NGRAM_DRAFT_MAX_N = 3, NGRAM_DRAFT_MIN_N = 1 };

/* Drafts up to max_draft tokens to follow seq[0..n) (prompt and generated
 * ids): for g = NGRAM_DRAFT_MAX_N down to NGRAM_DRAFT_MIN_N, the last g
 * tokens are looked for earlier in seq, the most recent occurrence first,
 * and the tokens after the first occurrence found (at most max_draft, and
 * never past seq's end) go to out. Returns how many were written: 0 when no
 * suffix occurs earlier. One backward scan per g: O(n) per step. */
int32_t ngram_draft(const int32_t *seq, size_t n, int32_t max_draft, int32_t *out);

#endif
