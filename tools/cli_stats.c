/* `--stats FILE` (or EMBER_STATS=FILE) for the commands that generate: a
 * step-statistics recorder (src/base/stats.h) when asked for, and at the
 * end its JSON in FILE and the attribution table on stderr. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_public.h"

ember_stats *cli_stats_open(const char *flag, const char *role, const char *cmd)
{
    const char *path = ember_stats_path(flag, getenv("EMBER_STATS"));
    ember_stats *st = NULL;
    if (path && ember_stats_create(role, &st) != EMBER_OK)
        fprintf(stderr, "ember %s: --stats: %s (continuing without)\n", cmd, ember_last_error());
    return st;
}

int cli_stats_close(ember_stats *st, const char *flag, const char *cmd)
{
    const char *path = ember_stats_path(flag, getenv("EMBER_STATS"));
    int rc = 0;
    if (st && path) {
        if (ember_stats_write_json(st, path) != EMBER_OK) {
            fprintf(stderr, "ember %s: --stats: %s\n", cmd, ember_last_error());
            rc = -1;
        } else {
            ember_stats_write_table(st, stderr);
        }
    }
    ember_stats_free(st);
    return rc;
}
