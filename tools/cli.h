/* The `ember` command line: one subcommand per file, dispatched by ember.c.
 * cli_public.h is the part over the public API; this header adds what the
 * commands that still use internals (bench, parity, serve, the speech
 * commands) take from src/. */
#ifndef EMBER_TOOLS_CLI_H
#define EMBER_TOOLS_CLI_H

#include "base/stats.h"
#include "cli_public.h"
#include "edge/profile.h"

/* `ember voice` (cmd_voice.c): the Base speaker encoder on a recording. */
int cmd_voice(int argc, char **argv);

/* The same for a Qwen3-TTS directory: the talker and predictor's format
 * goes to *weight_type unless it is set (an explicit --dtype). Returns 1
 * with the profile in *out (its CPUs place the threads; NULL: the caller
 * places nothing, and explain says only the format), 0 when there is none
 * (off, or a directory the profile cannot read), -1 with a message. */
int cli_apply_tts_profile(const char *dir, cli_profile mode, const char *cmd, ember_type *weight_type,
                          edge_profile *out);

#endif
