/* The `ember` command line: one subcommand per file, dispatched by ember.c. */
#ifndef EMBER_TOOLS_CLI_H
#define EMBER_TOOLS_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "ember.h"

int cmd_generate(int argc, char **argv);
int cmd_parity(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);

/* Options shared by the commands that run a model (cli_common.c). */
enum {
    CLI_OPT_DTYPE = 1000,
    CLI_OPT_THREADS,
    CLI_OPT_KERNELS,
    CLI_OPT_GELU,
    CLI_OPT_CHUNK,
    CLI_OPT_KV_TYPE
};
#define CLI_COMMON_OPTIONS                                                                 \
    {"dtype", required_argument, 0, CLI_OPT_DTYPE},                                       \
        {"threads", required_argument, 0, CLI_OPT_THREADS},                               \
        {"kernels", required_argument, 0, CLI_OPT_KERNELS},                               \
        {"gelu", required_argument, 0, CLI_OPT_GELU},                                     \
        {"chunk", required_argument, 0, CLI_OPT_CHUNK},                                   \
        {"kv-type", required_argument, 0, CLI_OPT_KV_TYPE}
extern const char cli_common_usage[];
/* 1: handled, 0: not a common option, -1: bad value (message printed). */
int cli_common_option(int c, const char *arg, const char *cmd, ember_model_params *mp,
                      ember_session_params *sp);

/* Parses "1,2,3" into a malloc'd array; returns 0 on success. */
int cli_parse_ids(const char *text, int32_t **ids, size_t *n);

/* Index of the largest value (the first one on ties). */
int32_t cli_argmax(const float *x, int32_t n);

#endif
