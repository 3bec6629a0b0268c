/* A small seedable PRNG for sampling, counter-based: draw number c of the
 * stream with key k is splitmix64's output for the state k + (c + 1) * gamma
 * (a Weyl sequence through a 64-bit mixer; Steele, Lea & Flood 2014, the
 * generator that seeds xoshiro and passes BigCrush). The key is the seed sent
 * through the mixer, so nearby seeds (0, 1, 2...) start far apart.
 *
 * Counter-based because the sampler gives every vocabulary entry its own draw
 * at every step: entry i at a step whose first draw is c uses draw c + i. A
 * draw is computed only where it can matter (a kept entry that might win),
 * yet which draw an entry gets never depends on the filters, and the draws
 * are independent of each other, so the loop that computes them has no
 * serial dependency. A value type: copies are independent, nothing global. */
#ifndef EMBER_GENERATE_RNG_H
#define EMBER_GENERATE_RNG_H

#include <stdint.h>

typedef struct et_rng {
    uint64_t key;
    uint64_t counter; /* the number of the next draw */
} et_rng;

void et_rng_seed(et_rng *r, uint64_t seed);

/* Exp(1) by inversion, -log(u) with u from et_rng_uniform: in (0, 37]. */
double et_rng_exp(et_rng *r);

#define ET_RNG_GAMMA 0x9e3779b97f4a7c15ull

static inline uint64_t et_rng_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Draw number `index` of r's stream; r is not changed. */
static inline uint64_t et_rng_bits_at(const et_rng *r, uint64_t index)
{
    return et_rng_mix(r->key + (index + 1) * ET_RNG_GAMMA);
}

static inline uint64_t et_rng_next(et_rng *r) { return et_rng_bits_at(r, r->counter++); }

/* Moves past n draws without computing them. */
static inline void et_rng_skip(et_rng *r, uint64_t n) { r->counter += n; }

/* Uniform in the open interval (0, 1): the top 53 bits plus half a step, so
 * neither 0 (log would be -inf) nor 1 (an Exp draw of 0) can come out. */
static inline double et_rng_to_uniform(uint64_t bits) { return ((double)(bits >> 11) + 0.5) * 0x1.0p-53; }

/* The float twin: 23 bits plus half a step, so 1 - 2^-24 is the largest value
 * and it is exactly representable (24 bits would round up to 1.0f). */
static inline float et_rng_to_uniform_f(uint64_t bits) { return ((float)(bits >> 41) + 0.5f) * 0x1.0p-23f; }

static inline double et_rng_uniform(et_rng *r) { return et_rng_to_uniform(et_rng_next(r)); }
static inline float et_rng_uniform_f(et_rng *r) { return et_rng_to_uniform_f(et_rng_next(r)); }

#endif
