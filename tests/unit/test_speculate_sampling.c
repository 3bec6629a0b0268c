/* The speculative accept/reject rule under sampling, as spec_decoder_step
 * applies it (src/speculate/decoder.c): for a drafted token t (the n-gram
 * drafter's proposal is a point mass on t) the target row is sampled as
 * plain decoding samples it, x ~ p, and t is accepted iff x == t; x is the
 * output either way. That is the standard rule for a point-mass draft:
 * accept with probability p(t), otherwise a sample of p with t removed and
 * renormalised. Checked statistically on a vocabulary of six with ember's
 * own sampler (temperature 1, top-p 0.9 so the filtered distribution is
 * what must come out) over many seeds: the outputs follow p (chi-square),
 * the acceptance rate is p(t), the rejected outputs follow p without t; and
 * the same statistic flags a wrong rule (accept t with probability p(t),
 * else output a fresh sample of p without removing t), so the test can
 * fail. The seeds are fixed: the outcome is deterministic. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "generate/sampler.h"
#include "generate/rng.h"

enum { V = 6, TRIALS = 40000, DRAFT = 1 };
/* p before top-p: 0.35 0.25 0.15 0.12 0.08 0.05; top-p 0.9 keeps the first
 * five (0.95 >= 0.9 at the fifth), renormalised over 0.95 */
static const double raw[V] = {0.35, 0.25, 0.15, 0.12, 0.08, 0.05};
#define KEPT 5
#define KEPT_MASS 0.95

/* chi-square critical values at p = 0.001 */
#define CHI2_DF4 18.47
#define CHI2_DF3 16.27

static double target(int i) { return i < KEPT ? raw[i] / KEPT_MASS : 0; }

static double chi2(const long *count, long n, const double *expect_p, int k)
{
    double x = 0;
    for (int i = 0; i < k; i++) {
        double e = expect_p[i] * (double)n;
        x += (count[i] - e) * (count[i] - e) / e;
    }
    return x;
}

static et_sampler *make_sampler(void)
{
    et_sampler_params sp;
    et_sampler_params_default(&sp);
    sp.temperature = 1.0f;
    sp.top_p = 0.9f;
    et_sampler *s = NULL;
    return et_sampler_create(&sp, V, &s) == EMBER_OK ? s : NULL;
}

static int32_t sample_once(et_sampler *s, uint64_t seed)
{
    float logits[V];
    for (int i = 0; i < V; i++) logits[i] = (float)log(raw[i]);
    et_sampler_reset(s, seed);
    return et_sampler_sample(s, logits);
}

static void point_draft_rule_keeps_the_distribution(void)
{
    et_sampler *s = make_sampler();
    REQUIRE(s);
    long out[V] = {0}, rejected[V] = {0}, accepted = 0;
    for (long n = 0; n < TRIALS; n++) {
        int32_t x = sample_once(s, 1000 + (uint64_t)n);
        REQUIRE(x >= 0 && x < V);
        out[x]++;
        if (x == DRAFT) accepted++; /* the decoder's rule: picked == draft */
        else rejected[x]++;
    }
    CHECK_MSG(out[5] == 0, "top-p let the sixth id through %ld times", out[5]);
    double p[KEPT];
    for (int i = 0; i < KEPT; i++) p[i] = target(i);
    double x_out = chi2(out, TRIALS, p, KEPT);
    CHECK_MSG(x_out < CHI2_DF4, "outputs vs the target: chi-square %.2f (df 4)", x_out);
    /* acceptance rate p(t), within 4 standard deviations */
    double pt = target(DRAFT), rate = (double)accepted / TRIALS, sd = sqrt(pt * (1 - pt) / TRIALS);
    CHECK_MSG(fabs(rate - pt) < 4 * sd, "acceptance %.4f, want p(t) %.4f", rate, pt);
    /* rejected outputs: p without t, renormalised */
    long rc[KEPT - 1];
    double rp[KEPT - 1];
    for (int i = 0, k = 0; i < KEPT; i++)
        if (i != DRAFT) {
            rc[k] = rejected[i];
            rp[k++] = target(i) / (1 - pt);
        }
    double x_rej = chi2(rc, TRIALS - accepted, rp, KEPT - 1);
    CHECK_MSG(x_rej < CHI2_DF3, "rejected outputs vs p without t: chi-square %.2f (df 3)", x_rej);
    et_sampler_free(s);
}

static void a_wrong_rule_is_caught(void)
{
    et_sampler *s = make_sampler();
    REQUIRE(s);
    et_rng coin;
    et_rng_seed(&coin, 77);
    long out[V] = {0};
    const double pt = target(DRAFT);
    for (long n = 0; n < TRIALS; n++) {
        /* wrong: on rejection the draft can come out again */
        double u = et_rng_uniform(&coin);
        out[u < pt ? DRAFT : sample_once(s, 5000 + (uint64_t)n)]++;
    }
    double p[KEPT];
    for (int i = 0; i < KEPT; i++) p[i] = target(i);
    double x = chi2(out, TRIALS, p, KEPT);
    CHECK_MSG(x > CHI2_DF4, "the wrong rule passed: chi-square %.2f", x);
    et_sampler_free(s);
}

int main(void)
{
    RUN(point_draft_rule_keeps_the_distribution);
    RUN(a_wrong_rule_is_caught);
    return check_summary();
}
