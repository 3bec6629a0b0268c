/* Step statistics: per-phase timers that say where the time of a token (text)
 * or of an 80 ms audio frame (speech) goes. Enabled by a path: `--stats FILE`
 * or EMBER_STATS=FILE (ember_stats_path resolves the two).
 *
 * Off costs one branch. The recorder is an object the caller passes down;
 * NULL means off, and every recording call below is an inline function whose
 * first instruction tests the pointer, so a disabled build of the hot loop
 * pays a compare and a not-taken jump per call site (bench/stats.c measures
 * it). No clock is read when off.
 *
 * Series: each phase keeps count, sum, max and a reservoir of up to 20000
 * samples for p50/p95 (when full, the sample overwrites slot count*7919 mod
 * 20000, as the vLLM-Omni step stats do: a cheap, roughly uniform spread over
 * a long run). The percentile is sorted[min(n-1, round_half_even((n-1)q))].
 *
 * Threads: a recorder belongs to ONE thread. Where two threads record (the
 * TTS pipeline's generator and decoder threads) each gets its own recorder
 * and the owner merges them at the end (ember_stats_merge). This keeps a
 * record call at a few plain stores: atomics would need a compare-and-swap
 * loop for the max and could still not keep the reservoir slot and the count
 * consistent without a lock, and a lock would cost more than the phases we
 * time (a sampler call is a few microseconds). Merging once at the end is
 * free during the run.
 *
 * Attribution (ember_stats_write_table, and the JSON's "attribution"):
 *   speech: share = sum / frames / 80 ms, frames = the talker's count (one
 *     talker step per frame). The vLLM-Omni table divides the mean of ONE
 *     call by 80 ms, which is wrong for a phase timed per chunk (codec decode
 *     of 25 frames would show as 25 frames' worth); per frame it is right
 *     for both.
 *   text: share = sum / tokens / token_ms, tokens = the count of the `token`
 *     series (one whole generated token, wall time) when it was recorded,
 *     else the sampler's count; token_ms = the mean of `token`, else the sum
 *     of the per-token phases (decode_full, decode_sliding, sampler,
 *     detokenize) per token. Per-request phases (queue_wait, prefill) show
 *     their cost spread over the request's tokens. */
#ifndef EMBER_BASE_STATS_H
#define EMBER_BASE_STATS_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "ember.h"

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

typedef struct ember_stats ember_stats;

typedef struct ember_stat_summary {
    int64_t count;
    double sum_ms, mean_ms, p50_ms, p95_ms, max_ms;
} ember_stat_summary;

/* A monotonic clock in milliseconds (CLOCK_MONOTONIC): differences only. */
static inline double ember_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* The stats file: `flag` (the --stats value) when given, else `env` (pass
 * getenv("EMBER_STATS")), else NULL (off). Empty strings count as not given. */
const char *ember_stats_path(const char *flag, const char *env);

/* A recorder with the built-in series. `role` names it in the dump and the
 * table ("text", "tts"; NULL: "ember"). */
ember_status ember_stats_create(const char *role, ember_stats **out);
void ember_stats_free(ember_stats *st);

/* Adds a series (name: [A-Za-z0-9_.]{1,31}, not already used); *id is what
 * to record it under. Fails when EMBER_STATS_MAX_SERIES are in use. */
ember_status ember_stats_add_series(ember_stats *st, const char *name, ember_stat_domain domain,
                                    int *id);

/* The recording itself; use the inline wrappers below. An id that names no
 * series is ignored. */
void ember_stats_record_on(ember_stats *st, int id, double ms);

/* Records one sample of `ms` milliseconds. */
static inline void ember_stats_record(ember_stats *st, int id, double ms)
{
    if (st) ember_stats_record_on(st, id, ms);
}

/* t0 = ember_stats_start(st); ...phase...; ember_stats_stop(st, id, t0); */
static inline double ember_stats_start(const ember_stats *st) { return st ? ember_clock_ms() : 0.0; }

static inline void ember_stats_stop(ember_stats *st, int id, double t0)
{
    if (st) ember_stats_record_on(st, id, ember_clock_ms() - t0);
}

/* Folds src into dst, series by name (adding to dst the ones it lacks):
 * counts, sums add, max is the larger, src's samples go into dst's
 * reservoir by the same rule as if recorded there. src is unchanged. */
ember_status ember_stats_merge(ember_stats *dst, const ember_stats *src);

/* The series with this name, -1 if none. */
int ember_stats_find(const ember_stats *st, const char *name);
/* The summary of series id (zeros for an unused id). Fails only when out of
 * memory (the percentiles sort a copy of the reservoir). */
ember_status ember_stats_summary(const ember_stats *st, int id, ember_stat_summary *out);

/* The attribution as markdown: a text table (share of the token time) and a
 * speech table (share of the 80 ms frame), each only when it has rows. */
ember_status ember_stats_write_table(const ember_stats *st, FILE *f);

/* The whole recorder as JSON, written atomically (temporary file + rename):
 * {"role", "pid", "started_at", "dumped_at", "counters": {name: {count,
 * sum_ms, mean_ms, p50_ms, p95_ms, max_ms}}, "attribution": {"text":
 * {tokens, token_ms, rows: [...]}, "speech": {frames, frame_ms, rows}}}. */
ember_status ember_stats_write_json(const ember_stats *st, const char *path);

#endif
