#include "edge/probe.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/status.h"
#include "edge/hw_json.h"

/* /proc/cpuinfo of a 512-CPU machine with full flag lines is ~800 KB. */
#define CPUINFO_CAP (4u << 20)
#define SMALL_CAP (64u << 10)

typedef struct probe_root {
    char path[PATH_MAX];
} probe_root;

/* root + "/" + rel into buf; false when it does not fit. */
static bool join(const probe_root *r, const char *rel, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s/%s", r->path, rel);
    return n > 0 && (size_t)n < cap;
}

/* Reads a whole file under the root until EOF (files in /proc and /sys
 * report size 0, so the size is not asked). NUL-terminated; NULL when it
 * is missing, unreadable or over cap. A missing file is normal here. */
static char *read_under(const probe_root *r, const char *rel, size_t cap, size_t *len_out)
{
    char path[PATH_MAX];
    if (!join(r, rel, path, sizeof path)) return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    size_t len = 0, size = 4096;
    char *buf = malloc(size);
    while (buf) {
        if (len + 1 >= size) {
            char *grown = size * 2 <= cap + 1 ? realloc(buf, size * 2) : NULL;
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            size *= 2;
        }
        ssize_t got = read(fd, buf + len, size - 1 - len);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            free(buf);
            buf = NULL;
        } else if (got == 0) {
            buf[len] = '\0';
            break;
        } else {
            len += (size_t)got;
        }
    }
    close(fd);
    if (buf && len_out) *len_out = len;
    return buf;
}

static bool exists_under(const probe_root *r, const char *rel)
{
    char path[PATH_MAX];
    struct stat sb;
    return join(r, rel, path, sizeof path) && stat(path, &sb) == 0;
}

/* A file holding one integer (sysfs style); false when missing or not a number. */
static bool read_int(const probe_root *r, const char *rel, int64_t *out)
{
    char *text = read_under(r, rel, SMALL_CAP, NULL);
    if (!text) return false;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 0);
    bool ok = end != text && errno == 0;
    while (ok && *end) ok = isspace((unsigned char)*end++);
    free(text);
    if (ok) *out = v;
    return ok;
}

/* The entries of a directory under the root whose names are `prefix` then a
 * number, as a sorted list of those numbers; returns how many (at most cap). */
static int numbered_entries(const probe_root *r, const char *rel, const char *prefix, int *out,
                            int cap)
{
    char path[PATH_MAX];
    if (!join(r, rel, path, sizeof path)) return 0;
    DIR *d = opendir(path);
    if (!d) return 0;
    size_t plen = strlen(prefix);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < cap) {
        const char *name = e->d_name;
        if (strncmp(name, prefix, plen) || !isdigit((unsigned char)name[plen])) continue;
        char *end;
        long v = strtol(name + plen, &end, 10);
        if (*end || v < 0 || v >= EDGE_MAX_CPUS) continue;
        out[n++] = (int)v;
    }
    closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort: readdir order is arbitrary */
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

static void copy_trimmed(char *dst, size_t cap, const char *src, size_t len)
{
    while (len && isspace((unsigned char)*src)) src++, len--;
    while (len && (isspace((unsigned char)src[len - 1]) || src[len - 1] == '\0')) len--;
    if (len >= cap) len = cap - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* The ARM cores the profile's targets use, for a model name when cpuinfo
 * gives none (arm64 kernels print only implementer and part numbers). */
static const char *arm_part_name(long implementer, long part)
{
    static const struct {
        long part;
        const char *name;
    } arm[] = {{0xd03, "Cortex-A53"}, {0xd05, "Cortex-A55"},   {0xd08, "Cortex-A72"},
               {0xd0b, "Cortex-A76"}, {0xd0d, "Cortex-A77"},   {0xd41, "Cortex-A78"},
               {0xd42, "Cortex-A78AE"}, {0xd44, "Cortex-X1"},  {0xd46, "Cortex-A510"},
               {0xd47, "Cortex-A710"}, {0xd48, "Cortex-X2"},   {0xd4d, "Cortex-A715"},
               {0xd4e, "Cortex-X3"},   {0xd40, "Neoverse-V1"}, {0xd4f, "Neoverse-V2"},
               {0xd0c, "Neoverse-N1"}, {0xd49, "Neoverse-N2"}};
    if (implementer != 0x41) return NULL;
    for (size_t i = 0; i < sizeof arm / sizeof arm[0]; i++)
        if (arm[i].part == part) return arm[i].name;
    return NULL;
}

typedef struct cpuinfo_facts {
    int processors;
    bool x86, arm;
    char model[128];      /* model name / Hardware / cpu model */
    char board_model[128]; /* "Model" (Raspberry Pi kernels) */
    long implementer, part;
} cpuinfo_facts;

static void cpuinfo_flags(edge_hw *hw, const char *v, size_t len)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && isspace((unsigned char)v[i])) i++;
        size_t start = i;
        while (i < len && !isspace((unsigned char)v[i])) i++;
        int f = edge_flag_from_cpuinfo(v + start, i - start);
        if (f >= 0) hw->flags |= 1u << f;
    }
}

static void parse_cpuinfo(edge_hw *hw, const char *text, cpuinfo_facts *f)
{
    memset(f, 0, sizeof *f);
    f->implementer = f->part = -1;
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *colon = memchr(line, ':', len);
        if (colon) {
            size_t klen = (size_t)(colon - line);
            while (klen && isspace((unsigned char)line[klen - 1])) klen--;
            const char *v = colon + 1;
            size_t vlen = len - (size_t)(v - line);
#define KEY_IS(s) (klen == sizeof(s) - 1 && !memcmp(line, s, klen))
            if (KEY_IS("processor")) f->processors++;
            else if (KEY_IS("flags") || KEY_IS("Features")) cpuinfo_flags(hw, v, vlen);
            else if ((KEY_IS("model name") || KEY_IS("Hardware") || KEY_IS("cpu model")) &&
                     !f->model[0])
                copy_trimmed(f->model, sizeof f->model, v, vlen);
            else if (KEY_IS("Model") && !f->board_model[0])
                copy_trimmed(f->board_model, sizeof f->board_model, v, vlen);
            else if (KEY_IS("vendor_id")) f->x86 = true;
            else if (KEY_IS("CPU implementer")) {
                f->arm = true;
                if (f->implementer < 0) f->implementer = strtol(v, NULL, 0);
            } else if (KEY_IS("CPU part") && f->part < 0)
                f->part = strtol(v, NULL, 0);
#undef KEY_IS
        }
        line += len + (eol ? 1 : 0);
    }
}

static void probe_cpuinfo(const probe_root *r, edge_hw *hw)
{
    cpuinfo_facts f;
    char *text = read_under(r, "proc/cpuinfo", CPUINFO_CAP, NULL);
    if (!text) return;
    parse_cpuinfo(hw, text, &f);
    free(text);
    if (f.processors > 0) hw->n_logical = f.processors;
    hw->arch = f.arm ? EDGE_ARCH_AARCH64 : f.x86 ? EDGE_ARCH_X86_64 : edge_arch_from_flags(hw->flags);
    const char *part = arm_part_name(f.implementer, f.part);
    const char *model = f.model[0] ? f.model : f.board_model[0] ? f.board_model : part;
    if (model) snprintf(hw->cpu_model, sizeof hw->cpu_model, "%s", model);
}

/* Per-CPU facts from sysfs; -1 where a file is missing. */
typedef struct cpu_facts {
    int cpu;
    int first_sibling; /* lowest CPU of thread_siblings_list */
    int64_t package, cluster, core, capacity, max_khz;
} cpu_facts;

static int probe_cpu_list(const probe_root *r, const edge_hw *hw, int *cpus)
{
    char *text = read_under(r, "sys/devices/system/cpu/online", SMALL_CAP, NULL);
    edge_cpuset online;
    int n = 0;
    if (text && edge_cpuset_parse(text, &online) == EMBER_OK)
        for (int c = 0; c < EDGE_MAX_CPUS; c++)
            if (edge_cpuset_has(&online, c)) cpus[n++] = c;
    free(text);
    if (n == 0) n = numbered_entries(r, "sys/devices/system/cpu", "cpu", cpus, EDGE_MAX_CPUS);
    if (n == 0)
        for (; n < hw->n_logical && n < EDGE_MAX_CPUS; n++) cpus[n] = n;
    return n;
}

static void read_cpu_facts(const probe_root *r, int cpu, cpu_facts *f)
{
    char rel[128];
    f->cpu = cpu;
    f->package = f->cluster = f->core = f->capacity = f->max_khz = -1;
    f->first_sibling = -1;
    snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
    char *siblings = read_under(r, rel, SMALL_CAP, NULL);
    edge_cpuset set;
    if (siblings && edge_cpuset_parse(siblings, &set) == EMBER_OK) f->first_sibling = edge_cpuset_nth(&set, 0);
    free(siblings);
    snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/cluster_id", cpu);
    read_int(r, rel, &f->cluster);
    snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    read_int(r, rel, &f->package);
    snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
    read_int(r, rel, &f->core);
    snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/cpu_capacity", cpu);
    read_int(r, rel, &f->capacity);
    snprintf(rel, sizeof rel, "sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", cpu);
    read_int(r, rel, &f->max_khz);
}

static int64_t or_zero(int64_t v) { return v < 0 ? 0 : v; }

/* Physical cores. thread_siblings_list names a core's threads outright: a
 * CPU whose list starts below it is an SMT sibling. Without it, distinct
 * (package, cluster_id, core_id) triples: arm64 kernels number cores within
 * a cluster, so a Jetson Orin's three clusters all have core_id 0-3 and a
 * (package, core_id) pair alone would merge 12 cores into 4. */
static void group_cores(edge_hw *hw, const cpu_facts *f, int n)
{
    int physical = 0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        if (f[i].first_sibling >= 0)
            seen = f[i].first_sibling < f[i].cpu;
        else if (f[i].core >= 0)
            for (int j = 0; j < i && !seen; j++)
                seen = f[j].core == f[i].core && or_zero(f[j].package) == or_zero(f[i].package) &&
                       or_zero(f[j].cluster) == or_zero(f[i].cluster);
        if (seen) edge_cpuset_add(&hw->smt_siblings, f[i].cpu);
        else physical++;
    }
    hw->n_physical = physical;
}

/* Clusters by cpu_capacity when every CPU has one (it is the kernel's own
 * measure of a core's speed, and tells an A710 from an X2 at the same
 * frequency), else by maximum frequency when every CPU has one, else one
 * cluster. Fastest first. */
static void group_clusters(edge_hw *hw, const cpu_facts *f, int n)
{
    bool all_capacity = n > 0, all_freq = n > 0;
    for (int i = 0; i < n; i++) {
        all_capacity &= f[i].capacity > 0;
        all_freq &= f[i].max_khz > 0;
    }
    hw->n_clusters = 0;
    for (int i = 0; i < n; i++) { /* neither known for every CPU: one cluster of them all */
        int64_t key = all_capacity ? f[i].capacity : all_freq ? f[i].max_khz : 0;
        int k = 0;
        while (k < hw->n_clusters &&
               (all_capacity ? hw->clusters[k].capacity : all_freq ? hw->clusters[k].max_khz : 0) != key)
            k++;
        if (k == hw->n_clusters) {
            if (k == EDGE_MAX_CLUSTERS) k--; /* more kinds than slots: fold into the last */
            else {
                memset(&hw->clusters[k], 0, sizeof hw->clusters[k]);
                hw->n_clusters++;
                if (all_capacity) hw->clusters[k].capacity = (int32_t)key;
            }
        }
        edge_cluster *c = &hw->clusters[k];
        edge_cpuset_add(&c->cpus, f[i].cpu);
        if (f[i].max_khz > c->max_khz) c->max_khz = f[i].max_khz;
    }
    for (int i = 1; i < hw->n_clusters; i++)
        for (int j = i; j > 0; j--) {
            edge_cluster *a = &hw->clusters[j - 1], *b = &hw->clusters[j];
            bool swap = a->capacity != b->capacity ? a->capacity < b->capacity
                                                   : a->max_khz < b->max_khz;
            if (!swap) break;
            edge_cluster t = *a;
            *a = *b;
            *b = t;
        }
}

static void probe_cpus(const probe_root *r, edge_hw *hw)
{
    int *cpus = malloc(EDGE_MAX_CPUS * sizeof *cpus);
    cpu_facts *f = malloc(EDGE_MAX_CPUS * sizeof *f);
    if (cpus && f) {
        int n = probe_cpu_list(r, hw, cpus);
        for (int i = 0; i < n; i++) read_cpu_facts(r, cpus[i], &f[i]);
        group_cores(hw, f, n);
        group_clusters(hw, f, n);
    }
    free(cpus);
    free(f);
}

/* The affinity the kernel gives this process (a container's cpuset). */
static void probe_allowed(const probe_root *r, edge_hw *hw)
{
    static const char key[] = "\nCpus_allowed_list:";
    char *text = read_under(r, "proc/self/status", SMALL_CAP, NULL);
    const char *v = text ? strstr(text, key) : NULL;
    if (v) {
        char list[4096]; /* the value, without the lines after it */
        v += sizeof key - 1;
        v += strspn(v, " \t");
        copy_trimmed(list, sizeof list, v, strcspn(v, "\n"));
        if (edge_cpuset_parse(list, &hw->allowed_cpus) != EMBER_OK)
            memset(&hw->allowed_cpus, 0, sizeof hw->allowed_cpus);
    }
    free(text);
}

static void probe_numa(const probe_root *r, edge_hw *hw)
{
    int nodes[EDGE_MAX_NODES * 4];
    int n = numbered_entries(r, "sys/devices/system/node", "node", nodes,
                             (int)(sizeof nodes / sizeof nodes[0]));
    hw->numa_nodes = n > 0 ? n : 1;
    for (int i = 0; i < n && i < EDGE_MAX_NODES; i++) {
        char rel[96];
        snprintf(rel, sizeof rel, "sys/devices/system/node/node%d/cpulist", nodes[i]);
        char *text = read_under(r, rel, SMALL_CAP, NULL);
        if (text && edge_cpuset_parse(text, &hw->node_cpus[i]) != EMBER_OK)
            memset(&hw->node_cpus[i], 0, sizeof hw->node_cpus[i]);
        free(text);
    }
}

static void probe_memory(const probe_root *r, edge_hw *hw)
{
    char *text = read_under(r, "proc/meminfo", SMALL_CAP, NULL);
    if (!text) return;
    int64_t free_kb = -1, avail_kb = -1;
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        long long kb;
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1) hw->ram_total_bytes = kb * 1024;
        else if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) avail_kb = kb;
        else if (sscanf(line, "MemFree: %lld kB", &kb) == 1) free_kb = kb;
    }
    free(text);
    /* Kernels before 3.14 have no MemAvailable: MemFree is the safe floor. */
    int64_t kb = avail_kb >= 0 ? avail_kb : free_kb;
    if (kb >= 0) hw->ram_available_bytes = kb * 1024;
}

/* Tegra: the L4T release file, or "tegra" anywhere in the device tree's
 * compatible list (NUL-separated strings). The GPU is the SoC's own and
 * shares the CPU's memory. */
static void probe_tegra(const probe_root *r, edge_hw *hw)
{
    size_t len = 0;
    char *compat = read_under(r, "proc/device-tree/compatible", SMALL_CAP, &len);
    bool tegra = exists_under(r, "etc/nv_tegra_release") ||
                 (compat && memmem(compat, len, "tegra", 5) != NULL);
    free(compat);
    if (!tegra) return;
    hw->tegra = hw->unified_memory = true;
    hw->accel = EDGE_ACCEL_CUDA_UNIFIED;
    char *model = read_under(r, "proc/device-tree/model", SMALL_CAP, &len);
    edge_gpu *g = &hw->gpus[0];
    copy_trimmed(g->name, sizeof g->name, model ? model : "NVIDIA Tegra", model ? len : 12);
    free(model);
    hw->n_gpus = 1;
}

/* The NVIDIA driver's /proc entries name each GPU ("Model:"); without them,
 * the device nodes /dev/nvidiaN at least count them. Nothing is loaded. */
static void probe_nvidia(const probe_root *r, edge_hw *hw)
{
    char path[PATH_MAX];
    if (hw->tegra || !join(r, "proc/driver/nvidia/gpus", path, sizeof path)) return;
    struct dirent **names = NULL;
    int n = scandir(path, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.' && hw->n_gpus < EDGE_MAX_GPUS) {
            char rel[PATH_MAX];
            snprintf(rel, sizeof rel, "proc/driver/nvidia/gpus/%.200s/information", names[i]->d_name);
            char *info = read_under(r, rel, SMALL_CAP, NULL);
            const char *model = info ? strstr(info, "Model:") : NULL;
            if (model) {
                const char *v = model + 6, *eol = strchr(v, '\n');
                edge_gpu *g = &hw->gpus[hw->n_gpus++];
                copy_trimmed(g->name, sizeof g->name, v, eol ? (size_t)(eol - v) : strlen(v));
            }
            free(info);
        }
        free(names[i]);
    }
    free(names);
    if (hw->n_gpus == 0) {
        int minors[EDGE_MAX_GPUS];
        int count = numbered_entries(r, "dev", "nvidia", minors, EDGE_MAX_GPUS);
        for (int i = 0; i < count; i++)
            snprintf(hw->gpus[hw->n_gpus++].name, sizeof hw->gpus[0].name,
                     "NVIDIA GPU (dev/nvidia%d)", minors[i]);
    }
    if (hw->n_gpus > 0) hw->accel = EDGE_ACCEL_CUDA_DISCRETE;
}

static void probe_npu(const probe_root *r, edge_hw *hw)
{
    const char *vendor = NULL;
    if (exists_under(r, "dev/fastrpc-cdsp") || exists_under(r, "dev/adsprpc-smd"))
        vendor = "qualcomm";
    int accel[4];
    if (!vendor && numbered_entries(r, "dev/accel", "accel", accel, 4) > 0) {
        char rel[96];
        int64_t id = -1;
        snprintf(rel, sizeof rel, "sys/class/accel/accel%d/device/vendor", accel[0]);
        read_int(r, rel, &id);
        vendor = id == 0x17cb ? "qualcomm" : id == 0x8086 ? "intel" : id == 0x1022 ? "amd" : "unknown";
    }
    if (!vendor || hw->accel != EDGE_ACCEL_NONE) return; /* a GPU class wins over an NPU */
    hw->accel = EDGE_ACCEL_NPU;
    snprintf(hw->npu_vendor, sizeof hw->npu_vendor, "%s", vendor);
}

ember_status edge_probe(const char *root, edge_hw *out)
{
    probe_root r;
    struct stat sb;
    edge_hw_init(out);
    if (!root || !*root) root = "/";
    /* "/" becomes "" so that joined paths read "/proc/cpuinfo". */
    size_t len = strlen(root);
    while (len > 1 && root[len - 1] == '/') len--;
    if (len >= sizeof r.path)
        return ember_fail(EMBER_ERR_INVALID_ARG, "probe root '%.64s...' is too long", root);
    if (stat(root, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return ember_fail(EMBER_ERR_IO, "probe root %s: not a readable directory", root);
    memcpy(r.path, root, len);
    r.path[len == 1 && root[0] == '/' ? 0 : len] = '\0';

    probe_cpuinfo(&r, out);
    probe_cpus(&r, out);
    probe_allowed(&r, out);
    probe_numa(&r, out);
    probe_memory(&r, out);
    probe_tegra(&r, out);
    probe_nvidia(&r, out);
    probe_npu(&r, out);
    if (out->arch == EDGE_ARCH_UNKNOWN && !r.path[0]) {
        struct utsname u; /* the live machine: the kernel knows */
        if (uname(&u) == 0)
            out->arch = !strcmp(u.machine, "x86_64")    ? EDGE_ARCH_X86_64
                        : !strcmp(u.machine, "aarch64") ? EDGE_ARCH_AARCH64
                                                        : EDGE_ARCH_UNKNOWN;
    }
    edge_hw_complete(out);
    out->cls = edge_classify(out);
    return EMBER_OK;
}

ember_status edge_hw_detect(const char *root, const char *override, edge_hw *out)
{
    if (!override || !*override) return edge_probe(root, out);
    ember_status st = edge_hw_override(override, out);
    if (st) return ember_fail_prefix(st, "EMBER_HW_PROFILE");
    return EMBER_OK;
}
