/* `--profile` for the speech commands (tts, bench tts, serve --tts): the
 * derived profile's weight format for the talker and predictor, and the
 * profile itself, whose CPUs place the generator and the audio decoder
 * (src/edge/ internals: the public API applies only the format). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_apply_tts_profile(const char *dir, cli_profile mode, const char *cmd, ember_type *weight_type,
                          edge_profile *out)
{
    if (mode == CLI_PROFILE_OFF) return 0;
    const edge_derive_opts o = {0, EMBER_TYPE_NONE, 0};
    const char *hardware = getenv("EMBER_HW_PROFILE");
    edge_profile own;
    const int placed = out != NULL;
    if (!out) out = &own;
    bool found;
    char reason[512];
    if (edge_profile_for(dir, NULL, hardware, &o, out, &found, reason, sizeof reason) != EMBER_OK)
        return cli_profile_error(cmd, hardware);
    if (!found) {
        if (mode == CLI_PROFILE_EXPLAIN) fprintf(stderr, "ember %s: profile: %s; using the defaults\n", cmd, reason);
        return 0;
    }
    /* what speech uses: the format, and where placed, the generator's CPUs
     * and the audio decoder's */
    if (mode == CLI_PROFILE_EXPLAIN) {
        static const edge_why shown[] = {EDGE_WHY_DTYPE, EDGE_WHY_THREADS, EDGE_WHY_AUDIO};
        for (int i = 0; i < (placed ? 3 : 1); i++) fprintf(stderr, "ember %s: profile: %s\n", cmd, out->why[shown[i]]);
        /* the server names the speech model's format --tts-dtype ("serve --tts") */
        if (*weight_type)
            fprintf(stderr, "ember %s: profile: %s given, it wins\n", cmd, strstr(cmd, "--tts") ? "--tts-dtype" : "--dtype");
    }
    const edge_explicit x = {*weight_type, 0, 0, EMBER_TYPE_NONE};
    ember_model_params mp = {.weight_type = *weight_type};
    edge_profile_apply(out, &x, &mp, NULL);
    *weight_type = mp.weight_type;
    return 1;
}
