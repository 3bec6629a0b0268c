/* `--profile auto|off|explain` for the commands that run a Spark model:
 * the derived profile of src/edge/ (the machine's probe plus the model's
 * geometry) picks the weight format and the thread count unless the command
 * line names them. The context and the KV format stay the command's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edge/probe.h"
#include "edge/profile.h"

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

int cli_apply_profile(const char *dir, cli_profile mode, const char *cmd, ember_model_params *mp,
                      ember_session_params *sp)
{
    if (mode == CLI_PROFILE_OFF) return 0;
    edge_hw hw;
    edge_model_info info;
    edge_profile prof;
    edge_derive_opts o = {sp->max_context, sp->kv_type, sp->prefill_chunk};
    /* a GGUF file or a directory the profile cannot read: the defaults stand */
    if (edge_model_info_load(dir, &info) != EMBER_OK) {
        if (mode == CLI_PROFILE_EXPLAIN)
            fprintf(stderr, "ember %s: profile: %s; using the defaults\n", cmd, ember_last_error());
        return 0;
    }
    if (edge_hw_detect(NULL, getenv("EMBER_HW_PROFILE"), &hw) != EMBER_OK ||
        edge_derive(&hw, &info, &o, &prof) != EMBER_OK) {
        fprintf(stderr, "ember %s: profile: %s\n", cmd, ember_last_error());
        return -1;
    }
    const edge_explicit x = {mp->weight_type, sp->n_threads, sp->max_context, sp->kv_type};
    if (mode == CLI_PROFILE_EXPLAIN) {
        /* what a text command uses: the format, the threads, the cache */
        static const edge_why shown[] = {EDGE_WHY_DTYPE, EDGE_WHY_THREADS, EDGE_WHY_KV, EDGE_WHY_SEQS};
        for (size_t i = 0; i < sizeof shown / sizeof *shown; i++)
            fprintf(stderr, "ember %s: profile: %s\n", cmd, prof.why[shown[i]]);
        if (x.weight_type) fprintf(stderr, "ember %s: profile: --dtype given, it wins\n", cmd);
        if (x.n_threads) fprintf(stderr, "ember %s: profile: --threads given, it wins\n", cmd);
    }
    edge_profile_apply(&prof, &x, mp, sp);
    return 0;
}
