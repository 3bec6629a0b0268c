#include "base/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/status.h"

#define SPIN_ITERATIONS 200000

struct ember_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    atomic_uint generation; /* bumped once per task */
    atomic_int pending;     /* workers (other than the caller) still running */
    atomic_bool stop;
    pool_task fn;
    void *ctx;
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

static void *worker_main(void *p)
{
    worker_arg arg = *(worker_arg *)p;
    free(p);
    ember_pool *pool = arg.pool;
    unsigned seen = 0;
    for (;;) {
        unsigned gen;
        int spins = 0;
        while ((gen = atomic_load_explicit(&pool->generation, memory_order_acquire)) == seen &&
               !atomic_load(&pool->stop) && spins < SPIN_ITERATIONS) {
            cpu_relax();
            spins++;
        }
        if (gen == seen && !atomic_load(&pool->stop)) {
            pthread_mutex_lock(&pool->lock);
            while ((gen = atomic_load(&pool->generation)) == seen && !atomic_load(&pool->stop))
                pthread_cond_wait(&pool->wake, &pool->lock);
            pthread_mutex_unlock(&pool->lock);
        }
        if (atomic_load(&pool->stop)) return NULL;
        seen = gen;
        pool->fn(pool->ctx, arg.index, pool->n);
        atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_release);
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
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pool->threads = calloc((size_t)n_threads, sizeof *pool->threads);
    if (!pool->threads) {
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
    pthread_mutex_destroy(&pool->lock);
    free(pool->threads);
    free(pool);
}

int pool_size(const ember_pool *pool) { return pool ? pool->n : 1; }

void pool_run(ember_pool *pool, pool_task fn, void *ctx)
{
    if (!pool || pool->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->ctx = ctx;
    atomic_store_explicit(&pool->pending, pool->n - 1, memory_order_relaxed);
    pthread_mutex_lock(&pool->lock);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    fn(ctx, 0, pool->n);
    int spins = 0;
    while (atomic_load_explicit(&pool->pending, memory_order_acquire) > 0) {
        if (++spins < SPIN_ITERATIONS) cpu_relax();
        else sched_yield();
    }
}

void pool_split(int64_t n, int64_t align, int worker, int n_workers, int64_t *begin,
                int64_t *end)
{
    int64_t units = (n + align - 1) / align;
    int64_t per = units / n_workers, extra = units % n_workers;
    int64_t first = worker * per + (worker < extra ? worker : extra);
    int64_t count = per + (worker < extra ? 1 : 0);
    *begin = first * align < n ? first * align : n;
    *end = (first + count) * align < n ? (first + count) * align : n;
}

int pool_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)n : 1;
}
