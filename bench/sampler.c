/* Sampler benchmark: ns per et_sampler_sample on a Qwen3-sized vocabulary
 * (151936) for greedy, temperature only (0.8), top-k 40 + top-p 0.95, and
 * top-p 0.95 alone, on two shapes of logits: "peaked", as a language model's
 * usually are (a Gaussian bulk, sigma 2, and a few candidates 14-20 nats
 * above it), and "flat" (sigma 2, candidates only 8-12 above: the bulk holds
 * half the mass, the race's bounds prune little, the nucleus has thousands of
 * entries). The time to restore the logits before each call is measured
 * apart and subtracted. Prints one JSON document; medians of 7 runs.
 *
 *   build/bench/sampler [--quick] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "generate/rng.h"
#include "generate/sampler.h"

#define VOCAB 151936

static double clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e9 * (double)ts.tv_sec + (double)ts.tv_nsec;
}

/* The median of the n (<= 16) values, sorted in place by insertion. */
static double median_of(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

/* Box-Muller from the project's generator: Gaussian logits, sigma 2, and a
 * handful of ids `lift` to `lift` + 6 nats above the bulk's mean. */
static void make_logits(float *l, uint64_t seed, double lift)
{
    et_rng r;
    et_rng_seed(&r, seed);
    for (int i = 0; i < VOCAB; i++) {
        double u = et_rng_uniform(&r), v = et_rng_uniform(&r);
        l[i] = (float)(2.0 * sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
    }
    for (int j = 0; j < 8; j++) l[et_rng_next(&r) % VOCAB] = (float)(lift + 6.0 * et_rng_uniform(&r));
}

typedef struct variant {
    const char *name;
    float temperature, top_p;
    int32_t top_k;
} variant;

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int steps = quick ? 20 : 200, reps = quick ? 3 : 7;
    const variant variants[] = {
        {"greedy", 0.0f, 1.0f, 0},
        {"temperature", 0.8f, 1.0f, 0},
        {"top_k40_top_p0.95", 0.8f, 0.95f, 40},
        {"top_p0.95", 0.8f, 0.95f, 0},
    };
    float *base = malloc(VOCAB * sizeof *base), *work = malloc(VOCAB * sizeof *work);
    if (!base || !work) return 1;

    /* the cost of restoring the logits each step, subtracted below */
    double copy_times[16];
    for (int r = 0; r < reps; r++) {
        double t0 = clock_ns();
        for (int i = 0; i < steps; i++) {
            memcpy(work, base, VOCAB * sizeof *work);
            __asm__ volatile("" ::"r"(work) : "memory");
        }
        copy_times[r] = (clock_ns() - t0) / steps;
    }
    double copy_ns = median_of(copy_times, reps);

    printf("{\n  \"vocab\": %d,\n  \"steps_per_run\": %d,\n  \"runs\": %d,\n  \"memcpy_logits_ns\": %.0f,\n"
           "  \"ns_per_sample\": {",
           VOCAB, steps, reps, copy_ns);
    const struct { const char *name; double lift; } shapes[] = {{"peaked", 14.0}, {"flat", 8.0}};
    for (size_t d = 0; d < sizeof shapes / sizeof shapes[0]; d++) {
        make_logits(base, 1, shapes[d].lift);
        printf("%s\n    \"%s\": {", d ? "," : "", shapes[d].name);
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
            et_sampler_params p;
            et_sampler_params_default(&p);
            p.temperature = variants[v].temperature;
            p.top_k = variants[v].top_k;
            p.top_p = variants[v].top_p;
            p.seed = 7;
            et_sampler *s = NULL;
            if (et_sampler_create(&p, VOCAB, &s) != EMBER_OK) return 1;
            double times[16];
            unsigned long sink = 0;
            for (int r = 0; r < reps; r++) {
                double t0 = clock_ns();
                for (int i = 0; i < steps; i++) {
                    memcpy(work, base, VOCAB * sizeof *work);
                    sink += (unsigned long)et_sampler_sample(s, work);
                }
                times[r] = (clock_ns() - t0) / steps;
            }
            printf("%s\n      \"%s\": %.0f", v ? "," : "", variants[v].name, median_of(times, reps) - copy_ns);
            et_sampler_free(s);
            if (sink == 1) fprintf(stderr, " ");
        }
        printf("\n    }");
    }
    printf("\n  }\n}\n");
    free(base);
    free(work);
    return 0;
}
