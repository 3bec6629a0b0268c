/* The `ember` command line: one subcommand per file, dispatched by ember.c.
 * cli_public.h is the part over the public API; this header adds what the
 * commands that still use internals (bench, parity, serve, tts, chat,
 * generate's sampling) take from src/. */
#ifndef EMBER_TOOLS_CLI_H
#define EMBER_TOOLS_CLI_H

#include "base/stats.h"
#include "cli_public.h"
#include "edge/profile.h"
#include "text/textgen.h"

/* The same for a Qwen3-TTS directory: the talker and predictor's format
 * goes to *weight_type unless it is set (an explicit --dtype). Returns 1
 * with the profile in *out (its CPUs place the threads; NULL: the caller
 * places nothing, and explain says only the format), 0 when there is none
 * (off, or a directory the profile cannot read), -1 with a message. */
int cli_apply_tts_profile(const char *dir, cli_profile mode, const char *cmd, ember_type *weight_type,
                          edge_profile *out);

/* Sampling and stop options (cli_sampling.c), for generate and chat. */
enum {
    CLI_OPT_GREEDY = 1100,
    CLI_OPT_TEMP,
    CLI_OPT_TOP_K,
    CLI_OPT_TOP_P,
    CLI_OPT_MIN_P,
    CLI_OPT_REPEAT_PENALTY,
    CLI_OPT_PRESENCE_PENALTY,
    CLI_OPT_FREQUENCY_PENALTY,
    CLI_OPT_SEED,
    CLI_OPT_STOP,
    CLI_OPT_LOGIT_BIAS
};
#define CLI_SAMPLING_OPTIONS                                                               \
    {"greedy", no_argument, 0, CLI_OPT_GREEDY}, {"temp", required_argument, 0, CLI_OPT_TEMP}, \
        {"top-k", required_argument, 0, CLI_OPT_TOP_K},                                   \
        {"top-p", required_argument, 0, CLI_OPT_TOP_P},                                   \
        {"min-p", required_argument, 0, CLI_OPT_MIN_P},                                   \
        {"repeat-penalty", required_argument, 0, CLI_OPT_REPEAT_PENALTY},                 \
        {"presence-penalty", required_argument, 0, CLI_OPT_PRESENCE_PENALTY},             \
        {"frequency-penalty", required_argument, 0, CLI_OPT_FREQUENCY_PENALTY},           \
        {"seed", required_argument, 0, CLI_OPT_SEED},                                     \
        {"stop", required_argument, 0, CLI_OPT_STOP},                                     \
        {"logit-bias", required_argument, 0, CLI_OPT_LOGIT_BIAS}
enum { CLI_MAX_STOP = 16, CLI_MAX_BIAS = 64 };
typedef struct cli_sampling {
    float temperature, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty;
    int32_t top_k;
    struct { int temperature, top_k, top_p, min_p, repetition_penalty; } set; /* given on the command line */
    unsigned long long seed;
    const char *stop[CLI_MAX_STOP];
    size_t n_stop;
    et_logit_bias bias[CLI_MAX_BIAS];
    size_t n_bias;
} cli_sampling;
extern const char cli_sampling_usage[];
void cli_sampling_init(cli_sampling *s);
/* 1: handled, 0: not a sampling option, -1: bad value (message printed). */
int cli_sampling_option(int c, const char *arg, const char *cmd, cli_sampling *s);
/* The textgen params: the model's defaults (model_dir NULL: greedy), then
 * what the command line set. p keeps pointers into s. */
ember_status cli_sampling_params(const cli_sampling *s, const char *model_dir, et_textgen_params *p);

#endif
