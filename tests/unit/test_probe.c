/* The hardware probe on the committed snapshot trees (tests/data/hw/, written
 * by make_snapshots.py) and on small trees made here, and the profile's JSON
 * form: round trip, EMBER_HW_PROFILE as a value and as a file, bad input.
 * Expected values are read off the snapshot files (see make_snapshots.py),
 * not taken from the probe's output. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "edge/hw_json.h"
#include "edge/probe.h"

#define F(x) (1u << EDGE_FLAG_##x)
#define HW "tests/data/hw/"

static int same_cpus(const edge_cpuset *s, const char *want)
{
    edge_cpuset w;
    return edge_cpuset_parse(want, &w) == EMBER_OK && !memcmp(&w, s, sizeof w);
}

static void check_cluster(const edge_hw *hw, int i, const char *cpus, int64_t khz, int32_t capacity)
{
    char got[256];
    REQUIRE(i < hw->n_clusters);
    edge_cpuset_format(&hw->clusters[i].cpus, got, sizeof got);
    CHECK_MSG(same_cpus(&hw->clusters[i].cpus, cpus), "cluster %d cpus %s, want %s", i, got, cpus);
    CHECK_MSG(hw->clusters[i].max_khz == khz, "cluster %d max_khz %lld, want %lld", i,
              (long long)hw->clusters[i].max_khz, (long long)khz);
    CHECK_MSG(hw->clusters[i].capacity == capacity, "cluster %d capacity %d, want %d", i,
              hw->clusters[i].capacity, capacity);
}

/* 2 x Xeon Gold 5415+: 32 CPUs, cpu n and n+16 share a core; node 0 holds
 * 0-7,16-23; no cpu_capacity, 4100000 kHz everywhere; MemTotal 263597236 kB,
 * MemAvailable 251234560 kB; the flags line has avx2 fma f16c avx512f
 * avx512_vnni avx512_bf16 avx_vnni amx_tile amx_bf16 amx_int8. */
static void probe_x86_server(void)
{
    edge_hw hw;
    REQUIRE(edge_probe(HW "x86-server", &hw) == EMBER_OK);
    CHECK(hw.cls == EDGE_CLASS_X86_CPU);
    CHECK(hw.arch == EDGE_ARCH_X86_64);
    CHECK(!strcmp(hw.cpu_model, "Intel(R) Xeon(R) Gold 5415+"));
    CHECK_MSG(hw.flags == (F(AVX2) | F(FMA) | F(F16C) | F(AVX512) | F(AVX512_VNNI) | F(AVX512_BF16) |
                           F(AVX_VNNI) | F(AMX_TILE) | F(AMX_BF16) | F(AMX_INT8)),
              "flags %#x", hw.flags);
    CHECK(hw.n_logical == 32);
    CHECK(hw.n_physical == 16);
    CHECK(same_cpus(&hw.smt_siblings, "16-31"));
    CHECK(hw.n_clusters == 1);
    check_cluster(&hw, 0, "0-31", 4100000, 0);
    CHECK(hw.numa_nodes == 2);
    CHECK(same_cpus(&hw.node_cpus[0], "0-7,16-23"));
    CHECK(same_cpus(&hw.node_cpus[1], "8-15,24-31"));
    CHECK(hw.ram_total_bytes == 263597236LL * 1024);
    CHECK(hw.ram_available_bytes == 251234560LL * 1024);
    CHECK(hw.accel == EDGE_ACCEL_NONE && !hw.tegra && hw.n_gpus == 0);
    CHECK(!strcmp(hw.source, "probe"));
}

/* SM8450: cpu0-3 A510 (capacity 389, 1785600 kHz), cpu4-6 A710 (871,
 * 2496000), cpu7 X2 (1024, 2995200); Features with asimd asimdhp asimddp
 * i8mm bf16 and no sve; dev/fastrpc-cdsp; MemAvailable 5123456 kB. */
static void probe_snapdragon_phone(void)
{
    edge_hw hw;
    REQUIRE(edge_probe(HW "snapdragon-phone", &hw) == EMBER_OK);
    CHECK(hw.cls == EDGE_CLASS_NPU_PHONE);
    CHECK(hw.arch == EDGE_ARCH_AARCH64);
    CHECK(!strcmp(hw.cpu_model, "Qualcomm Technologies, Inc SM8450"));
    CHECK_MSG(hw.flags == (F(NEON) | F(FP16_ARITH) | F(DOTPROD) | F(I8MM) | F(BF16)), "flags %#x", hw.flags);
    CHECK(hw.n_logical == 8 && hw.n_physical == 8);
    CHECK(hw.n_clusters == 3);
    check_cluster(&hw, 0, "7", 2995200, 1024);
    check_cluster(&hw, 1, "4-6", 2496000, 871);
    check_cluster(&hw, 2, "0-3", 1785600, 389);
    CHECK(hw.numa_nodes == 1);
    CHECK(hw.ram_total_bytes == 11493376LL * 1024 && hw.ram_available_bytes == 5123456LL * 1024);
    CHECK(hw.accel == EDGE_ACCEL_NPU && !strcmp(hw.npu_vendor, "qualcomm"));
    CHECK(!hw.tegra && !hw.unified_memory);
}

/* AGX Orin: 12 x A78AE (part 0xd42) in 3 clusters whose core_id repeats 0-3;
 * thread_siblings_list is each CPU alone, so 12 physical cores. Tegra via
 * etc/nv_tegra_release and "nvidia,tegra234"; MemTotal 64335824 kB. */
static void probe_jetson_orin(void)
{
    edge_hw hw;
    REQUIRE(edge_probe(HW "jetson-orin", &hw) == EMBER_OK);
    CHECK(hw.cls == EDGE_CLASS_JETSON);
    CHECK(hw.arch == EDGE_ARCH_AARCH64);
    CHECK_MSG(!strcmp(hw.cpu_model, "Cortex-A78AE"), "cpu_model '%s'", hw.cpu_model);
    CHECK_MSG(hw.flags == (F(NEON) | F(FP16_ARITH) | F(DOTPROD)), "flags %#x", hw.flags);
    CHECK(hw.n_logical == 12);
    CHECK_MSG(hw.n_physical == 12, "n_physical %d", hw.n_physical);
    CHECK(hw.n_clusters == 1);
    check_cluster(&hw, 0, "0-11", 2201600, 1024);
    CHECK(hw.tegra && hw.unified_memory && hw.accel == EDGE_ACCEL_CUDA_UNIFIED);
    REQUIRE(hw.n_gpus == 1);
    CHECK(!strcmp(hw.gpus[0].name, "NVIDIA Jetson AGX Orin Developer Kit"));
    CHECK(hw.gpus[0].mem_bytes == 64335824LL * 1024); /* unified: the GPU has the RAM */
}

/* Pi 5: 4 x A76 (0xd0b) at 2400000 kHz, capacity 1024; asimddp but no
 * i8mm; the model from cpuinfo's "Model" line; a device tree without tegra. */
static void probe_raspberry_pi_5(void)
{
    edge_hw hw;
    REQUIRE(edge_probe(HW "raspberry-pi-5", &hw) == EMBER_OK);
    CHECK(hw.cls == EDGE_CLASS_ARM64_CPU);
    CHECK(!strcmp(hw.cpu_model, "Raspberry Pi 5 Model B Rev 1.0"));
    CHECK_MSG(hw.flags == (F(NEON) | F(FP16_ARITH) | F(DOTPROD)), "flags %#x", hw.flags);
    CHECK(hw.n_logical == 4 && hw.n_physical == 4);
    CHECK(hw.n_clusters == 1);
    check_cluster(&hw, 0, "0-3", 2400000, 1024);
    CHECK(hw.ram_total_bytes == 8245328LL * 1024 && hw.ram_available_bytes == 7512345LL * 1024);
    CHECK(hw.accel == EDGE_ACCEL_NONE && !hw.tegra);
}

/* Ryzen 7 7700X with an NVIDIA driver: proc/driver/nvidia/gpus/.../information. */
static void probe_cuda_desktop(void)
{
    edge_hw hw;
    REQUIRE(edge_probe(HW "cuda-desktop", &hw) == EMBER_OK);
    CHECK(hw.cls == EDGE_CLASS_CUDA_DISCRETE);
    CHECK(hw.n_logical == 16 && hw.n_physical == 8);
    CHECK(same_cpus(&hw.smt_siblings, "8-15"));
    CHECK(edge_has(&hw, EDGE_FLAG_AVX512) && edge_has(&hw, EDGE_FLAG_AVX512_BF16) &&
          !edge_has(&hw, EDGE_FLAG_AMX_TILE) && !edge_has(&hw, EDGE_FLAG_AVX_VNNI));
    REQUIRE(hw.n_gpus == 1);
    CHECK(!strcmp(hw.gpus[0].name, "NVIDIA GeForce RTX 4090"));
    CHECK(hw.accel == EDGE_ACCEL_CUDA_DISCRETE && !hw.unified_memory);
}

/* ---- trees made here ---- */

typedef struct tree {
    char root[64];
} tree;

static int tree_make(tree *t)
{
    snprintf(t->root, sizeof t->root, "/tmp/ember-probe-XXXXXX");
    return mkdtemp(t->root) ? 0 : -1;
}

static void tree_put(const tree *t, const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", t->root, rel);
    for (char *p = path + strlen(t->root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* Probes the tree, then removes it. */
static ember_status probe_tree(const tree *t, edge_hw *hw)
{
    ember_status st = edge_probe(t->root, hw);
    nftw(t->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return st;
}

static void put_cpu(const tree *t, int cpu, const char *file, const char *value)
{
    char rel[160];
    snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/%s", cpu, file);
    tree_put(t, rel, value);
}

/* Two kinds of core at the same maximum frequency: only cpu_capacity tells
 * them apart (the fork's frequency rule would see one cluster). */
static void capacity_wins_over_frequency(void)
{
    tree t;
    edge_hw hw;
    REQUIRE(tree_make(&t) == 0);
    tree_put(&t, "proc/cpuinfo", "processor\t: 0\nFeatures\t: fp asimd\n\nprocessor\t: 1\n\n"
                                 "processor\t: 2\n\nprocessor\t: 3\n\n");
    for (int cpu = 0; cpu < 4; cpu++) {
        put_cpu(&t, cpu, "cpufreq/cpuinfo_max_freq", "2000000\n");
        put_cpu(&t, cpu, "cpu_capacity", cpu < 2 ? "1024\n" : "448\n");
    }
    REQUIRE(probe_tree(&t, &hw) == EMBER_OK);
    CHECK(hw.arch == EDGE_ARCH_AARCH64 && hw.cls == EDGE_CLASS_ARM64_CPU);
    CHECK(hw.n_clusters == 2);
    check_cluster(&hw, 0, "0-1", 2000000, 1024);
    check_cluster(&hw, 1, "2-3", 2000000, 448);
}

/* Without cpu_capacity the clusters come from the maximum frequency, and
 * without thread_siblings_list the SMT siblings from (package, core_id). */
static void frequency_and_core_pairs(void)
{
    tree t;
    edge_hw hw;
    REQUIRE(tree_make(&t) == 0);
    tree_put(&t, "proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx2 fma\n\n"
                                 "processor\t: 1\n\nprocessor\t: 2\n\nprocessor\t: 3\n\n");
    tree_put(&t, "sys/devices/system/cpu/online", "0-3\n");
    static const char *const khz[] = {"4700000\n", "4700000\n", "3600000\n", "4700000\n"};
    static const char *const core[] = {"0\n", "1\n", "8\n", "0\n"};
    for (int cpu = 0; cpu < 4; cpu++) {
        put_cpu(&t, cpu, "cpufreq/cpuinfo_max_freq", khz[cpu]);
        put_cpu(&t, cpu, "topology/core_id", core[cpu]);
        put_cpu(&t, cpu, "topology/physical_package_id", "0\n");
    }
    REQUIRE(probe_tree(&t, &hw) == EMBER_OK);
    CHECK(hw.flags == (F(AVX2) | F(FMA)) && hw.arch == EDGE_ARCH_X86_64);
    CHECK(hw.n_logical == 4);
    CHECK_MSG(hw.n_physical == 3, "n_physical %d", hw.n_physical); /* cpu3 shares core 0 with cpu0 */
    CHECK(same_cpus(&hw.smt_siblings, "3"));
    CHECK(hw.n_clusters == 2);
    check_cluster(&hw, 0, "0-1,3", 4700000, 0);
    check_cluster(&hw, 1, "2", 3600000, 0);
}

/* A container's share: Cpus_allowed_list in /proc/self/status, a line
 * among others. */
static void allowed_cpus_from_status(void)
{
    tree t;
    edge_hw hw;
    REQUIRE(tree_make(&t) == 0);
    tree_put(&t, "proc/cpuinfo", "processor\t: 0\n\nprocessor\t: 1\n\nprocessor\t: 2\n\nprocessor\t: 3\n\n");
    tree_put(&t, "proc/self/status", "Name:\tember\nThreads:\t1\nCpus_allowed:\tc\n"
                                     "Cpus_allowed_list:\t2-3\nMems_allowed_list:\t0\n");
    REQUIRE(probe_tree(&t, &hw) == EMBER_OK);
    CHECK(hw.n_logical == 4 && same_cpus(&hw.allowed_cpus, "2-3"));
}

/* Only /proc/cpuinfo: everything else takes its default. */
static void cpuinfo_only(void)
{
    tree t;
    edge_hw hw;
    REQUIRE(tree_make(&t) == 0);
    tree_put(&t, "proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: avx2\n\n"
                                 "processor\t: 1\nmodel name\t: Test CPU\nflags\t\t: avx2\n\n");
    REQUIRE(probe_tree(&t, &hw) == EMBER_OK);
    CHECK(hw.n_logical == 2 && hw.n_physical == 2 && hw.numa_nodes == 1);
    CHECK(hw.n_clusters == 1 && same_cpus(&hw.clusters[0].cpus, "0-1"));
    CHECK(hw.ram_total_bytes == 0 && hw.ram_available_bytes == 0);
    CHECK(!strcmp(hw.cpu_model, "Test CPU") && hw.cls == EDGE_CLASS_X86_CPU);
}

static void missing_root_is_an_error(void)
{
    edge_hw hw;
    CHECK(edge_probe("/nonexistent/ember-root", &hw) == EMBER_ERR_IO);
    CHECK(strstr(ember_last_error(), "/nonexistent/ember-root") != NULL);
}

static void cpuset_text(void)
{
    edge_cpuset s;
    char text[64];
    REQUIRE(edge_cpuset_parse("0-3,8,10-11\n", &s) == EMBER_OK);
    CHECK(edge_cpuset_count(&s) == 7 && edge_cpuset_nth(&s, 4) == 8 && edge_cpuset_nth(&s, 7) == -1);
    edge_cpuset_format(&s, text, sizeof text);
    CHECK_MSG(!strcmp(text, "0-3,8,10-11"), "'%s'", text);
    REQUIRE(edge_cpuset_parse("\n", &s) == EMBER_OK);
    CHECK(edge_cpuset_count(&s) == 0);
    CHECK(edge_cpuset_parse("3-1", &s) == EMBER_ERR_FORMAT);
    CHECK(edge_cpuset_parse("1,x", &s) == EMBER_ERR_FORMAT);
    CHECK(edge_cpuset_parse("99999", &s) == EMBER_ERR_FORMAT);
}

/* ---- JSON ---- */

static void round_trip_one(const char *machine)
{
    char root[128];
    edge_hw a, b;
    snprintf(root, sizeof root, HW "%s", machine);
    REQUIRE(edge_probe(root, &a) == EMBER_OK);
    cJSON *o = edge_hw_to_json(&a);
    REQUIRE(o != NULL);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    REQUIRE(text != NULL);
    ember_status st = edge_hw_parse_json(text, strlen(text), machine, &b);
    free(text);
    REQUIRE(st == EMBER_OK);
    CHECK_MSG(!memcmp(&a, &b, sizeof a), "%s: the profile changed through JSON", machine);
}

static void json_round_trip(void)
{
    static const char *const machines[] = {"x86-server", "snapdragon-phone", "jetson-orin",
                                           "raspberry-pi-5", "cuda-desktop"};
    for (size_t i = 0; i < sizeof machines / sizeof machines[0]; i++) round_trip_one(machines[i]);
}

/* Unknown keys are ignored; missing ones default and follow from the rest. */
static void override_value(void)
{
    edge_hw hw;
    REQUIRE(edge_hw_detect(HW "x86-server",
                           " {\"accelerator\": \"npu:qualcomm\", \"cpu_flags\": [\"neon\", \"dotprod\", \"avx99\"],"
                           " \"clusters\": [{\"cpus\": [4, 5, 6, 7], \"capacity\": 1024}, {\"cpus\": [0, 1, 2, 3]}],"
                           " \"ram_total_bytes\": 8000000000, \"future_key\": {\"x\": 1}}",
                           &hw) == EMBER_OK);
    CHECK(!strcmp(hw.source, "override:env-json"));
    CHECK(hw.cls == EDGE_CLASS_NPU_PHONE && hw.arch == EDGE_ARCH_AARCH64);
    CHECK(hw.flags == (F(NEON) | F(DOTPROD)));
    CHECK(hw.n_logical == 8 && hw.n_physical == 8 && hw.numa_nodes == 1);
    CHECK(hw.n_clusters == 2 && hw.clusters[0].capacity == 1024);
    CHECK(hw.ram_total_bytes == 8000000000LL && hw.ram_available_bytes == 8000000000LL);
    CHECK(!strcmp(hw.npu_vendor, "qualcomm"));
}

static void override_file(void)
{
    char path[] = "/tmp/ember-hw-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const char *text = "{\"class\": \"jetson\", \"n_logical\": 6}\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    edge_hw hw;
    ember_status st = edge_hw_detect(NULL, path, &hw);
    unlink(path);
    REQUIRE(st == EMBER_OK);
    char want[64];
    snprintf(want, sizeof want, "override:file:%s", path);
    CHECK_MSG(!strcmp(hw.source, want), "source '%s'", hw.source);
    CHECK(hw.cls == EDGE_CLASS_JETSON && hw.n_logical == 6 && hw.n_physical == 6);
    CHECK(same_cpus(&hw.clusters[0].cpus, "0-5"));
}

static void expect_override_error(const char *value, ember_status want, const char *needle)
{
    edge_hw hw;
    ember_status st = edge_hw_detect(NULL, value, &hw);
    CHECK_MSG(st == want && strstr(ember_last_error(), needle) && strstr(ember_last_error(), "EMBER_HW_PROFILE"),
              "'%s': status %d, message '%s'", value, st, ember_last_error());
}

static void override_errors(void)
{
    expect_override_error("{\"n_logical\": ", EMBER_ERR_FORMAT, "not valid JSON");
    expect_override_error("{\"n_logical\": \"8\"}", EMBER_ERR_FORMAT, "'n_logical'");
    expect_override_error("{\"n_logical\": 2.5}", EMBER_ERR_FORMAT, "'n_logical'");
    expect_override_error("{\"class\": \"mainframe\"}", EMBER_ERR_FORMAT, "'class'");
    expect_override_error("{\"accelerator\": \"tpu\"}", EMBER_ERR_FORMAT, "'accelerator'");
    expect_override_error("{\"clusters\": [{\"cpus\": [9999]}]}", EMBER_ERR_FORMAT, "clusters[].cpus");
    expect_override_error("{\"ram_total_bytes\": -1}", EMBER_ERR_FORMAT, "'ram_total_bytes'");
    expect_override_error("{} {}", EMBER_ERR_FORMAT, "trailing");
    expect_override_error("/nonexistent/profile.json", EMBER_ERR_IO, "/nonexistent/profile.json");
    /* a JSON value that is not an object: read as a path ('[' is not '{') */
    expect_override_error("[1]", EMBER_ERR_IO, "[1]");
}

static void empty_override_probes(void)
{
    edge_hw hw;
    REQUIRE(edge_hw_detect(HW "raspberry-pi-5", "", &hw) == EMBER_OK);
    CHECK(!strcmp(hw.source, "probe") && hw.cls == EDGE_CLASS_ARM64_CPU);
}

int main(void)
{
    RUN(probe_x86_server);
    RUN(probe_snapdragon_phone);
    RUN(probe_jetson_orin);
    RUN(probe_raspberry_pi_5);
    RUN(probe_cuda_desktop);
    RUN(capacity_wins_over_frequency);
    RUN(frequency_and_core_pairs);
    RUN(allowed_cpus_from_status);
    RUN(cpuinfo_only);
    RUN(missing_root_is_an_error);
    RUN(cpuset_text);
    RUN(json_round_trip);
    RUN(override_value);
    RUN(override_file);
    RUN(override_errors);
    RUN(empty_override_probes);
    return check_summary();
}
