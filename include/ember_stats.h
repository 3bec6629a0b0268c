/*
 * ember_stats.h - step statistics: where the time of a token or of an 80 ms
 * audio frame goes.
 *
 * Included by ember.h; include either. Compiles as C99 and C++. Conventions
 * as in ember_text.h: statuses, ember_last_error(), no printing, no exit.
 *
 * A recorder is off unless created: pass one to ember_session_set_stats() or
 * ember_generate_params.stats and each decode step records the time of its
 * full-attention and sliding-window layers, each sampling call, each token.
 * NULL means off and costs one branch per phase.
 *
 *     ember_stats *st;  ember_stats_create("text", &st);
 *     gp.stats = st;    ember_session_generate(s, tok, ids, n, &gp, &res);
 *     ember_stat_summary tok_ms;
 *     ember_stats_summary(st, EMBER_STAT_TOKEN, &tok_ms);   // p50, p95, max
 *     ember_stats_write_json(st, "stats.json");             // or ember_stats_json
 *     ember_stats_free(st);
 *
 * Threads: a recorder belongs to ONE thread at a time (recording is a few
 * plain stores, no lock). Where two threads record, give each its own and
 * fold them into one at the end with ember_stats_merge().
 *
 * Each series keeps count, sum and max and a reservoir of up to 20000
 * samples for the percentiles. The attribution divides each phase's time by
 * the tokens generated (text: share of the mean token time) or the frames
 * (speech: share of the 80 ms frame).
 */
#ifndef EMBER_STATS_H
#define EMBER_STATS_H

#include <stdio.h>

#include "ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The built-in series (ember_stats_add_series adds more). */
typedef enum ember_stat_id {
    /* text */
    EMBER_STAT_QUEUE_WAIT = 0, /* a request waiting for a slot (server) */
    EMBER_STAT_PREFILL,        /* the prompt's forward pass */
    EMBER_STAT_DECODE_FULL,    /* one decode step's full-attention layers */
    EMBER_STAT_DECODE_SLIDING, /* one decode step's sliding-window layers */
    EMBER_STAT_SAMPLER,        /* one sampling call (one per generated token) */
    EMBER_STAT_DETOKENIZE,     /* the streaming detokenizer for one token */
    EMBER_STAT_TOKEN,          /* one whole generated token, wall time */
    /* speech */
    EMBER_STAT_TALKER,         /* the talker step of one frame */
    EMBER_STAT_PREDICTOR,      /* the code predictor of one frame */
    EMBER_STAT_CODEC_DECODE,   /* the speech decoder on one chunk */
    EMBER_STAT_HANDOFF,        /* a chunk waiting between generator and decoder */
    EMBER_STAT_N_BUILTIN
} ember_stat_id;

typedef enum ember_stat_domain { EMBER_STAT_TEXT = 0, EMBER_STAT_SPEECH } ember_stat_domain;

#define EMBER_STATS_MAX_SERIES 32 /* the built-in ones plus room for more */
#define EMBER_STATS_RESERVOIR 20000
#define EMBER_STATS_NAME_MAX 32
#define EMBER_STATS_FRAME_MS 80.0

/* ember_stats itself is declared in ember.h (an opaque handle). */

typedef struct ember_stat_summary {
    int64_t count;
    double sum_ms, mean_ms, p50_ms, p95_ms, max_ms;
} ember_stat_summary;

/* The stats file a program should write: `flag` (its --stats value) when
 * given, else `env` (pass getenv("EMBER_STATS")), else NULL (off). Empty
 * strings count as not given. The result is one of the arguments. */
const char *ember_stats_path(const char *flag, const char *env);

/* A recorder with the built-in series; `role` (copied; NULL: "ember") names
 * it in the dump and the table ("text", "tts"). Errors: NO_MEMORY. */
ember_status ember_stats_create(const char *role, ember_stats **out);
void ember_stats_free(ember_stats *st);

/* Adds a series (name: [A-Za-z0-9_.]{1,31}, not already used); *id is what
 * to record it under. Errors: INVALID_ARG (a bad or used name), and when
 * EMBER_STATS_MAX_SERIES are in use. */
ember_status ember_stats_add_series(ember_stats *st, const char *name, ember_stat_domain domain,
                                    int *id);

/* Records one sample of `ms` milliseconds in series id (st NULL or an id
 * that names no series: nothing). The recorder's thread only. */
void ember_stats_record_on(ember_stats *st, int id, double ms);

/* Folds src into dst, series by name (adding to dst the ones it lacks):
 * counts and sums add, max is the larger, src's samples go into dst's
 * reservoir as if recorded there. src is unchanged. Neither may be recording
 * meanwhile. */
ember_status ember_stats_merge(ember_stats *dst, const ember_stats *src);

/* The series with this name, -1 if none. */
int ember_stats_find(const ember_stats *st, const char *name);

/* The summary of series id (zeros for an unused id). Fails only when out of
 * memory (the percentiles sort a copy of the reservoir). */
ember_status ember_stats_summary(const ember_stats *st, int id, ember_stat_summary *out);

/* The attribution as markdown on f: a text table (share of the token time)
 * and a speech table (share of the 80 ms frame), each only when it has rows. */
ember_status ember_stats_write_table(const ember_stats *st, FILE *f);

/* The whole recorder as JSON, in *json (ember_free): {"role", "pid",
 * "started_at", "dumped_at", "counters": {name: {count, sum_ms, mean_ms,
 * p50_ms, p95_ms, max_ms}}, "attribution": {"text": {tokens, token_ms,
 * rows: [...]}, "speech": {frames, frame_ms, rows}}}. */
ember_status ember_stats_json(const ember_stats *st, char **json);

/* The same JSON written to path atomically (a temporary file, then rename).
 * Errors: IO naming the path. */
ember_status ember_stats_write_json(const ember_stats *st, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_STATS_H */
