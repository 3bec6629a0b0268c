/* `--profile auto|off|explain` for the commands that run a model: the
 * derived profile (the machine's probe plus the model's geometry) picks
 * what the command line leaves open. For a Spark model (generate, chat,
 * serve) that is the weight format and the thread count, through the public
 * ember_profile_apply; the context and the KV format stay the command's
 * own. The speech commands' half is cli_profile_tts.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_public.h"

int cli_profile_option(int c, const char *arg, const char *cmd, cli_profile *p)
{
    if (c != CLI_OPT_PROFILE) return 0;
    if (!strcmp(arg, "auto")) *p = CLI_PROFILE_AUTO;
    else if (!strcmp(arg, "off")) *p = CLI_PROFILE_OFF;
    else if (!strcmp(arg, "explain")) *p = CLI_PROFILE_EXPLAIN;
    else {
        fprintf(stderr, "ember %s: --profile takes auto, off or explain, not '%s'\n", cmd, arg);
        return -1;
    }
    return 1;
}

/* Prints the reasons (newline-separated lines), one "profile:" line each. */
static void print_why(const char *cmd, const char *why)
{
    for (const char *at = why; at && *at;) {
        const char *nl = strchr(at, '\n');
        int n = nl ? (int)(nl - at) : (int)strlen(at);
        fprintf(stderr, "ember %s: profile: %.*s\n", cmd, n, at);
        at = nl ? nl + 1 : NULL;
    }
}

/* A failed profile: the message, naming EMBER_HW_PROFILE when the hardware
 * profile came from it. */
int cli_profile_error(const char *cmd, const char *hardware)
{
    fprintf(stderr, "ember %s: profile: %s%s\n", cmd, hardware && *hardware ? "EMBER_HW_PROFILE: " : "",
            ember_last_error());
    return -1;
}

int cli_apply_profile(const char *dir, cli_profile mode, const char *cmd, ember_model_params *mp,
                      ember_session_params *sp)
{
    if (mode == CLI_PROFILE_OFF) return 0;
    ember_profile_params pp = ember_profile_default_params();
    pp.hardware = getenv("EMBER_HW_PROFILE");
    const int dtype_given = mp->weight_type != EMBER_TYPE_NONE, threads_given = sp->n_threads != 0;
    int applied;
    char *why = NULL;
    if (ember_profile_apply(dir, &pp, mp, sp, &applied, mode == CLI_PROFILE_EXPLAIN ? &why : NULL) != EMBER_OK)
        return cli_profile_error(cmd, pp.hardware);
    if (mode == CLI_PROFILE_EXPLAIN) {
        if (!applied) {
            fprintf(stderr, "ember %s: profile: %s; using the defaults\n", cmd, why ? why : "");
        } else {
            print_why(cmd, why);
            if (dtype_given) fprintf(stderr, "ember %s: profile: --dtype given, it wins\n", cmd);
            if (threads_given) fprintf(stderr, "ember %s: profile: --threads given, it wins\n", cmd);
        }
    }
    ember_free(why);
    return 0;
}
