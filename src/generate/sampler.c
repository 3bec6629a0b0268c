/* The sampler (order of operations and the exponential race: see sampler.h).
 *
 * Filters are expressed as a cut in one total order over the entries: by
 * tempered logit, higher first, then by id, lower first. Every filter keeps an
 * upper set of that order (the top k values, the top of the nucleus, every
 * entry above a min-p bound), so their intersection is just the strictest cut.
 *
 * Cost on a 150k vocabulary: the race computes an entry's draw only when the
 * entry is kept, and its exp/log only when a cheap bound says it could still
 * beat the best key so far; top-k keeps a small buffer in one pass; top-p
 * buckets the mass by logit and selects only inside the boundary bucket. */
#include "generate/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One candidate of the top-p selection: its tempered logit, its id, and its
 * unnormalized probability exp(l - l_max). */
typedef struct cand {
    float l;
    int32_t id;
    float w;
} cand;

/* Entries kept: l > v, or l == v and id <= id. {-inf, INT32_MAX} keeps all. */
typedef struct cut {
    float v;
    int32_t id;
} cut;

struct et_sampler {
    et_sampler_params p;
    et_logit_bias *bias; /* owned copy of p.logit_bias */
    int32_t vocab;
    et_rng rng;
    uint8_t *in_prompt;  /* [vocab] the id occurs in the prompt */
    int32_t *generated;  /* [vocab] how often the id was generated */
    int32_t *seen;       /* the distinct ids with either of the above */
    size_t n_seen;
    float *fbuf;         /* [vocab] top-p's weights */
    cand *cands;         /* [vocab] top-k's buffer and list, or top-p's boundary bucket */
};

void et_sampler_params_default(et_sampler_params *p)
{
    memset(p, 0, sizeof *p);
    p->temperature = 1.0f;
    p->top_k = 0;
    p->top_p = 1.0f;
    p->min_p = 0.0f;
    p->repetition_penalty = 1.0f;
}

static ember_status check_params(const et_sampler_params *p, int32_t vocab)
{
    if (vocab < 1) return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: vocab_size %d < 1", vocab);
    if (!(p->temperature >= 0.0f) || isinf(p->temperature))
        return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: temperature %g is not a finite value >= 0",
                          (double)p->temperature);
    if (p->top_k < 0) return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: top_k %d < 0", p->top_k);
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
        return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: top_p %g is not in (0, 1]", (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: min_p %g is not in [0, 1]", (double)p->min_p);
    if (!(p->repetition_penalty > 0.0f) || isinf(p->repetition_penalty))
        return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: repetition_penalty %g is not a finite value > 0",
                          (double)p->repetition_penalty);
    if (!isfinite(p->presence_penalty))
        return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: presence_penalty is not finite");
    if (!isfinite(p->frequency_penalty))
        return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: frequency_penalty is not finite");
    if (p->n_logit_bias && !p->logit_bias)
        return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: %zu logit biases but no array", p->n_logit_bias);
    for (size_t i = 0; i < p->n_logit_bias; i++) {
        const et_logit_bias *b = &p->logit_bias[i];
        if (b->id < 0 || b->id >= vocab)
            return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: logit_bias[%zu]: id %d outside the vocabulary [0, %d)",
                              i, b->id, vocab);
        /* -inf is allowed: it bans the token */
        if (isnan(b->bias) || b->bias == INFINITY)
            return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: logit_bias[%zu]: bias for id %d is not a number or +inf",
                              i, b->id);
    }
    return EMBER_OK;
}

ember_status et_sampler_create(const et_sampler_params *p, int32_t vocab_size, et_sampler **out)
{
    if (!p || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: NULL argument");
    *out = NULL;
    ember_status st = check_params(p, vocab_size);
    if (st != EMBER_OK) return st;
    et_sampler *s = calloc(1, sizeof *s);
    if (!s) return ember_fail(EMBER_ERR_NO_MEMORY, "sampler: out of memory");
    size_t n = (size_t)vocab_size;
    s->p = *p;
    s->vocab = vocab_size;
    s->in_prompt = calloc(n, sizeof *s->in_prompt);
    s->generated = calloc(n, sizeof *s->generated);
    s->seen = malloc(n * sizeof *s->seen);
    s->fbuf = malloc(n * sizeof *s->fbuf);
    s->cands = malloc(n * sizeof *s->cands);
    if (p->n_logit_bias) {
        s->bias = malloc(p->n_logit_bias * sizeof *s->bias);
        if (s->bias) memcpy(s->bias, p->logit_bias, p->n_logit_bias * sizeof *s->bias);
    }
    s->p.logit_bias = s->bias;
    if (!s->in_prompt || !s->generated || !s->seen || !s->fbuf || !s->cands || (p->n_logit_bias && !s->bias)) {
        et_sampler_free(s);
        return ember_fail(EMBER_ERR_NO_MEMORY, "sampler: out of memory for a vocabulary of %d", vocab_size);
    }
    et_rng_seed(&s->rng, p->seed);
    *out = s;
    return EMBER_OK;
}

void et_sampler_free(et_sampler *s)
{
    if (!s) return;
    free(s->bias);
    free(s->in_prompt);
    free(s->generated);
    free(s->seen);
    free(s->fbuf);
    free(s->cands);
    free(s);
}

static void note_seen(et_sampler *s, int32_t id)
{
    if (!s->in_prompt[id] && !s->generated[id]) s->seen[s->n_seen++] = id;
}

ember_status et_sampler_add_prompt(et_sampler *s, const int32_t *ids, size_t n)
{
    if (!s || (n && !ids)) return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: NULL argument");
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= s->vocab)
            return ember_fail(EMBER_ERR_INVALID_ARG, "sampler: prompt id [%zu] = %d outside the vocabulary [0, %d)", i,
                              ids[i], s->vocab);
    for (size_t i = 0; i < n; i++) {
        note_seen(s, ids[i]);
        s->in_prompt[ids[i]] = 1;
    }
    return EMBER_OK;
}

void et_sampler_accept(et_sampler *s, int32_t id)
{
    if (!s || id < 0 || id >= s->vocab) return;
    note_seen(s, id);
    if (s->generated[id] < INT32_MAX) s->generated[id]++;
}

void et_sampler_reset(et_sampler *s, uint64_t seed)
{
    if (!s) return;
    /* only the ids that were touched: no pass over the vocabulary */
    for (size_t i = 0; i < s->n_seen; i++) {
        s->in_prompt[s->seen[i]] = 0;
        s->generated[s->seen[i]] = 0;
    }
    s->n_seen = 0;
    et_rng_seed(&s->rng, seed);
}

const et_rng *et_sampler_rng(const et_sampler *s) { return &s->rng; }

/* Steps 1-3: bias, then the penalties over the distinct ids of the history. */
static void apply_bias_and_penalties(const et_sampler *s, float *logits)
{
    for (size_t i = 0; i < s->p.n_logit_bias; i++) logits[s->bias[i].id] += s->bias[i].bias;
    float rep = s->p.repetition_penalty, pres = s->p.presence_penalty, freq = s->p.frequency_penalty;
    if (rep == 1.0f && pres == 0.0f && freq == 0.0f) return;
    for (size_t i = 0; i < s->n_seen; i++) {
        int32_t id = s->seen[i];
        float l = logits[id];
        if (rep != 1.0f) l = l > 0.0f ? l / rep : l * rep;
        int32_t count = s->generated[id];
        if (count > 0) l -= pres + freq * (float)count;
        logits[id] = l;
    }
}

/* The largest value, NaN ignored (-inf if none). Eight running maxima make
 * eight independent chains (one chain is bound by the compare's latency). */
static float max_value(const float *l, int32_t n)
{
    float m[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) m[j] = l[i + j] > m[j] ? l[i + j] : m[j];
    for (; i < n; i++) m[0] = l[i] > m[0] ? l[i] : m[0];
    for (int j = 1; j < 8; j++) m[0] = m[j] > m[0] ? m[j] : m[0];
    return m[0];
}

/* The first index of the largest value; NaN never wins; 0 if all are NaN. */
static int32_t argmax_first(const float *l, int32_t n)
{
    float m = max_value(l, n);
    for (int32_t i = 0; i < n; i++)
        if (l[i] == m) return i;
    return 0;
}

static inline int above_cut(float l, int32_t id, cut c) { return l > c.v || (l == c.v && id <= c.id); }

static cut stricter(cut a, cut b)
{
    if (a.v > b.v || (a.v == b.v && a.id < b.id)) return a;
    return b;
}

static const cut keep_all = {-INFINITY, INT32_MAX};

/* ---- top-k: the k-th largest value -------------------------------------- */

/* Rearranges a[0..n) so that a[k-1] holds the k-th largest value (1 <= k <=
 * n), larger ones before it: quickselect with a median-of-three pivot and a
 * three-way partition, so runs of equal values (a vocabulary full of -inf)
 * cost one pass. */
static float select_kth_largest(cand *a, size_t n, size_t k)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, want = (ptrdiff_t)k - 1;
    while (lo < hi) {
        ptrdiff_t mid = lo + (hi - lo) / 2;
        float x = a[lo].l, y = a[mid].l, z = a[hi].l;
        float pivot = (x > y) == (y > z) ? y : (y > x) == (x > z) ? x : z;
        /* [lo, lt) > pivot, [lt, i) == pivot, (gt, hi] < pivot */
        ptrdiff_t lt = lo, i = lo, gt = hi;
        while (i <= gt) {
            cand v = a[i];
            if (v.l > pivot) {
                a[i++] = a[lt];
                a[lt++] = v;
            } else if (v.l < pivot) {
                a[i] = a[gt];
                a[gt--] = v;
            } else {
                i++;
            }
        }
        if (want < lt) hi = lt - 1;
        else if (want > gt) lo = gt + 1;
        else return pivot;
    }
    return a[want].l;
}

/* Top-k: the cut at the k-th largest tempered logit, and the kept entries
 * listed in s->cands with their weights exp(l - l_max). One pass over the
 * vocabulary keeps a buffer of candidates at or above a running bound (most
 * entries cost one compare); when the buffer fills, a selection shrinks it
 * back to the k largest and raises the bound. An entry dropped there that
 * ties the bound would belong to the final set if the bound ended up the k-th
 * value (HF keeps ties); then, rarely, one more pass lists the set. */
static cut top_k_list(et_sampler *s, const float *l, float l_max, size_t k, size_t *n_listed)
{
    size_t n = (size_t)s->vocab, cap = 4 * k < 1024 ? 1024 : 4 * k;
    if (cap > n) cap = n;
    cand *buf = s->cands;
    float bound = -INFINITY, dropped_tie = NAN;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (l[i] >= bound) {
            buf[m++] = (cand){l[i], (int32_t)i, 0.0f};
            if (m == cap && cap > k) {
                bound = select_kth_largest(buf, m, k);
                for (size_t j = k; j < m; j++)
                    if (buf[j].l == bound) dropped_tie = bound;
                m = k;
            }
        }
    }
    cut c = keep_all;
    if (m < k) { /* NaNs left fewer than k numbers: keep them all */
        *n_listed = m;
    } else {
        c.v = select_kth_largest(buf, m, k);
        if (c.v == dropped_tie) {
            m = 0;
            for (size_t i = 0; i < n; i++)
                if (l[i] >= c.v) buf[m++] = (cand){l[i], (int32_t)i, 0.0f};
        }
        size_t kept = 0;
        for (size_t j = 0; j < m; j++)
            if (buf[j].l >= c.v) buf[kept++] = buf[j];
        *n_listed = kept;
    }
    for (size_t j = 0; j < *n_listed; j++) buf[j].w = expf(buf[j].l - l_max);
    return c;
}

/* ---- top-p: the smallest top set with enough mass ----------------------- */

static inline int before(const cand *a, const cand *b) { return a->l > b->l || (a->l == b->l && a->id < b->id); }

static inline void swap_cand(cand *a, cand *b)
{
    cand t = *a;
    *a = *b;
    *b = t;
}

/* Walking a[0..n) from the top of the order, finds the entry at which the
 * running mass first reaches `target`, without sorting: quickselect on mass.
 * Each partition moves the entries before the pivot to the front and sums
 * their mass; the cut is either inside that front part or after it. Returns 0
 * when rounding leaves the whole set short of the target. */
static int mass_select(cand *a, size_t n, double target, cut *out)
{
    size_t lo = 0, hi = n;
    double acc = 0.0;
    while (hi - lo > 16) {
        size_t mid = lo + (hi - lo) / 2, last = hi - 1;
        /* the median of a[lo], a[mid], a[last] goes to a[last] */
        if (before(&a[mid], &a[lo])) swap_cand(&a[mid], &a[lo]);
        if (before(&a[last], &a[lo])) swap_cand(&a[last], &a[lo]);
        if (before(&a[mid], &a[last])) swap_cand(&a[mid], &a[last]);
        cand pivot = a[last];
        size_t m = lo;
        double mass = 0.0;
        for (size_t i = lo; i < last; i++) {
            if (before(&a[i], &pivot)) {
                mass += a[i].w;
                swap_cand(&a[i], &a[m]);
                m++;
            }
        }
        swap_cand(&a[m], &a[last]);
        if (acc + mass >= target) {
            hi = m;
        } else {
            acc += mass + a[m].w;
            if (acc >= target) {
                *out = (cut){a[m].l, a[m].id};
                return 1;
            }
            lo = m + 1;
        }
    }
    /* a short run: sort it and walk */
    for (size_t i = lo + 1; i < hi; i++) {
        cand x = a[i];
        size_t j = i;
        while (j > lo && before(&x, &a[j - 1])) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
    for (size_t i = lo; i < hi; i++) {
        acc += a[i].w;
        if (acc >= target) {
            *out = (cut){a[i].l, a[i].id};
            return 1;
        }
    }
    return 0;
}

/* Top-p over a gathered list (what top-k kept): the list's own mass is the
 * renormalization. */
static cut top_p_in_list(et_sampler *s, size_t n)
{
    double z = 0.0;
    for (size_t i = 0; i < n; i++) z += s->cands[i].w;
    cut c;
    return mass_select(s->cands, n, (double)s->p.top_p * z, &c) ? c : keep_all;
}

/* Top-p over the whole vocabulary. One pass sums the mass into buckets of
 * 1/32 nat below l_max (bucket order is the value order); a walk over the
 * buckets finds the one where the running mass reaches the target; only that
 * bucket's entries are selected exactly. */
#define TOP_P_BUCKETS 1024
#define TOP_P_PER_NAT 32.0f

static inline int bucket_of(float l, float l_max)
{
    float d = (l_max - l) * TOP_P_PER_NAT;
    return d < (float)(TOP_P_BUCKETS - 1) ? (int)d : TOP_P_BUCKETS - 1; /* NaN: the last */
}

static cut top_p_histogram(et_sampler *s, const float *l, float l_max)
{
    double mass[TOP_P_BUCKETS] = {0}, z = 0.0;
    float *w = s->fbuf;
    for (int32_t i = 0; i < s->vocab; i++) {
        float wi = expf(l[i] - l_max);
        wi = wi > 0.0f ? wi : 0.0f; /* NaN weighs nothing */
        w[i] = wi;
        mass[bucket_of(l[i], l_max)] += wi;
        z += wi;
    }
    double target = (double)s->p.top_p * z, acc = 0.0;
    int b = 0;
    while (b < TOP_P_BUCKETS && acc + mass[b] < target) acc += mass[b++];
    if (b == TOP_P_BUCKETS) return keep_all; /* rounding: the target is never reached */
    size_t m = 0;
    cand lowest = {INFINITY, -1, 0.0f};
    for (int32_t i = 0; i < s->vocab; i++) {
        if (l[i] == l[i] && bucket_of(l[i], l_max) == b) {
            s->cands[m] = (cand){l[i], i, w[i]};
            if (m == 0 || before(&lowest, &s->cands[m])) lowest = s->cands[m];
            m++;
        }
    }
    if (m == 0) return keep_all;
    cut c;
    return mass_select(s->cands, m, target - acc, &c) ? c : (cut){lowest.l, lowest.id};
}

/* ---- the race ------------------------------------------------------------ */

/* The best key so far: argmax of w / q, ties to the lower id, so the winner
 * does not depend on the order in which entries are visited. */
typedef struct race {
    float best, log_best;
    int32_t best_id;
} race;

/* Entry i (tempered logit l) with its own draw u_i (number base + i). An
 * entry is skipped without its exp and log when w <= 0.99 best (1 - u): since
 * -log(u) >= 1 - u its key is then below the best. The test runs in log
 * space with floor(log2(1 - u)) read from the float's exponent, so it costs no
 * library call; the 1% margin covers every rounding, so skipping never changes
 * the winner. As 1 - u >= 2^-24, an entry more than 24 ln 2 + 0.01 nats below
 * the bound is skipped before its draw is even computed: with a language
 * model's logits that is nearly the whole vocabulary. */
static inline void race_enter(race *r, float l, float l_max, int32_t i, const et_rng *draws, uint64_t base)
{
    float d = l - l_max;
    if (d <= r->log_best - 16.65f) return;
    float u = et_rng_to_uniform_f(et_rng_bits_at(draws, base + (uint64_t)i));
    float one_minus_u = 1.0f - u; /* exact, and >= 2^-24 */
    uint32_t bits;
    memcpy(&bits, &one_minus_u, sizeof bits);
    float floor_log = (float)((int)(bits >> 23) - 127) * 0.693147181f;
    if (d <= r->log_best + floor_log - 0.01f) return;
    float key = expf(d) / -logf(u);
    if (key > r->best || (key == r->best && i < r->best_id) || r->best_id < 0) {
        r->best = key;
        r->best_id = i;
        r->log_best = logf(key);
    }
}

/* The race over the whole vocabulary, a block at a time: a branch-free pass
 * lists the block's entries at or above the draw-free bound and the cut's
 * value (with the bound from the block's start: the best only grows, so an
 * older bound skips less, never more), then only those are tested in full.
 * A branch per entry would be mispredicted half the time on a flat
 * distribution; groups of 8 with nothing listable (most of a peaked one) are
 * passed over with one test. */
#define RACE_BLOCK 256

static void race_scan(race *r, const float *l, int32_t n, float l_max, cut kept, const et_rng *draws, uint64_t base)
{
    int32_t listed[RACE_BLOCK];
    for (int32_t b = 0; b < n; b += RACE_BLOCK) {
        int32_t e = n - b < RACE_BLOCK ? n : b + RACE_BLOCK, m = 0, i = b;
        float at_least = l_max + (r->log_best - 16.65f);
        at_least = at_least > kept.v ? at_least : kept.v;
        for (; i + 8 <= e; i += 8) {
            int any = 0;
            for (int j = 0; j < 8; j++) any |= l[i + j] >= at_least;
            if (!any) continue;
            for (int j = 0; j < 8; j++) {
                listed[m] = i + j;
                m += l[i + j] >= at_least;
            }
        }
        for (; i < e; i++) {
            listed[m] = i;
            m += l[i] >= at_least;
        }
        for (int32_t j = 0; j < m; j++)
            if (above_cut(l[listed[j]], listed[j], kept)) race_enter(r, l[listed[j]], l_max, listed[j], draws, base);
    }
}

int32_t et_sampler_sample(et_sampler *s, float *logits)
{
    int32_t n = s->vocab;
    /* entry i draws number base + i; the stream moves by n whatever happens */
    et_rng draws = s->rng;
    uint64_t base = draws.counter;
    et_rng_skip(&s->rng, (uint64_t)n);

    apply_bias_and_penalties(s, logits);
    if (s->p.temperature == 0.0f) return argmax_first(logits, n);

    /* divided, as HF does; in groups of 8 so the compiler can use vectors */
    float t = s->p.temperature;
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) logits[i + j] /= t;
    for (; i < n; i++) logits[i] /= t;
    float l_max = max_value(logits, n);
    /* no finite maximum (all NaN or -inf, or a +inf): nothing to sample */
    if (!(l_max > -INFINITY) || l_max == INFINITY) return argmax_first(logits, n);

    cut kept = keep_all;
    size_t n_listed = 0;
    int listed = s->p.top_k > 0 && s->p.top_k < n;
    if (listed) kept = top_k_list(s, logits, l_max, (size_t)s->p.top_k, &n_listed);
    if (s->p.top_p < 1.0f)
        kept = stricter(kept, listed ? top_p_in_list(s, n_listed) : top_p_histogram(s, logits, l_max));
    if (s->p.min_p > 0.0f) kept = stricter(kept, (cut){l_max + logf(s->p.min_p), INT32_MAX});

    race r = {0.0f, -INFINITY, -1};
    if (listed) {
        for (size_t j = 0; j < n_listed; j++) {
            const cand *c = &s->cands[j];
            if (above_cut(c->l, c->id, kept))
                race_enter(&r, c->l, l_max, c->id, &draws, base);
        }
    } else {
        race_scan(&r, logits, n, l_max, kept, &draws, base);
    }
    return r.best_id >= 0 ? r.best_id : argmax_first(logits, n);
}
