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

/* The recorder's public half: the series ids, the summaries, the dump. */
#include "ember_stats.h"

/* A monotonic clock in milliseconds (CLOCK_MONOTONIC): differences only. */
static inline double ember_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

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

#endif
