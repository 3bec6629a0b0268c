/* The eight-row interleaved layout (rows8.h): packing, unpacking and row
 * lookups. Byte moves only, so every conversion is exact. */
#include "kernels/rows8.h"

#include <string.h>

#include "kernels/formats.h"

size_t ek_rows8_block_quants(et_dtype dt)
{
    if (dt == ET_Q8_0) return EK_ROWS8 * EK_QBLOCK;
    if (dt == ET_Q4_0) return EK_ROWS8 * EK_QBLOCK / 2;
    return 0;
}

int ek_rows8_fits(et_dtype dt, int64_t rows, int64_t cols)
{
    return ek_rows8_block_quants(dt) && rows > 0 && rows % EK_ROWS8 == 0 && cols > 0 &&
           cols % EK_QBLOCK == 0;
}

/* Where row i (< 8) of a group keeps block b: its quant dwords start at
 * quants + b * QB + 4 i, 32 bytes apart; its scale at the returned scale. */
typedef struct group_ref {
    const uint8_t *quants, *scales;
    size_t qb;
} group_ref;

static group_ref group_of(et_dtype dt, int64_t cols, const void *group)
{
    group_ref g;
    g.qb = ek_rows8_block_quants(dt);
    g.quants = group;
    g.scales = g.quants + (size_t)(cols / EK_QBLOCK) * g.qb;
    return g;
}

void ek_rows8_pack(et_dtype dt, int64_t cols, const void *src, size_t src_stride, void *dst)
{
    const int64_t nb = cols / EK_QBLOCK;
    group_ref g = group_of(dt, cols, dst);
    uint8_t *quants = (uint8_t *)g.quants, *scales = (uint8_t *)g.scales;
    const size_t bb = ek_format_of(dt)->block_bytes, words = g.qb / (4 * EK_ROWS8);
    for (int i = 0; i < EK_ROWS8; i++) {
        const uint8_t *row = (const uint8_t *)src + (size_t)i * src_stride;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = row + (size_t)b * bb; /* f16 d, then the quant bytes */
            memcpy(scales + (size_t)b * 2 * EK_ROWS8 + 2 * i, blk, 2);
            for (size_t k = 0; k < words; k++) {
                uint8_t *o = quants + (size_t)b * g.qb + k * 4 * EK_ROWS8 + 4 * (size_t)i;
                memcpy(o, blk + 2 + 4 * k, 4);
                if (dt == ET_Q8_0)
                    for (int m = 0; m < 4; m++) o[m] ^= 0x80; /* int8 q -> q + 128 */
            }
        }
    }
}

void ek_rows8_unpack_block(const ek_matrix *w, int64_t r, int64_t b, void *dst)
{
    uint8_t *blk = dst;
    const size_t group_bytes = EK_ROWS8 * ek_row_bytes(w->dtype, w->cols);
    group_ref g = group_of(w->dtype, w->cols,
                           (const uint8_t *)w->data + (size_t)(r / EK_ROWS8) * group_bytes);
    const int i = (int)(r % EK_ROWS8);
    const size_t words = g.qb / (4 * EK_ROWS8);
    memcpy(blk, g.scales + (size_t)b * 2 * EK_ROWS8 + 2 * i, 2);
    for (size_t k = 0; k < words; k++) {
        memcpy(blk + 2 + 4 * k, g.quants + (size_t)b * g.qb + k * 4 * EK_ROWS8 + 4 * (size_t)i, 4);
        if (w->dtype == ET_Q8_0)
            for (int m = 0; m < 4; m++) blk[2 + 4 * k + m] ^= 0x80;
    }
}

void ek_rows8_unpack_row(const ek_matrix *w, int64_t r, void *dst)
{
    const size_t bb = ek_format_of(w->dtype)->block_bytes;
    for (int64_t b = 0; b < w->cols / EK_QBLOCK; b++)
        ek_rows8_unpack_block(w, r, b, (uint8_t *)dst + (size_t)b * bb);
}

void ek_rows8_row_to_f32(const ek_matrix *w, int64_t r, float *out)
{
    const ek_format *f = ek_format_of(w->dtype);
    uint8_t blk[sizeof(ek_block_q8_0)];
    for (int64_t b = 0; b < w->cols / EK_QBLOCK; b++) {
        ek_rows8_unpack_block(w, r, b, blk);
        f->to_f32(blk, out + b * EK_QBLOCK, EK_QBLOCK);
    }
}
