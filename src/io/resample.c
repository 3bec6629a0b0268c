#include "io/resample.h"

#include <soxr.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

size_t resample_length(size_t n, uint32_t in_rate, uint32_t out_rate)
{
    const unsigned __int128 num = (unsigned __int128)n * out_rate;
    return (size_t)((num + in_rate - 1) / in_rate);
}

ember_status resample_mono(const float *x, size_t n, uint32_t in_rate, uint32_t out_rate,
                           float **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (in_rate == 0 || out_rate == 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "resample: sample rate 0");
    const size_t want = resample_length(n, in_rate, out_rate);
    /* calloc: samples soxr does not produce stay zero */
    float *y = calloc(want ? want : 1, sizeof(float));
    if (!y) return ember_fail(EMBER_ERR_NO_MEMORY, "resample: out of memory (%zu samples)", want);
    const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    const soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
    const soxr_runtime_spec_t rt = soxr_runtime_spec(1);
    size_t used = 0, made = 0;
    soxr_error_t err = soxr_oneshot(in_rate, out_rate, 1, x, n, &used, y, want, &made, &io, &q, &rt);
    if (err) {
        free(y);
        return ember_fail(EMBER_ERR_UNSUPPORTED, "resample %u -> %u Hz: libsoxr: %s", in_rate,
                          out_rate, err);
    }
    *out = y;
    *n_out = want;
    return EMBER_OK;
}
