/* 16-bit PCM WAV output (mono or more channels, little-endian RIFF), and
 * the float -> s16 conversion shared with raw PCM streams. */
#ifndef EMBER_IO_WAV_H
#define EMBER_IO_WAV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ember.h"

/* Samples in [-1, 1] to s16 (rounded to nearest, clipped). */
void wav_f32_to_s16(const float *x, int16_t *out, size_t n);

/* The 44-byte header of a 16-bit PCM file with n_samples frames; n_samples
 * may be unknown (UINT32_MAX / 4) for a stream, as pipes cannot seek back. */
void wav_header(uint8_t out[44], uint32_t sample_rate, uint16_t channels, uint32_t n_samples);

/* Writing a WAV file incrementally: open writes a provisional header,
 * append converts and writes samples, close patches the sizes. Errors name
 * the path; a failed writer removes its partial file. */
typedef struct wav_writer {
    FILE *f;
    char *path;
    uint32_t sample_rate;
    uint64_t n_samples;
} wav_writer;

ember_status wav_open(wav_writer *w, const char *path, uint32_t sample_rate);
ember_status wav_append(wav_writer *w, const float *x, size_t n);
ember_status wav_close(wav_writer *w);
/* Closes and deletes the file (after an error elsewhere). */
void wav_abort(wav_writer *w);

#endif
