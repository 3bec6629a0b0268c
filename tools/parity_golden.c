#include "parity_golden.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long size;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)size + 1)) != NULL) {
        if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
            free(buf);
            buf = NULL;
        } else {
            buf[size] = '\0';
            *len = (size_t)size;
        }
    }
    fclose(f);
    return buf;
}

/* An array of integers into a malloc'd int32 array. */
static int int_array(const cJSON *a, int32_t **out, size_t *n)
{
    if (!cJSON_IsArray(a)) return -1;
    size_t count = (size_t)cJSON_GetArraySize(a), i = 0;
    int32_t *v = malloc((count ? count : 1) * sizeof *v);
    const cJSON *e;
    if (!v) return -1;
    cJSON_ArrayForEach(e, a) {
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 0 ||
            e->valuedouble > 2147483647.0) {
            free(v);
            return -1;
        }
        v[i++] = (int32_t)e->valuedouble;
    }
    *out = v;
    *n = count;
    return 0;
}

static int double_array(const cJSON *a, size_t want, double **out)
{
    if (!cJSON_IsArray(a) || (size_t)cJSON_GetArraySize(a) != want) return -1;
    double *v = malloc((want ? want : 1) * sizeof *v);
    size_t i = 0;
    const cJSON *e;
    if (!v) return -1;
    cJSON_ArrayForEach(e, a) {
        v[i++] = cJSON_IsNumber(e) ? e->valuedouble : NAN;
    }
    *out = v;
    return 0;
}

#define FAIL(...)                                  \
    do {                                           \
        snprintf(err, err_cap, __VA_ARGS__);       \
        goto fail;                                 \
    } while (0)

int golden_load(const char *path, golden *g, char *err, size_t err_cap)
{
    size_t len = 0, n = 0;
    int32_t *prompt = NULL;
    memset(g, 0, sizeof *g);
    char *text = read_file(path, &len);
    cJSON *root = NULL;
    if (!text) FAIL("%s: cannot read", path);
    root = cJSON_ParseWithLength(text, len);
    if (!root || !cJSON_IsObject(root)) FAIL("%s: not a JSON object", path);
    if (int_array(cJSON_GetObjectItem(root, "prompt_ids"), &prompt, &g->n_prompt) ||
        g->n_prompt == 0)
        FAIL("%s: 'prompt_ids' must be a non-empty list of ids", path);
    if (int_array(cJSON_GetObjectItem(root, "greedy_ids"), &g->greedy, &g->n_greedy))
        FAIL("%s: 'greedy_ids' must be a list of ids", path);
    if (int_array(cJSON_GetObjectItem(root, "logit_positions"), &g->positions, &g->n_pos) ||
        g->n_pos == 0)
        FAIL("%s: 'logit_positions' must be a non-empty list", path);

    g->n_seq = g->n_prompt + (g->n_greedy ? g->n_greedy - 1 : 0);
    g->seq = malloc(g->n_seq * sizeof *g->seq);
    if (!g->seq) FAIL("out of memory");
    memcpy(g->seq, prompt, g->n_prompt * sizeof *prompt);
    if (g->n_greedy) memcpy(g->seq + g->n_prompt, g->greedy, (g->n_greedy - 1) * sizeof *prompt);
    for (size_t i = 0; i < g->n_pos; i++)
        if ((size_t)g->positions[i] >= g->n_seq || (i && g->positions[i] <= g->positions[i - 1]))
            FAIL("%s: logit_positions must ascend and stay below %zu", path, g->n_seq);

    const cJSON *rows = cJSON_GetObjectItem(root, "logits");
    if (!cJSON_IsArray(rows) || (size_t)cJSON_GetArraySize(rows) != g->n_pos)
        FAIL("%s: 'logits' must have one row per logit position", path);
    g->vocab = cJSON_GetArraySize(cJSON_GetArrayItem(rows, 0));
    if (g->vocab <= 0) FAIL("%s: empty logits row", path);
    g->logits = malloc(g->n_pos * (size_t)g->vocab * sizeof *g->logits);
    if (!g->logits) FAIL("out of memory");
    const cJSON *row;
    cJSON_ArrayForEach(row, rows) {
        const cJSON *e;
        size_t j = 0;
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != g->vocab)
            FAIL("%s: logits row %zu does not have %d values", path, n, g->vocab);
        cJSON_ArrayForEach(e, row) {
            if (!cJSON_IsNumber(e)) FAIL("%s: logits row %zu has a non-number", path, n);
            g->logits[n * (size_t)g->vocab + j++] = (float)e->valuedouble;
        }
        n++;
    }
    const cJSON *floor_db = cJSON_GetObjectItem(root, "floor_snr_db");
    if (floor_db && double_array(floor_db, g->n_pos, &g->floor_db))
        FAIL("%s: 'floor_snr_db' must have one value per position", path);
    const cJSON *floor_agg = cJSON_GetObjectItem(root, "floor_snr_db_aggregate");
    g->floor_aggregate_db = NAN;
    if (floor_agg && !cJSON_IsNull(floor_agg)) {
        if (!cJSON_IsNumber(floor_agg)) FAIL("%s: 'floor_snr_db_aggregate' must be a number", path);
        g->floor_aggregate_db = floor_agg->valuedouble;
    }
    const cJSON *gap = cJSON_GetObjectItem(root, "top2_gap");
    if (gap && double_array(gap, g->n_pos, &g->top2_gap))
        FAIL("%s: 'top2_gap' must have one value per position", path);

    free(prompt);
    cJSON_Delete(root);
    free(text);
    return 0;
fail:
    free(prompt);
    cJSON_Delete(root);
    free(text);
    golden_free(g);
    return -1;
}

void golden_free(golden *g)
{
    free(g->seq);
    free(g->greedy);
    free(g->positions);
    free(g->logits);
    free(g->floor_db);
    free(g->top2_gap);
    memset(g, 0, sizeof *g);
}
