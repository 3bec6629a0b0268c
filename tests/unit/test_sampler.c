/* The sampler: its distribution (chi-square), reproducibility, greedy, the
 * exact kept sets of top-k / top-p / min-p, each penalty and the logit bias on
 * hand-computed cases, and one generator draw per vocabulary entry whatever
 * the filters. Every seed is fixed, so every case is deterministic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "generate/rng.h"
#include "generate/sampler.h"

#define N_DRAWS 100000

static et_sampler *make(const et_sampler_params *p, int32_t vocab)
{
    et_sampler *s = NULL;
    if (et_sampler_create(p, vocab, &s) != EMBER_OK) return NULL;
    return s;
}

/* Samples `draws` times from fresh copies of `logits`, counting ids. */
static void histogram(et_sampler *s, const float *logits, int32_t n, int draws, long *counts)
{
    float *work = malloc((size_t)n * sizeof *work);
    if (!work) return;
    memset(counts, 0, (size_t)n * sizeof *counts);
    for (int d = 0; d < draws; d++) {
        memcpy(work, logits, (size_t)n * sizeof *work);
        int32_t id = et_sampler_sample(s, work);
        if (id >= 0 && id < n) counts[id]++;
    }
    free(work);
}

/* Pearson's statistic of counts against probabilities `p` (over the entries
 * with p > 0); entries with p == 0 must never be drawn. */
static double chi_square(const long *counts, const double *p, int32_t n, long total, int *dof, int *forbidden)
{
    double chi = 0.0;
    *dof = -1;
    *forbidden = 0;
    for (int32_t i = 0; i < n; i++) {
        if (p[i] == 0.0) {
            if (counts[i]) *forbidden = 1;
            continue;
        }
        double e = p[i] * (double)total, d = (double)counts[i] - e;
        chi += d * d / e;
        (*dof)++;
    }
    return chi;
}

/* Upper 0.001 quantiles of chi-square with 1..7 degrees of freedom. */
static const double chi_crit_001[8] = {0, 10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322};

static void softmax_ref(const float *l, int32_t n, double t, double *p)
{
    double m = -INFINITY, z = 0.0;
    for (int32_t i = 0; i < n; i++) m = fmax(m, l[i] / t);
    for (int32_t i = 0; i < n; i++) z += (p[i] = exp(l[i] / t - m));
    for (int32_t i = 0; i < n; i++) p[i] /= z;
}

static void check_fit(const et_sampler_params *prm, const float *logits, const double *p)
{
    et_sampler *s = make(prm, 8);
    REQUIRE(s);
    long counts[8];
    histogram(s, logits, 8, N_DRAWS, counts);
    int dof, forbidden;
    double chi = chi_square(counts, p, 8, N_DRAWS, &dof, &forbidden);
    CHECK_MSG(!forbidden, "a filtered-out id was drawn");
    CHECK_MSG(dof >= 1 && chi < chi_crit_001[dof], "chi-square %.2f with %d dof (critical %.3f)", chi, dof,
              chi_crit_001[dof]);
    et_sampler_free(s);
}

typedef struct filters {
    int32_t top_k;
    float top_p, min_p, temperature;
} filters;

static et_sampler_params params_with(filters f, uint64_t seed)
{
    et_sampler_params prm;
    et_sampler_params_default(&prm);
    prm.seed = seed;
    prm.top_k = f.top_k;
    prm.top_p = f.top_p;
    prm.min_p = f.min_p;
    prm.temperature = f.temperature;
    return prm;
}

/* exp: 1, 1.65, 2.72, 0.37, 7.39, 0.61, 1.28, 4.48 (sum 19.50): ids 4, 7, 2
 * hold 0.379, 0.230, 0.139 of the mass. */
static const float eight[8] = {0.0f, 0.5f, 1.0f, -1.0f, 2.0f, -0.5f, 0.25f, 1.5f};

/* Draws under the filters must fit softmax(eight / T) over the ids in
 * kept_mask, and never give another id. */
static void check_filtered_fit(filters f, uint64_t seed, uint32_t kept_mask)
{
    et_sampler_params prm = params_with(f, seed);
    float kept[8];
    for (int i = 0; i < 8; i++) kept[i] = (kept_mask >> i) & 1 ? eight[i] : -INFINITY;
    double p[8];
    softmax_ref(kept, 8, f.temperature, p);
    check_fit(&prm, eight, p);
}

static void distribution_fits_softmax(void) { check_filtered_fit((filters){0, 1.0f, 0.0f, 1.0f}, 1234, 0xffu); }

/* top 4 values 2.0, 1.5, 1.0, 0.5: ids 4, 7, 2, 1 */
static void distribution_fits_tempered_top_k(void) { check_filtered_fit((filters){4, 1.0f, 0.0f, 0.7f}, 99, 0x96u); }

/* 0.379 + 0.230 < 0.7 <= 0.748 with id 2: ids 4, 7, 2 */
static void distribution_fits_top_p(void) { check_filtered_fit((filters){0, 0.7f, 0.0f, 1.0f}, 5, 0x94u); }

/* keeps l >= 2 + log(0.3) = 0.796: ids 4, 7, 2 */
static void distribution_fits_min_p(void) { check_filtered_fit((filters){0, 1.0f, 0.3f, 1.0f}, 7, 0x94u); }

static void fill_random_logits(float *l, int32_t n, uint64_t seed)
{
    et_rng r;
    et_rng_seed(&r, seed);
    for (int32_t i = 0; i < n; i++) l[i] = (float)(4.0 * et_rng_uniform(&r) - 2.0);
}

static void run_sequence(const et_sampler_params *prm, const float *logits, int32_t n, int steps, int32_t *out)
{
    et_sampler *s = make(prm, n);
    float *work = malloc((size_t)n * sizeof *work);
    if (s && work)
        for (int i = 0; i < steps; i++) {
            memcpy(work, logits, (size_t)n * sizeof *work);
            out[i] = et_sampler_sample(s, work);
            et_sampler_accept(s, out[i]);
        }
    free(work);
    et_sampler_free(s);
}

static void same_seed_same_ids(void)
{
    enum { N = 1000, STEPS = 200 };
    static float logits[N];
    fill_random_logits(logits, N, 5);
    et_sampler_params prm;
    et_sampler_params_default(&prm);
    prm.seed = 42;
    prm.top_p = 0.9f;
    prm.repetition_penalty = 1.1f;
    int32_t a[STEPS], b[STEPS], c[STEPS];
    run_sequence(&prm, logits, N, STEPS, a);
    run_sequence(&prm, logits, N, STEPS, b);
    prm.seed = 43;
    run_sequence(&prm, logits, N, STEPS, c);
    CHECK(memcmp(a, b, sizeof a) == 0);
    int differ = 0;
    for (int i = 0; i < STEPS; i++) differ += a[i] != c[i];
    CHECK_MSG(differ > STEPS / 2, "seeds 42 and 43 agree on %d of %d ids", STEPS - differ, STEPS);
}

static void reset_replays_the_sequence(void)
{
    enum { N = 500, STEPS = 50 };
    static float logits[N], work[N];
    fill_random_logits(logits, N, 11);
    et_sampler_params prm;
    et_sampler_params_default(&prm);
    prm.seed = 3;
    prm.frequency_penalty = 0.5f;
    et_sampler *s = make(&prm, N);
    REQUIRE(s);
    int32_t a[STEPS], b[STEPS];
    for (int pass = 0; pass < 2; pass++) {
        int32_t *out = pass ? b : a;
        for (int i = 0; i < STEPS; i++) {
            memcpy(work, logits, sizeof work);
            out[i] = et_sampler_sample(s, work);
            et_sampler_accept(s, out[i]);
        }
        et_sampler_reset(s, 3);
    }
    CHECK(memcmp(a, b, sizeof a) == 0);
    et_sampler_free(s);
}

static void temperature_zero_is_argmax(void)
{
    et_sampler_params prm;
    et_sampler_params_default(&prm);
    prm.temperature = 0.0f;
    et_sampler *s = make(&prm, 6);
    REQUIRE(s);
    et_rng before = *et_sampler_rng(s);
    float a[6] = {0.1f, 3.0f, -2.0f, 3.0f, NAN, 2.9f};
    CHECK(et_sampler_sample(s, a) == 1); /* the first of the tied maxima */
    float b[6] = {NAN, -INFINITY, -INFINITY, -5.0f, -INFINITY, -7.0f};
    CHECK(et_sampler_sample(s, b) == 3);
    float c[6] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    CHECK(et_sampler_sample(s, c) == 0);
    /* greedy uses no draw, but moves the stream on like any call */
    CHECK(et_sampler_rng(s)->key == before.key && et_sampler_rng(s)->counter == before.counter + 18);
    et_sampler_free(s);

    /* greedy on a large random vocabulary equals a plain argmax */
    enum { N = 20000 };
    static float l[N], w[N];
    fill_random_logits(l, N, 77);
    s = make(&prm, N);
    REQUIRE(s);
    int32_t want = 0;
    for (int32_t i = 1; i < N; i++)
        if (l[i] > l[want]) want = i;
    memcpy(w, l, sizeof w);
    CHECK(et_sampler_sample(s, w) == want);
    et_sampler_free(s);
}

/* The set of ids drawn over `draws` calls, as a bit mask over n <= 32 ids. */
static uint32_t drawn_set(const et_sampler_params *prm, const float *logits, int32_t n, int draws)
{
    et_sampler *s = make(prm, n);
    if (!s) return 0xffffffffu;
    long counts[32];
    histogram(s, logits, n, draws, counts);
    et_sampler_free(s);
    uint32_t mask = 0;
    for (int32_t i = 0; i < n; i++)
        if (counts[i]) mask |= 1u << i;
    return mask;
}

/* The set drawn (as a bit mask over ids) from the distribution p (n <= 8)
 * under the given filters. */
static uint32_t kept_set(const double *p, int32_t n, filters f, uint64_t seed, int draws)
{
    float l[8];
    for (int32_t i = 0; i < n; i++) l[i] = (float)log(p[i]);
    et_sampler_params prm = params_with(f, seed);
    return drawn_set(&prm, l, n, draws);
}

static void top_k_keeps_the_k_largest(void)
{
    et_sampler_params prm;
    et_sampler_params_default(&prm);
    prm.seed = 10;
    float l[6] = {1.0f, 5.0f, 3.0f, 4.0f, 3.0f, 0.5f};
    prm.top_k = 2;
    CHECK_MSG(drawn_set(&prm, l, 6, 3000) == ((1u << 1) | (1u << 3)), "top_k 2");
    prm.top_k = 3; /* the 3rd largest value, 3, is tied: both are kept */
    CHECK_MSG(drawn_set(&prm, l, 6, 3000) == ((1u << 1) | (1u << 3) | (1u << 2) | (1u << 4)), "top_k 3, tie");
    prm.top_k = 1;
    CHECK_MSG(drawn_set(&prm, l, 6, 200) == (1u << 1), "top_k 1");
    prm.top_k = 6;
    CHECK_MSG(drawn_set(&prm, l, 6, 20000) == 0x3fu, "top_k = vocab keeps all");

    /* a tie at the k-th value far into a large vocabulary: all of it is kept,
     * also the entries the selection buffer dropped when it first filled */
    enum { N = 3000 };
    static float big[N], work[N];
    for (int i = 0; i < N; i++) big[i] = i < 10 ? 2.0f : 0.0f;
    prm.top_k = 20;
    et_sampler *s = make(&prm, N);
    REQUIRE(s);
    int early = 0;
    for (int d = 0; d < 500; d++) {
        memcpy(work, big, sizeof work);
        int32_t id = et_sampler_sample(s, work);
        early += id >= 100 && id < 1000;
    }
    CHECK_MSG(early > 80, "%d of 500 draws among the tied ids 100..999 (expected ~150)", early);
    et_sampler_free(s);
}

static void top_p_keeps_the_nucleus(void)
{
    const double p[5] = {0.15, 0.5, 0.05, 0.3, 0.0};
    CHECK_MSG(kept_set(p, 5, (filters){0, 0.4f, 0.0f, 1.0f}, 20, 2000) == 0x2u, "top_p 0.4");
    CHECK_MSG(kept_set(p, 5, (filters){0, 0.75f, 0.0f, 1.0f}, 20, 3000) == 0xau, "top_p 0.75");
    CHECK_MSG(kept_set(p, 5, (filters){0, 0.85f, 0.0f, 1.0f}, 20, 3000) == 0xbu, "top_p 0.85");
    CHECK_MSG(kept_set(p, 5, (filters){0, 0.99f, 0.0f, 1.0f}, 20, 6000) == 0xfu, "top_p 0.99");
}

static void top_p_renormalizes_after_top_k(void)
{
    const double p[4] = {0.4, 0.3, 0.2, 0.1};
    /* alone: 0.4 < 0.5, so ids 0 and 1 */
    CHECK_MSG(kept_set(p, 4, (filters){0, 0.5f, 0.0f, 1.0f}, 21, 3000) == 0x3u, "top_p alone");
    /* after top-k the mass is 4/7, 3/7: id 0 alone reaches 0.5 */
    CHECK_MSG(kept_set(p, 4, (filters){2, 0.5f, 0.0f, 1.0f}, 21, 3000) == 0x1u, "top_k then top_p");
}

static void min_p_keeps_relative_to_the_top(void)
{
    const double p[4] = {0.05, 0.5, 0.15, 0.3};
    /* keeps p >= min_p * 0.5 */
    CHECK_MSG(kept_set(p, 4, (filters){0, 1.0f, 0.2f, 1.0f}, 30, 3000) == 0xeu, "min_p 0.2");
    CHECK_MSG(kept_set(p, 4, (filters){0, 1.0f, 0.5f, 1.0f}, 30, 3000) == 0xau, "min_p 0.5");
    CHECK_MSG(kept_set(p, 4, (filters){0, 1.0f, 1.0f, 1.0f}, 30, 300) == 0x2u, "min_p 1");
    /* on the tempered distribution: at T = 4 the smallest is 0.66 of the top */
    CHECK_MSG(kept_set(p, 4, (filters){0, 1.0f, 0.2f, 4.0f}, 30, 3000) == 0xfu, "min_p 0.2 at T 4");
}

/* The logits after a call at temperature 1 are the penalized logits. */
static void penalized(const et_sampler_params *prm, float *l, int with_history)
{
    et_sampler *s = make(prm, 4);
    if (!s) return;
    if (with_history) {
        const int32_t prompt[3] = {0, 1, 0};
        CHECK(et_sampler_add_prompt(s, prompt, 3) == EMBER_OK);
        et_sampler_accept(s, 2);
        et_sampler_accept(s, 2);
        et_sampler_accept(s, 1);
    }
    (void)et_sampler_sample(s, l);
    et_sampler_free(s);
}

static void check_values(const float *got, const float *want, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        CHECK_MSG(got[i] == want[i] || fabsf(got[i] - want[i]) < 1e-6f, "%s: logit %d is %g, want %g", what, i, (double)got[i],
                  (double)want[i]);
}

static void penalties_by_hand(void)
{
    const float base[4] = {2.0f, -1.0f, 0.5f, 3.0f};
    et_sampler_params prm;
    float l[4];

    et_sampler_params_default(&prm);
    prm.repetition_penalty = 2.0f; /* over prompt {0, 1} and generated {2, 1}: once per id */
    memcpy(l, base, sizeof l);
    penalized(&prm, l, 1);
    check_values(l, (const float[4]){1.0f, -2.0f, 0.25f, 3.0f}, 4, "repetition");

    et_sampler_params_default(&prm);
    prm.presence_penalty = 0.5f; /* generated only: ids 2 (twice) and 1 */
    memcpy(l, base, sizeof l);
    penalized(&prm, l, 1);
    check_values(l, (const float[4]){2.0f, -1.5f, 0.0f, 3.0f}, 4, "presence");

    et_sampler_params_default(&prm);
    prm.frequency_penalty = 0.25f;
    memcpy(l, base, sizeof l);
    penalized(&prm, l, 1);
    check_values(l, (const float[4]){2.0f, -1.25f, 0.0f, 3.0f}, 4, "frequency");

    et_sampler_params_default(&prm);
    prm.repetition_penalty = 2.0f;
    prm.presence_penalty = 0.5f;
    prm.frequency_penalty = 0.25f; /* repetition first, then presence + frequency */
    memcpy(l, base, sizeof l);
    penalized(&prm, l, 1);
    check_values(l, (const float[4]){1.0f, -2.75f, -0.75f, 3.0f}, 4, "all three");

    /* no history: nothing changes */
    memcpy(l, base, sizeof l);
    penalized(&prm, l, 0);
    check_values(l, base, 4, "no history");

    /* a penalty flips a greedy choice; a reset forgets the history */
    et_sampler_params_default(&prm);
    prm.temperature = 0.0f;
    prm.repetition_penalty = 1.2f;
    et_sampler *s = make(&prm, 2);
    REQUIRE(s);
    et_sampler_accept(s, 0);
    float g[2] = {3.0f, 2.9f};
    CHECK(et_sampler_sample(s, g) == 1);
    et_sampler_reset(s, 0);
    float h[2] = {3.0f, 2.9f};
    CHECK(et_sampler_sample(s, h) == 0);
    et_sampler_free(s);
}

static void logit_bias_first(void)
{
    const et_logit_bias bias[3] = {{1, 10.0f}, {0, -INFINITY}, {1, 0.5f}};
    et_sampler_params prm;
    et_sampler_params_default(&prm);
    prm.logit_bias = bias;
    prm.n_logit_bias = 3;
    prm.repetition_penalty = 2.0f;
    et_sampler *s = make(&prm, 3);
    REQUIRE(s);
    const int32_t prompt[1] = {1};
    CHECK(et_sampler_add_prompt(s, prompt, 1) == EMBER_OK);
    float l[3] = {5.0f, 1.0f, 2.0f};
    int32_t id = et_sampler_sample(s, l);
    /* bias before the penalty: (1 + 10.5) / 2 */
    check_values(l, (const float[3]){-INFINITY, 5.75f, 2.0f}, 3, "bias");
    CHECK(id != 0);
    et_sampler_free(s);

    prm.temperature = 0.0f;
    prm.repetition_penalty = 1.0f;
    s = make(&prm, 3);
    REQUIRE(s);
    float m[3] = {5.0f, 1.0f, 12.0f};
    CHECK(et_sampler_sample(s, m) == 2);
    float n[3] = {50.0f, 1.0f, 11.0f};
    CHECK(et_sampler_sample(s, n) == 1); /* 50 is banned, 11.5 > 11 */
    et_sampler_free(s);
}

/* Every call moves the generator on by exactly vocab draws, whatever the
 * filters: so later steps see the same draws. */
static void one_draw_per_entry(void)
{
    enum { N = 3000 };
    static float logits[N], work[N];
    fill_random_logits(logits, N, 8);
    et_rng want;
    et_rng_seed(&want, 555);
    et_rng_skip(&want, 2 * N);

    struct { int32_t k; float p, minp, t; } variants[] = {
        {0, 1.0f, 0.0f, 1.0f}, {1, 1.0f, 0.0f, 1.0f}, {40, 0.95f, 0.0f, 0.7f},
        {0, 0.5f, 0.0f, 1.5f}, {0, 1.0f, 0.9f, 1.0f}, {5, 0.1f, 0.5f, 0.01f},
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        et_sampler_params prm;
        et_sampler_params_default(&prm);
        prm.seed = 555;
        prm.top_k = variants[v].k;
        prm.top_p = variants[v].p;
        prm.min_p = variants[v].minp;
        prm.temperature = variants[v].t;
        et_sampler *s = make(&prm, N);
        REQUIRE(s);
        for (int step = 0; step < 2; step++) {
            memcpy(work, logits, sizeof work);
            (void)et_sampler_sample(s, work);
        }
        const et_rng *got = et_sampler_rng(s);
        CHECK_MSG(got->key == want.key && got->counter == want.counter, "variant %zu: generator at %llu, not %d", v,
                  (unsigned long long)got->counter, 2 * N);
        et_sampler_free(s);
    }
}

/* The race recomputed from the generator's draws: with every entry's draw
 * u_i, the sample is argmax exp(l_i - l_max) / -log(u_i) over the kept set;
 * with and without a filter the draws are the same, so a filtered call picks
 * the best key among the kept ones of the very same keys. */
static void race_uses_each_entrys_own_draw(void)
{
    enum { N = 64, STEPS = 300 };
    static float logits[N], work[N];
    fill_random_logits(logits, N, 12);
    int order[N]; /* ids by logit, descending: the top 5 are the top-k set */
    for (int i = 0; i < N; i++) order[i] = i;
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            if (logits[order[j]] > logits[order[i]]) { int t = order[i]; order[i] = order[j]; order[j] = t; }
    et_sampler_params prm;
    et_sampler_params_default(&prm);
    prm.seed = 77;
    et_sampler *all = make(&prm, N);
    prm.top_k = 5;
    et_sampler *top5 = make(&prm, N);
    REQUIRE(all && top5);
    float l_max = logits[order[0]];
    int mismatches = 0;
    for (int step = 0; step < STEPS; step++) {
        et_rng at = *et_sampler_rng(all);
        double key[N];
        for (int i = 0; i < N; i++)
            key[i] = exp((double)logits[i] - l_max) / -log((double)et_rng_to_uniform_f(et_rng_bits_at(&at, at.counter + (uint64_t)i)));
        int best_all = 0, best_top = order[0];
        for (int i = 1; i < N; i++)
            if (key[i] > key[best_all]) best_all = i;
        for (int j = 1; j < 5; j++)
            if (key[order[j]] > key[best_top]) best_top = order[j];
        memcpy(work, logits, sizeof work);
        mismatches += et_sampler_sample(all, work) != best_all;
        memcpy(work, logits, sizeof work);
        mismatches += et_sampler_sample(top5, work) != best_top;
    }
    CHECK_MSG(mismatches == 0, "%d of %d calls differ from the recomputed race", mismatches, 2 * STEPS);
    et_sampler_free(all);
    et_sampler_free(top5);
}

/* On a Qwen3-sized vocabulary the kept set of top-k 40 + top-p 0.9 is the one
 * a full sort gives: no drawn id lies outside it. */
static int cmp_desc(const void *a, const void *b, const float *l)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (l[x] != l[y]) return l[x] > l[y] ? -1 : 1;
    return x < y ? -1 : 1;
}

static const float *sort_logits;
static int cmp_ids(const void *a, const void *b) { return cmp_desc(a, b, sort_logits); }

static void large_vocab_matches_full_sort(void)
{
    enum { N = 151936, DRAWS = 60 };
    float *l = malloc(N * sizeof *l), *w = malloc(N * sizeof *w);
    int32_t *order = malloc(N * sizeof *order);
    uint8_t *in_set = calloc(N, 1);
    REQUIRE(l && w && order && in_set);
    et_rng r;
    et_rng_seed(&r, 2024);
    for (int32_t i = 0; i < N; i++) l[i] = (float)(0.3 * et_rng_exp(&r)); /* a long upper tail */
    for (int32_t i = 0; i < N; i++) order[i] = i;
    sort_logits = l;
    qsort(order, N, sizeof *order, cmp_ids);
    /* reference: top 40 (no ties here), renormalized, nucleus 0.9 */
    double z = 0.0, acc = 0.0, m = l[order[0]];
    for (int i = 0; i < 40; i++) z += exp(l[order[i]] - m);
    int size = 0;
    while (size < 40 && acc < 0.9 * z) acc += exp(l[order[size++]] - m);
    for (int i = 0; i < size; i++) in_set[order[i]] = 1;

    et_sampler_params prm;
    et_sampler_params_default(&prm);
    prm.top_k = 40;
    prm.top_p = 0.9f;
    prm.seed = 9;
    et_sampler *s = make(&prm, N);
    REQUIRE(s);
    int outside = 0;
    for (int d = 0; d < DRAWS; d++) {
        memcpy(w, l, N * sizeof *w);
        int32_t id = et_sampler_sample(s, w);
        outside += !in_set[id];
    }
    CHECK_MSG(outside == 0, "%d of %d draws outside the nucleus of %d", outside, DRAWS, size);
    CHECK_MSG(size > 3 && size < 40, "the constructed nucleus has %d entries", size);
    et_sampler_free(s);

    /* top-p alone over a flatter distribution: a nucleus of thousands */
    for (int32_t i = 0; i < N; i++) l[i] = (float)(2.0 * (et_rng_uniform(&r) + et_rng_uniform(&r) + et_rng_uniform(&r)));
    for (int32_t i = 0; i < N; i++) order[i] = i;
    qsort(order, N, sizeof *order, cmp_ids);
    m = l[order[0]];
    prm.top_k = 0;
    prm.top_p = 0.5f;
    s = make(&prm, N);
    REQUIRE(s);
    z = 0.0;
    for (int32_t i = 0; i < N; i++) z += exp(l[i] - m);
    memset(in_set, 0, N);
    acc = 0.0;
    size = 0;
    while (acc < 0.5 * z) acc += exp(l[order[size++]] - m);
    for (int i = 0; i < size; i++) in_set[order[i]] = 1;
    outside = 0;
    for (int d = 0; d < DRAWS; d++) {
        memcpy(w, l, N * sizeof *w);
        outside += !in_set[et_sampler_sample(s, w)];
    }
    CHECK_MSG(outside == 0, "top_p alone: %d of %d draws outside the nucleus of %d", outside, DRAWS, size);
    CHECK_MSG(size > 1000 && size < N / 2, "the constructed nucleus has %d entries", size);
    et_sampler_free(s);
    free(l);
    free(w);
    free(order);
    free(in_set);
}

static void bad_params_are_rejected(void)
{
    et_sampler *s = NULL;
    et_sampler_params prm;
    const et_logit_bias bad_id[1] = {{7, 1.0f}};
    const et_logit_bias nan_bias[1] = {{0, NAN}};
    for (int c = 0; c < 10; c++) {
        et_sampler_params_default(&prm);
        int32_t vocab = 4;
        switch (c) {
        case 0: prm.temperature = -1.0f; break;
        case 1: prm.top_k = -1; break;
        case 2: prm.top_p = 0.0f; break;
        case 3: prm.top_p = 1.5f; break;
        case 4: prm.min_p = -0.1f; break;
        case 5: prm.repetition_penalty = 0.0f; break;
        case 6: prm.presence_penalty = NAN; break;
        case 7: prm.logit_bias = bad_id; prm.n_logit_bias = 1; break;
        case 8: prm.logit_bias = nan_bias; prm.n_logit_bias = 1; break;
        default: vocab = 0; break;
        }
        CHECK_MSG(et_sampler_create(&prm, vocab, &s) == EMBER_ERR_INVALID_ARG && s == NULL, "case %d accepted", c);
    }
    et_sampler_params_default(&prm);
    REQUIRE(et_sampler_create(&prm, 4, &s) == EMBER_OK);
    const int32_t ids[3] = {1, 9, 2};
    CHECK(et_sampler_add_prompt(s, ids, 3) == EMBER_ERR_INVALID_ARG);
    et_sampler_accept(s, -3); /* ignored */
    et_sampler_accept(s, 4);
    et_sampler_free(s);
}

int main(void)
{
    RUN(distribution_fits_softmax);
    RUN(distribution_fits_tempered_top_k);
    RUN(distribution_fits_top_p);
    RUN(distribution_fits_min_p);
    RUN(same_seed_same_ids);
    RUN(reset_replays_the_sequence);
    RUN(temperature_zero_is_argmax);
    RUN(top_k_keeps_the_k_largest);
    RUN(top_p_keeps_the_nucleus);
    RUN(top_p_renormalizes_after_top_k);
    RUN(min_p_keeps_relative_to_the_top);
    RUN(penalties_by_hand);
    RUN(logit_bias_first);
    RUN(one_draw_per_entry);
    RUN(race_uses_each_entrys_own_draw);
    RUN(large_vocab_matches_full_sort);
    RUN(bad_params_are_rejected);
    return check_summary();
}
