/* What ember knows about the machine it runs on: the hardware profile.
 *
 * It comes from one of three places (recorded in `source`):
 *   - the probe (src/edge/probe.h), which reads /proc and /sys under a
 *     filesystem root, so that tests can feed it committed snapshot trees;
 *   - EMBER_HW_PROFILE holding a JSON object ("override:env-json");
 *   - EMBER_HW_PROFILE holding the path of a JSON file ("override:file:PATH").
 * The JSON form (src/edge/hw_json.c) is what `ember probe --json` prints, so
 * a probed profile can be edited and fed back.
 *
 * Everything here is plain data: no global state, no allocation. */
#ifndef EMBER_EDGE_HW_PROFILE_H
#define EMBER_EDGE_HW_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"

#define EDGE_MAX_CPUS 512
#define EDGE_MAX_CLUSTERS 16
#define EDGE_MAX_NODES 16
#define EDGE_MAX_GPUS 8
#define EDGE_SOURCE_MAX 512

/* A set of logical CPU numbers, 0 .. EDGE_MAX_CPUS-1. */
typedef struct edge_cpuset {
    uint64_t bits[EDGE_MAX_CPUS / 64];
} edge_cpuset;

void edge_cpuset_add(edge_cpuset *s, int cpu); /* ignores cpus out of range */
bool edge_cpuset_has(const edge_cpuset *s, int cpu);
int edge_cpuset_count(const edge_cpuset *s);
/* The n-th member in ascending order (n from 0), -1 when there is none. */
int edge_cpuset_nth(const edge_cpuset *s, int n);
/* Writes the sysfs cpulist form ("0-4,6,8-9"; "" for the empty set), truncated to cap. */
void edge_cpuset_format(const edge_cpuset *s, char *buf, size_t cap);
/* Parses the sysfs cpulist form (whitespace at the end allowed). */
ember_status edge_cpuset_parse(const char *text, edge_cpuset *out);

typedef enum edge_class {
    EDGE_CLASS_X86_CPU = 0,
    EDGE_CLASS_ARM64_CPU,
    EDGE_CLASS_JETSON,
    EDGE_CLASS_CUDA_DISCRETE,
    EDGE_CLASS_NPU_PHONE,
    EDGE_N_CLASSES
} edge_class;

typedef enum edge_arch { EDGE_ARCH_UNKNOWN = 0, EDGE_ARCH_X86_64, EDGE_ARCH_AARCH64 } edge_arch;

typedef enum edge_accel {
    EDGE_ACCEL_NONE = 0,
    EDGE_ACCEL_CUDA_DISCRETE, /* an NVIDIA driver with a discrete GPU */
    EDGE_ACCEL_CUDA_UNIFIED,  /* Tegra: the GPU shares the CPU's memory */
    EDGE_ACCEL_NPU            /* a device node of an NPU (npu_vendor names it) */
} edge_accel;

/* The ISA features the kernels and the profile care about. Names are those
 * of the JSON and of `ember probe`; the /proc/cpuinfo tokens that set them
 * are in hw_profile.c. */
typedef enum edge_flag {
    EDGE_FLAG_AVX2 = 0,
    EDGE_FLAG_FMA,
    EDGE_FLAG_F16C,
    EDGE_FLAG_AVX512,      /* avx512f */
    EDGE_FLAG_AVX512_VNNI,
    EDGE_FLAG_AVX512_BF16,
    EDGE_FLAG_AVX_VNNI,
    EDGE_FLAG_AMX_TILE,
    EDGE_FLAG_AMX_BF16,
    EDGE_FLAG_AMX_INT8,
    EDGE_FLAG_NEON,        /* asimd */
    EDGE_FLAG_FP16_ARITH,  /* asimdhp */
    EDGE_FLAG_DOTPROD,     /* asimddp */
    EDGE_FLAG_I8MM,
    EDGE_FLAG_BF16,        /* the ARM bf16 instructions */
    EDGE_FLAG_SVE,
    EDGE_FLAG_SVE2,
    EDGE_FLAG_SME,
    EDGE_N_FLAGS
} edge_flag;

/* CPUs of one kind: same cpu_capacity (or, without it, same maximum frequency). */
typedef struct edge_cluster {
    edge_cpuset cpus;
    int64_t max_khz;  /* cpufreq/cpuinfo_max_freq; 0 unknown */
    int32_t capacity; /* cpu_capacity (1024 = the fastest); 0 unknown */
} edge_cluster;

typedef struct edge_gpu {
    char name[96];
    int64_t mem_bytes; /* 0 unknown (the /proc files of the driver do not say) */
} edge_gpu;

typedef struct edge_hw {
    edge_class cls;
    edge_arch arch;
    char cpu_model[128];
    uint32_t flags; /* 1u << edge_flag */
    int32_t n_logical, n_physical;
    edge_cluster clusters[EDGE_MAX_CLUSTERS]; /* fastest first */
    int32_t n_clusters;
    /* Logical CPUs that share a physical core with a lower-numbered CPU (the
     * second SMT thread of a core): one CPU per core is "all minus these". */
    edge_cpuset smt_siblings;
    /* The CPUs this process may run on (a container's cpuset, taskset):
     * /proc/self/status Cpus_allowed_list. Empty = all of them. */
    edge_cpuset allowed_cpus;
    int32_t numa_nodes;
    edge_cpuset node_cpus[EDGE_MAX_NODES]; /* per node, when known */
    int64_t ram_total_bytes, ram_available_bytes; /* 0 unknown */
    int64_t mem_bw_bytes_per_s; /* measured or given read bandwidth; 0 unknown */
    edge_accel accel;
    char npu_vendor[32];
    bool tegra, unified_memory;
    edge_gpu gpus[EDGE_MAX_GPUS];
    int32_t n_gpus;
    char source[EDGE_SOURCE_MAX]; /* "probe", "override:env-json", "override:file:PATH" */
} edge_hw;

const char *edge_class_name(edge_class c);
const char *edge_arch_name(edge_arch a);
const char *edge_flag_name(edge_flag f);
/* -1 when the name is not one of them. */
int edge_class_from_name(const char *name);
int edge_flag_from_name(const char *name);

/* The cpuinfo token ("avx512f", "asimddp", ...) -> the flag it sets, -1 if
 * it is not one the profile tracks. */
int edge_flag_from_cpuinfo(const char *token, size_t len);

static inline bool edge_has(const edge_hw *hw, edge_flag f) { return (hw->flags >> f) & 1u; }

/* The architecture the flags imply (aarch64 if any ARM SIMD flag, x86_64 if
 * any x86 one), EDGE_ARCH_UNKNOWN when none is set. */
edge_arch edge_arch_from_flags(uint32_t flags);

/* The class rules, first match wins: an NPU on an aarch64 host -> npu_phone
 * (an NPU beside an x86 CPU, e.g. a laptop's, does not make a phone); a
 * unified-memory CUDA device (Tegra) -> jetson; a discrete one ->
 * cuda_discrete; aarch64 -> arm64_cpu; anything else -> x86_cpu. */
edge_class edge_classify(const edge_hw *hw);

/* An empty profile with the defaults of every field: 1 logical CPU, 1 NUMA
 * node, memory unknown, no accelerator, source "probe". */
void edge_hw_init(edge_hw *hw);

/* Fills what can be derived and is missing: n_physical (= n_logical minus
 * SMT siblings), one cluster of every CPU when there are none, numa_nodes
 * at least 1, ram_available <= ram_total. Used after probing and after
 * parsing an override. */
void edge_hw_complete(edge_hw *hw);

#endif
