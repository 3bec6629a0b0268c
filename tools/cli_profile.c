/* `--profile auto|off|explain` for the commands that run a model: the
 * derived profile of src/edge/ (the machine's probe plus the model's
 * geometry) picks what the command line leaves open. For a Spark model
 * (generate, chat, serve) that is the weight format and the thread count;
 * the context and the KV format stay the command's own. For a Qwen3-TTS
 * model (tts, bench tts, serve --tts) it is the talker and predictor's
 * weight format, and the CPUs the generator and the audio decoder run on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edge/probe.h"

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

/* The profile of the model in dir: 1 with *prof, 0 when there is none (off,
 * or a GGUF file or a directory the profile cannot read: the defaults
 * stand), -1 on a bad hardware profile (message printed). */
static int derive(const char *dir, cli_profile mode, const char *cmd, const edge_derive_opts *o,
                  edge_profile *prof)
{
    edge_hw hw;
    edge_model_info info;
    if (mode == CLI_PROFILE_OFF) return 0;
    if (edge_model_info_load(dir, &info) != EMBER_OK) {
        if (mode == CLI_PROFILE_EXPLAIN)
            fprintf(stderr, "ember %s: profile: %s; using the defaults\n", cmd, ember_last_error());
        return 0;
    }
    if (edge_hw_detect(NULL, getenv("EMBER_HW_PROFILE"), &hw) != EMBER_OK ||
        edge_derive(&hw, &info, o, prof) != EMBER_OK) {
        fprintf(stderr, "ember %s: profile: %s\n", cmd, ember_last_error());
        return -1;
    }
    return 1;
}

/* --profile explain: the reasons of what the command uses, and which
 * explicit flags overrode them. */
static void explain(const edge_profile *prof, const edge_why *shown, size_t n_shown, const edge_explicit *x,
                    const char *cmd, const char *dtype_flag)
{
    for (size_t i = 0; i < n_shown; i++) fprintf(stderr, "ember %s: profile: %s\n", cmd, prof->why[shown[i]]);
    if (x->weight_type) fprintf(stderr, "ember %s: profile: %s given, it wins\n", cmd, dtype_flag);
    if (x->n_threads) fprintf(stderr, "ember %s: profile: --threads given, it wins\n", cmd);
}

int cli_apply_profile(const char *dir, cli_profile mode, const char *cmd, ember_model_params *mp,
                      ember_session_params *sp)
{
    edge_profile prof;
    edge_derive_opts o = {sp->max_context, sp->kv_type, sp->prefill_chunk};
    int r = derive(dir, mode, cmd, &o, &prof);
    if (r <= 0) return r;
    const edge_explicit x = {mp->weight_type, sp->n_threads, sp->max_context, sp->kv_type};
    /* what a text command uses: the format, the threads, the cache */
    static const edge_why shown[] = {EDGE_WHY_DTYPE, EDGE_WHY_THREADS, EDGE_WHY_KV, EDGE_WHY_SEQS};
    if (mode == CLI_PROFILE_EXPLAIN) explain(&prof, shown, sizeof shown / sizeof *shown, &x, cmd, "--dtype");
    edge_profile_apply(&prof, &x, mp, sp);
    return 0;
}

int cli_apply_tts_profile(const char *dir, cli_profile mode, const char *cmd, ember_type *weight_type,
                          edge_profile *out)
{
    const edge_derive_opts o = {0, EMBER_TYPE_NONE, 0};
    edge_profile own;
    const int placed = out != NULL;
    if (!out) out = &own;
    int r = derive(dir, mode, cmd, &o, out);
    if (r <= 0) return r;
    const edge_explicit x = {*weight_type, 0, 0, EMBER_TYPE_NONE};
    /* what speech uses: the format, and where placed, the generator's CPUs
     * and the audio decoder's */
    static const edge_why shown[] = {EDGE_WHY_DTYPE, EDGE_WHY_THREADS, EDGE_WHY_AUDIO};
    /* the server names the speech model's format --tts-dtype ("serve --tts") */
    if (mode == CLI_PROFILE_EXPLAIN)
        explain(out, shown, placed ? 3 : 1, &x, cmd, strstr(cmd, "--tts") ? "--tts-dtype" : "--dtype");
    ember_model_params mp = {.weight_type = *weight_type};
    edge_profile_apply(out, &x, &mp, NULL);
    *weight_type = mp.weight_type;
    return 1;
}
