#include "io/wav.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/status.h"

void wav_f32_to_s16(const float *x, int16_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i] * 32767.0f;
        v = v > 32767.0f ? 32767.0f : v < -32768.0f ? -32768.0f : v;
        out[i] = (int16_t)lrintf(v);
    }
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

void wav_header(uint8_t out[44], uint32_t sample_rate, uint16_t channels, uint32_t n_samples)
{
    const uint32_t data = n_samples * channels * 2u;
    memcpy(out, "RIFF", 4);
    put32(out + 4, 36u + data);
    memcpy(out + 8, "WAVEfmt ", 8);
    put32(out + 16, 16);                           /* fmt chunk size */
    put16(out + 20, 1);                            /* PCM */
    put16(out + 22, channels);
    put32(out + 24, sample_rate);
    put32(out + 28, sample_rate * channels * 2u);  /* byte rate */
    put16(out + 32, (uint16_t)(channels * 2u));    /* block align */
    put16(out + 34, 16);                           /* bits per sample */
    memcpy(out + 36, "data", 4);
    put32(out + 40, data);
}

ember_status wav_open(wav_writer *w, const char *path, uint32_t sample_rate)
{
    memset(w, 0, sizeof *w);
    uint8_t h[44];
    w->path = strdup(path);
    w->f = w->path ? fopen(path, "wb") : NULL;
    w->sample_rate = sample_rate;
    wav_header(h, sample_rate, 1, 0);
    if (!w->f || fwrite(h, 1, sizeof h, w->f) != sizeof h) {
        ember_status st = ember_fail(EMBER_ERR_IO, "%s: cannot write", path);
        wav_abort(w);
        return st;
    }
    return EMBER_OK;
}

ember_status wav_append(wav_writer *w, const float *x, size_t n)
{
    int16_t buf[4096];
    for (size_t off = 0; off < n;) {
        size_t k = n - off < 4096 ? n - off : 4096;
        wav_f32_to_s16(x + off, buf, k);
        if (fwrite(buf, sizeof *buf, k, w->f) != k)
            return ember_fail(EMBER_ERR_IO, "%s: write failed", w->path);
        off += k;
    }
    w->n_samples += n;
    if (w->n_samples > (UINT32_MAX - 36) / 2)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: longer than a WAV file can hold", w->path);
    return EMBER_OK;
}

ember_status wav_close(wav_writer *w)
{
    uint8_t h[44];
    wav_header(h, w->sample_rate, 1, (uint32_t)w->n_samples);
    int bad = fseek(w->f, 0, SEEK_SET) != 0 || fwrite(h, 1, sizeof h, w->f) != sizeof h;
    bad |= fclose(w->f) != 0;
    w->f = NULL;
    ember_status st = bad ? ember_fail(EMBER_ERR_IO, "%s: write failed", w->path) : EMBER_OK;
    if (st) unlink(w->path);
    free(w->path);
    w->path = NULL;
    return st;
}

void wav_abort(wav_writer *w)
{
    if (w->f) fclose(w->f);
    if (w->path) unlink(w->path);
    free(w->path);
    memset(w, 0, sizeof *w);
}
