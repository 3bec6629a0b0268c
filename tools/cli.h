/* The `ember` command line: one subcommand per file, dispatched by ember.c.
 * cli_public.h is the part over the public API; this header adds what the
 * commands that still use internals (bench, parity, serve) take from src/. */
#ifndef EMBER_TOOLS_CLI_H
#define EMBER_TOOLS_CLI_H

#include "base/stats.h"
#include "cli_public.h"
#include "edge/profile.h"

/* The machine's read bandwidth in GB/s (1e9 bytes): n_threads threads each
 * summing their part of a `bytes` buffer (the decode roofline; bench_bandwidth.c). */
double cli_read_bandwidth_gbs(size_t bytes, int n_threads);

#endif
