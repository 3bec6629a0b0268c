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

/* Row i's dword k of block b in a group, and its scale: block b starts at
 * b * (16 + QB), scales first. */
static size_t quant_at(size_t qb, int64_t b, size_t k, int i)
{
    return (size_t)b * (EK_ROWS8_SCALES + qb) + EK_ROWS8_SCALES + k * 4 * EK_ROWS8 + 4 * (size_t)i;
}

static size_t scale_at(size_t qb, int64_t b, int i)
{
    return (size_t)b * (EK_ROWS8_SCALES + qb) + 2 * (size_t)i;
}

void ek_rows8_pack(et_dtype dt, int64_t cols, const void *src, size_t src_stride, void *dst)
{
    const int64_t nb = cols / EK_QBLOCK;
    const size_t qb = ek_rows8_block_quants(dt), words = qb / (4 * EK_ROWS8);
    const size_t bb = ek_format_of(dt)->block_bytes;
    uint8_t *group = dst;
    for (int i = 0; i < EK_ROWS8; i++) {
        const uint8_t *row = (const uint8_t *)src + (size_t)i * src_stride;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = row + (size_t)b * bb; /* f16 d, then the quant bytes */
            memcpy(group + scale_at(qb, b, i), blk, 2);
            for (size_t k = 0; k < words; k++) {
                uint8_t *o = group + quant_at(qb, b, k, i);
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
    const size_t qb = ek_rows8_block_quants(w->dtype), words = qb / (4 * EK_ROWS8);
    const size_t group_bytes = EK_ROWS8 * ek_row_bytes(w->dtype, w->cols);
    const uint8_t *group = (const uint8_t *)w->data + (size_t)(r / EK_ROWS8) * group_bytes;
    const int i = (int)(r % EK_ROWS8);
    memcpy(blk, group + scale_at(qb, b, i), 2);
    for (size_t k = 0; k < words; k++) {
        memcpy(blk + 2 + 4 * k, group + quant_at(qb, b, k, i), 4);
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
