/* Stream latency metrics, their JSON and an SVG picture of one request. */
#include "edge/latency_report.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/write_file.h"

static double audio_ms_of(int64_t samples, int32_t sample_rate)
{
    return 1000.0 * (double)samples / (double)sample_rate;
}

static ember_status check_chunks(const edge_chunk_time *c, int32_t n, int32_t sample_rate)
{
    if (sample_rate <= 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "latency: sample rate %d is not positive", sample_rate);
    if (n < 0 || (n > 0 && !c)) return ember_fail(EMBER_ERR_INVALID_ARG, "latency: no chunk list");
    double prev = 0.0;
    for (int32_t i = 0; i < n; i++) {
        if (!isfinite(c[i].t_ms) || c[i].t_ms < 0)
            return ember_fail(EMBER_ERR_INVALID_ARG, "latency: chunk %d: time %g ms is not a time", i, c[i].t_ms);
        if (c[i].samples < 0)
            return ember_fail(EMBER_ERR_INVALID_ARG, "latency: chunk %d: %lld samples", i,
                              (long long)c[i].samples);
        if (c[i].t_ms < prev)
            return ember_fail(EMBER_ERR_INVALID_ARG, "latency: chunk %d arrives at %g ms, before chunk %d (%g ms)",
                              i, c[i].t_ms, i - 1, prev);
        prev = c[i].t_ms;
    }
    return EMBER_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double edge_percentile_nearest_rank(double *v, int32_t n, double q)
{
    if (n <= 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int32_t k = (int32_t)ceil(q * n);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return v[k - 1];
}

ember_status edge_latency_compute(const edge_chunk_time *c, int32_t n, int32_t sample_rate, edge_latency *out)
{
    memset(out, 0, sizeof *out);
    ember_status st = check_chunks(c, n, sample_rate);
    if (st) return st;
    double *gaps = n > 1 ? malloc(sizeof(double) * (size_t)n) : NULL;
    if (n > 1 && !gaps) return ember_fail(EMBER_ERR_NO_MEMORY, "latency: out of memory");
    double delivered = 0, cursor = 0, prev_t = 0;
    int32_t n_gaps = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!c[i].samples) continue;
        double t = c[i].t_ms;
        if (!out->n_chunks) {
            out->ttfa_ms = cursor = t;
        } else {
            gaps[n_gaps++] = t - prev_t;
            if (t > cursor + delivered) { /* playback from TTFA ran dry: it waits */
                out->stall_at_ttfa_ms += t - (cursor + delivered);
                out->n_stalls++;
                cursor = t - delivered;
            }
        }
        if (t - delivered > out->playback_start_ms) out->playback_start_ms = t - delivered;
        delivered += audio_ms_of(c[i].samples, sample_rate);
        prev_t = t;
        out->n_chunks++;
    }
    out->audio_ms = delivered;
    out->rtf = delivered > 0 ? prev_t / delivered : 0.0;
    out->gap_p50_ms = edge_percentile_nearest_rank(gaps, n_gaps, 0.50);
    out->gap_p95_ms = edge_percentile_nearest_rank(gaps, n_gaps, 0.95);
    out->gap_max_ms = n_gaps ? gaps[n_gaps - 1] : 0.0; /* sorted by the percentile */
    free(gaps);
    return EMBER_OK;
}

double edge_slack_ms(const edge_chunk_time *c, int32_t n, int32_t sample_rate, double now_ms)
{
    double delivered = 0, start = -1;
    for (int32_t i = 0; i < n && sample_rate > 0; i++) {
        if (c[i].samples <= 0) continue;
        if (start < 0) start = c[i].t_ms;
        if (c[i].t_ms <= now_ms) delivered += audio_ms_of(c[i].samples, sample_rate);
    }
    double played = start < 0 || now_ms < start ? 0.0 : now_ms - start;
    return delivered - played;
}

cJSON *edge_latency_to_json(const edge_latency *m, const edge_chunk_time *c, int32_t n, int32_t sample_rate)
{
    cJSON *o = cJSON_CreateObject(), *gaps = NULL, *arr = NULL;
    bool ok = o && cJSON_AddNumberToObject(o, "ttfa_ms", m->ttfa_ms) &&
              cJSON_AddNumberToObject(o, "playback_start_ms", m->playback_start_ms) &&
              cJSON_AddNumberToObject(o, "stall_at_ttfa_ms", m->stall_at_ttfa_ms) &&
              cJSON_AddNumberToObject(o, "n_stalls", m->n_stalls) && cJSON_AddNumberToObject(o, "rtf", m->rtf) &&
              cJSON_AddNumberToObject(o, "audio_ms", m->audio_ms) &&
              cJSON_AddNumberToObject(o, "chunks", m->n_chunks) &&
              (gaps = cJSON_AddObjectToObject(o, "chunk_gap_ms")) != NULL &&
              cJSON_AddNumberToObject(gaps, "p50", m->gap_p50_ms) &&
              cJSON_AddNumberToObject(gaps, "p95", m->gap_p95_ms) &&
              cJSON_AddNumberToObject(gaps, "max", m->gap_max_ms) &&
              cJSON_AddNumberToObject(o, "sample_rate", sample_rate) &&
              (arr = cJSON_AddArrayToObject(o, "arrivals")) != NULL;
    for (int32_t i = 0; ok && i < n; i++) {
        cJSON *a = cJSON_CreateObject();
        ok = a && cJSON_AddItemToArray(arr, a) && cJSON_AddNumberToObject(a, "t_ms", c[i].t_ms) &&
             cJSON_AddNumberToObject(a, "samples", (double)c[i].samples);
    }
    if (ok) return o;
    cJSON_Delete(o);
    return NULL;
}

/* ---- the picture ---- */

#define SVG_W 880.0
#define SVG_H 440.0
#define PLOT_X0 70.0  /* left edge of the plot area */
#define PLOT_X1 850.0
#define PLOT_Y0 60.0  /* top */
#define PLOT_Y1 390.0 /* bottom: audio 0 */

typedef struct svg_scale {
    double x_max, y_max; /* ms at the right and top edges */
} svg_scale;

static double sx(const svg_scale *s, double t) { return PLOT_X0 + (PLOT_X1 - PLOT_X0) * t / s->x_max; }
static double sy(const svg_scale *s, double a) { return PLOT_Y1 - (PLOT_Y1 - PLOT_Y0) * a / s->y_max; }

/* A tick step of 1, 2 or 5 times a power of ten giving at most ~8 ticks. */
static double tick_step(double range)
{
    double raw = range / 8.0, p = pow(10.0, floor(log10(raw)));
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '<') fputs("&lt;", f);
        else if (ch == '>') fputs("&gt;", f);
        else if (ch == '&') fputs("&amp;", f);
        else if (ch == '"') fputs("&quot;", f);
        else if (ch < 0x20) fputc(' ', f); /* control characters are not XML */
        else fputc(ch, f);
    }
}

static void axes(FILE *f, const svg_scale *s)
{
    fprintf(f, "<g stroke=\"#444\" stroke-width=\"1\">\n");
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", PLOT_X0, PLOT_Y1, PLOT_X1, PLOT_Y1);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n</g>\n", PLOT_X0, PLOT_Y0, PLOT_X0, PLOT_Y1);
    fprintf(f, "<g font-family=\"sans-serif\" font-size=\"11\" fill=\"#444\">\n");
    double dx = tick_step(s->x_max), dy = tick_step(s->y_max);
    for (double t = 0; t <= s->x_max + 1e-9; t += dx)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", sx(s, t), PLOT_Y1 + 15, t);
    for (double a = 0; a <= s->y_max + 1e-9; a += dy)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", PLOT_X0 - 5, sy(s, a) + 4, a);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time since request (ms)</text>\n",
            (PLOT_X0 + PLOT_X1) / 2, PLOT_Y1 + 35);
    fprintf(f, "<text x=\"15\" y=\"%.1f\" transform=\"rotate(-90 15 %.1f)\" text-anchor=\"middle\">audio (ms)</text>\n",
            (PLOT_Y0 + PLOT_Y1) / 2, (PLOT_Y0 + PLOT_Y1) / 2);
    fprintf(f, "</g>\n");
}

/* The stalls of playback from TTFA as shaded bands, then its line. */
static void ttfa_playback(FILE *f, const svg_scale *s, const edge_chunk_time *c, int32_t n, int32_t sr,
                          const edge_latency *m)
{
    double delivered = 0, cursor = m->ttfa_ms;
    bool first = true;
    fprintf(f, "<g fill=\"#e53935\" fill-opacity=\"0.25\">\n");
    for (int32_t i = 0; i < n; i++) {
        if (!c[i].samples) continue;
        if (!first && c[i].t_ms > cursor + delivered) {
            double x0 = sx(s, cursor + delivered), x1 = sx(s, c[i].t_ms);
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"><title>stall %.1f ms</title></rect>\n",
                    x0, PLOT_Y0, x1 - x0, PLOT_Y1 - PLOT_Y0, c[i].t_ms - (cursor + delivered));
            cursor = c[i].t_ms - delivered;
        }
        first = false;
        delivered += audio_ms_of(c[i].samples, sr);
    }
    fprintf(f, "</g>\n<path fill=\"none\" stroke=\"#fb8c00\" stroke-width=\"2\" d=\"M%.1f %.1f", sx(s, m->ttfa_ms),
            sy(s, 0));
    delivered = 0;
    cursor = m->ttfa_ms;
    first = true;
    for (int32_t i = 0; i < n; i++) {
        if (!c[i].samples) continue;
        if (!first && c[i].t_ms > cursor + delivered) { /* plays out, then waits flat */
            fprintf(f, " L%.1f %.1f L%.1f %.1f", sx(s, cursor + delivered), sy(s, delivered), sx(s, c[i].t_ms),
                    sy(s, delivered));
            cursor = c[i].t_ms - delivered;
        }
        first = false;
        delivered += audio_ms_of(c[i].samples, sr);
    }
    fprintf(f, " L%.1f %.1f\"/>\n", sx(s, cursor + delivered), sy(s, delivered));
}

static void delivered_steps(FILE *f, const svg_scale *s, const edge_chunk_time *c, int32_t n, int32_t sr)
{
    double delivered = 0;
    fprintf(f, "<path fill=\"none\" stroke=\"#1e88e5\" stroke-width=\"2\" d=\"M%.1f %.1f", sx(s, 0), sy(s, 0));
    for (int32_t i = 0; i < n; i++) {
        if (!c[i].samples) continue;
        fprintf(f, " L%.1f %.1f", sx(s, c[i].t_ms), sy(s, delivered));
        delivered += audio_ms_of(c[i].samples, sr);
        fprintf(f, " L%.1f %.1f", sx(s, c[i].t_ms), sy(s, delivered));
    }
    fprintf(f, " L%.1f %.1f\"/>\n<g fill=\"#1e88e5\">\n", sx(s, s->x_max), sy(s, delivered));
    delivered = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!c[i].samples) continue;
        delivered += audio_ms_of(c[i].samples, sr);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>chunk %d at %.1f ms: %.0f ms of audio</title></circle>\n",
                sx(s, c[i].t_ms), sy(s, delivered), i, c[i].t_ms, audio_ms_of(c[i].samples, sr));
    }
    fprintf(f, "</g>\n");
}

static void marker(FILE *f, const svg_scale *s, double t, const char *label, const char *color, double y)
{
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"4 3\"/>\n",
            sx(s, t), PLOT_Y0, sx(s, t), PLOT_Y1, color);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-family=\"sans-serif\" font-size=\"11\" fill=\"%s\">%s %.1f ms</text>\n",
            sx(s, t) + 3, y, color, label, t);
}

static void legend(FILE *f, const edge_latency *m)
{
    static const struct {
        const char *color, *text;
    } rows[] = {{"#1e88e5", "audio delivered"},
                {"#43a047", "playback from the no-underrun start"},
                {"#fb8c00", "playback from TTFA (flat = stall)"}};
    fprintf(f, "<g font-family=\"sans-serif\" font-size=\"11\">\n");
    for (int i = 0; i < 3; i++) {
        double x = PLOT_X0 + 10 + 250.0 * i;
        fprintf(f, "<line x1=\"%.1f\" y1=\"45\" x2=\"%.1f\" y2=\"45\" stroke=\"%s\" stroke-width=\"2\"/>", x, x + 20,
                rows[i].color);
        fprintf(f, "<text x=\"%.1f\" y=\"49\" fill=\"#222\">%s</text>\n", x + 25, rows[i].text);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#222\">RTF %.3f, %d chunks, %.0f ms of audio, stalls %d (%.1f ms)</text>\n",
            PLOT_X0 + 10, PLOT_Y0 + 15, m->rtf, m->n_chunks, m->audio_ms, m->n_stalls, m->stall_at_ttfa_ms);
    fprintf(f, "</g>\n");
}

ember_status edge_latency_svg(const edge_chunk_time *c, int32_t n, int32_t sample_rate, const char *title,
                              char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    edge_latency m;
    ember_status st = edge_latency_compute(c, n, sample_rate, &m);
    if (st) return st;
    /* room for every line: the last arrival, both playback lines' ends */
    double t_last = m.n_chunks ? m.ttfa_ms : 0;
    for (int32_t i = 0; i < n; i++)
        if (c[i].samples) t_last = c[i].t_ms;
    double end = fmax(t_last, fmax(m.playback_start_ms, m.ttfa_ms + m.stall_at_ttfa_ms) + m.audio_ms);
    svg_scale s = {end > 0 ? 1.05 * end : 100.0, m.audio_ms > 0 ? 1.05 * m.audio_ms : 100.0};

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return ember_fail(EMBER_ERR_NO_MEMORY, "latency: out of memory for the SVG");
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            SVG_W, SVG_H, SVG_W, SVG_H);
    fprintf(f, "<text x=\"%.1f\" y=\"22\" font-family=\"sans-serif\" font-size=\"14\" fill=\"#222\">", PLOT_X0);
    xml_text(f, title && title[0] ? title : "audio chunk arrivals against playback");
    fprintf(f, "</text>\n");
    axes(f, &s);
    if (m.n_chunks) {
        ttfa_playback(f, &s, c, n, sample_rate, &m);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#43a047\" stroke-width=\"2\"/>\n",
                sx(&s, m.playback_start_ms), sy(&s, 0), sx(&s, m.playback_start_ms + m.audio_ms), sy(&s, m.audio_ms));
        delivered_steps(f, &s, c, n, sample_rate);
        marker(f, &s, m.ttfa_ms, "TTFA", "#fb8c00", PLOT_Y1 - 20);
        marker(f, &s, m.playback_start_ms, "playback start", "#43a047", PLOT_Y1 - 6);
    }
    legend(f, &m);
    fprintf(f, "</svg>\n");
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed || !buf) {
        free(buf);
        return ember_fail(EMBER_ERR_NO_MEMORY, "latency: out of memory writing the SVG");
    }
    *out = buf;
    *out_len = len;
    return EMBER_OK;
}

/* dir + "/" + name, malloc'd. */
static char *join_path(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p) snprintf(p, a + b + 2, "%s/%s", dir, name);
    return p;
}

ember_status edge_latency_write_report(const char *dir, const edge_chunk_time *c, int32_t n, int32_t sample_rate,
                                       const char *title)
{
    if (!dir || !dir[0]) return ember_fail(EMBER_ERR_INVALID_ARG, "latency report: empty directory");
    edge_latency m;
    ember_status st = edge_latency_compute(c, n, sample_rate, &m);
    if (st) return st;
    char *svg = NULL, *json = NULL, *json_path = join_path(dir, "latency.json"),
         *svg_path = join_path(dir, "latency.svg");
    size_t svg_len = 0;
    cJSON *o = edge_latency_to_json(&m, c, n, sample_rate);
    if (o) json = cJSON_Print(o);
    cJSON_Delete(o);
    if (!json || !json_path || !svg_path) st = ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", dir);
    if (!st) st = edge_latency_svg(c, n, sample_rate, title, &svg, &svg_len);
    if (!st) st = io_make_dirs(dir);
    if (!st) st = io_write_file_atomic(json_path, json, strlen(json));
    if (!st) st = io_write_file_atomic(svg_path, svg, svg_len);
    free(json);
    free(svg);
    free(json_path);
    free(svg_path);
    return st;
}
