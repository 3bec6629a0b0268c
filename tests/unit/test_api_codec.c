/* The public speech decoder and WAV writer (include/ember_speech.h) on the
 * committed tiny Qwen3-TTS checkpoint: audio independent of how the frames
 * are split into pushes, reset starts a new utterance, bad codes and bad
 * directories are refused with the stream unchanged; a WAV file holds the
 * samples as s16 with the right header, and an aborted one is removed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ember.h"

#define DIR "models/tts-tiny"
#define FRAMES 12

static ember_codec *load(void)
{
    ember_codec_params p = ember_codec_default_params();
    p.n_threads = 1;
    ember_codec *c = NULL;
    if (ember_codec_load(DIR, &p, &c) != EMBER_OK) printf("     cannot load: %s\n", ember_last_error());
    return c;
}

static void frames(const ember_codec *c, int32_t *codes)
{
    unsigned s = 11;
    for (int32_t i = 0; i < FRAMES * ember_codec_codebooks(c); i++) {
        s = s * 1103515245u + 12345u;
        codes[i] = (int32_t)((s >> 8) % 64u); /* below any codebook size */
    }
}

/* Relative L2 distance of b from a. */
static double rel(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)a[i] * a[i];
    }
    return den > 0 ? sqrt(num / den) : INFINITY;
}

static void test_split_invariance(void)
{
    ember_codec *c = load();
    REQUIRE(c);
    const int32_t q = ember_codec_codebooks(c), spf = ember_codec_samples_per_frame(c);
    CHECK(q > 0 && spf > 0 && ember_codec_sample_rate(c) == 24000 && *ember_codec_kernels(c));
    int32_t *codes = malloc(sizeof *codes * FRAMES * (size_t)q);
    float *whole = malloc(sizeof *whole * FRAMES * (size_t)spf);
    float *parts = malloc(sizeof *parts * FRAMES * (size_t)spf);
    REQUIRE(codes && whole && parts);
    frames(c, codes);
    REQUIRE(ember_codec_push(c, codes, FRAMES, whole) == EMBER_OK);
    ember_codec_reset(c);
    static const int32_t split[] = {1, 4, 2, 5};
    for (int32_t off = 0, i = 0; off < FRAMES; off += split[i++])
        REQUIRE(ember_codec_push(c, codes + (size_t)off * q, split[i], parts + (size_t)off * spf) == EMBER_OK);
    const size_t n = (size_t)FRAMES * spf;
    double d = rel(whole, parts, n);
    CHECK_MSG(d <= 1e-5, "split decode differs: relative %.3g", d);
    /* a code out of range: refused, and the stream goes on as if it was not pushed */
    ember_codec_reset(c);
    REQUIRE(ember_codec_push(c, codes, 5, parts) == EMBER_OK);
    int32_t bad = codes[5 * q];
    codes[5 * q] = 1 << 20;
    EXPECT_FAIL(ember_codec_push(c, codes + 5 * q, 7, parts + 5 * spf), EMBER_ERR_INVALID_ARG, "");
    codes[5 * q] = bad;
    REQUIRE(ember_codec_push(c, codes + 5 * q, 7, parts + 5 * spf) == EMBER_OK);
    d = rel(whole, parts, n);
    CHECK_MSG(d <= 1e-5, "after a refused push: relative %.3g", d);
    free(codes);
    free(whole);
    free(parts);
    ember_codec_free(c);
    ember_codec *none = NULL;
    CHECK(ember_codec_load("/nonexistent-dir", NULL, &none) != EMBER_OK && !none);
}

static void test_wav(void)
{
    char path[] = "/tmp/ember-test-wav-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    const float pcm[5] = {0.0f, 0.5f, -1.0f, 2.0f, -0.25f};
    ember_wav *w = NULL;
    REQUIRE(ember_wav_open(path, 24000, &w) == EMBER_OK);
    REQUIRE(ember_wav_write(w, pcm, 3) == EMBER_OK && ember_wav_write(w, pcm + 3, 2) == EMBER_OK);
    REQUIRE(ember_wav_close(w) == EMBER_OK);
    unsigned char b[64];
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    CHECK(n == 44 + 5 * 2 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WAVE", 4));
    unsigned rate = b[24] | b[25] << 8 | b[26] << 16 | (unsigned)b[27] << 24;
    unsigned data = b[40] | b[41] << 8 | b[42] << 16 | (unsigned)b[43] << 24;
    CHECK(rate == 24000 && data == 10);
    const int want[5] = {0, 16384, -32767, 32767, -8192}; /* rounded, clipped */
    for (int i = 0; i < 5; i++) {
        int got = (int16_t)(b[44 + 2 * i] | b[45 + 2 * i] << 8);
        CHECK_MSG(abs(got - want[i]) <= 1, "sample %d: %d, expected %d", i, got, want[i]);
    }
    REQUIRE(ember_wav_open(path, 24000, &w) == EMBER_OK);
    REQUIRE(ember_wav_write(w, pcm, 5) == EMBER_OK);
    ember_wav_abort(w);
    CHECK(access(path, F_OK) != 0);
    EXPECT_FAIL(ember_wav_open("/nonexistent-dir/x.wav", 24000, &w), EMBER_ERR_IO, "/nonexistent-dir/x.wav");
    CHECK(w == NULL);
}

int main(void)
{
    RUN(test_split_invariance);
    RUN(test_wav);
    return check_summary();
}
