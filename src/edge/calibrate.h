/* Calibration of the audio chunk schedule from a measured request
 * (spec/edge-runtime.md section 3), the adaptive chunk controller, and the
 * per-machine cache of the result.
 *
 * Flow: the first request runs on the derived schedule; its chunk arrivals
 * ({t_ms, samples}, as the pipeline's callback sees them) go to
 * edge_calibrate; the result is saved under the hardware fingerprint
 * (edge_calibration_cache_path + edge_calibration_save) and the next start
 * loads it (edge_calibration_load) and runs on edge_calibration_schedule (a
 * static schedule: tts_schedule's layout, the last size repeating) or, when
 * the calibration says adaptive, on an edge_chunk_ctl consulted per chunk.
 *
 * The spec's derivation, kept exactly (its examples are unit tests):
 *   rate r = frames after the first chunk / (t_last - t_first) s;
 *   rtf = 12.5 / r; p = 1000 / r ms per frame;
 *   lead = 40 + 25 max(0, p - 80); min_frames = clamp(ceil(lead / 80), 1, 25);
 *   margin = clamp(40 + p, 20, 400); ramp: doubling from min_frames while
 *   below 25, then 25 ([12, 25] when that leaves one entry);
 *   adaptive = rtf > 0.5; fewer than 2 audio chunks or no time between the
 *   first and the last: not measured, {adaptive, min 2, margin 50,
 *   [2,4,8,16,25]}.
 *
 * Where ember does better:
 *   - "not adaptive" is final: the fork writes the flag only when true, so a
 *     cached false is overridden by the class default; here the controller
 *     of a non-adaptive calibration replays the ramp and never adapts.
 *   - The rate alone misses the fixed cost of a chunk (the decoder's start,
 *     the hand-off), which is what makes a small first chunk run dry. The
 *     gaps between arrivals are fitted as overhead + slope x frames; the
 *     doubling ramp is checked against that model (the audio buffered
 *     before each arrival must exceed its gap by the margin, over 30 s of
 *     audio, the last size repeating). When it fails, the ramp is planned
 *     instead: the smallest first chunk from which a ramp exists that grows
 *     only as far as the buffer allows. The model is tried first with the
 *     overhead raised until the line bounds every measured gap (the early
 *     gaps wait on the decoder, later ones on the generator), then, when
 *     nothing is safe under that (near real time), with the fitted one.
 *     When nothing static is safe (slower than real time), the spec's ramp
 *     stays. */
#ifndef EMBER_EDGE_CALIBRATE_H
#define EMBER_EDGE_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edge/hw_profile.h"
#include "edge/latency_report.h"

#define EDGE_CAL_FRAME_MS 80.0   /* one codec frame at 12.5 Hz */
#define EDGE_CAL_STEADY 25       /* the steady chunk: 2 s of audio */
#define EDGE_CAL_MAX_RAMP 32     /* = TTS_MAX_SCHEDULE */
#define EDGE_CAL_MAX_FRAMES 1000 /* the largest chunk a cache file may name */

typedef struct edge_calibration {
    bool measured;
    double rate_fps;     /* frames per second after the first chunk (0: not measured) */
    double rtf;          /* wall time per audio time */
    double ms_per_frame; /* 1000 / rate */
    double ttfa_ms;      /* the measured request's first audio (0: none) */
    /* ember's model of a chunk's gap: overhead + slope x frames, the one the
     * ramp was checked or planned with (overhead 0 and slope = ms_per_frame
     * when the chunk sizes do not vary enough to fit) */
    double chunk_overhead_ms, slope_ms_per_frame;
    double lead_ms;
    int32_t min_frames;
    double margin_ms;
    bool adaptive;
    bool planned; /* the ramp is ember's plan, not the doubling ramp */
    int32_t ramp[EDGE_CAL_MAX_RAMP];
    int32_t n_ramp;
} edge_calibration;

/* The calibration of one measured request (chunks in arrival order,
 * 0-sample chunks skipped). Errors: those of edge_latency_compute. */
ember_status edge_calibrate(const edge_chunk_time *chunks, int32_t n, int32_t sample_rate,
                            edge_calibration *out);

/* The not-measured default (the spec's fallback). */
void edge_calibration_default(edge_calibration *out);

/* The static schedule: writes min(n_ramp, cap) sizes (the last repeats, as
 * in tts_schedule) and returns how many. For a tts_schedule s:
 *   s.n = edge_calibration_schedule(&cal, s.sizes, TTS_MAX_SCHEDULE); */
int32_t edge_calibration_schedule(const edge_calibration *c, int32_t *sizes, int32_t cap);

/* ---- the adaptive controller (spec section 3, "Adaptive controller") ----
 * A pure state machine: no clock, no threads. Ask it for the size of each
 * chunk in turn:
 *   first = edge_chunk_ctl_next(&ctl, t_request_start, 0);
 *   ... after chunk k's audio is ready at time t with `emitted` frames
 *   delivered in all: size = edge_chunk_ctl_next(&ctl, t, emitted);
 * Adaptive: the frame time is an EWMA (alpha 0.3) of gap / frames between
 * arrivals (the prior: the calibration's ms per frame); buffer = emitted x
 * 80 - time since the first arrival; the next size is the steady 25 once
 * buffer >= 25 x ewma + margin, else the frames the buffer covers after the
 * margin, (buffer - margin) / ewma, at least the last size (never shrinks:
 * a stream decoder's cost per frame only falls with the chunk) and at most
 * 25. The spec also forces growth by max(2, ewma / 15) frames per chunk;
 * ember grows only as far as the buffer allows (the "grow while the
 * slack allows"): forced growth is what runs dry on a machine near real
 * time. Not adaptive: the calibration's ramp, in order, the last repeating. */
typedef struct edge_chunk_ctl {
    bool adaptive;
    int32_t ramp[EDGE_CAL_MAX_RAMP], n_ramp;
    int32_t min_frames, max_frames;
    double margin_ms, ewma_ms;
    int32_t n_chunks; /* sizes handed out */
    int32_t last_size, emitted;
    double t_first, t_last; /* first and latest arrivals */
} edge_chunk_ctl;

void edge_chunk_ctl_init(edge_chunk_ctl *ctl, const edge_calibration *cal);
int32_t edge_chunk_ctl_next(edge_chunk_ctl *ctl, double now_ms, int32_t frames_emitted);
/* edge_chunk_ctl_next with the controller as a void pointer: the shape of
 * the TTS pipeline's chunk-size callback (tts_pipeline.h), so
 *   params.controller = (tts_chunk_controller){edge_chunk_ctl_callback, &ctl, EDGE_CAL_STEADY};
 * runs a request on it (initialize ctl before each request). */
int32_t edge_chunk_ctl_callback(void *ctl, double now_ms, int32_t frames_emitted);

/* One line for a person: "chunks 2,4,8, adaptive from 2 frames (margin
 * 50 ms, 10.0 ms per frame to start), calibrated on this machine (31.2
 * frames/s measured; PATH)" (no adaptive part for a fixed ramp). */
void edge_calibration_describe(const edge_calibration *cal, const char *path, char *buf, size_t cap);

/* ---- the cache (calibrate_cache.c) ---- */

/* SHA-1 (FIPS 180-4) of len bytes. */
void edge_sha1(const void *data, size_t len, uint8_t digest[20]);

/* The key the fingerprint hashes, exactly as Python's
 *   json.dumps({"class", "cpu", "flags" (sorted), "gpu" (name or null),
 *               "gpu_mem" (bytes // 256 MiB), "cores" (n_physical), "model"},
 *              sort_keys=True)
 * writes it (", " and ": " separators, non-ASCII as \uXXXX). `model` names
 * the model (its directory's name). *out is malloc'd. */
ember_status edge_fingerprint_key(const edge_hw *hw, const char *model, char **out);
/* The first 16 hex digits of the key's SHA-1, NUL-terminated. */
ember_status edge_fingerprint(const edge_hw *hw, const char *model, char out[17]);

/* $XDG_CACHE_HOME/ember/<fp>.json, or $HOME/.cache/ember/<fp>.json when
 * XDG_CACHE_HOME is unset, empty or relative (the XDG rule). Pass the two
 * variables' values (getenv). Error when neither gives a directory or the
 * path does not fit in cap. */
ember_status edge_calibration_cache_path(const char *xdg_cache_home, const char *home, const char *fingerprint,
                                         char *buf, size_t cap);

/* The cache file of the model in model_dir on this machine: the hardware
 * (probed, or $EMBER_HW_PROFILE's) and the directory's name fingerprinted,
 * under the XDG cache directory. Errors: the probe's, the path's. */
ember_status edge_calibration_path_for(const char *model_dir, char *path, size_t cap);

/* The calibration as the cache's JSON text (malloc'd). */
ember_status edge_calibration_to_text(const edge_calibration *c, char **out);
/* Parses the cache's JSON (untrusted: fuzzed). Every key is required;
 * errors name `label` and the key. */
ember_status edge_calibration_parse(const char *text, size_t len, const char *label, edge_calibration *out);
/* Creates the directory if needed and writes the file atomically. */
ember_status edge_calibration_save(const char *path, const edge_calibration *c);
/* *found = false (and EMBER_OK) when the file does not exist; a file that
 * exists but cannot be read or parsed is an error naming it. */
ember_status edge_calibration_load(const char *path, edge_calibration *out, bool *found);

#endif
