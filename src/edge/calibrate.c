/* The chunk schedule from a measured request, and the adaptive controller.
 * The rules and where they differ from the spec are in calibrate.h. */
#include "edge/calibrate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"

#define JITTER_MS 40.0
#define DEFAULT_MARGIN_MS 50.0
#define HORIZON_FRAMES 375 /* 30 s of audio: how far a static ramp is checked */
#define EWMA_ALPHA 0.3

static const int32_t default_ramp[] = {2, 4, 8, 16, EDGE_CAL_STEADY};

void edge_calibration_default(edge_calibration *out)
{
    memset(out, 0, sizeof *out);
    out->adaptive = true;
    out->min_frames = 2;
    out->margin_ms = DEFAULT_MARGIN_MS;
    out->n_ramp = (int32_t)(sizeof default_ramp / sizeof default_ramp[0]);
    memcpy(out->ramp, default_ramp, sizeof default_ramp);
}

/* The spec's ramp: double from min_frames while below the steady size, then
 * the steady size; a single entry becomes [steady / 2, steady]. */
static void doubling_ramp(int32_t min_frames, int32_t *ramp, int32_t *n)
{
    *n = 0;
    for (int32_t v = min_frames; v < EDGE_CAL_STEADY; v *= 2) ramp[(*n)++] = v;
    ramp[(*n)++] = EDGE_CAL_STEADY;
    if (*n < 2) {
        ramp[0] = EDGE_CAL_STEADY / 2;
        ramp[1] = EDGE_CAL_STEADY;
        *n = 2;
    }
}

/* The gap model: gap = overhead + slope x frames, by least squares over the
 * chunks after the first. The gaps are not one line (the first ones wait on
 * the decoder, later ones on the generator, whose work overlapped the
 * decode), so besides the fitted overhead there is the bounding one: raised
 * until the line covers every measured gap. A negative fitted overhead (noise,
 * or gaps that are pure per-frame cost) or too little variety in the chunk
 * sizes falls back to overhead 0 and the mean cost per frame. */
typedef struct gap_model {
    double slope, fit_overhead, bound_overhead;
} gap_model;

static gap_model fit_gaps(const edge_chunk_time *c, int32_t n, double frame_samples, double ms_per_frame)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, prev_t = 0;
    int32_t k = 0, seen = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!c[i].samples) continue;
        if (seen++) {
            double x = (double)c[i].samples / frame_samples, y = c[i].t_ms - prev_t;
            sx += x, sy += y, sxx += x * x, sxy += x * y;
            k++;
        }
        prev_t = c[i].t_ms;
    }
    gap_model g = {sx > 0 ? sy / sx : ms_per_frame, 0, 0};
    double var = k > 1 ? sxx - sx * sx / k : 0;
    if (k < 2 || var <= 1e-9 * (sxx > 1 ? sxx : 1)) return g; /* every chunk the same size: no fit */
    double slope = (sxy - sx * sy / k) / var, overhead = (sy - slope * sx) / k;
    if (overhead <= 0 || slope <= 0) return g;
    double worst = 0;
    seen = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!c[i].samples) continue;
        if (seen++) {
            double over = c[i].t_ms - prev_t - (overhead + slope * (double)c[i].samples / frame_samples);
            if (over > worst) worst = over;
        }
        prev_t = c[i].t_ms;
    }
    g.slope = slope;
    g.fit_overhead = overhead;
    g.bound_overhead = overhead + worst;
    return g;
}

/* Whether the schedule (its last size repeating) keeps at least margin ms
 * of audio buffered before every arrival under the gap model, over the
 * horizon. buffer = audio delivered minus time played since the first. */
static bool model_safe(const int32_t *ramp, int32_t n, double overhead, double slope, double margin)
{
    double buffer = 0;
    int64_t frames = 0;
    for (int32_t k = 0; frames < HORIZON_FRAMES; k++) {
        int32_t size = ramp[k < n ? k : n - 1];
        if (k > 0) {
            buffer -= overhead + slope * size;
            if (buffer < margin) return false;
        }
        buffer += EDGE_CAL_FRAME_MS * size;
        frames += size;
    }
    return true;
}

/* A ramp from first chunk n0 that grows only as far as the buffer allows:
 * each next size is the largest (up to steady, never below the last) whose
 * modelled gap leaves the margin. False when even the last size does not
 * fit or the plan is not safe over the horizon. */
static bool plan_ramp(int32_t n0, double overhead, double slope, double margin, int32_t *ramp, int32_t *n)
{
    double buffer = EDGE_CAL_FRAME_MS * n0;
    int32_t last = n0;
    ramp[0] = n0;
    *n = 1;
    while (last < EDGE_CAL_STEADY && *n < EDGE_CAL_MAX_RAMP) {
        double fits = (buffer - margin - overhead) / slope;
        int32_t size = fits >= EDGE_CAL_STEADY ? EDGE_CAL_STEADY : (int32_t)floor(fits);
        if (size < last) return false;
        ramp[(*n)++] = size;
        buffer += EDGE_CAL_FRAME_MS * size - (overhead + slope * size);
        last = size;
    }
    return model_safe(ramp, *n, overhead, slope, margin);
}

ember_status edge_calibrate(const edge_chunk_time *chunks, int32_t n, int32_t sample_rate, edge_calibration *out)
{
    edge_calibration_default(out);
    edge_latency m;
    ember_status st = edge_latency_compute(chunks, n, sample_rate, &m);
    if (st) return st;
    out->ttfa_ms = m.ttfa_ms;
    double frame_samples = sample_rate * EDGE_CAL_FRAME_MS / 1000.0;
    double first_samples = 0, first_t = 0, last_t = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!chunks[i].samples) continue;
        if (first_samples == 0) first_samples = (double)chunks[i].samples, first_t = chunks[i].t_ms;
        last_t = chunks[i].t_ms;
    }
    double span_s = (last_t - first_t) / 1000.0;
    if (m.n_chunks < 2 || span_s <= 0) return EMBER_OK; /* nothing to measure a rate from */

    double frames = (m.audio_ms * sample_rate / 1000.0 - first_samples) / frame_samples;
    double rate = frames / span_s, p = 1000.0 / rate;
    out->measured = true;
    out->rate_fps = rate;
    out->rtf = (1000.0 / EDGE_CAL_FRAME_MS) / rate;
    out->ms_per_frame = p;
    out->lead_ms = JITTER_MS + fmax(0.0, p - EDGE_CAL_FRAME_MS) * EDGE_CAL_STEADY;
    double min_f = ceil(out->lead_ms / EDGE_CAL_FRAME_MS);
    out->min_frames = min_f < 1 ? 1 : min_f > EDGE_CAL_STEADY ? EDGE_CAL_STEADY : (int32_t)min_f;
    out->margin_ms = fmin(400.0, fmax(20.0, JITTER_MS + p));
    out->adaptive = out->rtf > 0.5;
    doubling_ramp(out->min_frames, out->ramp, &out->n_ramp);

    /* The doubling ramp if it is safe, else a planned one: under the bounding
     * model first, then (nothing safe under it: near real time, where the
     * bound is too pessimistic) under the fitted one. */
    gap_model g = fit_gaps(chunks, n, frame_samples, p);
    const double overheads[2] = {g.bound_overhead, g.fit_overhead};
    out->slope_ms_per_frame = g.slope;
    for (int k = 0; k < 2; k++) {
        out->chunk_overhead_ms = overheads[k];
        if (model_safe(out->ramp, out->n_ramp, overheads[k], g.slope, out->margin_ms)) return EMBER_OK;
        int32_t plan[EDGE_CAL_MAX_RAMP], n_plan = 0;
        for (int32_t n0 = out->min_frames; n0 <= EDGE_CAL_STEADY; n0++) {
            if (!plan_ramp(n0, overheads[k], g.slope, out->margin_ms, plan, &n_plan)) continue;
            memcpy(out->ramp, plan, sizeof(int32_t) * (size_t)n_plan);
            out->n_ramp = n_plan;
            out->min_frames = n0;
            out->planned = true;
            return EMBER_OK;
        }
    }
    out->chunk_overhead_ms = g.bound_overhead; /* nothing static is safe: the spec's ramp stays */
    return EMBER_OK;
}

int32_t edge_calibration_schedule(const edge_calibration *c, int32_t *sizes, int32_t cap)
{
    int32_t n = c->n_ramp < cap ? c->n_ramp : cap;
    for (int32_t i = 0; i < n; i++) sizes[i] = c->ramp[i];
    return n < 0 ? 0 : n;
}

/* ---- the controller ---- */

void edge_chunk_ctl_init(edge_chunk_ctl *ctl, const edge_calibration *cal)
{
    memset(ctl, 0, sizeof *ctl);
    ctl->adaptive = cal->adaptive;
    ctl->n_ramp = cal->n_ramp > 0 ? (cal->n_ramp < EDGE_CAL_MAX_RAMP ? cal->n_ramp : EDGE_CAL_MAX_RAMP) : 0;
    memcpy(ctl->ramp, cal->ramp, sizeof(int32_t) * (size_t)ctl->n_ramp);
    if (!ctl->n_ramp) ctl->ramp[ctl->n_ramp++] = cal->min_frames > 0 ? cal->min_frames : 2;
    ctl->min_frames = ctl->ramp[0];
    ctl->max_frames = EDGE_CAL_STEADY;
    ctl->margin_ms = cal->margin_ms;
    ctl->ewma_ms = cal->slope_ms_per_frame > 0 ? cal->slope_ms_per_frame
                   : cal->ms_per_frame > 0   ? cal->ms_per_frame
                                             : EDGE_CAL_FRAME_MS;
}

int32_t edge_chunk_ctl_next(edge_chunk_ctl *ctl, double now_ms, int32_t frames_emitted)
{
    int32_t size;
    if (!ctl->adaptive || ctl->n_chunks == 0) {
        size = ctl->ramp[ctl->n_chunks < ctl->n_ramp ? ctl->n_chunks : ctl->n_ramp - 1];
    } else {
        if (ctl->emitted == 0) {
            ctl->t_first = now_ms;
        } else if (frames_emitted > ctl->emitted) {
            double per_frame = (now_ms - ctl->t_last) / (frames_emitted - ctl->emitted);
            ctl->ewma_ms = EWMA_ALPHA * per_frame + (1.0 - EWMA_ALPHA) * ctl->ewma_ms;
        }
        if (frames_emitted > ctl->emitted) {
            ctl->t_last = now_ms;
            ctl->emitted = frames_emitted;
        }
        double ewma = ctl->ewma_ms > 1e-3 ? ctl->ewma_ms : 1e-3;
        double buffer = ctl->emitted * EDGE_CAL_FRAME_MS - (now_ms - ctl->t_first);
        if (buffer >= ctl->max_frames * ewma + ctl->margin_ms) {
            size = ctl->max_frames;
        } else {
            double fits = (buffer - ctl->margin_ms) / ewma;
            size = fits >= ctl->max_frames ? ctl->max_frames : fits <= 0 ? 0 : (int32_t)floor(fits);
        }
        if (size < ctl->last_size) size = ctl->last_size; /* never shrinks */
        if (size < ctl->min_frames) size = ctl->min_frames;
        if (size > ctl->max_frames) size = ctl->max_frames;
    }
    ctl->last_size = size;
    ctl->n_chunks++;
    return size;
}

int32_t edge_chunk_ctl_callback(void *ctl, double now_ms, int32_t frames_emitted)
{
    return edge_chunk_ctl_next(ctl, now_ms, frames_emitted);
}

void edge_calibration_describe(const edge_calibration *cal, const char *path, char *buf, size_t cap)
{
    size_t at = 0;
#define PUT(...) (at += (size_t)snprintf(buf + (at < cap ? at : cap), at < cap ? cap - at : 0, __VA_ARGS__))
    PUT("chunks");
    for (int32_t i = 0; i < cal->n_ramp; i++) PUT("%s%d", i ? "," : " ", cal->ramp[i]);
    if (cal->adaptive) { /* the controller's starting state */
        edge_chunk_ctl ctl;
        edge_chunk_ctl_init(&ctl, cal);
        PUT(", adaptive from %d frames (margin %.0f ms, %.1f ms per frame to start),", ctl.min_frames, ctl.margin_ms,
            ctl.ewma_ms);
    }
    PUT(" calibrated on this machine (%.1f frames/s measured; %s)", cal->rate_fps, path);
#undef PUT
}
