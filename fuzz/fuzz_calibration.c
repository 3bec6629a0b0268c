/* libFuzzer target: the calibration cache file (edge_calibration_parse). The
 * cache lives in the user's directory and may be stale, truncated or edited:
 * any input gives a calibration or an error, never a crash, leak or undefined
 * behaviour. A calibration that parses is usable (a ramp of 1..32 positive
 * sizes, a schedule and a controller that hand out positive sizes), and
 * prints to text that parses to the same text again.
 * Seeds (fuzz/corpus/calibration): the caches of a fast machine, the
 * fallback and a planned ramp, as edge_calibration_save writes them. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edge/calibrate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    edge_calibration c, again;
    if (edge_calibration_parse((const char *)data, size, "fuzz", &c) != EMBER_OK) return 0;
    if (c.n_ramp < 1 || c.n_ramp > EDGE_CAL_MAX_RAMP || c.min_frames < 1) __builtin_trap();
    int32_t sizes[EDGE_CAL_MAX_RAMP];
    int32_t n = edge_calibration_schedule(&c, sizes, EDGE_CAL_MAX_RAMP);
    if (n != c.n_ramp) __builtin_trap();
    for (int32_t i = 0; i < n; i++)
        if (sizes[i] < 1) __builtin_trap();
    edge_chunk_ctl ctl;
    edge_chunk_ctl_init(&ctl, &c);
    int32_t emitted = 0;
    for (int i = 0; i < 40; i++) {
        int32_t s = edge_chunk_ctl_next(&ctl, 37.0 * i, emitted);
        if (s < 1) __builtin_trap();
        emitted += s;
    }
    char *first = NULL, *second = NULL;
    if (edge_calibration_to_text(&c, &first) != EMBER_OK) return 0;
    if (edge_calibration_parse(first, strlen(first), "fuzz-again", &again) != EMBER_OK) __builtin_trap();
    if (edge_calibration_to_text(&again, &second) == EMBER_OK && strcmp(first, second)) __builtin_trap();
    free(first);
    free(second);
    return 0;
}
