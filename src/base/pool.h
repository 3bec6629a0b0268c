/* A persistent thread pool. The calling thread is worker 0; pool_run hands
 * one task to every worker and returns when all of them are done (the
 * barrier between ops). Workers spin briefly before sleeping, so
 * back-to-back ops in a decode step do not pay a wake-up each. */
#ifndef EMBER_BASE_POOL_H
#define EMBER_BASE_POOL_H

#include "ember.h"

typedef struct ember_pool ember_pool;

/* fn(ctx, worker, n_workers) runs once on each worker. */
typedef void (*pool_task)(void *ctx, int worker, int n_workers);

/* n_threads >= 1 counts the caller; n_threads - 1 threads are started. */
ember_status pool_create(int n_threads, ember_pool **out);
void pool_free(ember_pool *pool);
int pool_size(const ember_pool *pool);
/* Not reentrant: one pool_run at a time per pool. A NULL pool runs fn(ctx, 0, 1). */
void pool_run(ember_pool *pool, pool_task fn, void *ctx);

/* Splits [0, n) into n_workers contiguous ranges whose starts are multiples
 * of `align`; worker w gets [*begin, *end). */
void pool_split(int64_t n, int64_t align, int worker, int n_workers, int64_t *begin,
                int64_t *end);

/* Online CPUs (>= 1). */
int pool_cpu_count(void);

#endif
