/* A chunk's attention split by query rows (attn_chunk_rows, and attn_run on
 * a pool, which splits a chunk's queries over its workers) gives bit for bit
 * what attn_chunk gives for the whole chunk: every query meets the same key
 * tiles, summed in the same order. Chunks long enough that the queries'
 * first visible keys lie more than a key tile (ATTN_TILE) apart, over a
 * sliding ring and a full cache, in f32 and in an f16 cache. */
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "check.h"
#include "kernels/formats.h"
#include "nn/attention.h"
#include "nn/kv.h"

enum { HEADS = 4, KV_HEADS = 2, D = 16, ROW = HEADS * D, KV_ROW = KV_HEADS * D };

static float frand(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static float *random_floats(size_t n, unsigned seed)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = frand(&seed);
    return v;
}

/* p0 cached positions, then a chunk of n queries at p0.. */
static void check_split(int window, et_dtype kv_type, int p0, int n, ember_pool *pool)
{
    kv_layer L;
    memset(&L, 0, sizeof L);
    L.window = window;
    L.capacity = window ? window - 1 : p0 + n;
    L.type = kv_type;
    L.row_bytes = ek_row_bytes(kv_type, D);
    L.k = calloc((size_t)KV_HEADS * (size_t)L.capacity, L.row_bytes);
    L.v = calloc((size_t)KV_HEADS * (size_t)L.capacity, L.row_bytes);
    float *hk = random_floats((size_t)(p0 + n) * KV_ROW, 11u + (unsigned)window);
    float *hv = random_floats((size_t)(p0 + n) * KV_ROW, 12u + (unsigned)window);
    float *q = random_floats((size_t)n * ROW, 13u + (unsigned)window);
    for (int p = 0; p < p0; p += 64) {
        const int m = p0 - p < 64 ? p0 - p : 64;
        kv_store(&L, KV_HEADS, D, p, m, hk + (size_t)p * KV_ROW, hv + (size_t)p * KV_ROW, KV_ROW);
    }
    const size_t scratch_floats = attn_scratch_floats(HEADS, KV_HEADS, D, n);
    float *scratch = malloc(2 * scratch_floats * sizeof *scratch);
    float *want = malloc((size_t)n * ROW * sizeof *want), *got = malloc((size_t)n * ROW * sizeof *got);
    const float *k_new = hk + (size_t)p0 * KV_ROW, *v_new = hv + (size_t)p0 * KV_ROW;
    attn_shape shape = {ek_kernels_best(), HEADS, KV_HEADS, D, ROW, KV_ROW, ROW};
    attn_chunk(&L, &shape, 0, KV_HEADS, p0, n, q, k_new, v_new, want, scratch);

    const int cuts[] = {0, 1, n / 3, n - 7, n};
    memset(got, 0, (size_t)n * ROW * sizeof *got);
    for (int c = 0; c + 1 < (int)(sizeof cuts / sizeof *cuts); c++)
        attn_chunk_rows(&L, &shape, 0, KV_HEADS, p0, n, cuts[c], cuts[c + 1], q, k_new, v_new, got,
                        scratch);
    CHECK_MSG(!memcmp(got, want, (size_t)n * ROW * sizeof *got),
              "window %d, %s cache, %d cached, %d queries: row ranges differ", window,
              ek_format_of(kv_type)->name, p0, n);
    memset(got, 0, (size_t)n * ROW * sizeof *got);
    attn_run(pool, &L, &shape, p0, n, q, k_new, v_new, got, scratch, scratch_floats);
    CHECK_MSG(!memcmp(got, want, (size_t)n * ROW * sizeof *got),
              "window %d, %s cache, %d cached, %d queries: attn_run on 2 threads differs", window,
              ek_format_of(kv_type)->name, p0, n);
    free(L.k), free(L.v), free(hk), free(hv), free(q), free(scratch), free(want), free(got);
}

static void query_ranges_match_whole_chunk(void)
{
    ember_pool *pool = NULL;
    REQUIRE(pool_create(2, &pool) == EMBER_OK);
    /* a ring of 300: queries 0 and n-1 see keys from 301 and from 600 + n - 300 */
    check_split(300, ET_F32, 600, 400, pool);
    check_split(300, ET_F16, 600, 400, pool);
    check_split(300, ET_F32, 0, 333, pool);
    /* a full cache: every query's keys start at 0 */
    check_split(0, ET_F32, 500, 90, pool);
    check_split(0, ET_F16, 17, 300, pool);
    pool_free(pool);
}

int main(void)
{
    RUN(query_ranges_match_whole_chunk);
    return check_summary();
}
