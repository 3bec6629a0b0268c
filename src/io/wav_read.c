/* RIFF/WAVE reading: chunk walk, format checks, sample conversion and the
 * channel-mean downmix (see wav_read.h for what is accepted and why). */
#include "io/wav_read.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/read_file.h"
#include "io/resample.h"

#define FMT_PCM 1
#define FMT_FLOAT 3
#define FMT_EXTENSIBLE 0xFFFE
/* A declared data size at or above this cannot be a real chunk that lost its
 * tail: it is the placeholder of a writer that did not know the length. */
#define DATA_SIZE_UNKNOWN 0x80000000u
/* The file sizes wav_load reads: 2 GiB holds over 3 hours of 48 kHz stereo
 * float, far past any voice reference. */
#define WAV_FILE_CAP ((size_t)1 << 31)

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) { return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16; }

/* The tail every KSDATAFORMAT_SUBTYPE_* GUID shares after its 16-bit tag. */
static const uint8_t SUBTYPE_TAIL[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                                         0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};

typedef struct wav_format {
    uint16_t tag; /* FMT_PCM or FMT_FLOAT after unwrapping EXTENSIBLE */
    int extensible;
    uint16_t channels, block_align, bits;
    uint32_t rate;
} wav_format;

static ember_status parse_fmt(const uint8_t *p, uint32_t size, const char *label, wav_format *f)
{
    if (size < 16)
        return ember_fail(EMBER_ERR_FORMAT, "%s: fmt chunk of %u bytes (at least 16 needed)", label,
                          size);
    f->tag = le16(p);
    f->channels = le16(p + 2);
    f->rate = le32(p + 4);
    f->block_align = le16(p + 12);
    f->bits = le16(p + 14);
    f->extensible = f->tag == FMT_EXTENSIBLE;
    if (f->extensible) {
        if (size < 40 || le16(p + 16) < 22)
            return ember_fail(EMBER_ERR_FORMAT,
                              "%s: WAVE_FORMAT_EXTENSIBLE fmt chunk of %u bytes (40 needed)", label,
                              size);
        if (memcmp(p + 26, SUBTYPE_TAIL, sizeof SUBTYPE_TAIL) != 0)
            return ember_fail(EMBER_ERR_UNSUPPORTED,
                              "%s: WAVE_FORMAT_EXTENSIBLE with a sub-format that is not PCM or float",
                              label);
        f->tag = le16(p + 24);
    }
    if (f->tag != FMT_PCM && f->tag != FMT_FLOAT)
        return ember_fail(EMBER_ERR_UNSUPPORTED,
                          "%s: sample format 0x%04x is not supported (PCM or IEEE float only)", label,
                          f->tag);
    if (f->channels < 1 || f->channels > WAV_MAX_CHANNELS)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: %u channels (1 to %d supported)", label,
                          f->channels, WAV_MAX_CHANNELS);
    if (f->rate < 1000 || f->rate > 768000)
        return ember_fail(EMBER_ERR_UNSUPPORTED,
                          "%s: sample rate %u Hz (1000 to 768000 supported)", label, f->rate);
    const int ok_bits = f->tag == FMT_PCM ? (f->bits == 8 || f->bits == 16 || f->bits == 24 ||
                                             f->bits == 32)
                                          : (f->bits == 32 || f->bits == 64);
    if (!ok_bits)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: %u-bit %s samples are not supported", label,
                          f->bits, f->tag == FMT_PCM ? "PCM" : "float");
    if (f->block_align != f->channels * (f->bits / 8))
        return ember_fail(EMBER_ERR_FORMAT,
                          "%s: block align %u does not match %u channels of %u bits", label,
                          f->block_align, f->channels, f->bits);
    return EMBER_OK;
}

/* One sample at p as a float at natural scale; *full_scale set when it sits
 * at the format's limit (clipping). */
static double sample_at(const uint8_t *p, const wav_format *f, int *full_scale)
{
    switch (f->bits | (f->tag == FMT_FLOAT ? 0x100 : 0)) {
    case 8:
        *full_scale = p[0] == 0 || p[0] == 255;
        return ((int)p[0] - 128) / 128.0;
    case 16: {
        const int16_t v = (int16_t)le16(p);
        *full_scale = v == INT16_MIN || v == INT16_MAX;
        return v / 32768.0;
    }
    case 24: {
        const int32_t v = (int32_t)((uint32_t)p[0] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 24) >> 8;
        *full_scale = v == -8388608 || v == 8388607;
        return v / 8388608.0;
    }
    case 32: {
        const int32_t v = (int32_t)le32(p);
        *full_scale = v == INT32_MIN || v == INT32_MAX;
        return v / 2147483648.0;
    }
    case 0x100 | 32: {
        const uint32_t u = le32(p);
        float v;
        memcpy(&v, &u, sizeof v);
        *full_scale = fabsf(v) >= 1.0f;
        return v;
    }
    default: { /* float64 */
        const uint64_t u = (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
        double v;
        memcpy(&v, &u, sizeof v);
        *full_scale = fabs(v) >= 1.0;
        return v;
    }
    }
}

static ember_status decode_frames(const uint8_t *p, uint64_t frames, const wav_format *f,
                                  const char *label, wav_info *info, float *mono)
{
    const double inv = 1.0 / f->channels;
    for (uint64_t t = 0; t < frames; t++) {
        double sum = 0.0;
        for (uint16_t c = 0; c < f->channels; c++) {
            int full = 0;
            const double v = sample_at(p, f, &full);
            if (!(fabs(v) <= FLT_MAX)) /* NaN, infinite, or a double no float holds */
                return ember_fail(EMBER_ERR_FORMAT,
                                  "%s: sample %llu (channel %u) is not finite (or beyond float range)",
                                  label, (unsigned long long)t, c);
            info->n_full_scale += (uint64_t)full;
            sum += v;
            p += f->bits / 8;
        }
        mono[t] = (float)(sum * inv);
        if (fabsf(mono[t]) > info->peak) info->peak = fabsf(mono[t]);
    }
    return EMBER_OK;
}

ember_status wav_parse(const uint8_t *data, size_t len, const char *label, wav_info *info,
                       float **mono, size_t *n)
{
    *mono = NULL;
    *n = 0;
    memset(info, 0, sizeof *info);
    if (len >= 4 && (memcmp(data, "RF64", 4) == 0 || memcmp(data, "RIFX", 4) == 0))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: %.4s WAV files are not supported", label,
                          (const char *)data);
    if (len < 12 || memcmp(data, "RIFF", 4) != 0 || memcmp(data + 8, "WAVE", 4) != 0)
        return ember_fail(EMBER_ERR_FORMAT, "%s: not a WAV file (no RIFF/WAVE header)", label);
    wav_format f = {0};
    int have_fmt = 0;
    size_t pos = 12;
    for (;;) {
        if (len - pos < 8)
            return ember_fail(EMBER_ERR_FORMAT, "%s: truncated: %s", label,
                              have_fmt ? "no data chunk" : "no fmt chunk");
        const uint8_t *h = data + pos;
        const uint32_t size = le32(h + 4);
        const size_t avail = len - pos - 8;
        if (memcmp(h, "data", 4) == 0) {
            if (!have_fmt)
                return ember_fail(EMBER_ERR_FORMAT, "%s: data chunk before the fmt chunk", label);
            size_t bytes = size;
            if (size > avail) {
                if (size < DATA_SIZE_UNKNOWN)
                    return ember_fail(EMBER_ERR_FORMAT,
                                      "%s: truncated: data chunk declares %u bytes, the file holds %zu",
                                      label, size, avail);
                bytes = avail;
                info->length_unknown = 1;
            }
            const uint64_t frames = bytes / f.block_align;
            if (frames == 0)
                return ember_fail(EMBER_ERR_FORMAT, "%s: no audio (empty data chunk)", label);
            info->encoding = f.tag == FMT_PCM ? WAV_PCM_INT : WAV_PCM_FLOAT;
            info->extensible = f.extensible;
            info->sample_rate = f.rate;
            info->channels = f.channels;
            info->bits = f.bits;
            info->frames = frames;
            float *out = malloc((size_t)frames * sizeof(float));
            if (!out)
                return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory for %llu frames", label,
                                  (unsigned long long)frames);
            ember_status st = decode_frames(h + 8, frames, &f, label, info, out);
            if (st) {
                free(out);
                return st;
            }
            *mono = out;
            *n = (size_t)frames;
            return EMBER_OK;
        }
        if (size > avail)
            return ember_fail(EMBER_ERR_FORMAT,
                              "%s: truncated: chunk '%.4s' declares %u bytes, the file holds %zu",
                              label, (const char *)h, size, avail);
        if (memcmp(h, "fmt ", 4) == 0) {
            if (have_fmt) return ember_fail(EMBER_ERR_FORMAT, "%s: two fmt chunks", label);
            ember_status st = parse_fmt(h + 8, size, label, &f);
            if (st) return st;
            have_fmt = 1;
        }
        pos += 8 + (size_t)size + (size & 1); /* chunks are padded to even sizes */
        if (pos > len) pos = len;
    }
}

ember_status wav_load(const char *path, uint32_t rate, double max_seconds, wav_info *info,
                      float **samples, size_t *n)
{
    char *bytes;
    size_t len;
    float *mono;
    size_t frames;
    *samples = NULL;
    *n = 0;
    ember_status st = io_read_text_file(path, WAV_FILE_CAP, &bytes, &len);
    if (st) return st;
    st = wav_parse((const uint8_t *)bytes, len, path, info, &mono, &frames);
    free(bytes);
    if (st) return st;
    const double seconds = (double)frames / info->sample_rate;
    if (max_seconds > 0 && seconds > max_seconds) {
        free(mono);
        return ember_fail(EMBER_ERR_UNSUPPORTED,
                          "%s: %.2f s of audio is longer than the %.2f s limit; use a shorter clip",
                          path, seconds, max_seconds);
    }
    if (info->sample_rate == rate) {
        *samples = mono;
        *n = frames;
        return EMBER_OK;
    }
    st = resample_mono(mono, frames, info->sample_rate, rate, samples, n);
    free(mono);
    if (st) return ember_fail_prefix(st, "%s", path);
    return EMBER_OK;
}
