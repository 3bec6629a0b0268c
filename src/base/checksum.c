#include "base/checksum.h"

#include <string.h>

/* Four independent lanes of 64-bit words, each mixed by xor, an odd
 * multiplier and a shift that folds the high bits back down, so the
 * multiplies of the lanes overlap in the pipeline. The final step mixes the
 * lanes, the leftover bytes and the length. */
static const uint64_t MUL = 0x9fb21c651e98df25ull;
static const uint64_t SEED[4] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull,
                                 0x082efa98ec4e6c89ull};

static uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* little-endian hosts only (x86-64, aarch64) */
    return v;
}

static uint64_t mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * MUL;
    return h ^ (h >> 29);
}

static void blocks(cksum64 *c, const unsigned char *p, size_t n_blocks)
{
    uint64_t a = c->lane[0], b = c->lane[1], d = c->lane[2], e = c->lane[3];
    for (size_t i = 0; i < n_blocks; i++, p += 32) {
        a = mix(a, load64(p));
        b = mix(b, load64(p + 8));
        d = mix(d, load64(p + 16));
        e = mix(e, load64(p + 24));
    }
    c->lane[0] = a;
    c->lane[1] = b;
    c->lane[2] = d;
    c->lane[3] = e;
}

void cksum64_init(cksum64 *c)
{
    memset(c, 0, sizeof *c);
    memcpy(c->lane, SEED, sizeof SEED);
}

void cksum64_feed(cksum64 *c, const void *data, size_t n)
{
    const unsigned char *p = data;
    c->total += n;
    if (c->n_tail) {
        size_t take = 32 - c->n_tail < n ? 32 - c->n_tail : n;
        memcpy(c->tail + c->n_tail, p, take);
        c->n_tail += take;
        p += take;
        n -= take;
        if (c->n_tail < 32) return;
        blocks(c, c->tail, 1);
        c->n_tail = 0;
    }
    blocks(c, p, n / 32);
    c->n_tail = n % 32;
    if (c->n_tail) memcpy(c->tail, p + n - c->n_tail, c->n_tail);
}

uint64_t cksum64_final(const cksum64 *c)
{
    uint64_t h = c->total * MUL;
    for (int i = 0; i < 4; i++) h = mix(h, c->lane[i]);
    unsigned char last[32] = {0};
    memcpy(last, c->tail, c->n_tail);
    for (size_t i = 0; i < c->n_tail; i += 8) h = mix(h, load64(last + i));
    h ^= h >> 31;
    h *= MUL;
    return h ^ (h >> 32);
}

uint64_t cksum64_of(const void *data, size_t n)
{
    cksum64 c;
    cksum64_init(&c);
    cksum64_feed(&c, data, n);
    return cksum64_final(&c);
}
