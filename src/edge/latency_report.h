/* How a listener feels a stream: the latency metrics of one request's audio
 * chunk arrivals, and a picture of them (spec/edge-runtime.md section 6,
 * "Stream latency metrics", and the slack of section 4).
 *
 * Input: the chunks in arrival order, each {t_ms since the request started,
 * samples at sample_rate}. Chunks with 0 samples (an end-of-stream sentinel)
 * are skipped; C_i below is the audio (ms) delivered before chunk i.
 *   ttfa_ms            t of the first audio chunk
 *   playback_start_ms  max_i (t_i - C_i): the earliest start that never runs dry
 *   stall_at_ttfa_ms   playback starting at TTFA, pausing whenever it runs dry:
 *                      cursor = TTFA; for each chunk with t_i > cursor + C_i
 *                      the stall is the difference and the cursor moves by it;
 *                      the sum (n_stalls: how many)
 *   rtf                t of the last audio chunk / the audio's duration
 *   gaps               t_i - t_(i-1), percentiles by nearest rank:
 *                      sorted[max(1, ceil(q n)) - 1]
 * An underrun in the sense of the slack (playback from the first arrival
 * without pausing runs dry) happens exactly when stall_at_ttfa_ms > 0. */
#ifndef EMBER_EDGE_LATENCY_REPORT_H
#define EMBER_EDGE_LATENCY_REPORT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"

typedef struct edge_chunk_time {
    double t_ms;     /* when the chunk's audio was ready, since the request started */
    int64_t samples; /* its length; 0 = no audio (skipped) */
} edge_chunk_time;

typedef struct edge_latency {
    int32_t n_chunks; /* with audio */
    double audio_ms;  /* all of it */
    double ttfa_ms, playback_start_ms, stall_at_ttfa_ms, rtf;
    int32_t n_stalls;
    double gap_p50_ms, gap_p95_ms, gap_max_ms; /* 0 with fewer than 2 chunks */
} edge_latency;

/* The metrics. Errors (EMBER_ERR_INVALID_ARG, naming the chunk): a negative
 * or non-finite time, negative samples, times going backwards, a sample
 * rate <= 0. No chunk with audio gives all zeros. */
ember_status edge_latency_compute(const edge_chunk_time *chunks, int32_t n, int32_t sample_rate,
                                  edge_latency *out);

/* The slack at `now_ms` (section 4): audio delivered by then minus the time
 * played since the first arrival; below 0 is an underrun. */
double edge_slack_ms(const edge_chunk_time *chunks, int32_t n, int32_t sample_rate, double now_ms);

/* The nearest-rank percentile of v[0..n) (sorted in place); 0 when n == 0. */
double edge_percentile_nearest_rank(double *v, int32_t n, double q);

/* The metrics and the arrivals as JSON (NULL when out of memory): ttfa_ms,
 * playback_start_ms, stall_at_ttfa_ms, n_stalls, rtf, audio_ms, chunks,
 * chunk_gap_ms {p50, p95, max}, sample_rate, arrivals [{t_ms, samples}]. */
cJSON *edge_latency_to_json(const edge_latency *m, const edge_chunk_time *chunks, int32_t n,
                            int32_t sample_rate);

/* A self-contained SVG (no scripts, fonts or links): x = time (ms), y =
 * audio (ms); a step line of audio delivered, the playback line from the
 * no-underrun start, the playback line from TTFA pausing at each stall, the
 * stalls shaded red, labels for TTFA, playback start and RTF. `title` may be
 * NULL. *out is malloc'd and NUL-terminated. */
ember_status edge_latency_svg(const edge_chunk_time *chunks, int32_t n, int32_t sample_rate,
                              const char *title, char **out, size_t *out_len);

/* `--report DIR`: creates DIR if needed and writes DIR/latency.json and
 * DIR/latency.svg, each atomically. */
ember_status edge_latency_write_report(const char *dir, const edge_chunk_time *chunks, int32_t n,
                                       int32_t sample_rate, const char *title);

#endif
