/* What the CPU can run, read once from cpuid (x86) or the auxiliary vector (ARM). */
#ifndef EMBER_KERNELS_CPU_H
#define EMBER_KERNELS_CPU_H

#include <stdbool.h>

typedef struct ek_cpu {
    bool avx2, fma, f16c;
    bool avx512f, avx512bw, avx512vl, avx512vnni, avx512bf16;
    bool avxvnni;
    bool neon, dotprod;
} ek_cpu;

ek_cpu ek_cpu_detect(void);

/* Whether 512-bit vpdpbusd issues at the rate of 256-bit ones (full-width
 * AVX-512 datapaths) rather than as two halves; measured (cpu_width.c),
 * false without AVX-512 VNNI. */
bool ek_cpu_zmm_full_width(void);

/* One core's int8 multiply-add peak in GOP/s (a multiply-add is 2 ops):
 * the measured rate of independent vpdpbusd at the faster width (~0.4 ms);
 * 0 without AVX-512 VNNI. What prefill's integer matmuls are held to. */
double ek_cpu_int8_peak_gops(void);

#endif
