/* Seeding and the non-inline draws of the sampling PRNG (see rng.h). */
#include "generate/rng.h"

#include <math.h>

void et_rng_seed(et_rng *r, uint64_t seed)
{
    r->key = et_rng_mix(seed + ET_RNG_GAMMA);
    r->counter = 0;
}

double et_rng_exp(et_rng *r)
{
    return -log(et_rng_uniform(r));
}
