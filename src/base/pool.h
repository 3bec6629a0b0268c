/* A persistent thread pool. The calling thread is worker 0. pool_run splits
 * a task into parts that whoever is running claims one at a time (so a
 * worker the OS has not scheduled delays nobody; each worker first takes
 * its own block of consecutive parts, in order) and returns when all parts
 * are done: the barrier between ops. Waiting threads spin briefly, then
 * sleep, so back-to-back ops do not pay a wake-up each. */
#ifndef EMBER_BASE_POOL_H
#define EMBER_BASE_POOL_H

#include <stdint.h>

#include "ember.h"

typedef struct ember_pool ember_pool;

/* fn(ctx, part, n_parts, worker) runs once per part, on some worker
 * (0 <= worker < pool_size: index per-worker scratch with it). */
typedef void (*pool_task)(void *ctx, int part, int n_parts, int worker);

/* n_threads >= 1 counts the caller; n_threads - 1 threads are started. */
ember_status pool_create(int n_threads, ember_pool **out);
void pool_free(ember_pool *pool);
int pool_size(const ember_pool *pool);
/* Runs parts 0..n_parts-1 (at most 65535 in parallel; more run on the
 * caller alone). Not reentrant: one pool_run at a time per pool. A NULL pool
 * runs every part on the caller. */
void pool_run(ember_pool *pool, pool_task fn, void *ctx, int n_parts);

/* How many of the pool's threads (the caller included) take part in the
 * next runs, 1..pool_size; the others sleep. Another thread may call it at
 * any time (a run in progress finishes with the workers it has): two pools
 * sharing a few cores trade them this way instead of oversubscribing. */
void pool_set_active(ember_pool *pool, int n);
int pool_active(const ember_pool *pool);

/* Splits [0, n) into n_parts contiguous ranges whose starts are multiples
 * of `align`; part p gets [*begin, *end) (possibly empty). */
void pool_split(int64_t n, int64_t align, int part, int n_parts, int64_t *begin, int64_t *end);

/* Pins the pool's worker threads (not the caller) to the CPUs cpus[0..n):
 * on a big.LITTLE chip the decode pool stays on the big cores, and the
 * audio decoder on the cores the profile gave it. pool_pin_self pins the
 * calling thread (worker 0 of its pools). A NULL pool pins nothing. */
ember_status pool_pin(ember_pool *pool, const int32_t *cpus, int32_t n);
ember_status pool_pin_self(const int32_t *cpus, int32_t n);

/* CPUs this process may run on (its affinity mask; >= 1). */
int pool_cpu_count(void);

#endif
