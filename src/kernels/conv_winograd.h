/* Winograd's minimal filtering F(2, k) for the causal convs of conv.h: two
 * outputs of a k-tap filter from k+1 products instead of 2k, so a dilated
 * k7 conv (the speech decoder's residual units, most of its arithmetic)
 * does 8 multiply-adds per output pair instead of 14.
 *
 * Outputs t and t+d (d the dilation) read the k+1 inputs
 * x[t-(k-1)d], ..., x[t+d] at stride d. With the Toom-Cook points
 * 0, 1, -1, 2, -2, 1/2, -1/2, ..., infinity and V their Vandermonde matrix
 * (the infinity row picks the top coefficient), the correlation is
 *
 *   y = E^T [ (G g) . (V^-T x) ],   G[i][j] = p_i^j (j < k),  E[i][j] = p_i^j (j < 2)
 *
 * (the transpose of polynomial multiplication). Per tile the input is
 * transformed (k+1 vectors of cin), each of the k+1 transformed filters is a
 * 1x1 conv run by the ordinary conv kernels over all tiles at once (a GEMM
 * with the tiles as time steps), and the output transform adds k+1 rows
 * into two. The transforms are computed in double at load; rounding grows
 * with the points' spread, which the tests bound against the direct conv. */
#ifndef EMBER_KERNELS_CONV_WINOGRAD_H
#define EMBER_KERNELS_CONV_WINOGRAD_H

#include "kernels/conv.h"
#include "kernels/exec.h"

#define EK_WINOGRAD_MAX_TAPS 7

typedef struct ek_winograd {
    int32_t taps, cin, cout, n; /* n = taps + 1 products per output pair */
    ek_conv_weights w[EK_WINOGRAD_MAX_TAPS + 1]; /* G g per product, 1x1, fp32 */
    float in_t[EK_WINOGRAD_MAX_TAPS + 1][EK_WINOGRAD_MAX_TAPS + 1]; /* [l][i] of V^-1 */
    float out_t[EK_WINOGRAD_MAX_TAPS + 1][2];                         /* E */
} ek_winograd;

/* Packs a Conv1d weight [cout][cin][taps], 2 <= taps <= 7. */
ember_status ek_winograd_pack(ek_winograd *out, const float *w, int32_t cout, int32_t cin,
                              int32_t taps);
void ek_winograd_free(ek_winograd *wg);

/* Tiles of at most this many output pairs run at once (scratch sizing). */
#define EK_WINOGRAD_TILES 256

/* Floats of scratch ek_winograd_run needs. */
size_t ek_winograd_scratch_floats(const ek_winograd *wg);

/* y[t][co] = conv(x)[t][co] + bias[co] for the first rows of [0, n) that
 * whole tiles cover (a multiple of 2 * dilation); returns that row count,
 * the caller computes the rest directly. x as for ek_conv_run (fp32). */
int64_t ek_winograd_run(const ek_exec *ex, const ek_winograd *wg, const float *bias,
                        const float *x, int64_t n, int32_t dilation, float *y, int64_t ys,
                        float *scratch);

#endif
