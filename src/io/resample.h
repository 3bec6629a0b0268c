/* Sample-rate conversion of mono float audio with libsoxr at its "high
 * quality" setting (SOXR_HQ: 20-bit precision, linear phase), the resampler
 * librosa.resample uses by default (res_type "soxr_hq"), which is what the
 * official Qwen3-TTS code calls on reference audio of another rate. */
#ifndef EMBER_IO_RESAMPLE_H
#define EMBER_IO_RESAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

/* Samples of `n` input samples at in_rate once at out_rate:
 * ceil(n * out_rate / in_rate), the length librosa gives. */
size_t resample_length(size_t n, uint32_t in_rate, uint32_t out_rate);

/* x[n] at in_rate -> *out (malloc'd, *n_out = resample_length) at out_rate.
 * The whole input is converted and the filter flushed, so the tail is not
 * lost; soxr's own length, if a sample shorter, is padded with a zero (as
 * librosa's fix_length pads). */
ember_status resample_mono(const float *x, size_t n, uint32_t in_rate, uint32_t out_rate,
                           float **out, size_t *n_out);

#endif
