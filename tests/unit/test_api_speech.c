/* The public speech API (include/ember_speech.h) on the committed tiny
 * Qwen3-TTS checkpoint: the audio of a request equals its frames (from
 * ember_tts_codes) decoded by the public speech decoder in one push; text
 * and its ids, temperature 0 and greedy give the same frames; min_frames
 * holds the end off; cancellation, step statistics, the info JSON, the
 * calibration cache written by one load and used by the next; bad requests
 * and a codes-only load are refused with named errors. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ember.h"

#define DIR "models/tts-tiny"
#define MAX_FRAMES 24

static ember_tts *load(int codes_only)
{
    ember_tts_params p = ember_tts_default_params();
    p.n_threads = 1;
    p.decoder_threads = 1;
    p.max_frames = 64;
    p.codes_only = codes_only;
    ember_tts *t = NULL;
    if (ember_tts_load(DIR, &p, &t) != EMBER_OK) printf("     cannot load: %s\n", ember_last_error());
    return t;
}

static ember_speech_request request(void)
{
    ember_speech_request rq = ember_speech_default_request();
    rq.text = "Hello from the tiny talker.";
    rq.speaker = "ryan";
    rq.language = "english";
    rq.greedy = 1;
    rq.max_frames = MAX_FRAMES;
    return rq;
}

typedef struct frames {
    int32_t codes[MAX_FRAMES * 32];
    int32_t n, groups, stop_after;
} frames;

static int on_codes(void *user, const int32_t *codes, int32_t n, int32_t frame)
{
    frames *f = user;
    if (frame != f->n || n > 32) return 1;
    memcpy(f->codes + (size_t)frame * (size_t)n, codes, (size_t)n * sizeof *codes);
    f->groups = n;
    f->n++;
    return f->stop_after && f->n == f->stop_after;
}

typedef struct audio {
    float *f32;
    int16_t *s16;
    size_t n, n16, cap;
    int32_t chunks, stop_after;
} audio;

static int on_f32(void *user, const float *pcm, size_t n, const ember_speech_chunk *c)
{
    audio *a = user;
    if (c->index != a->chunks || a->n + n > a->cap) return 1;
    memcpy(a->f32 + a->n, pcm, n * sizeof *pcm);
    a->n += n;
    return 0;
}

static int on_s16(void *user, const int16_t *pcm, size_t n, const ember_speech_chunk *c)
{
    audio *a = user;
    if (a->n16 + n > a->cap) return 1;
    memcpy(a->s16 + a->n16, pcm, n * sizeof *pcm);
    a->n16 += n;
    a->chunks = c->index + 1;
    return a->stop_after && a->chunks == a->stop_after;
}

static audio audio_new(size_t cap)
{
    audio a = {malloc(cap * sizeof(float)), malloc(cap * sizeof(int16_t)), 0, 0, cap, 0, 0};
    return a;
}

static void test_audio_is_its_codes_decoded(void)
{
    ember_tts *t = load(0);
    REQUIRE(t);
    ember_speech_request rq = request();
    frames *f = calloc(1, sizeof *f);
    ember_speech_timings tc, ts;
    REQUIRE(f && ember_tts_codes(t, &rq, on_codes, f, &tc) == EMBER_OK);
    CHECK(f->n == tc.frames && f->n > 2 && f->groups == ember_tts_codebooks(t) && tc.prompt_tokens > 8);
    CHECK(tc.stopped_at_eos == (tc.frames < MAX_FRAMES));
    audio a = audio_new(64 * 1920);
    REQUIRE(a.f32 && a.s16);
    rq.chunks = "3,1,2"; /* any split: the decoder streams */
    REQUIRE(ember_tts_speak(t, &rq, on_f32, on_s16, &a, &ts) == EMBER_OK);
    CHECK(ts.frames == f->n && ts.chunks == a.chunks && a.n == a.n16 && ts.first_audio_ms > 0);
    /* the independent path: the public speech decoder, one push */
    ember_codec_params cp = ember_codec_default_params();
    cp.n_threads = 1;
    ember_codec *codec = NULL;
    float *ref = malloc((size_t)f->n * 1920 * sizeof *ref);
    REQUIRE(ref && ember_codec_load(DIR, &cp, &codec) == EMBER_OK);
    REQUIRE(ember_codec_push(codec, f->codes, f->n, ref) == EMBER_OK);
    const size_t n = (size_t)f->n * (size_t)ember_codec_samples_per_frame(codec);
    CHECK_MSG(a.n == n, "%zu samples, want %zu", a.n, n);
    double num = 0, den = 0;
    int s16_off = 0;
    for (size_t i = 0; i < n && i < a.n; i++) {
        num += ((double)a.f32[i] - ref[i]) * ((double)a.f32[i] - ref[i]);
        den += (double)ref[i] * ref[i];
        float c = a.f32[i] > 1 ? 1 : a.f32[i] < -1 ? -1 : a.f32[i];
        if (abs((int)a.s16[i] - (int)lrintf(c * 32767.0f)) > 1) s16_off++;
    }
    CHECK_MSG(den > 0 && sqrt(num / den) < 1e-4, "relative error %g", den > 0 ? sqrt(num / den) : -1.0);
    CHECK_MSG(s16_off == 0, "%d s16 samples differ from the floats", s16_off);
    ember_codec_free(codec);
    free(ref);
    free(a.f32);
    free(a.s16);
    free(f);
    ember_tts_free(t);
}

/* ids of the text, temperature 0, and a codes-only load: the same frames */
static void test_same_frames_three_ways(void)
{
    ember_tts *t = load(0), *codes_only = load(1);
    REQUIRE(t && codes_only);
    ember_speech_request rq = request();
    frames *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
    REQUIRE(a && b && c);
    REQUIRE(ember_tts_codes(t, &rq, on_codes, a, NULL) == EMBER_OK);
    rq.greedy = 0;
    rq.temperature = 0;
    REQUIRE(ember_tts_codes(codes_only, &rq, on_codes, b, NULL) == EMBER_OK);
    /* the prompt's ids for this text, as the reference's BPE made them
     * (tests/data/tts-tiny-golden.json, "text_ids") */
    ember_speech_timings tm;
    rq.text = NULL;
    static const int32_t ids[] = {151644, 77091, 198, 9707, 504, 279, 13673, 3061, 261, 13, 151645, 198, 151644,
                                  77091, 198};
    rq.text_ids = ids;
    rq.n_text_ids = sizeof ids / sizeof *ids;
    REQUIRE(ember_tts_codes(t, &rq, on_codes, c, &tm) == EMBER_OK);
    CHECK(a->n == b->n && !memcmp(a->codes, b->codes, sizeof a->codes));
    CHECK_MSG(a->n == c->n && !memcmp(a->codes, c->codes, sizeof a->codes), "text ids give other frames");
    EXPECT_FAIL(ember_tts_speak(codes_only, &rq, on_f32, NULL, NULL, NULL), EMBER_ERR_INVALID_ARG, "codes_only");
    CHECK(ember_tts_sample_rate(codes_only) == 0 && ember_tts_sample_rate(t) == 24000);
    free(a);
    free(b);
    free(c);
    ember_tts_free(codes_only);
    ember_tts_free(t);
}

static void test_min_frames_cancel_and_stats(void)
{
    ember_tts *t = load(0);
    REQUIRE(t);
    ember_speech_request rq = request();
    rq.min_frames = rq.max_frames = 12;
    ember_stats *st = NULL;
    REQUIRE(ember_stats_create("tts", &st) == EMBER_OK);
    rq.stats = st;
    audio a = audio_new(64 * 1920);
    ember_speech_timings tm;
    REQUIRE(ember_tts_speak(t, &rq, NULL, on_s16, &a, &tm) == EMBER_OK);
    CHECK(tm.frames == 12 && !tm.stopped_at_eos && a.n16 == 12 * 1920);
    ember_stat_summary talker;
    int id = ember_stats_find(st, "talker");
    CHECK_MSG(id >= 0 && ember_stats_summary(st, id, &talker) == EMBER_OK && talker.count == 12,
              "talker series: id %d", id);
    CHECK(ember_stats_find(st, "codec_decode") >= 0);
    ember_stats_free(st);
    /* a callback's non-zero stops the request; the next one runs whole */
    rq.stats = NULL;
    a.n16 = 0;
    a.stop_after = 2;
    rq.chunks = "2";
    EXPECT_FAIL(ember_tts_speak(t, &rq, NULL, on_s16, &a, &tm), EMBER_ERR_CANCELLED, "");
    CHECK(a.chunks == 2);
    frames *f = calloc(1, sizeof *f);
    REQUIRE(f);
    f->stop_after = 3;
    EXPECT_FAIL(ember_tts_codes(t, &rq, on_codes, f, &tm), EMBER_ERR_CANCELLED, "cancelled");
    CHECK(f->n == 3);
    f->n = f->stop_after = 0;
    CHECK(ember_tts_codes(t, &rq, on_codes, f, &tm) == EMBER_OK && f->n == 12);
    free(f);
    free(a.f32);
    free(a.s16);
    ember_tts_free(t);
}

static void test_bad_requests(void)
{
    ember_tts *t = load(0);
    REQUIRE(t);
    ember_speech_request rq = request();
    frames *f = calloc(1, sizeof *f);
    REQUIRE(f);
    static const int32_t ids[] = {1, 2, 3};
    rq.text_ids = ids;
    rq.n_text_ids = 3;
    EXPECT_FAIL(ember_tts_codes(t, &rq, on_codes, f, NULL), EMBER_ERR_INVALID_ARG, "text or text_ids");
    rq = request();
    rq.top_p = 0;
    EXPECT_FAIL(ember_tts_codes(t, &rq, on_codes, f, NULL), EMBER_ERR_INVALID_ARG, "top_p");
    rq = request();
    rq.temperature = 1000;
    EXPECT_FAIL(ember_tts_codes(t, &rq, on_codes, f, NULL), EMBER_ERR_INVALID_ARG, "temperature");
    rq = request();
    rq.speaker = "nobody";
    EXPECT_FAIL(ember_tts_speak(t, &rq, on_f32, NULL, NULL, NULL), EMBER_ERR_INVALID_ARG, "nobody");
    rq = request();
    rq.chunks = "2,0";
    EXPECT_FAIL(ember_tts_speak(t, &rq, on_f32, NULL, NULL, NULL), EMBER_ERR_INVALID_ARG, "chunk");
    ember_tts_params p = ember_tts_default_params();
    p.n_generator_cpus = 300;
    ember_tts *none = NULL;
    EXPECT_FAIL(ember_tts_load(DIR, &p, &none), EMBER_ERR_INVALID_ARG, "CPU");
    CHECK(none == NULL);
    free(f);
    ember_tts_free(t);
}

/* the info JSON's "chunking", or NULL */
static char *chunking_of(const ember_tts *t, char *desc, size_t cap)
{
    char *json = NULL, *out = NULL;
    cJSON *o = NULL;
    if (ember_tts_info(t, &json) == EMBER_OK && (o = cJSON_Parse(json))) {
        const cJSON *c = cJSON_GetObjectItem(o, "chunking"), *d = cJSON_GetObjectItem(o, "description");
        const cJSON *w = cJSON_GetObjectItem(o, "weights"), *s = cJSON_GetObjectItem(o, "speakers");
        if (cJSON_IsString(c) && cJSON_IsString(w) && cJSON_GetArraySize(s) > 0) out = strdup(c->valuestring);
        snprintf(desc, cap, "%s", cJSON_IsString(d) ? d->valuestring : "");
    }
    cJSON_Delete(o);
    ember_free(json);
    return out;
}

static void test_calibration_written_then_used(void)
{
    char dir[] = "/tmp/ember-speech-cal-XXXXXX", desc[2048];
    REQUIRE(mkdtemp(dir));
    const char *old = getenv("XDG_CACHE_HOME");
    char *saved = old ? strdup(old) : NULL;
    setenv("XDG_CACHE_HOME", dir, 1);
    ember_tts_params p = ember_tts_default_params();
    p.n_threads = p.decoder_threads = 1;
    p.max_frames = 64;
    p.calibration = 1;
    ember_tts *t = NULL;
    REQUIRE(ember_tts_load(DIR, &p, &t) == EMBER_OK);
    char *before = chunking_of(t, desc, sizeof desc);
    CHECK_MSG(before && !strcmp(before, "default"), "a fresh cache: %s", before ? before : "(no info)");
    ember_speech_request rq = request();
    rq.min_frames = rq.max_frames = 40;
    audio a = audio_new(64 * 1920);
    CHECK(ember_tts_speak(t, &rq, NULL, on_s16, &a, NULL) == EMBER_OK);
    ember_tts_free(t);
    t = NULL;
    REQUIRE(ember_tts_load(DIR, &p, &t) == EMBER_OK);
    char *after = chunking_of(t, desc, sizeof desc);
    CHECK_MSG(after && strcmp(after, "default") && strstr(desc, "calibrated on this machine") &&
                  strstr(desc, dir),
              "after a request: %s (%s)", after ? after : "(no info)", desc);
    free(before);
    free(after);
    free(a.f32);
    free(a.s16);
    ember_tts_free(t);
    if (saved) setenv("XDG_CACHE_HOME", saved, 1);
    else unsetenv("XDG_CACHE_HOME");
    free(saved);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* In-context cloning: a recording's voice with its transcript; the audio
 * spoken is the tail of decoding the recording's codes followed by the
 * generated frames in one stream (the official wrapper's trimming), checked
 * with the public speech decoder. A tiny Base model is made by the
 * checkpoint generator (skipped without torch). */
static void test_in_context_clone_continues_the_recording(void)
{
    char dir[] = "/tmp/ember-speech-base-XXXXXX", line[256];
    if (system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
        printf("     (skipped: no torch to make a Base checkpoint)\n");
        return;
    }
    REQUIRE(mkdtemp(dir));
    snprintf(line, sizeof line,
             "/usr/bin/python3 reference/make_tts_checkpoint.py --preset tiny --variant 0.6b-base --seed 6 "
             "--out %s/m >/dev/null",
             dir);
    REQUIRE(system(line) == 0);
    char model[64];
    snprintf(model, sizeof model, "%s/m", dir);
    ember_voice_params vp = ember_voice_default_params();
    vp.codes = 1;
    ember_voice_encoder *enc = NULL;
    ember_voice *voice = NULL;
    float *clip = NULL;
    size_t n_clip = 0;
    REQUIRE(ember_audio_read("tests/data/voice-ref-24k.wav", 24000, 60, &clip, &n_clip, NULL) == EMBER_OK);
    REQUIRE(ember_voice_encoder_load(model, &vp, &enc) == EMBER_OK);
    REQUIRE(ember_voice_create(enc, clip, n_clip, "Hello there, this is me.", &voice) == EMBER_OK);
    const int64_t F = ember_voice_code_frames(enc, n_clip);
    int32_t *all = malloc(sizeof *all * (size_t)(F + MAX_FRAMES) * 16);
    REQUIRE(all && ember_voice_codebooks(enc) == 16 && ember_voice_codes(enc, clip, n_clip, all, NULL) == EMBER_OK);
    ember_tts_params p = ember_tts_default_params();
    p.n_threads = p.decoder_threads = 1;
    ember_tts *t = NULL;
    REQUIRE(ember_tts_load(model, &p, &t) == EMBER_OK);
    ember_speech_request rq = ember_speech_default_request();
    rq.text = "Nice to meet you.";
    rq.language = "english";
    rq.greedy = 1;
    rq.max_frames = rq.min_frames = 10;
    rq.voice = voice;
    frames *icl = calloc(1, sizeof *icl), *xv = calloc(1, sizeof *xv);
    REQUIRE(icl && xv && ember_tts_codes(t, &rq, on_codes, icl, NULL) == EMBER_OK && icl->n == 10);
    rq.xvector_only = 1;
    REQUIRE(ember_tts_codes(t, &rq, on_codes, xv, NULL) == EMBER_OK);
    CHECK_MSG(memcmp(icl->codes, xv->codes, 10 * 16 * sizeof(int32_t)), "the transcript and codes changed nothing");
    rq.xvector_only = 0;
    rq.chunks = "3";
    audio a = audio_new(64 * 1920);
    const ember_status spoke = ember_tts_speak(t, &rq, on_f32, on_s16, &a, NULL);
    CHECK_MSG(spoke == EMBER_OK, "speak: %s", ember_last_error());
    REQUIRE(spoke == EMBER_OK);
    memcpy(all + F * 16, icl->codes, 10 * 16 * sizeof(int32_t));
    ember_codec_params cp = ember_codec_default_params();
    cp.n_threads = 1;
    ember_codec *codec = NULL;
    float *ref = malloc(sizeof *ref * (size_t)(F + 10) * 1920);
    REQUIRE(ref && ember_codec_load(model, &cp, &codec) == EMBER_OK);
    REQUIRE(ember_codec_push(codec, all, (int32_t)F + 10, ref) == EMBER_OK);
    double num = 0, den = 0;
    for (size_t i = 0; i < a.n && a.n == 10 * 1920; i++) {
        const double d = (double)a.f32[i] - ref[(size_t)F * 1920 + i];
        num += d * d;
        den += (double)ref[(size_t)F * 1920 + i] * ref[(size_t)F * 1920 + i];
    }
    CHECK_MSG(a.n == 10 * 1920 && den > 0 && sqrt(num / den) < 1e-4, "%zu samples, relative error %g", a.n,
              den > 0 ? sqrt(num / den) : -1.0);
    ember_codec_free(codec);
    ember_tts_free(t);
    ember_voice_free(voice);
    ember_voice_encoder_free(enc);
    ember_free(clip);
    free(all);
    free(ref);
    free(icl);
    free(xv);
    free(a.f32);
    free(a.s16);
    snprintf(line, sizeof line, "rm -rf %s", dir);
    CHECK(system(line) == 0);
}

int main(void)
{
    RUN(test_audio_is_its_codes_decoded);
    RUN(test_same_frames_three_ways);
    RUN(test_min_frames_cancel_and_stats);
    RUN(test_bad_requests);
    RUN(test_calibration_written_then_used);
    RUN(test_in_context_clone_continues_the_recording);
    return check_summary();
}
