/* The thread pool runs every part of every run exactly once, and pool_run
 * returns only after all of them are done, also when the machine is
 * oversubscribed (busy threads compete for the cores, so pool workers are
 * descheduled at arbitrary points, as on a phone with background work). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "check.h"

#define MAX_TEST_PARTS 64

typedef struct run_ctx {
    atomic_int hits[MAX_TEST_PARTS];
    int n_parts;
    int bad_worker;
} run_ctx;

static void count_part(void *p, int part, int n_parts, int worker)
{
    run_ctx *c = p;
    if (n_parts != c->n_parts || worker < 0 || worker >= 4) c->bad_worker = 1;
    /* a little work, so parts of one run overlap on several workers */
    for (volatile int i = 0; i < 200; i++) {
    }
    atomic_fetch_add(&c->hits[part], 1);
}

static atomic_bool stop_hogs;

static void *hog(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load(&stop_hogs)) x++;
    return NULL;
}

static void every_part_runs_once(int n_threads, int with_hogs, int runs)
{
    ember_pool *pool = NULL;
    REQUIRE(pool_create(n_threads, &pool) == EMBER_OK);
    pthread_t hogs[3];
    atomic_store(&stop_hogs, 0);
    if (with_hogs)
        for (int i = 0; i < 3; i++) pthread_create(&hogs[i], NULL, hog, NULL);
    unsigned seed = 1;
    for (int run = 0; run < runs && check_failures_in_case == 0; run++) {
        static run_ctx ctx; /* reused: a stale worker touching it would show */
        seed = seed * 1103515245u + 12345u;
        /* alternate small and large runs: a worker late for a small run
         * must not claim a part of the large one that follows */
        ctx.n_parts = run % 2 ? 1 + (int)((seed >> 16) % 3) : MAX_TEST_PARTS - (int)((seed >> 16) % 8);
        ctx.bad_worker = 0;
        for (int i = 0; i < MAX_TEST_PARTS; i++) atomic_store(&ctx.hits[i], 0);
        pool_run(pool, count_part, &ctx, ctx.n_parts);
        for (int i = 0; i < MAX_TEST_PARTS; i++) {
            int want = i < ctx.n_parts ? 1 : 0;
            CHECK_MSG(atomic_load(&ctx.hits[i]) == want, "run %d part %d of %d ran %d times", run,
                      i, ctx.n_parts, atomic_load(&ctx.hits[i]));
        }
        CHECK(!ctx.bad_worker);
    }
    atomic_store(&stop_hogs, 1);
    if (with_hogs)
        for (int i = 0; i < 3; i++) pthread_join(hogs[i], NULL);
    pool_free(pool);
}

static void parts_run_once_two_threads(void) { every_part_runs_once(2, 0, 20000); }
static void parts_run_once_four_threads(void) { every_part_runs_once(4, 0, 20000); }
/* The claim race this guards against showed up about once in 50k runs. */
static void parts_run_once_oversubscribed(void) { every_part_runs_once(4, 1, 150000); }

static void split_covers_the_range(void)
{
    for (int64_t n = 0; n < 300; n += 7)
        for (int parts = 1; parts < 9; parts++) {
            int64_t next = 0;
            for (int p = 0; p < parts; p++) {
                int64_t b, e;
                pool_split(n, 16, p, parts, &b, &e);
                CHECK(b == next && e >= b && (b % 16 == 0 || b == n));
                next = e;
            }
            CHECK(next == n);
        }
}

static void null_pool_runs_on_the_caller(void)
{
    run_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.n_parts = 5;
    pool_run(NULL, count_part, &ctx, 5);
    for (int i = 0; i < 5; i++) CHECK(atomic_load(&ctx.hits[i]) == 1);
    ember_pool *pool = NULL;
    CHECK(pool_create(0, &pool) == EMBER_ERR_INVALID_ARG && pool == NULL);
    CHECK(pool_size(NULL) == 1);
}

/* A pinned pool's workers run only on the given CPU; fewer active workers
 * leave the rest asleep and every part still runs. */
typedef struct where {
    int cpu[64];
    int worker[64];
} where;

static void record_cpu(void *p, int part, int n_parts, int worker)
{
    where *w = p;
    (void)n_parts;
    volatile double x = 0;
    for (int i = 0; i < 200000; i++) x += i; /* long enough for the worker to take parts */
    w->cpu[part] = sched_getcpu();
    w->worker[part] = worker;
}

static void pinned_workers_stay_on_their_cpus(void)
{
    ember_pool *pool = NULL;
    REQUIRE(pool_create(3, &pool) == EMBER_OK);
    const int32_t cpu0 = 0;
    CHECK(pool_pin(pool, &cpu0, 1) == EMBER_OK);
    const int32_t bad = -1;
    CHECK(pool_pin(pool, &bad, 1) != EMBER_OK);
    CHECK(pool_pin(pool, &cpu0, 0) != EMBER_OK);
    where w;
    memset(&w, 0xff, sizeof w);
    pool_run(pool, record_cpu, &w, 64);
    for (int i = 0; i < 64; i++) {
        CHECK_MSG(w.worker[i] >= 0 && w.worker[i] < 3, "part %d ran on worker %d", i, w.worker[i]);
        if (w.worker[i] > 0) CHECK_MSG(w.cpu[i] == 0, "worker %d ran on cpu %d", w.worker[i], w.cpu[i]);
    }
    pool_set_active(pool, 1);
    CHECK(pool_active(pool) == 1);
    memset(&w, 0xff, sizeof w);
    pool_run(pool, record_cpu, &w, 16);
    for (int i = 0; i < 16; i++) CHECK_MSG(w.worker[i] == 0, "part %d on worker %d with 1 active", i, w.worker[i]);
    pool_set_active(pool, 99);
    CHECK(pool_active(pool) == 3);
    pool_free(pool);
}

/* Each worker takes the parts of its own block (a run's parts cut into one
 * consecutive block per active worker) in increasing order, then those left
 * of the others' blocks, also in increasing order per block: the parts a
 * worker runs, taken block by block, only ever go up. And every part runs
 * once while another thread changes the number of active workers. */
typedef struct order_log {
    atomic_int hits[MAX_TEST_PARTS];
    int seq[4][MAX_TEST_PARTS]; /* per worker, the parts it ran in order */
    int len[4];
} order_log;

static void log_order(void *p, int part, int n_parts, int worker)
{
    order_log *o = p;
    (void)n_parts;
    for (volatile int i = 0; i < 2000; i++) {
    }
    atomic_fetch_add(&o->hits[part], 1);
    o->seq[worker][o->len[worker]++] = part;
}

/* The block of part p: block w holds parts [w n / A, (w + 1) n / A). */
static int block_of(int p, int n, int active)
{
    int w = 0;
    while ((int64_t)n * (w + 1) / active <= p) w++;
    return w;
}

static void *flip_active(void *arg)
{
    ember_pool *pool = arg;
    for (unsigned i = 0; !atomic_load(&stop_hogs); i++) pool_set_active(pool, 1 + (int)(i % 4));
    return NULL;
}

static void workers_take_blocks_in_order(void)
{
    ember_pool *pool = NULL;
    REQUIRE(pool_create(4, &pool) == EMBER_OK);
    atomic_store(&stop_hogs, 0);
    pthread_t flipper;
    int flipping = 0;
    for (int run = 0; run < 4000 && check_failures_in_case == 0; run++) {
        if (run == 2000) flipping = pthread_create(&flipper, NULL, flip_active, pool) == 0;
        static order_log o;
        memset(&o, 0, sizeof o);
        const int n = 5 + run % (MAX_TEST_PARTS - 5), active = flipping ? 0 : pool_active(pool);
        pool_run(pool, log_order, &o, n);
        for (int i = 0; i < n; i++)
            CHECK_MSG(atomic_load(&o.hits[i]) == 1, "run %d part %d ran %d times", run, i,
                      atomic_load(&o.hits[i]));
        if (flipping) continue; /* the blocks follow the active count of the run's start */
        for (int w = 0; w < 4; w++)
            for (int k = 1; k < o.len[w]; k++) {
                const int a = o.seq[w][k - 1], b = o.seq[w][k];
                CHECK_MSG(block_of(a, n, active) != block_of(b, n, active) || b > a,
                          "run %d worker %d ran part %d after %d", run, w, b, a);
            }
    }
    atomic_store(&stop_hogs, 1);
    if (flipping) pthread_join(flipper, NULL);
    pool_set_active(pool, 4);
    pool_free(pool);
}

/* With two workers the second starts on its own block, the upper half of
 * the parts, whenever it is awake when a run begins (most runs: it spins
 * between them), where handing every part out in one order would give it
 * part 1 (0 of 2000 runs did). A count, not a rule: the OS may keep it off
 * a run entirely (two busy threads beside it: 325 of 2000; idle: 1995). */
static void second_worker_starts_at_its_block(void)
{
    ember_pool *pool = NULL;
    REQUIRE(pool_create(2, &pool) == EMBER_OK);
    int at_block = 0;
    const int runs = 2000, n = 40;
    for (int run = 0; run < runs; run++) {
        static order_log o;
        memset(&o, 0, sizeof o);
        pool_run(pool, log_order, &o, n);
        at_block += o.len[1] > 0 && o.seq[1][0] == n / 2;
    }
    CHECK_MSG(at_block >= runs / 100, "worker 1 began at part %d in only %d of %d runs", n / 2, at_block, runs);
    pool_free(pool);
}

int main(void)
{
    RUN(parts_run_once_two_threads);
    RUN(parts_run_once_four_threads);
    RUN(parts_run_once_oversubscribed);
    RUN(split_covers_the_range);
    RUN(null_pool_runs_on_the_caller);
    RUN(pinned_workers_stay_on_their_cpus);
    RUN(workers_take_blocks_in_order);
    RUN(second_worker_starts_at_its_block);
    return check_summary();
}
