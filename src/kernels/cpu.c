#include "kernels/cpu.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* XCR0 tells whether the OS saves the wide registers; without it the
 * instructions exist but must not be used. */
static unsigned long long xgetbv0(void)
{
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

ek_cpu ek_cpu_detect(void)
{
    ek_cpu c;
    unsigned a, b, cx, d;
    memset(&c, 0, sizeof c);
    if (!__get_cpuid(1, &a, &b, &cx, &d)) return c;
    bool osxsave = cx & (1u << 27);
    unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
    bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
    c.fma = ymm && (cx & (1u << 12));
    c.f16c = ymm && (cx & (1u << 29));
    if (__get_cpuid_count(7, 0, &a, &b, &cx, &d)) {
        c.avx2 = ymm && (b & (1u << 5));
        c.avx512f = zmm && (b & (1u << 16));
        c.avx512bw = zmm && (b & (1u << 30));
        c.avx512vl = zmm && (b & (1u << 31));
        c.avx512vnni = zmm && (cx & (1u << 11));
    }
    if (__get_cpuid_count(7, 1, &a, &b, &cx, &d)) {
        c.avx512bf16 = zmm && (a & (1u << 5));
        c.avxvnni = ymm && (a & (1u << 4));
    }
    return c;
}

#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

ek_cpu ek_cpu_detect(void)
{
    ek_cpu c;
    memset(&c, 0, sizeof c);
    c.neon = true; /* mandatory on AArch64 */
    c.dotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
    return c;
}

#else
ek_cpu ek_cpu_detect(void)
{
    ek_cpu c;
    memset(&c, 0, sizeof c);
    return c;
}
#endif
