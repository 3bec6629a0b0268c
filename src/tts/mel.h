/* The log-mel spectrogram the Qwen3-TTS speaker encoder takes (the official
 * `mel_spectrogram` with the arguments of `extract_speaker_embedding`;
 * ../shared/spec/qwen3-tts-voices.md section 1):
 *
 *   24 kHz mono waveform at natural scale -> reflect pad 384 samples each
 *   side (the mirror excludes the edge sample) -> frames of 1024 every 256
 *   (no centering) x periodic Hann -> real FFT (FFTW, single precision) ->
 *   magnitude sqrt(re^2 + im^2 + 1e-9) -> 128 Slaney mel filters
 *   (librosa.filters.mel(sr=24000, n_fft=1024, n_mels=128, fmin=0,
 *   fmax=12000), htk=False, norm="slaney") -> ln(max(mel, 1e-5)).
 *
 * Output is time-major [T][128], T = floor((n + 768 - 1024) / 256) + 1.
 * A mel_frontend (window, filterbank, FFT plan) is made once and is
 * read-only afterwards: any number of threads may compute with it. */
#ifndef EMBER_TTS_MEL_H
#define EMBER_TTS_MEL_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

#define MEL_SAMPLE_RATE 24000
#define MEL_N_FFT 1024
#define MEL_HOP 256
#define MEL_PAD ((MEL_N_FFT - MEL_HOP) / 2)
#define MEL_BINS 128
#define MEL_FFT_BINS (MEL_N_FFT / 2 + 1)

typedef struct mel_frontend mel_frontend;

ember_status mel_frontend_create(mel_frontend **out);
void mel_frontend_free(mel_frontend *m);

/* Frames of n samples; 0 when n is too short to reflect-pad (n <= 384). */
int64_t mel_frames(size_t n);

/* out: mel_frames(n) x MEL_BINS floats. An error for n <= 384 (names the
 * length and the minimum). */
ember_status mel_compute(const mel_frontend *m, const float *wave, size_t n, float *out);

/* Filter m's weights over FFT bins [*lo, *hi) (zero elsewhere), for tests. */
const float *mel_filter(const mel_frontend *m, int32_t mel, int32_t *lo, int32_t *hi);

#endif
