/* The sampling and stopping options shared by generate and chat, parsed
 * into the public API's form: see cli_public.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_public.h"
#include "ember.h"

const char cli_sampling_usage[] =
    "  sampling (defaults: the model's generation_config.json; greedy without one):\n"
    "  --greedy                 temperature 0\n"
    "  --temp T --top-k K --top-p P --min-p P\n"
    "  --repeat-penalty R       Hugging Face repetition penalty (1 = off)\n"
    "  --presence-penalty P --frequency-penalty F   OpenAI penalties (0 = off)\n"
    "  --logit-bias ID=BIAS     added to a token's logit (repeatable)\n"
    "  --seed S                 sampler seed (default 0)\n"
    "  --stop TEXT              stop string (repeatable)\n"
    "  --speculate ngram        speculative decoding with prompt lookup: the same ids,\n"
    "                           several per pass over the weights when the reply copies\n"
    "                           its context\n"
    "  --speculate draft:DIR    the same with a draft model's guesses (a smaller\n"
    "                           checkpoint with the same tokenizer)\n"
    "  --draft-max K            the most drafted ids per verify pass, 1-64 (default 8;\n"
    "                           the count adapts to the acceptance)\n";

static int parse_float(const char *arg, float *out)
{
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || *end) return -1;
    *out = (float)v;
    return 0;
}

void cli_sampling_init(cli_sampling *s)
{
    memset(s, 0, sizeof *s);
}

int cli_sampling_option(int c, const char *arg, const char *cmd, cli_sampling *s)
{
    float v;
    switch (c) {
    case CLI_OPT_GREEDY: s->temperature = 0.0f; s->set.temperature = 1; return 1;
    case CLI_OPT_TEMP: if (parse_float(arg, &v) || v < 0) break; s->temperature = v; s->set.temperature = 1; return 1;
    case CLI_OPT_TOP_K: if (parse_float(arg, &v) || v < 0) break; s->top_k = (int32_t)v; s->set.top_k = 1; return 1;
    case CLI_OPT_TOP_P: if (parse_float(arg, &v) || v <= 0 || v > 1) break; s->top_p = v; s->set.top_p = 1; return 1;
    case CLI_OPT_MIN_P: if (parse_float(arg, &v) || v < 0 || v > 1) break; s->min_p = v; s->set.min_p = 1; return 1;
    case CLI_OPT_REPEAT_PENALTY: if (parse_float(arg, &v) || v <= 0) break; s->repetition_penalty = v; s->set.repetition_penalty = 1; return 1;
    case CLI_OPT_PRESENCE_PENALTY: if (parse_float(arg, &v)) break; s->presence_penalty = v; return 1;
    case CLI_OPT_FREQUENCY_PENALTY: if (parse_float(arg, &v)) break; s->frequency_penalty = v; return 1;
    case CLI_OPT_SEED: {
        char *end;
        unsigned long long seed = strtoull(arg, &end, 10);
        if (end == arg || *end) break;
        s->seed = seed;
        return 1;
    }
    case CLI_OPT_STOP:
        if (!*arg || s->n_stop == CLI_MAX_STOP) break;
        s->stop[s->n_stop++] = arg;
        return 1;
    case CLI_OPT_LOGIT_BIAS: {
        char *end;
        long id = strtol(arg, &end, 10);
        if (end == arg || *end != '=' || id < 0 || s->n_bias == CLI_MAX_BIAS || parse_float(end + 1, &v)) break;
        s->bias[s->n_bias].id = (int32_t)id;
        s->bias[s->n_bias++].bias = v;
        return 1;
    }
    case CLI_OPT_SPECULATE:
        if (!strncmp(arg, "draft:", 6) && arg[6]) {
            s->speculate = EMBER_SPECULATE_DRAFT;
            s->draft_dir = arg + 6;
            return 1;
        }
        if (strcmp(arg, "ngram")) break;
        s->speculate = EMBER_SPECULATE_NGRAM;
        s->draft_dir = NULL;
        return 1;
    case CLI_OPT_DRAFT_MAX:
        if (parse_float(arg, &v) || v < 1 || v > 64 || v != (int32_t)v) break;
        s->draft_max = (int32_t)v;
        return 1;
    default: return 0;
    }
    fprintf(stderr, "ember %s: bad value '%s' for a sampling option\n", cmd, arg ? arg : "");
    return -1;
}

ember_status cli_sampling_generate_params(const cli_sampling *s, const char *model_dir,
                                          ember_generate_params *p)
{
    ember_status st = EMBER_OK;
    if (model_dir) st = ember_generate_params_from_model(model_dir, p);
    else p->temperature = 0.0f;
    if (st) return st;
    if (s->set.temperature) p->temperature = s->temperature;
    if (s->set.top_k) p->top_k = s->top_k;
    if (s->set.top_p) p->top_p = s->top_p;
    if (s->set.min_p) p->min_p = s->min_p;
    if (s->set.repetition_penalty) p->repetition_penalty = s->repetition_penalty;
    p->presence_penalty = s->presence_penalty;
    p->frequency_penalty = s->frequency_penalty;
    p->seed = s->seed;
    p->logit_bias = s->bias;
    p->n_logit_bias = s->n_bias;
    p->stop = s->stop;
    p->n_stop = s->n_stop;
    p->speculate = s->speculate;
    p->draft_max = s->draft_max;
    return EMBER_OK;
}

ember_status cli_sampling_load_draft(const cli_sampling *s, const ember_model_params *mp,
                                     ember_model **out, ember_generate_params *p)
{
    *out = NULL;
    if (!s->draft_dir) return EMBER_OK;
    ember_status st = ember_model_load(s->draft_dir, mp, out);
    p->draft_model = *out;
    return st;
}

void cli_print_speculation(FILE *f, const ember_generate_result *r)
{
    if (!r->verify_steps) return;
    fprintf(f, "speculate: %d verify passes, %.2f ids per pass; %d of %d drafted ids accepted (%.1f%%)",
            r->verify_steps, (double)r->completion_tokens / r->verify_steps, r->accepted_tokens,
            r->drafted_tokens, r->drafted_tokens ? 100.0 * r->accepted_tokens / r->drafted_tokens : 0.0);
    if (r->draft_prefill_tokens) fprintf(f, "; the draft model ran %d prompt tokens", r->draft_prefill_tokens);
    fprintf(f, "\n");
}
