/* The eight-row interleaved layout of Q8_0 and Q4_0 weight matrices.
 *
 * Why: in GGUF's row layout a decode matmul does, per row and block, one
 * 32-byte integer dot product and then a horizontal sum, an fp16 scale
 * conversion, a broadcast, a multiply and an add for that row alone. On two
 * cores that scalar-ish per-row work, not memory, bounded decode. Here eight
 * rows share every vector: one 256-bit vector holds 4 bytes of each of the
 * 8 rows, so vpdpbusd against 4 activation bytes broadcast to all lanes
 * leaves row i's partial dot in lane i, and the 8 rows' scales convert and
 * multiply as one vector. The per-row work is paid once per 8 rows.
 *
 * A matrix in this layout has rows % 8 == 0 and the same size as in rows
 * (8 * ek_row_bytes per group, so a view of rows [8a, 8b) starts at the same
 * byte offset as in the row layout). Group g (rows 8g..8g+7) is nb blocks of
 * 16 + QB bytes, block b at b * (16 + QB):
 *
 *   scales: 16 bytes, the 8 rows' fp16 scales, row i at 2i;
 *   quants: QB bytes as QB / 32 vectors of 32 bytes; vector k holds row i's
 *           dword k at bytes 4i..4i+3:
 *             Q8_0 (QB 256, k < 8): q[4k..4k+3] + 128 (unsigned, so the
 *                   weights are vpdpbusd's unsigned operand as stored)
 *             Q4_0 (QB 128, k < 4): qs[4k..4k+3] as stored (low nibbles are
 *                   elements 4k.., high nibbles 16+4k..)
 *
 * Scales sit beside their quants so that a group, and a thread's run of
 * groups, is one sequential stream: decode reads it at the speed of a plain
 * sequential read (measured on this host: 66 GB/s, where 4 groups walked
 * side by side with the scales apart, 8 streams, read at 38, 51 with
 * software prefetch).
 *
 * Converting to and from the row layout is exact (ek_rows8_pack,
 * ek_rows8_unpack_row). The loader repacks a matrix when the kernel set has a
 * gemm for it (ek_kernel_set.gemm_rows8); everything that reads weight bytes
 * other than the gemms goes through this file. */
#ifndef EMBER_KERNELS_ROWS8_H
#define EMBER_KERNELS_ROWS8_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul.h"

#define EK_ROWS8 8

/* Quant bytes per block and group: 256 for Q8_0, 128 for Q4_0; 0 for a
 * format the layout does not cover. A group's block is 16 + that. */
size_t ek_rows8_block_quants(et_dtype dt);
#define EK_ROWS8_SCALES 16

/* Whether a rows x cols matrix of dt can take the layout. */
int ek_rows8_fits(et_dtype dt, int64_t rows, int64_t cols);

/* Eight rows in the row layout (row i at src + i * src_stride) into one
 * group of the interleaved layout at dst (8 * ek_row_bytes(dt, cols)). */
void ek_rows8_pack(et_dtype dt, int64_t cols, const void *src, size_t src_stride, void *dst);

/* Block b of row r of an interleaved matrix in the row layout's bytes. */
void ek_rows8_unpack_block(const ek_matrix *w, int64_t r, int64_t b, void *dst);

/* Row r of an interleaved matrix in the row layout (ek_row_bytes bytes). */
void ek_rows8_unpack_row(const ek_matrix *w, int64_t r, void *dst);

/* Row r of an interleaved matrix as fp32 (an embedding lookup). */
void ek_rows8_row_to_f32(const ek_matrix *w, int64_t r, float *out);

/* The scalar twins of the interleaved gemms (ek_gemm_fn; rows r0, r1
 * multiples of 8), the reference the SIMD ones are tested against. */
void ek_gemm_rows8_q8_0_scalar(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                               const void *x, size_t xs, int nt);
void ek_gemm_rows8_q4_0_scalar(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                               const void *x, size_t xs, int nt);

/* The avx512 set's few-token forms (matmul_rows8_avx512.c; AVX-512 VL +
 * VNNI, F16C), for 1..8 tokens: prefill takes the set's token-major tiles.
 * 256-bit vectors, one group streaming at a time for one token: */
void ek_gemm_rows8_q8_0_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                               const void *x, size_t xs, int nt);
void ek_gemm_rows8_q4_0_avx512(float *y, int64_t ys, const ek_matrix *w, int64_t r0, int64_t r1,
                               const void *x, size_t xs, int nt);
/* 2..8 tokens: two groups per zmm. */
void ek_gemm_rows8_q8_0_avx512_zmm(float *y, int64_t ys, const ek_matrix *w, int64_t r0,
                                   int64_t r1, const void *x, size_t xs, int nt);
void ek_gemm_rows8_q4_0_avx512_zmm(float *y, int64_t ys, const ek_matrix *w, int64_t r0,
                                   int64_t r1, const void *x, size_t xs, int nt);

#endif
