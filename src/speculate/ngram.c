#include "speculate/ngram.h"

#include <string.h>

/* Where the most recent earlier occurrence of seq's last g tokens ends
 * (the index just past it), or 0 when there is none. */
static size_t last_occurrence(const int32_t *seq, size_t n, size_t g)
{
    const int32_t *suffix = seq + n - g;
    /* an occurrence ending at `end` (exclusive) is earlier when end < n */
    for (size_t end = n - 1; end >= g; end--)
        if (seq[end - 1] == suffix[g - 1] && !memcmp(seq + end - g, suffix, g * sizeof *seq))
            return end;
    return 0;
}

int32_t ngram_draft(const int32_t *seq, size_t n, int32_t max_draft, int32_t *out)
{
    if (!seq || max_draft < 1) return 0;
    for (size_t g = NGRAM_DRAFT_MAX_N; g >= NGRAM_DRAFT_MIN_N; g--) {
        if (n < g + 1) continue; /* the suffix and at least one token before it */
        size_t end = last_occurrence(seq, n, g);
        if (!end) continue;
        size_t avail = n - end;
        int32_t k = avail < (size_t)max_draft ? (int32_t)avail : max_draft;
        memcpy(out, seq + end, (size_t)k * sizeof *out);
        return k;
    }
    return 0;
}
