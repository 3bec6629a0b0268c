/* Reading WAV files as people have them: RIFF/WAVE with PCM 8/16/24/32-bit
 * or IEEE float 32/64-bit samples (WAVE_FORMAT_PCM, WAVE_FORMAT_IEEE_FLOAT,
 * or either under WAVE_FORMAT_EXTENSIBLE), any number of channels (1..16),
 * downmixed to mono by the channel mean, and resampled (io/resample.h) to
 * the rate a model wants.
 *
 * Scale: PCM is divided by 2^(bits-1) (16-bit by 32768; 8-bit is unsigned,
 * centred at 128), floats are taken as they are: the scale soundfile and
 * librosa give the official Qwen3-TTS code.
 *
 * Documented behaviour, beyond "malformed or unsupported gives an error
 * naming the file and what is wrong":
 *   - empty (a data chunk without one whole frame): an error;
 *   - truncated: a data chunk that declares more bytes than the file holds
 *     is an error, except a declared size of 2^31 bytes or more, which is the
 *     "length unknown" placeholder streaming writers (ember's server
 *     included) put in a header they cannot seek back to: then the frames up
 *     to the end of the file are read. A partial last frame is dropped.
 *   - chunks other than "fmt " and "data" are skipped; reading stops at the
 *     first data chunk once the format is known (trailing tags are ignored);
 *   - float samples that are NaN, infinite or (float64) beyond float range:
 *     an error naming the frame;
 *   - clipped (full-scale PCM codes, or float magnitudes of 1 or more) and
 *     silent (all zero) audio is read as it is and counted in wav_info
 *     (n_full_scale, peak), for the caller to warn about: the official code
 *     neither rejects nor repairs either;
 *   - very long: wav_load refuses a file longer than its max_seconds (the
 *     caller's limit) instead of cutting it, saying both lengths.
 *   - too short for a model (the speaker encoder's minimum) is the model's
 *     check, not the reader's. */
#ifndef EMBER_IO_WAV_READ_H
#define EMBER_IO_WAV_READ_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

#define WAV_MAX_CHANNELS 16

typedef enum wav_encoding { WAV_PCM_INT = 1, WAV_PCM_FLOAT = 3 } wav_encoding;

/* What the file held. */
typedef struct wav_info {
    wav_encoding encoding;
    int extensible;        /* the format came as WAVE_FORMAT_EXTENSIBLE */
    uint32_t sample_rate;  /* of the file */
    uint16_t channels;
    uint16_t bits;         /* container bits per sample */
    uint64_t frames;       /* whole frames read */
    int length_unknown;    /* the data size was a streaming placeholder */
    float peak;            /* largest |sample| of the mono mix */
    uint64_t n_full_scale; /* samples (any channel) at full scale: clipping */
} wav_info;

/* Parses a whole WAV file held in memory into mono floats at the file's
 * rate (*mono malloc'd, *n frames; freed by the caller). `label` names the
 * file in messages. On error nothing is allocated. Pure: fuzzed by
 * fuzz/fuzz_wav.c. */
ember_status wav_parse(const uint8_t *data, size_t len, const char *label, wav_info *info,
                       float **mono, size_t *n);

/* Reads `path`, downmixes, and resamples to `rate` Hz when the file has
 * another rate. max_seconds > 0 refuses longer files. *samples malloc'd. */
ember_status wav_load(const char *path, uint32_t rate, double max_seconds, wav_info *info,
                      float **samples, size_t *n);

#endif
