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

#endif
