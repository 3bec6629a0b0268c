#include "edge/hw_profile.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

void edge_cpuset_add(edge_cpuset *s, int cpu)
{
    if (cpu >= 0 && cpu < EDGE_MAX_CPUS) s->bits[cpu / 64] |= 1ull << (cpu % 64);
}

bool edge_cpuset_has(const edge_cpuset *s, int cpu)
{
    return cpu >= 0 && cpu < EDGE_MAX_CPUS && ((s->bits[cpu / 64] >> (cpu % 64)) & 1u);
}

int edge_cpuset_count(const edge_cpuset *s)
{
    int n = 0;
    for (size_t i = 0; i < sizeof s->bits / sizeof s->bits[0]; i++)
        n += __builtin_popcountll(s->bits[i]);
    return n;
}

int edge_cpuset_nth(const edge_cpuset *s, int n)
{
    for (int cpu = 0; cpu < EDGE_MAX_CPUS; cpu++)
        if (edge_cpuset_has(s, cpu) && n-- == 0) return cpu;
    return -1;
}

void edge_cpuset_format(const edge_cpuset *s, char *buf, size_t cap)
{
    size_t used = 0;
    if (cap == 0) return;
    buf[0] = '\0';
    for (int cpu = 0; cpu < EDGE_MAX_CPUS; cpu++) {
        if (!edge_cpuset_has(s, cpu)) continue;
        int last = cpu;
        while (edge_cpuset_has(s, last + 1)) last++;
        int w = last == cpu ? snprintf(buf + used, cap - used, "%s%d", used ? "," : "", cpu)
                            : snprintf(buf + used, cap - used, "%s%d-%d", used ? "," : "", cpu, last);
        if (w < 0 || (size_t)w >= cap - used) return; /* truncated; still NUL-terminated */
        used += (size_t)w;
        cpu = last;
    }
}

static int parse_cpu_number(const char **p, int *out)
{
    if (!isdigit((unsigned char)**p)) return -1;
    long v = 0;
    while (isdigit((unsigned char)**p)) {
        v = v * 10 + (**p - '0');
        if (v >= EDGE_MAX_CPUS) return -1;
        (*p)++;
    }
    *out = (int)v;
    return 0;
}

ember_status edge_cpuset_parse(const char *text, edge_cpuset *out)
{
    memset(out, 0, sizeof *out);
    const char *p = text;
    bool bad = false;
    while (!bad && *p && !isspace((unsigned char)*p)) {
        int lo, hi;
        bad = parse_cpu_number(&p, &lo) != 0;
        hi = lo;
        if (!bad && *p == '-') {
            p++;
            bad = parse_cpu_number(&p, &hi) != 0 || hi < lo;
        }
        for (int c = lo; !bad && c <= hi; c++) edge_cpuset_add(out, c);
        if (*p == ',') p++;
        else if (*p && !isspace((unsigned char)*p)) bad = true;
    }
    while (!bad && isspace((unsigned char)*p)) p++;
    if (bad || *p)
        return ember_fail(EMBER_ERR_FORMAT, "bad CPU list '%.40s' (want e.g. 0-3,8; CPUs below %d)",
                          text, EDGE_MAX_CPUS);
    return EMBER_OK;
}

static const char *const class_names[EDGE_N_CLASSES] = {"x86_cpu", "arm64_cpu", "jetson",
                                                        "cuda_discrete", "npu_phone"};

/* The cpuinfo tokens that set each flag (x86 `flags`, ARM `Features`). */
static const struct {
    const char *name, *token;
} flag_table[EDGE_N_FLAGS] = {
    [EDGE_FLAG_AVX2] = {"avx2", "avx2"},
    [EDGE_FLAG_FMA] = {"fma", "fma"},
    [EDGE_FLAG_F16C] = {"f16c", "f16c"},
    [EDGE_FLAG_AVX512] = {"avx512", "avx512f"},
    [EDGE_FLAG_AVX512_VNNI] = {"avx512_vnni", "avx512_vnni"},
    [EDGE_FLAG_AVX512_BF16] = {"avx512_bf16", "avx512_bf16"},
    [EDGE_FLAG_AVX_VNNI] = {"avx_vnni", "avx_vnni"},
    [EDGE_FLAG_AMX_TILE] = {"amx_tile", "amx_tile"},
    [EDGE_FLAG_AMX_BF16] = {"amx_bf16", "amx_bf16"},
    [EDGE_FLAG_AMX_INT8] = {"amx_int8", "amx_int8"},
    [EDGE_FLAG_NEON] = {"neon", "asimd"},
    [EDGE_FLAG_FP16_ARITH] = {"fp16_arith", "asimdhp"},
    [EDGE_FLAG_DOTPROD] = {"dotprod", "asimddp"},
    [EDGE_FLAG_I8MM] = {"i8mm", "i8mm"},
    [EDGE_FLAG_BF16] = {"bf16", "bf16"},
    [EDGE_FLAG_SVE] = {"sve", "sve"},
    [EDGE_FLAG_SVE2] = {"sve2", "sve2"},
    [EDGE_FLAG_SME] = {"sme", "sme"},
};

#define ARM_FLAGS                                                                          \
    ((1u << EDGE_FLAG_NEON) | (1u << EDGE_FLAG_FP16_ARITH) | (1u << EDGE_FLAG_DOTPROD) |   \
     (1u << EDGE_FLAG_I8MM) | (1u << EDGE_FLAG_BF16) | (1u << EDGE_FLAG_SVE) |             \
     (1u << EDGE_FLAG_SVE2) | (1u << EDGE_FLAG_SME))

const char *edge_class_name(edge_class c)
{
    return (unsigned)c < EDGE_N_CLASSES ? class_names[c] : "unknown";
}

const char *edge_arch_name(edge_arch a)
{
    switch (a) {
    case EDGE_ARCH_X86_64: return "x86_64";
    case EDGE_ARCH_AARCH64: return "aarch64";
    case EDGE_ARCH_UNKNOWN: break;
    }
    return "unknown";
}

const char *edge_flag_name(edge_flag f)
{
    return (unsigned)f < EDGE_N_FLAGS ? flag_table[f].name : "unknown";
}

int edge_class_from_name(const char *name)
{
    for (int i = 0; i < EDGE_N_CLASSES; i++)
        if (!strcmp(name, class_names[i])) return i;
    return -1;
}

int edge_flag_from_name(const char *name)
{
    for (int i = 0; i < EDGE_N_FLAGS; i++)
        if (!strcmp(name, flag_table[i].name)) return i;
    return -1;
}

int edge_flag_from_cpuinfo(const char *token, size_t len)
{
    for (int i = 0; i < EDGE_N_FLAGS; i++)
        if (strlen(flag_table[i].token) == len && !memcmp(token, flag_table[i].token, len))
            return i;
    return -1;
}

edge_arch edge_arch_from_flags(uint32_t flags)
{
    if (flags & ARM_FLAGS) return EDGE_ARCH_AARCH64;
    if (flags) return EDGE_ARCH_X86_64;
    return EDGE_ARCH_UNKNOWN;
}

edge_class edge_classify(const edge_hw *hw)
{
    if (hw->accel == EDGE_ACCEL_NPU && hw->arch == EDGE_ARCH_AARCH64) return EDGE_CLASS_NPU_PHONE;
    if (hw->accel == EDGE_ACCEL_CUDA_UNIFIED) return EDGE_CLASS_JETSON;
    if (hw->accel == EDGE_ACCEL_CUDA_DISCRETE) return EDGE_CLASS_CUDA_DISCRETE;
    if (hw->arch == EDGE_ARCH_AARCH64) return EDGE_CLASS_ARM64_CPU;
    return EDGE_CLASS_X86_CPU;
}

void edge_hw_init(edge_hw *hw)
{
    memset(hw, 0, sizeof *hw);
    hw->n_logical = 1;
    hw->numa_nodes = 1;
    snprintf(hw->source, sizeof hw->source, "probe");
}

void edge_hw_complete(edge_hw *hw)
{
    if (hw->n_logical < 1) hw->n_logical = 1;
    if (hw->n_clusters == 0) {
        edge_cluster *c = &hw->clusters[0];
        memset(c, 0, sizeof *c);
        for (int cpu = 0; cpu < hw->n_logical && cpu < EDGE_MAX_CPUS; cpu++)
            edge_cpuset_add(&c->cpus, cpu);
        hw->n_clusters = 1;
    }
    if (hw->n_physical < 1) {
        int siblings = edge_cpuset_count(&hw->smt_siblings);
        hw->n_physical = hw->n_logical > siblings ? hw->n_logical - siblings : hw->n_logical;
    }
    if (hw->numa_nodes < 1) hw->numa_nodes = 1;
    if (hw->ram_available_bytes > hw->ram_total_bytes && hw->ram_total_bytes > 0)
        hw->ram_available_bytes = hw->ram_total_bytes;
    if (hw->unified_memory)
        for (int i = 0; i < hw->n_gpus; i++)
            if (hw->gpus[i].mem_bytes == 0) hw->gpus[i].mem_bytes = hw->ram_total_bytes;
}
