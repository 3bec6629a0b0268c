/* Whether the CPU's 512-bit integer dot products run at full width.
 *
 * Some AVX-512 cores execute a 512-bit vpdpbusd as two 256-bit halves (AMD
 * Zen 4): a zmm instruction then does the same work per cycle as a ymm one,
 * and a kernel written for 512 bits gains nothing from its wider lanes while
 * paying for the wider repacking it needs. Others have full 512-bit datapaths
 * (AMD Zen 5, Intel server cores) and issue zmm at the ymm rate: twice the
 * int8 work per cycle. cpuid does not say which, so this measures it: bursts
 * of 12 independent vpdpbusd chains (enough to cover the ~4-cycle latency at
 * two issues a cycle) of each width, the fastest of several bursts (a burst
 * that was preempted only ever reads slower). About 50 microseconds. */
#include "kernels/cpu.h"

#if defined(__x86_64__)
#include <time.h>

#define BURST_ITERS 2000
#define BURSTS 7

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define DP(w, i) "vpdpbusd %%" w "30, %%" w "31, %%" w #i "\n\t"
#define DP12(w) DP(w, 0) DP(w, 1) DP(w, 2) DP(w, 3) DP(w, 4) DP(w, 5) DP(w, 6) DP(w, 7) \
    DP(w, 8) DP(w, 9) DP(w, 10) DP(w, 11)
#define CLOBBERS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
    "xmm10", "xmm11"

__attribute__((target("avx512f,avx512vl,avx512vnni"))) static double burst(int zmm, int iters)
{
    double t0 = now_s();
    for (int i = 0; i < iters; i++) {
        if (zmm)
            __asm__ volatile(DP12("zmm") ::: CLOBBERS);
        else
            __asm__ volatile(DP12("ymm") ::: CLOBBERS);
    }
    return now_s() - t0;
}

/* The fastest of BURSTS bursts of each width, in seconds. */
static void best_bursts(int iters, double best[2])
{
    best[0] = best[1] = 1e9;
    for (int b = 0; b < BURSTS; b++)
        for (int zmm = 0; zmm < 2; zmm++) {
            double t = burst(zmm, iters);
            if (t < best[zmm]) best[zmm] = t;
        }
}

static bool has_vnni512(void)
{
    ek_cpu c = ek_cpu_detect();
    return c.avx512f && c.avx512vl && c.avx512vnni;
}

bool ek_cpu_zmm_full_width(void)
{
    if (!has_vnni512()) return false;
    double best[2];
    best_bursts(BURST_ITERS, best);
    /* split: zmm takes ~2x as long as ymm; full: about the same */
    return best[1] < 1.4 * best[0];
}

double ek_cpu_int8_peak_gops(void)
{
    if (!has_vnni512()) return 0.0;
    double best[2];
    best_bursts(10 * BURST_ITERS, best); /* ~0.4 ms: long enough to time closely */
    /* a vpdpbusd is 4 multiply-adds per 32-bit lane: 8 ops */
    double ops = 12.0 * 10 * BURST_ITERS * 8;
    double ymm = ops * 8 / best[0], zmm = ops * 16 / best[1];
    return (ymm > zmm ? ymm : zmm) / 1e9;
}

#else
bool ek_cpu_zmm_full_width(void) { return false; }
double ek_cpu_int8_peak_gops(void) { return 0.0; }
#endif
