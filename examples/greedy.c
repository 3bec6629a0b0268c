/* The smallest ember program: load a Spark-X2.5 checkpoint, feed token ids,
 * and decode greedily from the logits. Build it against an installed ember:
 *
 *     cc greedy.c $(pkg-config --cflags --libs ember) -o greedy
 *     ./greedy MODEL_DIR 1,2,3 8
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ember.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL_DIR [ID,ID,...] [N]\n", argv[0]);
        return 2;
    }
    int32_t ids[64];
    size_t n = 0;
    for (char *p = argc > 2 ? argv[2] : "1"; *p && n < 64; p += *p == ',') ids[n++] = (int32_t)strtol(p, &p, 10);
    int steps = argc > 3 ? atoi(argv[3]) : 8;

    ember_model_params mp = ember_model_default_params();
    ember_model *model = NULL;
    ember_session *s = NULL;
    if (ember_model_load(argv[1], &mp, &model) != EMBER_OK) goto fail;
    ember_session_params sp = ember_session_default_params();
    sp.max_context = (int32_t)n + steps + 1;
    if (ember_session_create(model, &sp, &s) != EMBER_OK) goto fail;
    if (ember_session_prefill(s, ids, n) != EMBER_OK) goto fail;
    int32_t vocab = ember_model_vocab_size(model);
    for (int i = 0; i < steps; i++) {
        const float *logits = ember_session_logits(s);
        int32_t best = 0;
        for (int32_t v = 1; v < vocab; v++)
            if (logits[v] > logits[best]) best = v;
        printf(i ? ",%d" : "%d", best);
        if (ember_session_decode(s, best) != EMBER_OK) goto fail;
    }
    printf("\n");
    ember_session_free(s);
    ember_model_free(model);
    return 0;
fail:
    fprintf(stderr, "greedy: %s\n", ember_last_error());
    ember_session_free(s);
    ember_model_free(model);
    return 1;
}
