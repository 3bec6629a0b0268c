#include "base/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/status.h"

/* How long a waiting thread spins before it sleeps: long enough to bridge
 * the gap between two ops of a decode step (tens of microseconds), short
 * enough not to steal a core from other work when the machine is busy. */
#define SPIN_ITERATIONS 2000

/* Work is handed out in parts claimed one at a time, so a worker that the
 * OS has not scheduled yet delays nobody: whoever runs takes the next part.
 * Each active worker owns a block of consecutive parts and claims them in
 * order, then takes what is left of the others' blocks: a user that splits
 * rows by part index (pool_split) gets one contiguous run of rows per worker
 * unless it had to steal, which keeps a decode matmul's weights one stream
 * per core (handing all parts out in one interleaved order made each core
 * restart its stream every part: kernel_ab, 1 token, 2 threads, weights
 * from DRAM, blocks against one order: Q4_K 6144x2048 1.045x, 2048x2048
 * 1.086x, Q8_0 6144x2048 1.043x, Q6_K 2048x6144 1.01x). A block is one
 * 64-bit word, run number (32 bits) | next part (16) | end of the block
 * (16), so a worker that wakes up late can never take a part of a later
 * run: its compare-and-swap carries both. The task and its context are
 * read only after a claim succeeds, when the run cannot end before that
 * part is done. */
#define MAX_PARTS 0xffff

typedef struct block {
    atomic_uint_fast64_t word;
    char pad[64 - sizeof(atomic_uint_fast64_t)]; /* one cache line each: claims do not contend */
} block;

struct ember_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* workers sleep here between runs */
    pthread_cond_t done; /* the caller sleeps here until every part is done */
    atomic_uint_fast64_t started; /* the number of the latest run, which workers wait for */
    block *blocks;                /* [n]: each worker's parts of the current run */
    atomic_int parts_done;
    atomic_bool stop;
    atomic_int active; /* workers [0, active) take parts; the rest sit the runs out */
    _Atomic(pool_task) fn;
    _Atomic(void *) ctx;
    uint32_t run; /* written by the caller only */
};

typedef struct worker_arg {
    ember_pool *pool;
    int index;
} worker_arg;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Claims and runs the parts of run `run` left in block b; the total is
 * n_parts. */
static void work_block(ember_pool *pool, uint32_t run, int b, int n_parts, int worker)
{
    atomic_uint_fast64_t *word = &pool->blocks[b].word;
    uint_fast64_t c = atomic_load_explicit(word, memory_order_acquire);
    for (;;) {
        const int next = (int)((c >> 16) & MAX_PARTS), end = (int)(c & MAX_PARTS);
        if ((uint32_t)(c >> 32) != run || next >= end) return;
        if (!atomic_compare_exchange_weak_explicit(word, &c, c + ((uint_fast64_t)1 << 16), memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        pool_task fn = atomic_load_explicit(&pool->fn, memory_order_relaxed);
        void *ctx = atomic_load_explicit(&pool->ctx, memory_order_relaxed);
        fn(ctx, next, n_parts, worker);
        if (atomic_fetch_add_explicit(&pool->parts_done, 1, memory_order_acq_rel) + 1 == n_parts) {
            pthread_mutex_lock(&pool->lock); /* the caller may be asleep */
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
        c = atomic_load_explicit(word, memory_order_acquire);
    }
}

/* Runs parts of run `run` until none is left: this worker's block first,
 * then the others', from the next one on. */
static void work(ember_pool *pool, uint32_t run, int worker)
{
    if (worker >= atomic_load_explicit(&pool->active, memory_order_relaxed)) return;
    const uint_fast64_t s = atomic_load_explicit(&pool->started, memory_order_acquire);
    if ((uint32_t)(s >> 32) != run) return;
    const int n_parts = (int)(s & MAX_PARTS);
    for (int i = 0; i < pool->n; i++) work_block(pool, run, (worker + i) % pool->n, n_parts, worker);
}

static void *worker_main(void *p)
{
    worker_arg arg = *(worker_arg *)p;
    free(p);
    ember_pool *pool = arg.pool;
    uint32_t seen = 0;
    for (;;) {
        uint32_t run = 0;
        for (int spins = 0; spins < SPIN_ITERATIONS; spins++) {
            run = (uint32_t)(atomic_load_explicit(&pool->started, memory_order_acquire) >> 32);
            if (run != seen || atomic_load(&pool->stop)) break;
            cpu_relax();
        }
        if (run == seen && !atomic_load(&pool->stop)) {
            pthread_mutex_lock(&pool->lock);
            while ((run = (uint32_t)(atomic_load(&pool->started) >> 32)) == seen &&
                   !atomic_load(&pool->stop))
                pthread_cond_wait(&pool->wake, &pool->lock);
            pthread_mutex_unlock(&pool->lock);
        }
        if (atomic_load(&pool->stop)) return NULL;
        seen = run;
        work(pool, run, arg.index);
    }
}

ember_status pool_create(int n_threads, ember_pool **out)
{
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024)
        return ember_fail(EMBER_ERR_INVALID_ARG, "thread count %d must be in [1, 1024]", n_threads);
    ember_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return ember_fail(EMBER_ERR_NO_MEMORY, "thread pool: out of memory");
    pool->n = n_threads;
    atomic_init(&pool->active, n_threads);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    pool->threads = calloc((size_t)n_threads, sizeof *pool->threads);
    pool->blocks = aligned_alloc(64, (size_t)n_threads * sizeof *pool->blocks);
    if (pool->blocks)
        for (int i = 0; i < n_threads; i++) atomic_init(&pool->blocks[i].word, 0);
    if (!pool->threads || !pool->blocks) {
        pool_free(pool);
        return ember_fail(EMBER_ERR_NO_MEMORY, "thread pool: out of memory");
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *arg = malloc(sizeof *arg);
        if (!arg || (arg->pool = pool, arg->index = i,
                     pthread_create(&pool->threads[i], NULL, worker_main, arg) != 0)) {
            free(arg);
            pool->n = i; /* join only the threads that started */
            pool_free(pool);
            return ember_fail(EMBER_ERR_NO_MEMORY, "thread pool: cannot start thread %d", i);
        }
    }
    *out = pool;
    return EMBER_OK;
}

void pool_free(ember_pool *pool)
{
    if (!pool) return;
    if (pool->threads) {
        pthread_mutex_lock(&pool->lock);
        atomic_store(&pool->stop, 1);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->lock);
        for (int i = 1; i < pool->n; i++) pthread_join(pool->threads[i], NULL);
    }
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->lock);
    free(pool->threads);
    free(pool->blocks);
    free(pool);
}

int pool_size(const ember_pool *pool) { return pool ? pool->n : 1; }

void pool_set_active(ember_pool *pool, int n)
{
    if (!pool) return;
    atomic_store_explicit(&pool->active, n < 1 ? 1 : n > pool->n ? pool->n : n,
                          memory_order_relaxed);
}

int pool_active(const ember_pool *pool)
{
    return pool ? atomic_load_explicit(&pool->active, memory_order_relaxed) : 1;
}

void pool_run(ember_pool *pool, pool_task fn, void *ctx, int n_parts)
{
    if (n_parts < 1) return;
    if (!pool || pool->n == 1 || n_parts > MAX_PARTS || pool_active(pool) == 1) {
        for (int i = 0; i < n_parts; i++) fn(ctx, i, n_parts, 0);
        return;
    }
    atomic_store_explicit(&pool->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&pool->ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&pool->parts_done, 0, memory_order_relaxed);
    uint32_t run = ++pool->run;
    if (run == 0) run = ++pool->run; /* 0 is what a fresh worker has seen */
    /* worker w's block: parts [w n / A, (w + 1) n / A) of the A active ones */
    const int active = pool_active(pool);
    for (int w = 0; w < pool->n; w++) {
        const uint_fast64_t lo = w < active ? (uint_fast64_t)((int64_t)n_parts * w / active) : 0;
        const uint_fast64_t hi = w < active ? (uint_fast64_t)((int64_t)n_parts * (w + 1) / active) : 0;
        atomic_store_explicit(&pool->blocks[w].word, ((uint_fast64_t)run << 32) | lo << 16 | hi,
                              memory_order_relaxed);
    }
    pthread_mutex_lock(&pool->lock);
    atomic_store_explicit(&pool->started, ((uint_fast64_t)run << 32) | (uint_fast64_t)n_parts,
                          memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    work(pool, run, 0);

    for (int spins = 0; spins < SPIN_ITERATIONS; spins++) {
        if (atomic_load_explicit(&pool->parts_done, memory_order_acquire) == n_parts) return;
        cpu_relax();
    }
    pthread_mutex_lock(&pool->lock);
    while (atomic_load_explicit(&pool->parts_done, memory_order_acquire) < n_parts)
        pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}

void pool_split(int64_t n, int64_t align, int part, int n_parts, int64_t *begin, int64_t *end)
{
    int64_t units = (n + align - 1) / align;
    int64_t per = units / n_parts, extra = units % n_parts;
    int64_t first = part * per + (part < extra ? part : extra);
    int64_t count = per + (part < extra ? 1 : 0);
    *begin = first * align < n ? first * align : n;
    *end = (first + count) * align < n ? (first + count) * align : n;
}

/* The affinity mask of cpus[0..n). */
static int make_mask(const int32_t *cpus, int32_t n, cpu_set_t *set)
{
    CPU_ZERO(set);
    for (int32_t i = 0; i < n; i++) {
        if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE) return -1;
        CPU_SET(cpus[i], set);
    }
    return n > 0 ? 0 : -1;
}

ember_status pool_pin(ember_pool *pool, const int32_t *cpus, int32_t n)
{
    cpu_set_t set;
    if (make_mask(cpus, n, &set))
        return ember_fail(EMBER_ERR_INVALID_ARG, "pool_pin: %d CPUs, or a CPU out of range", n);
    for (int i = 1; pool && i < pool->n; i++) {
        int err = pthread_setaffinity_np(pool->threads[i], sizeof set, &set);
        if (err) return ember_fail(EMBER_ERR_INVALID_ARG, "pool_pin: worker %d: error %d", i, err);
    }
    return EMBER_OK;
}

ember_status pool_pin_self(const int32_t *cpus, int32_t n)
{
    cpu_set_t set;
    if (make_mask(cpus, n, &set))
        return ember_fail(EMBER_ERR_INVALID_ARG, "pool_pin_self: %d CPUs, or a CPU out of range", n);
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    return err ? ember_fail(EMBER_ERR_INVALID_ARG, "pool_pin_self: error %d", err) : EMBER_OK;
}

int pool_cpu_count(void)
{
    /* the CPUs this process may run on (taskset, a container's cpuset),
     * not every CPU the machine has online */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 1) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)n : 1;
}
