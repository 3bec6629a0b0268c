/* libFuzzer target: saved voice files (src/tts/voice_file.c). Any input
 * parses or gives an error, never a crash, leak or undefined behaviour; what
 * parses writes back to the same bytes. Each input is also tried with its
 * checksum made right, so mutations reach the checks behind it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/checksum.h"
#include "tts/voice_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void try_parse(const uint8_t *data, size_t size)
{
    voice_data v;
    if (voice_parse(data, size, "fuzz.voice", &v) != EMBER_OK) return;
    uint8_t *again = NULL;
    size_t len = 0;
    if (voice_serialize(&v, &again, &len) != EMBER_OK) __builtin_trap();
    /* the header's JSON may be spelled differently; the payload may not */
    const size_t payload = 4 * ((size_t)v.xvector_dim + (size_t)v.n_frames * (size_t)v.codebooks) + 8;
    if (len < payload || memcmp(again + len - payload, data + size - payload, payload - 8)) __builtin_trap();
    free(again);
    voice_data_free(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    try_parse(data, size);
    if (size < 8) return 0;
    uint8_t *fixed = malloc(size);
    if (!fixed) return 0;
    memcpy(fixed, data, size);
    const uint64_t sum = cksum64_of(fixed, size - 8);
    for (int i = 0; i < 8; i++) fixed[size - 8 + i] = (uint8_t)(sum >> (8 * i));
    try_parse(fixed, size);
    free(fixed);
    return 0;
}
