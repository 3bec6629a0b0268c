/* Tokenizer benchmark (single thread): `build/bench/tokenizer_encode
 * TOKENIZER CORPUS.jsonl` loads the tokenizer three times and encodes every
 * JSON string of the corpus three times, then prints JSON with the median
 * load time and encode throughput. bench/tokenizer.sh runs it next to
 * transformers.js on the same corpus. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "tokenizer/tokenizer.h"

static double median3(double a, double b, double c)
{
    return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TOKENIZER CORPUS.jsonl\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", argv[2]);
        return 1;
    }
    size_t n_docs = 0, cap = 1024, bytes = 0, n_tokens = 0;
    char **docs = malloc(cap * sizeof *docs);
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t got;
    while (docs && (got = getline(&line, &line_cap, f)) > 0) {
        cJSON *j = cJSON_ParseWithLength(line, (size_t)got);
        if (cJSON_IsString(j)) {
            if (n_docs == cap) {
                char **grown = realloc(docs, 2 * cap * sizeof *docs);
                if (!grown) break;
                docs = grown;
                cap *= 2;
            }
            docs[n_docs++] = strdup(j->valuestring);
            bytes += strlen(j->valuestring);
        }
        cJSON_Delete(j);
    }
    free(line);
    fclose(f);

    double load[3], enc[3];
    et_tokenizer *tok = NULL;
    for (int r = 0; r < 3; r++) {
        et_tokenizer_free(tok);
        double t0 = bench_now_s();
        if (et_tokenizer_load(argv[1], &tok) != EMBER_OK) {
            fprintf(stderr, "error: %s\n", ember_last_error());
            return 1;
        }
        load[r] = bench_now_s() - t0;
    }
    for (int r = 0; r < 3; r++) {
        double t0 = bench_now_s();
        n_tokens = 0;
        for (size_t i = 0; i < n_docs; i++) {
            int32_t *ids;
            size_t n;
            if (et_tokenizer_encode(tok, docs[i], strlen(docs[i]), false, &ids, &n) != EMBER_OK) {
                fprintf(stderr, "error: %s\n", ember_last_error());
                return 1;
            }
            n_tokens += n;
            free(ids);
        }
        enc[r] = bench_now_s() - t0;
    }
    double enc_s = median3(enc[0], enc[1], enc[2]);
    printf("{\"corpus_bytes\": %zu, \"documents\": %zu, \"tokens\": %zu, \"ember_mb_s\": %.2f, \"load_ms\": %.1f}\n",
           bytes, n_docs, n_tokens, (double)bytes / 1e6 / enc_s, 1e3 * median3(load[0], load[1], load[2]));
    for (size_t i = 0; i < n_docs; i++) free(docs[i]);
    free(docs);
    et_tokenizer_free(tok);
    return 0;
}
