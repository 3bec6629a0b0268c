/* `ember bench llm --batch 1,4,8`: the aggregate decode rate of B sessions
 * stepping together through one llm_batch, which is what the server's engine
 * does for B concurrent streams, without HTTP, scheduling or sampling in the
 * way. Each step multiplies every weight matrix once for all B rows, so the
 * ratio of B rows to one row, measured here in the same run, is the
 * batching speedup (issue 7's benchmark asks for >= 2.5x at 8 streams).
 *
 * Every session gets its own prompt (prefilled through the batch, as the
 * server does), then one untimed warm-up step, then --reps runs of --gen
 * steps; the step time is their median. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "llm/batch.h"

ember_status cli_bench_batch(ember_model *model, const ember_session_params *base, int threads,
                             int32_t rows, int n_prompt, int n_gen, int reps,
                             cli_batch_result *out)
{
    ember_session_params sp = *base;
    sp.n_threads = 1;     /* the batch's pool runs everything */
    sp.prefill_chunk = 1; /* and its scratch runs the prefills */
    sp.max_context = n_prompt + 1 + n_gen * reps + 1;
    int32_t vocab = ember_model_vocab_size(model);
    llm_batch *batch = NULL;
    ember_session **s = calloc((size_t)rows, sizeof *s);
    int32_t *ids = calloc((size_t)rows, sizeof *ids);
    int32_t *prompt = calloc((size_t)n_prompt + 1, sizeof *prompt);
    double steps[16];
    ember_status st = EMBER_ERR_NO_MEMORY;
    if (!s || !ids || !prompt) goto done;
    st = llm_batch_create(model, rows, threads, &batch);
    for (int32_t i = 0; i < rows && st == EMBER_OK; i++) {
        for (int j = 0; j <= n_prompt; j++) prompt[j] = (int32_t)((j * 7919 + i * 104729 + 13) % vocab);
        st = ember_session_create(model, &sp, &s[i]);
        if (st == EMBER_OK && n_prompt) st = llm_batch_prefill(batch, s[i], prompt, (size_t)n_prompt);
        ids[i] = prompt[n_prompt];
    }
    if (st == EMBER_OK) st = llm_batch_decode(batch, s, ids, rows); /* warm-up */
    for (int r = 0; r < reps && st == EMBER_OK; r++) {
        double t0 = cli_now_s();
        for (int g = 0; g < n_gen && st == EMBER_OK; g++) {
            for (int32_t i = 0; i < rows; i++) ids[i] = (ids[i] * 31 + 7 + i) % vocab;
            st = llm_batch_decode(batch, s, ids, rows);
        }
        steps[r] = (cli_now_s() - t0) / n_gen;
    }
    if (st == EMBER_OK) {
        out->rows = rows;
        out->step_ms = 1e3 * cli_median(steps, reps);
        out->tok_s = rows / (out->step_ms / 1e3);
    }
done:
    for (int32_t i = 0; s && i < rows; i++) ember_session_free(s[i]);
    llm_batch_free(batch);
    free(s);
    free(ids);
    free(prompt);
    return st;
}
