/* Stream latency metrics and the report (src/edge/latency_report.h): the
 * spec's slack example and a hand-worked stream with two stalls, bad input,
 * and the SVG checked well-formed by Python's XML parser (an independent
 * implementation) with the expected marks in it. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "edge/latency_report.h"
#include "io/read_file.h"

#define SR 24000
#define F 1920 /* samples in one 80 ms frame */

static int near(double a, double b) { return fabs(a - b) <= 1e-9 * (1 + fabs(b)); }

/* spec section 4: 1 frame at 30 ms and 25 frames at 190 ms give slack 80 /
 * 0 / -40 at 30 / 110 / 150 ms. Section 6 by hand: TTFA 30; playback start
 * max(30 - 0, 190 - 80) = 110; from TTFA the 80 ms run out at 110 and the
 * next chunk comes at 190: one stall of 80; RTF 190 / 2080; one gap, 160. */
static const edge_chunk_time spec_example[] = {{30.0, F}, {190.0, 25 * F}};

static void slack_spec_example(void)
{
    CHECK(near(edge_slack_ms(spec_example, 2, SR, 30.0), 80.0));
    CHECK(near(edge_slack_ms(spec_example, 2, SR, 110.0), 0.0));
    CHECK(near(edge_slack_ms(spec_example, 2, SR, 150.0), -40.0));
    CHECK(near(edge_slack_ms(spec_example, 2, SR, 10.0), 0.0)); /* nothing yet, nothing played */
}

static void metrics_spec_example(void)
{
    edge_latency m;
    REQUIRE(edge_latency_compute(spec_example, 2, SR, &m) == EMBER_OK);
    CHECK(m.n_chunks == 2 && near(m.audio_ms, 2080.0));
    CHECK(near(m.ttfa_ms, 30.0) && near(m.playback_start_ms, 110.0));
    CHECK(near(m.stall_at_ttfa_ms, 80.0) && m.n_stalls == 1);
    CHECK(near(m.rtf, 190.0 / 2080.0));
    CHECK(near(m.gap_p50_ms, 160.0) && near(m.gap_p95_ms, 160.0) && near(m.gap_max_ms, 160.0));
}

/* 1 frame at 100, 1 at 250, 2 at 300, 1 at 600, then an empty sentinel.
 * From TTFA (cursor 100): chunk 1 at 250 > 100 + 80: stall 70, cursor 170;
 * chunk 2 at 300 <= 170 + 160; chunk 3 at 600 > 170 + 320: stall 110.
 * Start max(100, 250 - 80, 300 - 160, 600 - 320) = 280. RTF 600 / 400.
 * Gaps 150, 50, 300: nearest rank p50 = sorted[ceil(1.5) - 1] = 150,
 * p95 = sorted[ceil(2.85) - 1] = 300. */
static const edge_chunk_time two_stalls[] = {{100, F}, {250, F}, {300, 2 * F}, {600, F}, {700, 0}};

static void metrics_two_stalls(void)
{
    edge_latency m;
    REQUIRE(edge_latency_compute(two_stalls, 5, SR, &m) == EMBER_OK);
    CHECK(m.n_chunks == 4 && near(m.audio_ms, 400.0));
    CHECK(near(m.ttfa_ms, 100.0) && near(m.playback_start_ms, 280.0));
    CHECK_MSG(near(m.stall_at_ttfa_ms, 180.0) && m.n_stalls == 2, "stall %g in %d", m.stall_at_ttfa_ms, m.n_stalls);
    CHECK(near(m.rtf, 1.5));
    CHECK(near(m.gap_p50_ms, 150.0) && near(m.gap_p95_ms, 300.0) && near(m.gap_max_ms, 300.0));
    /* the slack goes below zero exactly when playback from TTFA stalls */
    CHECK(edge_slack_ms(two_stalls, 5, SR, 249.0) < 0);
}

static void percentile_nearest_rank(void)
{
    double v[] = {50, 10, 40, 20, 30};
    CHECK(edge_percentile_nearest_rank(v, 5, 0.50) == 30); /* ceil(2.5) = 3rd */
    CHECK(edge_percentile_nearest_rank(v, 5, 0.95) == 50); /* ceil(4.75) = 5th */
    CHECK(edge_percentile_nearest_rank(v, 5, 0.0) == 10);
    CHECK(edge_percentile_nearest_rank(v, 0, 0.5) == 0);
}

static void bad_input(void)
{
    edge_latency m;
    const edge_chunk_time back[] = {{100, F}, {90, F}};
    CHECK(edge_latency_compute(back, 2, SR, &m) == EMBER_ERR_INVALID_ARG &&
          strstr(ember_last_error(), "chunk 1"));
    const edge_chunk_time neg[] = {{100, -1}};
    CHECK(edge_latency_compute(neg, 1, SR, &m) == EMBER_ERR_INVALID_ARG);
    const edge_chunk_time nan_t[] = {{NAN, F}};
    CHECK(edge_latency_compute(nan_t, 1, SR, &m) == EMBER_ERR_INVALID_ARG);
    CHECK(edge_latency_compute(spec_example, 2, 0, &m) == EMBER_ERR_INVALID_ARG);
    CHECK(edge_latency_compute(NULL, 0, SR, &m) == EMBER_OK && m.n_chunks == 0 && m.rtf == 0);
}

/* Parses the SVG with Python's xml.etree and prints what it finds: the root
 * tag, the number of stall rectangles and the text of every <text>. */
static const char *py_check =
    "import sys, xml.etree.ElementTree as E\n"
    "ns = '{http://www.w3.org/2000/svg}'\n"
    "r = E.parse(sys.argv[1]).getroot()\n"
    "stalls = [t for t in r.iter(ns + 'title') if (t.text or '').startswith('stall')]\n"
    "print(r.tag == ns + 'svg', len(stalls))\n"
    "for t in r.iter(ns + 'text'): print(t.text)\n";

static int python_reads(const char *svg_path, char *out, size_t cap)
{
    if (access("/usr/bin/python3", X_OK) != 0) return -1;
    char script[] = "/tmp/ember-svgcheck-XXXXXX";
    int fd = mkstemp(script);
    if (fd < 0) return -1;
    FILE *f = fdopen(fd, "w");
    fputs(py_check, f);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s 2>&1", script, svg_path);
    FILE *p = popen(cmd, "r");
    size_t got = p ? fread(out, 1, cap - 1, p) : 0;
    int rc = p ? pclose(p) : -1;
    out[got] = '\0';
    unlink(script);
    return rc;
}

static void report_files(void)
{
    char dir[] = "/tmp/ember-latency-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char sub[128], path[160];
    snprintf(sub, sizeof sub, "%s/report", dir); /* created by the call */
    REQUIRE(edge_latency_write_report(sub, two_stalls, 5, SR, "two stalls <&> \"quoted\"") == EMBER_OK);

    char *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/latency.json", sub);
    REQUIRE(io_read_text_file(path, 1 << 20, &text, &len) == EMBER_OK);
    cJSON *j = cJSON_Parse(text);
    free(text);
    REQUIRE(j);
    CHECK(near(cJSON_GetObjectItem(j, "ttfa_ms")->valuedouble, 100.0));
    CHECK(near(cJSON_GetObjectItem(j, "playback_start_ms")->valuedouble, 280.0));
    CHECK(near(cJSON_GetObjectItem(j, "stall_at_ttfa_ms")->valuedouble, 180.0));
    CHECK(near(cJSON_GetObjectItem(j, "rtf")->valuedouble, 1.5));
    CHECK(near(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "chunk_gap_ms"), "p95")->valuedouble, 300.0));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "arrivals")) == 5);
    cJSON_Delete(j);

    snprintf(path, sizeof path, "%s/latency.svg", sub);
    char out[4096];
    int rc = python_reads(path, out, sizeof out);
    if (rc == -1) {
        printf("SKIP svg_parses: /usr/bin/python3 missing\n");
    } else {
        CHECK_MSG(rc == 0 && !strncmp(out, "True 2\n", 7), "python: %s", out);
        CHECK_MSG(strstr(out, "TTFA 100.0 ms") && strstr(out, "playback start 280.0 ms") && strstr(out, "RTF 1.500") &&
                      strstr(out, "two stalls <&> \"quoted\""),
                  "python: %s", out);
    }
    unlink(path);
    snprintf(path, sizeof path, "%s/latency.json", sub);
    unlink(path);
    rmdir(sub);
    rmdir(dir);
}

/* A report with no audio at all still draws (axes, legend) and parses. */
static void svg_empty_stream(void)
{
    char *svg = NULL;
    size_t len = 0;
    REQUIRE(edge_latency_svg(NULL, 0, SR, NULL, &svg, &len) == EMBER_OK);
    CHECK(len == strlen(svg) && strstr(svg, "</svg>"));
    char path[] = "/tmp/ember-svg-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    CHECK(write(fd, svg, len) == (ssize_t)len);
    close(fd);
    free(svg);
    char out[4096];
    int rc = python_reads(path, out, sizeof out);
    if (rc != -1) CHECK_MSG(rc == 0 && !strncmp(out, "True 0\n", 7), "python: %s", out);
    unlink(path);
}

int main(void)
{
    RUN(slack_spec_example);
    RUN(metrics_spec_example);
    RUN(metrics_two_stalls);
    RUN(percentile_nearest_rank);
    RUN(bad_input);
    RUN(report_files);
    RUN(svg_empty_stream);
    return check_summary();
}
