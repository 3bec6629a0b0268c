/* Calibration (src/edge/calibrate.h): the spec's worked examples, the
 * adaptive controller, a simulated slow decoder on which the fixed ramp runs
 * dry and the calibrated schedules do not, SHA-1 against FIPS 180 vectors and
 * hashlib, the fingerprint against Python's json.dumps + hashlib, the cache
 * file (round trip, corrupt files, the XDG path rule). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "edge/calibrate.h"
#include "tts/tts_pipeline.h"

#define SR 24000
#define FRAME_SAMPLES 1920 /* 80 ms at 24 kHz */

static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

static int ramp_is(const edge_calibration *c, const int32_t *want, int32_t n)
{
    if (c->n_ramp != n) return 0;
    for (int32_t i = 0; i < n; i++)
        if (c->ramp[i] != want[i]) return 0;
    return 1;
}

/* Steady chunks of `frames` frames every frames / fps seconds after a
 * one-frame first chunk: the rate after the first chunk is exactly fps. */
static int32_t steady_chunks(double fps, int32_t frames, int32_t n, edge_chunk_time *c)
{
    c[0] = (edge_chunk_time){120.0, FRAME_SAMPLES};
    for (int32_t i = 1; i < n; i++)
        c[i] = (edge_chunk_time){120.0 + i * frames * 1000.0 / fps, (int64_t)frames * FRAME_SAMPLES};
    return n;
}

/* Spec section 3: 150 frames/s -> [1,2,4,8,16,25], margin 46.7, not adaptive. */
static void spec_example_fast(void)
{
    edge_chunk_time c[8];
    edge_calibration cal;
    REQUIRE(edge_calibrate(c, steady_chunks(150.0, 25, 8, c), SR, &cal) == EMBER_OK);
    CHECK(cal.measured);
    CHECK_MSG(near(cal.rate_fps, 150.0, 1e-9), "rate %g", cal.rate_fps);
    CHECK(near(cal.rtf, 12.5 / 150.0, 1e-12));
    CHECK(near(cal.margin_ms, 40.0 + 1000.0 / 150.0, 1e-9)); /* 46.67 */
    CHECK(cal.min_frames == 1 && !cal.adaptive && !cal.planned);
    const int32_t want[] = {1, 2, 4, 8, 16, 25};
    CHECK(ramp_is(&cal, want, 6));
}

/* 10 frames/s -> lead 40 + 25 x 20 = 540 ms, min 7, [7,14,25], margin 140,
 * adaptive. Slower than real time: no static ramp is safe, the spec's stays. */
static void spec_example_slow(void)
{
    edge_chunk_time c[8];
    edge_calibration cal;
    REQUIRE(edge_calibrate(c, steady_chunks(10.0, 25, 8, c), SR, &cal) == EMBER_OK);
    CHECK(near(cal.lead_ms, 540.0, 1e-9));
    CHECK(cal.min_frames == 7 && cal.adaptive && !cal.planned);
    CHECK(near(cal.margin_ms, 140.0, 1e-9));
    const int32_t want[] = {7, 14, 25};
    CHECK(ramp_is(&cal, want, 3));
}

/* min_frames 25 leaves the single entry [25]: the spec makes it [12, 25]. */
static void spec_single_entry_ramp(void)
{
    edge_chunk_time c[8];
    edge_calibration cal;
    REQUIRE(edge_calibrate(c, steady_chunks(2.0, 25, 8, c), SR, &cal) == EMBER_OK);
    CHECK(cal.min_frames == 25);
    const int32_t want[] = {12, 25};
    CHECK(ramp_is(&cal, want, 2));
}

static void fallback_not_measured(void)
{
    const int32_t want[] = {2, 4, 8, 16, 25};
    edge_chunk_time one[] = {{100.0, 3840}, {100.0, 0}}; /* one audio chunk and a sentinel */
    edge_calibration cal;
    REQUIRE(edge_calibrate(one, 2, SR, &cal) == EMBER_OK);
    CHECK(!cal.measured && cal.adaptive && cal.min_frames == 2 && near(cal.margin_ms, 50, 0));
    CHECK(ramp_is(&cal, want, 5));
    edge_chunk_time same_time[] = {{100.0, 3840}, {100.0, 3840}}; /* zero span */
    REQUIRE(edge_calibrate(same_time, 2, SR, &cal) == EMBER_OK);
    CHECK(!cal.measured && ramp_is(&cal, want, 5));
    edge_chunk_time bad[] = {{100.0, 3840}, {50.0, 3840}};
    CHECK(edge_calibrate(bad, 2, SR, &cal) == EMBER_ERR_INVALID_ARG);
    CHECK(strstr(ember_last_error(), "before chunk 0") != NULL);
}

/* The schedule fits a tts_schedule as it is. */
static void schedule_maps_to_tts(void)
{
    edge_chunk_time c[8];
    edge_calibration cal;
    REQUIRE(edge_calibrate(c, steady_chunks(150.0, 25, 8, c), SR, &cal) == EMBER_OK);
    tts_schedule s = {{0}, 0};
    s.n = edge_calibration_schedule(&cal, s.sizes, TTS_MAX_SCHEDULE);
    CHECK(s.n == 6 && tts_schedule_size(&s, 0) == 1 && tts_schedule_size(&s, 5) == 25 &&
          tts_schedule_size(&s, 40) == 25);
    CHECK(EDGE_CAL_MAX_RAMP == TTS_MAX_SCHEDULE);
    int32_t two[2];
    CHECK(edge_calibration_schedule(&cal, two, 2) == 2 && two[1] == 2);
}

/* ---- the simulated machine ----
 * A fake clock: the generator makes frame k at (k + 1) x gen_ms and never
 * waits (as tts_pipeline's generator thread); the decoder takes a chunk once
 * its last frame exists and is free, and spends overhead + per_frame x n on
 * it. The schedule is asked for each chunk's size when the decoder is free,
 * the time the previous chunk's audio became ready. */
typedef struct machine {
    double gen_ms, dec_overhead_ms, dec_ms;
    int32_t frames;
} machine;

typedef int32_t (*next_size_fn)(void *state, double now_ms, int32_t emitted);

static int32_t simulate(const machine *m, next_size_fn next, void *state, edge_chunk_time *out, int32_t cap)
{
    double dec_free = 0;
    int32_t done = 0, n = 0, size = next(state, 0.0, 0);
    while (done < m->frames && n < cap) {
        int32_t end = done + size < m->frames ? done + size : m->frames;
        double start = fmax(dec_free, end * m->gen_ms);
        double ready = start + m->dec_overhead_ms + m->dec_ms * (end - done);
        out[n++] = (edge_chunk_time){ready, (int64_t)(end - done) * FRAME_SAMPLES};
        dec_free = ready;
        done = end;
        size = next(state, ready, done);
    }
    return n;
}

typedef struct fixed_state {
    const int32_t *sizes;
    int32_t n, i;
} fixed_state;

static int32_t fixed_next(void *state, double now_ms, int32_t emitted)
{
    fixed_state *f = state;
    (void)now_ms, (void)emitted;
    int32_t s = f->sizes[f->i < f->n ? f->i : f->n - 1];
    f->i++;
    return s;
}

static edge_latency run_fixed(const machine *m, const int32_t *sizes, int32_t n, edge_chunk_time *c, int32_t *n_c)
{
    fixed_state f = {sizes, n, 0};
    edge_latency lat;
    *n_c = simulate(m, fixed_next, &f, c, 512);
    if (edge_latency_compute(c, *n_c, SR, &lat) != EMBER_OK) memset(&lat, 0xff, sizeof lat);
    return lat;
}

/* Runs the calibrated static schedule and the controller on m; returns
 * their stalls (ms) through the pointers. */
static void run_calibrated(const machine *m, const edge_calibration *cal, double *stall_static, double *stall_ctl)
{
    static edge_chunk_time c[512];
    int32_t n = 0;
    tts_schedule s = {{0}, 0};
    s.n = edge_calibration_schedule(cal, s.sizes, TTS_MAX_SCHEDULE);
    edge_latency lat = run_fixed(m, s.sizes, s.n, c, &n);
    *stall_static = lat.stall_at_ttfa_ms;
    int64_t samples = 0;
    for (int32_t i = 0; i < n; i++) samples += c[i].samples;
    CHECK(samples == (int64_t)m->frames * FRAME_SAMPLES);
    edge_chunk_ctl ctl;
    edge_chunk_ctl_init(&ctl, cal);
    n = simulate(m, edge_chunk_ctl_callback, &ctl, c, 512);
    *stall_ctl = edge_latency_compute(c, n, SR, &lat) == EMBER_OK ? lat.stall_at_ttfa_ms : -1.0;
}

/* The main case: the decoder pays 100 ms per chunk (its start, the
 * hand-off) plus 20 ms per frame; the generator makes a frame in 50 ms.
 * Faster than real time in the steady state (max(50, 20 + 100/25) < 80 ms
 * per frame), but the default ramp's first chunks are too small to cover
 * the next one's overhead. Measured on the fixed ramp, calibrated, run again. */
static void simulated_slow_decoder(void)
{
    const machine m = {50.0, 100.0, 20.0, 150};
    static edge_chunk_time c[512];
    int32_t n = 0;
    const int32_t fixed[] = {2, 4, 8, 16, 25};
    edge_latency lat = run_fixed(&m, fixed, 5, c, &n);
    CHECK_MSG(lat.stall_at_ttfa_ms > 0 && lat.n_stalls > 0, "fixed ramp: stall %.1f ms", lat.stall_at_ttfa_ms);
    /* by hand: chunk 0 (2 frames) is ready at 100 + 100 + 40 = 240 and plays
     * to 400; chunk 1 (frames 2-5) exists at 300 and is ready at 300 + 100 +
     * 80 = 480: the slack is below 0 just before it */
    CHECK(c[0].t_ms == 240.0 && c[1].t_ms == 480.0 && edge_slack_ms(c, n, SR, 479.0) < 0);

    edge_calibration cal;
    REQUIRE(edge_calibrate(c, n, SR, &cal) == EMBER_OK);
    CHECK(cal.measured && cal.planned && cal.adaptive && cal.rtf < 1.0);
    CHECK_MSG(cal.chunk_overhead_ms > 0, "overhead %g", cal.chunk_overhead_ms);

    /* the spec's doubling ramp from its own min_frames still runs dry here */
    int32_t doubling[EDGE_CAL_MAX_RAMP], n_doubling = 0;
    int32_t spec_min = (int32_t)ceil((40.0 + 25.0 * fmax(0.0, cal.ms_per_frame - 80.0)) / 80.0);
    for (int32_t v = spec_min < 1 ? 1 : spec_min; v < 25; v *= 2) doubling[n_doubling++] = v;
    doubling[n_doubling++] = 25;
    lat = run_fixed(&m, doubling, n_doubling, c, &n);
    CHECK_MSG(lat.stall_at_ttfa_ms > 0, "spec ramp from %d: stall %.1f", spec_min, lat.stall_at_ttfa_ms);

    double stall_static, stall_ctl;
    run_calibrated(&m, &cal, &stall_static, &stall_ctl);
    CHECK_MSG(stall_static == 0, "calibrated ramp: stall %.1f ms", stall_static);
    CHECK_MSG(stall_ctl == 0, "controller: stall %.1f ms", stall_ctl);
}

/* More machines faster than real time in the steady state (generator ms per
 * frame, decoder ms per chunk, decoder ms per frame): the fixed ramp stalls,
 * both calibrated schedules do not. */
static void simulated_machines(void)
{
    const machine ms[] = {{50, 0, 60, 150}, {30, 200, 10, 150}, {70, 50, 30, 150}, {40, 300, 5, 200}};
    const int32_t fixed[] = {2, 4, 8, 16, 25};
    static edge_chunk_time c[512];
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        int32_t n = 0;
        edge_latency lat = run_fixed(&ms[i], fixed, 5, c, &n);
        CHECK_MSG(lat.stall_at_ttfa_ms > 0, "machine %zu: fixed ramp does not stall", i);
        edge_calibration cal;
        REQUIRE(edge_calibrate(c, n, SR, &cal) == EMBER_OK);
        double stall_static, stall_ctl;
        run_calibrated(&ms[i], &cal, &stall_static, &stall_ctl);
        CHECK_MSG(stall_static == 0 && stall_ctl == 0, "machine %zu: stalls %.1f / %.1f ms", i, stall_static,
                  stall_ctl);
    }
}

/* Slower than real time (decoder 100 ms per frame, generator 50): no
 * schedule avoids every stall over a long utterance; the calibration says
 * so (rtf > 1, adaptive) and both schedules stall less than the fixed ramp. */
static void simulated_slower_than_real_time(void)
{
    const machine m = {50.0, 0.0, 100.0, 150};
    const int32_t fixed[] = {2, 4, 8, 16, 25};
    static edge_chunk_time c[512];
    int32_t n = 0;
    edge_latency lat = run_fixed(&m, fixed, 5, c, &n);
    edge_calibration cal;
    REQUIRE(edge_calibrate(c, n, SR, &cal) == EMBER_OK);
    CHECK(cal.rtf > 1.0 && cal.adaptive && !cal.planned);
    double stall_static, stall_ctl;
    run_calibrated(&m, &cal, &stall_static, &stall_ctl);
    CHECK_MSG(stall_static < lat.stall_at_ttfa_ms && stall_ctl < lat.stall_at_ttfa_ms,
              "fixed %.1f, calibrated %.1f, controller %.1f", lat.stall_at_ttfa_ms, stall_static, stall_ctl);
}

/* A calibration that says "not adaptive" is honoured: the controller replays
 * the ramp whatever the buffer, the last size repeating. */
static void not_adaptive_is_honoured(void)
{
    edge_chunk_time c[8];
    edge_calibration cal;
    REQUIRE(edge_calibrate(c, steady_chunks(150.0, 25, 8, c), SR, &cal) == EMBER_OK);
    REQUIRE(!cal.adaptive);
    edge_chunk_ctl ctl;
    edge_chunk_ctl_init(&ctl, &cal);
    const int32_t want[] = {1, 2, 4, 8, 16, 25, 25, 25};
    int32_t emitted = 0;
    for (int i = 0; i < 8; i++) {
        int32_t got = edge_chunk_ctl_next(&ctl, 10.0 * i, emitted);
        CHECK_MSG(got == want[i], "chunk %d: %d", i, got);
        emitted += got;
    }
}

/* The adaptive rule by hand: margin 100, prior 60 ms per frame, first 4. */
static void controller_by_hand(void)
{
    edge_calibration cal;
    edge_calibration_default(&cal);
    cal.adaptive = true;
    cal.margin_ms = 100.0;
    cal.slope_ms_per_frame = 60.0;
    cal.ramp[0] = 4;
    cal.n_ramp = 1;
    edge_chunk_ctl ctl;
    edge_chunk_ctl_init(&ctl, &cal);
    CHECK(edge_chunk_ctl_next(&ctl, 0.0, 0) == 4);
    /* first arrival at 500 with 4 frames: buffer 320, (320 - 100) / 60 = 3.67
     * -> 3, but never below the last: 4 */
    CHECK(edge_chunk_ctl_next(&ctl, 500.0, 4) == 4);
    /* at 700 with 8: ewma = 0.3 x 50 + 0.7 x 60 = 57; buffer 640 - 200 = 440;
     * (440 - 100) / 57 = 5.96 -> 5 */
    CHECK(edge_chunk_ctl_next(&ctl, 700.0, 8) == 5);
    CHECK(near(ctl.ewma_ms, 57.0, 1e-9));
    /* at 800 with 13: ewma = 0.3 x 20 + 0.7 x 57 = 45.9; buffer 1040 - 300 =
     * 740 < 25 x 45.9 + 100 = 1247.5; (740 - 100) / 45.9 = 13.9 -> 13 */
    CHECK(edge_chunk_ctl_next(&ctl, 800.0, 13) == 13);
    /* a big buffer: at 900 with 60 frames (47 new, 2.1 ms each): steady 25 */
    CHECK(edge_chunk_ctl_next(&ctl, 900.0, 60) == 25);
    /* a late arrival cannot shrink it */
    CHECK(edge_chunk_ctl_next(&ctl, 9000.0, 61) == 25);
}

/* ---- SHA-1 and the fingerprint ---- */

static void hex(const uint8_t *d, int n, char *out)
{
    for (int i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static int sha1_is(const void *data, size_t len, const char *want)
{
    uint8_t d[20];
    char got[41];
    edge_sha1(data, len, d);
    hex(d, 20, got);
    return !strcmp(got, want);
}

/* FIPS 180 examples ("abc", the 448-bit message, a million 'a') and the empty
 * string; 55, 56 and 64 bytes straddle the padding's block boundary (those
 * digests from Python's hashlib). */
static void sha1_vectors(void)
{
    CHECK(sha1_is("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d"));
    CHECK(sha1_is("", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709"));
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    CHECK(sha1_is(m448, strlen(m448), "84983e441c3bd26ebaae4aa1f95129e5e54670f1"));
    char *million = malloc(1000000);
    REQUIRE(million);
    memset(million, 'a', 1000000);
    CHECK(sha1_is(million, 1000000, "34aa973cd4c4daa4f61eeb2bdbad27316534016f"));
    memset(million, 'x', 64);
    CHECK(sha1_is(million, 55, "cef734ba81a024479e09eb5a75b6ddae62e6abf1"));
    CHECK(sha1_is(million, 56, "901305367c259952f4e7af8323f480d59f81335b"));
    CHECK(sha1_is(million, 64, "bb2fa3ee7afb9f54c6dfb5d021f14b1ffe40c163"));
    free(million);
}

/* Expected keys and digests from /usr/bin/python3:
 *   k = json.dumps({"class": ..., "cpu": ..., "flags": sorted([...]),
 *                   "gpu": ..., "gpu_mem": bytes // (256 * 2**20),
 *                   "cores": ..., "model": ...}, sort_keys=True)
 *   hashlib.sha1(k.encode()).hexdigest()[:16] */
static void fingerprint_matches_python(void)
{
    edge_hw hw;
    edge_hw_init(&hw);
    hw.cls = EDGE_CLASS_X86_CPU;
    snprintf(hw.cpu_model, sizeof hw.cpu_model, "Intel(R) Xeon(R) Platinum 8480+");
    const edge_flag x86[] = {EDGE_FLAG_AVX2, EDGE_FLAG_FMA, EDGE_FLAG_F16C, EDGE_FLAG_AVX512,
                             EDGE_FLAG_AVX512_VNNI, EDGE_FLAG_AVX512_BF16, EDGE_FLAG_AMX_TILE,
                             EDGE_FLAG_AMX_BF16, EDGE_FLAG_AMX_INT8};
    for (size_t i = 0; i < sizeof x86 / sizeof x86[0]; i++) hw.flags |= 1u << x86[i];
    hw.n_physical = 56;
    char *key = NULL, fp[17];
    REQUIRE(edge_fingerprint_key(&hw, "Qwen3-TTS-12Hz-0.6B-CustomVoice", &key) == EMBER_OK);
    CHECK_MSG(!strcmp(key, "{\"class\": \"x86_cpu\", \"cores\": 56, \"cpu\": \"Intel(R) Xeon(R) Platinum 8480+\", "
                           "\"flags\": [\"amx_bf16\", \"amx_int8\", \"amx_tile\", \"avx2\", \"avx512\", "
                           "\"avx512_bf16\", \"avx512_vnni\", \"f16c\", \"fma\"], \"gpu\": null, \"gpu_mem\": 0, "
                           "\"model\": \"Qwen3-TTS-12Hz-0.6B-CustomVoice\"}"),
              "key %s", key);
    free(key);
    REQUIRE(edge_fingerprint(&hw, "Qwen3-TTS-12Hz-0.6B-CustomVoice", fp) == EMBER_OK);
    CHECK_MSG(!strcmp(fp, "909b68256031139a"), "fp %s", fp);

    /* a GPU, memory not a multiple of 256 MiB, and a model name with
     * non-ASCII, an astral code point, quotes, a backslash and a tab */
    edge_hw_init(&hw);
    hw.cls = EDGE_CLASS_JETSON;
    snprintf(hw.cpu_model, sizeof hw.cpu_model, "ARMv8 Processor rev 1 (v8l)");
    hw.flags = 1u << EDGE_FLAG_NEON | 1u << EDGE_FLAG_FP16_ARITH | 1u << EDGE_FLAG_DOTPROD;
    hw.n_physical = 12;
    hw.n_gpus = 1;
    snprintf(hw.gpus[0].name, sizeof hw.gpus[0].name, "Orin (nvgpu)");
    hw.gpus[0].mem_bytes = 32LL * 1024 * 1024 * 1024 + 5;
    const char *model = "mod\xc3\xa8le \"q\" \\ \xf0\x9f\x98\x80\ttab";
    REQUIRE(edge_fingerprint_key(&hw, model, &key) == EMBER_OK);
    CHECK_MSG(!strcmp(key, "{\"class\": \"jetson\", \"cores\": 12, \"cpu\": \"ARMv8 Processor rev 1 (v8l)\", "
                           "\"flags\": [\"dotprod\", \"fp16_arith\", \"neon\"], \"gpu\": \"Orin (nvgpu)\", "
                           "\"gpu_mem\": 128, \"model\": \"mod\\u00e8le \\\"q\\\" \\\\ \\ud83d\\ude00\\ttab\"}"),
              "key %s", key);
    free(key);
    REQUIRE(edge_fingerprint(&hw, model, fp) == EMBER_OK);
    CHECK_MSG(!strcmp(fp, "c47975a713429b53"), "fp %s", fp);
}

/* ---- the cache ---- */

static void cache_path_rule(void)
{
    char p[256];
    REQUIRE(edge_calibration_cache_path("/x/cache", "/home/u", "0123456789abcdef", p, sizeof p) == EMBER_OK);
    CHECK(!strcmp(p, "/x/cache/ember/0123456789abcdef.json"));
    REQUIRE(edge_calibration_cache_path("relative", "/home/u", "ab", p, sizeof p) == EMBER_OK);
    CHECK(!strcmp(p, "/home/u/.cache/ember/ab.json"));
    REQUIRE(edge_calibration_cache_path("", "/home/u", "ab", p, sizeof p) == EMBER_OK);
    CHECK(!strcmp(p, "/home/u/.cache/ember/ab.json"));
    CHECK(edge_calibration_cache_path(NULL, NULL, "ab", p, sizeof p) == EMBER_ERR_INVALID_ARG);
    CHECK(edge_calibration_cache_path("/x", NULL, "../ab", p, sizeof p) == EMBER_ERR_INVALID_ARG);
    CHECK(edge_calibration_cache_path("/x", NULL, "ab", p, 8) == EMBER_ERR_INVALID_ARG);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void cache_round_trip_and_errors(void)
{
    char dir[] = "/tmp/ember-cal-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char path[256], p[2048];
    snprintf(path, sizeof path, "%s/sub/ember/0123456789abcdef.json", dir);

    edge_calibration got, cal;
    bool found = true;
    REQUIRE(edge_calibration_load(path, &got, &found) == EMBER_OK);
    CHECK(!found && !got.measured);

    edge_chunk_time c[8];
    REQUIRE(edge_calibrate(c, steady_chunks(150.0, 25, 8, c), SR, &cal) == EMBER_OK);
    cal.chunk_overhead_ms = 12.5; /* a value the fit did not make, to see it kept */
    REQUIRE(edge_calibration_save(path, &cal) == EMBER_OK);
    REQUIRE(edge_calibration_load(path, &got, &found) == EMBER_OK);
    CHECK(found && got.measured == cal.measured && got.adaptive == cal.adaptive && got.planned == cal.planned);
    CHECK(got.rate_fps == cal.rate_fps && got.rtf == cal.rtf && got.margin_ms == cal.margin_ms &&
          got.chunk_overhead_ms == 12.5 && got.min_frames == cal.min_frames && got.lead_ms == cal.lead_ms);
    CHECK(ramp_is(&got, cal.ramp, cal.n_ramp));
    snprintf(p, sizeof p, "%s/sub/ember", dir);
    struct stat sb;
    CHECK(stat(p, &sb) == 0 && S_ISDIR(sb.st_mode));

    /* corrupt files: an error naming the file and the key, nothing half-loaded */
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"{\"schema\": 1,", "calibration"},
        {"[1, 2]", "not a JSON object"},
        {"{\"schema\": 2}", "'schema'"},
        {"{\"schema\": 1}", "'measured': missing"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(path, bad[i].text);
        ember_status st = edge_calibration_load(path, &got, &found);
        CHECK_MSG(st == EMBER_ERR_FORMAT && !found && strstr(ember_last_error(), bad[i].want) &&
                      strstr(ember_last_error(), path),
                  "case %zu: %d %s", i, st, ember_last_error());
        CHECK(!got.measured && got.n_ramp == 5);
    }
    /* a whole file with one bad value */
    char *text = NULL;
    REQUIRE(edge_calibration_to_text(&cal, &text) == EMBER_OK);
    char *r = strstr(text, "\"ramp\"");
    REQUIRE(r);
    snprintf(p, sizeof p, "%.*s\"ramp\": [1, 0]}", (int)(r - text), text);
    free(text);
    write_text(path, p);
    CHECK(edge_calibration_load(path, &got, &found) == EMBER_ERR_FORMAT && strstr(ember_last_error(), "'ramp'"));

    unlink(path);
    snprintf(p, sizeof p, "%s/sub/ember", dir);
    rmdir(p);
    snprintf(p, sizeof p, "%s/sub", dir);
    rmdir(p);
    rmdir(dir);
}

int main(void)
{
    RUN(spec_example_fast);
    RUN(spec_example_slow);
    RUN(spec_single_entry_ramp);
    RUN(fallback_not_measured);
    RUN(schedule_maps_to_tts);
    RUN(simulated_slow_decoder);
    RUN(simulated_machines);
    RUN(simulated_slower_than_real_time);
    RUN(not_adaptive_is_honoured);
    RUN(controller_by_hand);
    RUN(sha1_vectors);
    RUN(fingerprint_matches_python);
    RUN(cache_path_rule);
    RUN(cache_round_trip_and_errors);
    return check_summary();
}
