/* Splitting a piece at its delimiter matches, by the five Hugging Face
 * behaviours. `seq` covers the whole piece in order: the matches and the
 * (non-empty) gaps between them, as tokenizers' find_matches builds it. */
#include "tokenizer/tok_internal.h"

static bool is_match(const tok_spans *seq, size_t i, bool invert)
{
    return seq->v[i].match != invert;
}

ember_status tok_split_by(const tok_piece *p, const tok_spans *seq, tok_split_behavior behavior,
                          bool invert, tok_pieces *out)
{
    ember_status st = EMBER_OK;
    size_t first_out = out->n;
    size_t carry = SIZE_MAX; /* MergedWithNext: start of a match joining the next span */
    for (size_t i = 0; i < seq->n && st == EMBER_OK; i++) {
        size_t a = seq->v[i].start, b = seq->v[i].end;
        bool m = is_match(seq, i, invert);
        bool prev_m = i > 0 && is_match(seq, i - 1, invert);
        bool next_m = i + 1 < seq->n && is_match(seq, i + 1, invert);
        switch (behavior) {
        case SPLIT_REMOVED:
            if (!m) st = tok_pieces_push(out, a, b - a, p->raw_bytes, 0);
            break;
        case SPLIT_ISOLATED:
            st = tok_pieces_push(out, a, b - a, p->raw_bytes, 0);
            break;
        case SPLIT_MERGED_WITH_PREVIOUS:
            if (m && i > 0 && !prev_m && out->n > first_out)
                out->v[out->n - 1].len = b - out->v[out->n - 1].off;
            else
                st = tok_pieces_push(out, a, b - a, p->raw_bytes, 0);
            break;
        case SPLIT_MERGED_WITH_NEXT:
            if (m && i + 1 < seq->n && !next_m) {
                carry = a;
            } else {
                size_t s = carry != SIZE_MAX ? carry : a;
                carry = SIZE_MAX;
                st = tok_pieces_push(out, s, b - s, p->raw_bytes, 0);
            }
            break;
        case SPLIT_CONTIGUOUS:
            if (i > 0 && m == prev_m && out->n > first_out)
                out->v[out->n - 1].len = b - out->v[out->n - 1].off;
            else
                st = tok_pieces_push(out, a, b - a, p->raw_bytes, 0);
            break;
        }
    }
    if (st == EMBER_OK && out->n > first_out && out->v[first_out].off == p->off)
        out->v[first_out].first = p->first;
    return st;
}
