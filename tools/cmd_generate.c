/* `ember generate`: prompt ids in, generated ids out. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "ember.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: ember generate -m DIR --ids 1,2,3 [-n 32] [--greedy] [--print-ids]\n"
               "                      [--max-context N] [options]\n"
               "  prints the generated token ids; timing goes to stderr\n%s",
            cli_common_usage);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cmd_generate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"ids", required_argument, 0, 'i'},
        {"n", required_argument, 0, 'n'},     {"greedy", no_argument, 0, 'g'},
        {"print-ids", no_argument, 0, 'p'},   {"max-context", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'},        CLI_COMMON_OPTIONS,
        {0, 0, 0, 0}};
    const char *dir = NULL, *ids_text = NULL;
    long n_gen = 32;
    int print_ids = 0, max_context_given = 0;
    ember_model_params mp = ember_model_default_params();
    ember_session_params sp = ember_session_default_params();
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:n:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': dir = optarg; break;
        case 'i': ids_text = optarg; break;
        case 'n': n_gen = strtol(optarg, NULL, 10); break;
        case 'g': break; /* greedy is the only sampler until the sampler lands */
        case 'p': print_ids = 1; break;
        case 'c':
            sp.max_context = (int32_t)strtol(optarg, NULL, 10);
            max_context_given = 1;
            break;
        case 'h': usage(stdout); return 0;
        default: {
            int r = cli_common_option(c, optarg, "generate", &mp, &sp);
            if (r == 1) break;
            if (r == 0) usage(stderr);
            return 2;
        }
        }
    }
    if (!dir || !ids_text || n_gen < 0 || n_gen > 1000000) {
        usage(stderr);
        return 2;
    }
    int32_t *ids;
    size_t n_ids;
    if (cli_parse_ids(ids_text, &ids, &n_ids)) {
        fprintf(stderr, "ember generate: --ids must be a comma-separated list of token ids\n");
        return 2;
    }

    int rc = 1;
    ember_model *model = NULL;
    ember_session *s = NULL;
    double t0 = now_s();
    if (ember_model_load(dir, &mp, &model) != EMBER_OK) goto fail;
    /* Unless told otherwise, make room for the prompt and every new token. */
    if (!max_context_given && (size_t)sp.max_context < n_ids + (size_t)n_gen)
        sp.max_context = (int32_t)(n_ids + (size_t)n_gen);
    if (sp.max_context > ember_model_max_positions(model))
        sp.max_context = ember_model_max_positions(model);
    if (ember_session_create(model, &sp, &s) != EMBER_OK) goto fail;
    double t1 = now_s();
    if (ember_session_prefill(s, ids, n_ids) != EMBER_OK) goto fail;
    double t2 = now_s();
    for (long i = 0; i < n_gen; i++) {
        int32_t next = cli_argmax(ember_session_logits(s), ember_model_vocab_size(model));
        if (print_ids) printf(i ? ",%d" : "%d", next);
        fflush(stdout);
        if (i + 1 < n_gen && ember_session_decode(s, next) != EMBER_OK) goto fail;
    }
    if (print_ids) printf("\n");
    double t3 = now_s();
    fprintf(stderr, "load %.3f s, prefill %zu tokens %.3f s, decode %ld tokens %.3f s\n",
            t1 - t0, n_ids, t2 - t1, n_gen, t3 - t2);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "ember generate: %s\n", ember_last_error());
done:
    ember_session_free(s);
    ember_model_free(model);
    free(ids);
    return rc;
}
