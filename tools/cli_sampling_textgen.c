/* The command line's sampling options (cli_public.h) as textgen params, for
 * the commands that still drive textgen themselves: see cli.h. */
#include "cli.h"

/* textgen takes its own logit bias type: the command line's are copied
 * here (one command, one call; textgen copies them again at create). */
static et_logit_bias textgen_bias[CLI_MAX_BIAS];

ember_status cli_sampling_params(const cli_sampling *s, const char *model_dir,
                                 et_textgen_params *p)
{
    et_sampler_params *sp = &p->sampling;
    ember_status st = model_dir ? et_model_sampling_defaults(model_dir, sp) : EMBER_OK;
    if (!model_dir) sp->temperature = 0.0f;
    if (st) return st;
    if (s->set.temperature) sp->temperature = s->temperature;
    if (s->set.top_k) sp->top_k = s->top_k;
    if (s->set.top_p) sp->top_p = s->top_p;
    if (s->set.min_p) sp->min_p = s->min_p;
    if (s->set.repetition_penalty) sp->repetition_penalty = s->repetition_penalty;
    sp->presence_penalty = s->presence_penalty;
    sp->frequency_penalty = s->frequency_penalty;
    sp->seed = s->seed;
    for (size_t i = 0; i < s->n_bias; i++) {
        textgen_bias[i].id = s->bias[i].id;
        textgen_bias[i].bias = s->bias[i].bias;
    }
    sp->logit_bias = textgen_bias;
    sp->n_logit_bias = s->n_bias;
    p->stop = s->stop;
    p->n_stop = s->n_stop;
    return EMBER_OK;
}
