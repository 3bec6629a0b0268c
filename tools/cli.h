/* The `ember` command line: one subcommand per file, dispatched by ember.c. */
#ifndef EMBER_TOOLS_CLI_H
#define EMBER_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>

int cmd_generate(int argc, char **argv);
int cmd_parity(int argc, char **argv);

/* Parses "1,2,3" into a malloc'd array; returns 0 on success. */
int cli_parse_ids(const char *text, int32_t **ids, size_t *n);

/* Index of the largest value (the first one on ties). */
int32_t cli_argmax(const float *x, int32_t n);

#endif
