/* A golden file written by reference/golden.py:
 *   {"prompt_ids": [...], "greedy_ids": [...], "logit_positions": [...],
 *    "logits": [[vocab floats], ...], "floor_snr_db": [...] (optional),
 *    "floor_snr_db_aggregate": DB (optional),
 *    "top2_gap": [...] (optional)}
 * Positions index the teacher-forced sequence prompt_ids + greedy_ids[:-1];
 * the row at position p holds the logits that predict token p + 1. */
#ifndef EMBER_TOOLS_PARITY_GOLDEN_H
#define EMBER_TOOLS_PARITY_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

typedef struct golden {
    int32_t *seq;       /* prompt_ids + greedy_ids[:-1] */
    size_t n_seq, n_prompt, n_greedy;
    int32_t *greedy;    /* greedy_ids */
    int32_t *positions; /* ascending */
    size_t n_pos;
    int32_t vocab;      /* row length */
    float *logits;      /* n_pos x vocab */
    double *floor_db;   /* n_pos, or NULL when the file has none */
    double floor_aggregate_db; /* floor_snr_db_aggregate; NAN when the file has none */
    double *top2_gap;   /* n_pos, or NULL */
} golden;

/* Reads and validates the file; on error prints nothing and fills `err`. */
int golden_load(const char *path, golden *g, char *err, size_t err_cap);
void golden_free(golden *g);

#endif
