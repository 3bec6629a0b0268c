/* libFuzzer target: WAV parsing (src/io/wav_read.c). Any input gives mono
 * samples or an error, never a crash, leak or undefined behaviour; what
 * parses is finite, as long as the header says, and within the scale of its
 * format. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/wav_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wav_info info;
    float *mono;
    size_t n;
    if (wav_parse(data, size, "fuzz.wav", &info, &mono, &n) != EMBER_OK) return 0;
    if (n == 0 || n != info.frames || (uint64_t)n * info.channels * (info.bits / 8) > size)
        __builtin_trap();
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(mono[i])) __builtin_trap();
        /* integer PCM maps into [-1, 1] (2^31 - 1 rounds to 1.0f) */
        if (info.encoding == WAV_PCM_INT && (mono[i] < -1.0f || mono[i] > 1.0f)) __builtin_trap();
    }
    free(mono);
    return 0;
}
