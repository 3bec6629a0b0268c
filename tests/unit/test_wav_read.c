/* Reading WAV files (io/wav_read.h) and resampling (io/resample.h): files of
 * every supported encoding are written here byte by byte from samples the
 * test computes, read back, and compared with the values the format defines
 * (integer code / 2^(bits-1), channel mean); resampled sines are compared
 * with the same sine evaluated at the new rate; and every malformed case
 * gets its error. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/resample.h"
#include "io/wav_read.h"

/* ---- a WAV builder independent of the reader ------------------------------ */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n)
{
    if (n == 0) return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_u16(buf *b, uint16_t v)
{
    const uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(b, x, 2);
}

static void put_u32(buf *b, uint32_t v)
{
    put_u16(b, (uint16_t)v);
    put_u16(b, (uint16_t)(v >> 16));
}

typedef struct spec {
    uint16_t tag; /* 1 PCM, 3 float */
    int extensible;
    uint16_t channels;
    uint32_t rate;
    uint16_t bits;
} spec;

/* A file of `frames` frames; sample (t, c) is value(t, c) in [-1, 1),
 * encoded as the format does; expect[t] receives the channel mean of the
 * decoded values, computed from the integer codes. Chunk `extra` (if not
 * NULL) goes between fmt and data; data_size overrides the declared size. */
static double value(size_t t, uint16_t c) { return 0.9 * sin(0.37 * (double)t + 1.3 * c) - 0.01 * c; }

static buf make_wav(const spec *s, size_t frames, float *expect, const char *extra,
                    uint32_t extra_len, int64_t data_size)
{
    buf data = {0}, b = {0};
    for (size_t t = 0; t < frames; t++) {
        double sum = 0;
        for (uint16_t c = 0; c < s->channels; c++) {
            const double v = value(t, c);
            if (s->tag == 3 && s->bits == 32) {
                const float f = (float)v;
                uint32_t u;
                memcpy(&u, &f, 4);
                put_u32(&data, u);
                sum += f;
            } else if (s->tag == 3) {
                uint64_t u;
                memcpy(&u, &v, 8);
                put_u32(&data, (uint32_t)u);
                put_u32(&data, (uint32_t)(u >> 32));
                sum += v;
            } else if (s->bits == 8) {
                const int code = (int)lround(v * 127.0);
                const uint8_t u = (uint8_t)(code + 128);
                put(&data, &u, 1);
                sum += code / 128.0;
            } else {
                const double full = ldexp(1.0, s->bits - 1);
                const int64_t code = llround(v * (full - 1));
                const uint32_t u = (uint32_t)code;
                const uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16),
                                       (uint8_t)(u >> 24)};
                put(&data, le, s->bits / 8);
                sum += (double)code / full;
            }
        }
        if (expect) expect[t] = (float)(sum / s->channels);
    }
    const uint16_t align = (uint16_t)(s->channels * s->bits / 8);
    put(&b, "RIFF", 4);
    put_u32(&b, 0); /* patched below */
    put(&b, "WAVEfmt ", 8);
    put_u32(&b, s->extensible ? 40 : 16);
    put_u16(&b, s->extensible ? 0xFFFE : s->tag);
    put_u16(&b, s->channels);
    put_u32(&b, s->rate);
    put_u32(&b, s->rate * align);
    put_u16(&b, align);
    put_u16(&b, s->bits);
    if (s->extensible) {
        static const uint8_t tail[14] = {0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71};
        put_u16(&b, 22);
        put_u16(&b, s->bits);
        put_u32(&b, s->channels == 2 ? 3 : 4); /* channel mask: FL|FR, or FC */
        put_u16(&b, s->tag);
        put(&b, tail, sizeof tail);
    }
    if (extra) put(&b, extra, extra_len);
    put(&b, "data", 4);
    put_u32(&b, data_size >= 0 ? (uint32_t)data_size : (uint32_t)data.n);
    put(&b, data.p, data.n);
    free(data.p);
    const uint32_t riff = (uint32_t)(b.n - 8);
    memcpy(b.p + 4, (uint8_t[]){(uint8_t)riff, (uint8_t)(riff >> 8), (uint8_t)(riff >> 16),
                                (uint8_t)(riff >> 24)}, 4);
    return b;
}

static const spec formats[] = {
    {1, 0, 1, 24000, 16}, {1, 0, 2, 44100, 16}, {1, 0, 1, 48000, 24}, {1, 0, 2, 16000, 24},
    {1, 0, 1, 22050, 32}, {1, 1, 2, 48000, 32}, {1, 1, 1, 24000, 24}, {1, 0, 2, 8000, 8},
    {3, 0, 1, 24000, 32}, {3, 1, 2, 44100, 32}, {3, 0, 1, 32000, 64}, {3, 1, 6, 48000, 32},
};

static void every_format_reads_back(void)
{
    enum { FRAMES = 301 };
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
        const spec *s = &formats[i];
        float expect[FRAMES];
        buf b = make_wav(s, FRAMES, expect, NULL, 0, -1);
        wav_info info;
        float *mono;
        size_t n;
        ember_status st = wav_parse(b.p, b.n, "t.wav", &info, &mono, &n);
        CHECK_MSG(st == EMBER_OK, "format %zu: %s", i, ember_last_error());
        if (st == EMBER_OK) {
            CHECK(n == FRAMES && info.frames == FRAMES);
            CHECK(info.sample_rate == s->rate && info.channels == s->channels &&
                  info.bits == s->bits && info.extensible == s->extensible);
            CHECK(info.encoding == (s->tag == 1 ? WAV_PCM_INT : WAV_PCM_FLOAT));
            double worst = 0;
            for (size_t t = 0; t < n; t++) worst = fmax(worst, fabs((double)mono[t] - expect[t]));
            /* the reader sums in double and rounds once, as expect[] does */
            CHECK_MSG(worst <= 1e-7, "format %zu (%u-bit tag %u, %u ch): max error %g", i, s->bits,
                      s->tag, s->channels, worst);
            CHECK_MSG(info.n_full_scale == 0 && info.peak > 0.1f && info.peak < 1.0f,
                      "format %zu: %llu at full scale, peak %g", i,
                      (unsigned long long)info.n_full_scale, info.peak);
            free(mono);
        }
        free(b.p);
    }
}

static void odd_chunks_and_stream_placeholder(void)
{
    const spec s = {1, 0, 1, 24000, 16};
    float expect[40];
    /* a LIST chunk of odd size (5) with its pad byte, before data */
    const char list[] = "LIST\x05\x00\x00\x00INFOx\x00";
    buf b = make_wav(&s, 40, expect, list, 14, -1);
    wav_info info;
    float *mono;
    size_t n;
    CHECK(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n) == EMBER_OK && n == 40);
    if (n == 40) CHECK(mono[39] == expect[39]);
    free(mono);
    free(b.p);
    /* a stream's header: data size unknown (as ember's server writes it),
     * plus a partial frame at the end, which is dropped */
    b = make_wav(&s, 40, expect, NULL, 0, 0xFFFFFFDAu);
    put(&b, "\x01", 1);
    CHECK(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n) == EMBER_OK && n == 40 &&
          info.length_unknown);
    free(mono);
    free(b.p);
}

static void clipped_and_silent_are_counted(void)
{
    const spec s = {1, 0, 1, 24000, 16};
    buf b = make_wav(&s, 10, NULL, NULL, 0, -1);
    uint8_t *d = b.p + b.n - 20; /* sample 0 */
    memset(d, 0, 20);
    d[2] = 0xFF, d[3] = 0x7F; /* +32767 */
    d[4] = 0x00, d[5] = 0x80; /* -32768 */
    wav_info info;
    float *mono;
    size_t n;
    CHECK(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n) == EMBER_OK);
    CHECK(info.n_full_scale == 2 && info.peak == 1.0f);
    free(mono);
    memset(d, 0, 20);
    CHECK(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n) == EMBER_OK);
    CHECK(info.n_full_scale == 0 && info.peak == 0.0f && n == 10);
    free(mono);
    free(b.p);
}

/* Every way a file can be wrong gets an error that says which. */
static void malformed_files_are_refused(void)
{
    const spec s16 = {1, 0, 1, 24000, 16};
    wav_info info;
    float *mono = (float *)&info;
    size_t n = 7;
    buf b = make_wav(&s16, 50, NULL, NULL, 0, -1);
    EXPECT_FAIL(wav_parse((const uint8_t *)"RIFF", 4, "t.wav", &info, &mono, &n), EMBER_ERR_FORMAT,
                "not a WAV file");
    CHECK(mono == NULL && n == 0);
    EXPECT_FAIL(wav_parse((const uint8_t *)"ID3\x04....", 10, "t.wav", &info, &mono, &n),
                EMBER_ERR_FORMAT, "t.wav: not a WAV file");
    memcpy(b.p, "RF64", 4);
    EXPECT_FAIL(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n), EMBER_ERR_UNSUPPORTED, "RF64");
    memcpy(b.p, "RIFF", 4);
    /* every truncation: the header, the fmt chunk, the data */
    for (size_t len = 0; len < b.n; len++) {
        ember_status st = wav_parse(b.p, len, "t.wav", &info, &mono, &n);
        CHECK_MSG(st != EMBER_OK && mono == NULL, "prefix of %zu bytes accepted", len);
        if (len == b.n - 1) CHECK(check_error_has("truncated: data chunk declares 100 bytes"));
    }
    /* an empty data chunk */
    buf e = make_wav(&s16, 0, NULL, NULL, 0, -1);
    EXPECT_FAIL(wav_parse(e.p, e.n, "t.wav", &info, &mono, &n), EMBER_ERR_FORMAT, "no audio");
    free(e.p);
    /* fmt fields: format tag (ADPCM), bits, block align, channels, rate */
    const size_t fmt = 20;
    b.p[fmt] = 2;
    EXPECT_FAIL(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n), EMBER_ERR_UNSUPPORTED,
                "sample format 0x0002");
    b.p[fmt] = 1;
    b.p[fmt + 14] = 12;
    EXPECT_FAIL(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n), EMBER_ERR_UNSUPPORTED,
                "12-bit PCM");
    b.p[fmt + 14] = 16;
    b.p[fmt + 12] = 4;
    EXPECT_FAIL(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n), EMBER_ERR_FORMAT, "block align 4");
    b.p[fmt + 12] = 2;
    b.p[fmt + 2] = 0;
    EXPECT_FAIL(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n), EMBER_ERR_UNSUPPORTED, "0 channels");
    b.p[fmt + 2] = 1;
    memset(b.p + fmt + 4, 0, 4);
    EXPECT_FAIL(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n), EMBER_ERR_UNSUPPORTED,
                "sample rate 0 Hz");
    free(b.p);
    /* EXTENSIBLE with a sub-format GUID that is not PCM/float's */
    const spec ext = {1, 1, 2, 48000, 24};
    b = make_wav(&ext, 5, NULL, NULL, 0, -1);
    b.p[20 + 30] ^= 1;
    EXPECT_FAIL(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n), EMBER_ERR_UNSUPPORTED, "sub-format");
    free(b.p);
    /* a NaN float sample */
    const spec f32 = {3, 0, 1, 24000, 32};
    b = make_wav(&f32, 5, NULL, NULL, 0, -1);
    memcpy(b.p + b.n - 8, "\x00\x00\xc0\x7f", 4);
    EXPECT_FAIL(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n), EMBER_ERR_FORMAT,
                "sample 3 (channel 0) is not finite");
    free(b.p);
    /* a float64 sample no float holds */
    const spec f64 = {3, 0, 1, 24000, 64};
    b = make_wav(&f64, 5, NULL, NULL, 0, -1);
    memcpy(b.p + b.n - 16, (const uint8_t[]){0, 0, 0, 0, 0, 0, 0xF0, 0x47}, 8); /* 2^128 */
    EXPECT_FAIL(wav_parse(b.p, b.n, "t.wav", &info, &mono, &n), EMBER_ERR_FORMAT,
                "sample 3 (channel 0) is not finite (or beyond float range)");
    free(b.p);
    /* data before fmt, and no data at all */
    static const uint8_t data_first[] = "RIFF\x14\x00\x00\x00WAVEdata\x02\x00\x00\x00\x01\x02";
    EXPECT_FAIL(wav_parse(data_first, sizeof data_first - 1, "t.wav", &info, &mono, &n),
                EMBER_ERR_FORMAT, "data chunk before the fmt chunk");
    b = make_wav(&s16, 4, NULL, NULL, 0, -1);
    EXPECT_FAIL(wav_parse(b.p, 36, "t.wav", &info, &mono, &n), EMBER_ERR_FORMAT,
                "truncated: no data chunk");
    free(b.p);
}

static double sine_snr_db(const float *y, size_t n, double rate, double hz, size_t skip)
{
    double sig = 0, err = 0;
    for (size_t t = skip; t + skip < n; t++) {
        const double want = 0.5 * sin(2 * M_PI * hz * (double)t / rate);
        sig += want * want;
        err += (y[t] - want) * (y[t] - want);
    }
    return 10 * log10(sig / err);
}

/* A 1 kHz sine at each common rate becomes the 24 kHz sine. */
static void resampled_sine_is_the_sine(void)
{
    static const uint32_t rates[] = {8000, 11025, 16000, 22050, 32000, 44100, 48000, 96000};
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++) {
        const uint32_t r = rates[i];
        const size_t n = r / 2 + 7; /* half a second and an odd tail */
        float *x = malloc(n * sizeof(float)), *y;
        size_t m;
        for (size_t t = 0; t < n; t++) x[t] = (float)(0.5 * sin(2 * M_PI * 1000.0 * (double)t / r));
        REQUIRE(resample_mono(x, n, r, 24000, &y, &m) == EMBER_OK);
        CHECK_MSG(m == (size_t)ceil((double)n * 24000.0 / r), "%u Hz: %zu samples", r, m);
        /* the filter's edges (linear phase, ~ms) are left out */
        const double db = sine_snr_db(y, m, 24000.0, 1000.0, 600);
        CHECK_MSG(db > 80.0, "%u Hz -> 24 kHz: sine SNR %.1f dB", r, db);
        printf("     %u Hz -> 24 kHz: %zu -> %zu samples, sine SNR %.1f dB\n", r, n, m, db);
        free(x);
        free(y);
    }
}

static void load_resamples_and_limits_length(void)
{
    const spec s = {1, 0, 2, 48000, 24};
    buf b = make_wav(&s, 4800, NULL, NULL, 0, -1);
    char path[] = "/tmp/ember-test-wav-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    CHECK(write(fd, b.p, b.n) == (ssize_t)b.n);
    close(fd);
    wav_info info;
    float *y;
    size_t n;
    CHECK(wav_load(path, 24000, 0, &info, &y, &n) == EMBER_OK && n == 2400 &&
          info.sample_rate == 48000);
    free(y);
    CHECK(wav_load(path, 48000, 0.1, &info, &y, &n) == EMBER_OK && n == 4800);
    free(y);
    EXPECT_FAIL(wav_load(path, 24000, 0.05, &info, &y, &n), EMBER_ERR_UNSUPPORTED,
                "0.10 s of audio is longer than the 0.05 s limit");
    CHECK(y == NULL);
    unlink(path);
    EXPECT_FAIL(wav_load(path, 24000, 0, &info, &y, &n), EMBER_ERR_IO, "cannot open");
    free(b.p);
}

int main(void)
{
    RUN(every_format_reads_back);
    RUN(odd_chunks_and_stream_placeholder);
    RUN(clipped_and_silent_are_counted);
    RUN(malformed_files_are_refused);
    RUN(resampled_sine_is_the_sine);
    RUN(load_resamples_and_limits_length);
    return check_summary();
}
