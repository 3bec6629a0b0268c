#include "edge/hw_json.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/json_text.h"
#include "io/read_file.h"

#define PROFILE_FILE_CAP (1u << 20)
/* Integers in a JSON number are exact up to 2^53; bytes beyond are not plausible anyway. */
#define JSON_INT_MAX 9007199254740992.0

/* ---- writing ---- */

static cJSON *cpus_to_json(const edge_cpuset *s)
{
    cJSON *a = cJSON_CreateArray();
    for (int cpu = 0; a && cpu < EDGE_MAX_CPUS; cpu++)
        if (edge_cpuset_has(s, cpu) && !cJSON_AddItemToArray(a, cJSON_CreateNumber(cpu))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

static const char *accel_text(const edge_hw *hw, char *buf, size_t cap)
{
    switch (hw->accel) {
    case EDGE_ACCEL_CUDA_DISCRETE: return "cuda_discrete";
    case EDGE_ACCEL_CUDA_UNIFIED: return "cuda_unified";
    case EDGE_ACCEL_NPU: snprintf(buf, cap, "npu:%s", hw->npu_vendor[0] ? hw->npu_vendor : "unknown"); return buf;
    case EDGE_ACCEL_NONE: break;
    }
    return "none";
}

/* Adds item under key; false (and frees item) when anything is NULL. */
static bool add(cJSON *obj, const char *key, cJSON *item)
{
    if (!item) return false;
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

cJSON *edge_hw_to_json(const edge_hw *hw)
{
    char accel[48];
    cJSON *o = cJSON_CreateObject();
    bool ok = o != NULL;
    ok = ok && add(o, "source", cJSON_CreateString(hw->source));
    ok = ok && add(o, "class", cJSON_CreateString(edge_class_name(hw->cls)));
    ok = ok && add(o, "arch", cJSON_CreateString(edge_arch_name(hw->arch)));
    ok = ok && add(o, "cpu_model", cJSON_CreateString(hw->cpu_model));
    /* flag names in alphabetical order, as the probe of the spec prints them */
    cJSON *flags = cJSON_CreateArray();
    ok = ok && add(o, "cpu_flags", flags);
    bool used[EDGE_N_FLAGS] = {0};
    for (int k = 0; ok && k < EDGE_N_FLAGS; k++) {
        int best = -1;
        for (int f = 0; f < EDGE_N_FLAGS; f++)
            if (edge_has(hw, (edge_flag)f) && !used[f] &&
                (best < 0 || strcmp(edge_flag_name((edge_flag)f), edge_flag_name((edge_flag)best)) < 0))
                best = f;
        if (best < 0) break;
        used[best] = true;
        ok = cJSON_AddItemToArray(flags, cJSON_CreateString(edge_flag_name((edge_flag)best)));
    }
    ok = ok && add(o, "n_logical", cJSON_CreateNumber(hw->n_logical));
    ok = ok && add(o, "n_physical", cJSON_CreateNumber(hw->n_physical));
    cJSON *clusters = cJSON_CreateArray();
    ok = ok && add(o, "clusters", clusters);
    for (int i = 0; ok && i < hw->n_clusters; i++) {
        cJSON *c = cJSON_CreateObject();
        ok = cJSON_AddItemToArray(clusters, c) && add(c, "cpus", cpus_to_json(&hw->clusters[i].cpus)) &&
             add(c, "max_khz", cJSON_CreateNumber((double)hw->clusters[i].max_khz)) &&
             add(c, "capacity", cJSON_CreateNumber(hw->clusters[i].capacity));
    }
    ok = ok && add(o, "smt_siblings", cpus_to_json(&hw->smt_siblings));
    ok = ok && add(o, "allowed_cpus", cpus_to_json(&hw->allowed_cpus));
    ok = ok && add(o, "numa_nodes", cJSON_CreateNumber(hw->numa_nodes));
    cJSON *nodes = cJSON_CreateArray();
    ok = ok && add(o, "numa_cpus", nodes);
    for (int i = 0; ok && i < hw->numa_nodes && i < EDGE_MAX_NODES; i++)
        ok = cJSON_AddItemToArray(nodes, cpus_to_json(&hw->node_cpus[i]));
    ok = ok && add(o, "ram_total_bytes", cJSON_CreateNumber((double)hw->ram_total_bytes));
    ok = ok && add(o, "ram_available_bytes", cJSON_CreateNumber((double)hw->ram_available_bytes));
    ok = ok && add(o, "mem_bw_bytes_per_s", cJSON_CreateNumber((double)hw->mem_bw_bytes_per_s));
    ok = ok && add(o, "accelerator", cJSON_CreateString(accel_text(hw, accel, sizeof accel)));
    ok = ok && add(o, "tegra", cJSON_CreateBool(hw->tegra));
    ok = ok && add(o, "unified_memory", cJSON_CreateBool(hw->unified_memory));
    cJSON *gpus = cJSON_CreateArray();
    ok = ok && add(o, "cuda_devices", gpus);
    for (int i = 0; ok && i < hw->n_gpus; i++) {
        cJSON *g = cJSON_CreateObject();
        ok = cJSON_AddItemToArray(gpus, g) && add(g, "name", cJSON_CreateString(hw->gpus[i].name)) &&
             add(g, "mem_bytes", cJSON_CreateNumber((double)hw->gpus[i].mem_bytes));
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* ---- reading ---- */

typedef struct json_ctx {
    const char *label;
} json_ctx;

static ember_status bad(const json_ctx *x, const char *key, const char *want)
{
    return ember_fail(EMBER_ERR_FORMAT, "%s: key '%s' must be %s", x->label, key, want);
}

/* An integer in [lo, hi] under key (absent: *out untouched, *present false). */
static ember_status get_int(const json_ctx *x, const cJSON *o, const char *key, double lo, double hi,
                            int64_t *out, bool *present)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (present) *present = v != NULL;
    if (!v) return EMBER_OK;
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d) || d < lo || d > hi) {
        char want[96];
        snprintf(want, sizeof want, "an integer in [%.0f, %.0f]", lo, hi);
        return bad(x, key, want);
    }
    *out = (int64_t)d;
    return EMBER_OK;
}

static ember_status get_i32(const json_ctx *x, const cJSON *o, const char *key, double lo, double hi,
                            int32_t *out)
{
    int64_t v = *out;
    ember_status st = get_int(x, o, key, lo, hi, &v, NULL);
    *out = (int32_t)v;
    return st;
}

static ember_status get_bool(const json_ctx *x, const cJSON *o, const char *key, bool *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return EMBER_OK;
    if (!cJSON_IsBool(v)) return bad(x, key, "true or false");
    *out = cJSON_IsTrue(v);
    return EMBER_OK;
}

static ember_status get_string(const json_ctx *x, const cJSON *o, const char *key, char *out,
                               size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return EMBER_OK;
    if (!cJSON_IsString(v)) return bad(x, key, "a string");
    snprintf(out, cap, "%s", v->valuestring);
    return EMBER_OK;
}

static ember_status get_cpus(const json_ctx *x, const cJSON *v, const char *key, edge_cpuset *out)
{
    char want[64];
    snprintf(want, sizeof want, "an array of CPU numbers in [0, %d]", EDGE_MAX_CPUS - 1);
    memset(out, 0, sizeof *out);
    if (!cJSON_IsArray(v)) return bad(x, key, want);
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        double d = e->valuedouble;
        if (!cJSON_IsNumber(e) || !isfinite(d) || d != floor(d) || d < 0 || d >= EDGE_MAX_CPUS)
            return bad(x, key, want);
        edge_cpuset_add(out, (int)d);
    }
    return EMBER_OK;
}

static ember_status parse_flags(const json_ctx *x, const cJSON *o, edge_hw *hw)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "cpu_flags"), *e;
    if (!v) return EMBER_OK;
    if (!cJSON_IsArray(v)) return bad(x, "cpu_flags", "an array of strings");
    cJSON_ArrayForEach(e, v)
    {
        if (!cJSON_IsString(e)) return bad(x, "cpu_flags", "an array of strings");
        int f = edge_flag_from_name(e->valuestring);
        if (f >= 0) hw->flags |= 1u << f; /* a flag this build does not know is ignored */
    }
    return EMBER_OK;
}

static ember_status parse_clusters(const json_ctx *x, const cJSON *o, edge_hw *hw)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "clusters"), *e;
    if (!v) return EMBER_OK;
    char want[96];
    snprintf(want, sizeof want, "an array of at most %d objects {cpus, max_khz, capacity}",
             EDGE_MAX_CLUSTERS);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > EDGE_MAX_CLUSTERS) return bad(x, "clusters", want);
    cJSON_ArrayForEach(e, v)
    {
        edge_cluster *c = &hw->clusters[hw->n_clusters];
        const cJSON *cpus = cJSON_GetObjectItemCaseSensitive(e, "cpus");
        if (!cJSON_IsObject(e) || !cpus) return bad(x, "clusters", want);
        ember_status st = get_cpus(x, cpus, "clusters[].cpus", &c->cpus);
        if (!st) st = get_int(x, e, "max_khz", 0, 1e9, &c->max_khz, NULL);
        if (!st) st = get_i32(x, e, "capacity", 0, 1 << 20, &c->capacity);
        if (st) return st;
        if (edge_cpuset_count(&c->cpus) == 0) return bad(x, "clusters[].cpus", "a non-empty array");
        hw->n_clusters++;
    }
    return EMBER_OK;
}

static ember_status parse_numa(const json_ctx *x, const cJSON *o, edge_hw *hw)
{
    ember_status st = get_i32(x, o, "numa_nodes", 1, EDGE_MAX_CPUS, &hw->numa_nodes);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "numa_cpus"), *e;
    if (st || !v) return st;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > EDGE_MAX_NODES)
        return bad(x, "numa_cpus", "an array of CPU lists, one per node");
    int i = 0;
    cJSON_ArrayForEach(e, v)
    {
        if ((st = get_cpus(x, e, "numa_cpus[]", &hw->node_cpus[i++]))) return st;
    }
    return EMBER_OK;
}

static ember_status parse_accel(const json_ctx *x, const cJSON *o, edge_hw *hw)
{
    char text[64] = "";
    ember_status st = get_string(x, o, "accelerator", text, sizeof text);
    if (st || !cJSON_GetObjectItemCaseSensitive(o, "accelerator")) return st;
    if (!strcmp(text, "none")) hw->accel = EDGE_ACCEL_NONE;
    else if (!strcmp(text, "cuda_discrete")) hw->accel = EDGE_ACCEL_CUDA_DISCRETE;
    else if (!strcmp(text, "cuda_unified")) hw->accel = EDGE_ACCEL_CUDA_UNIFIED;
    else if (!strncmp(text, "npu", 3) && (text[3] == '\0' || text[3] == ':')) {
        hw->accel = EDGE_ACCEL_NPU;
        snprintf(hw->npu_vendor, sizeof hw->npu_vendor, "%.31s", text[3] ? text + 4 : "unknown");
    } else
        return bad(x, "accelerator", "one of none, cuda_discrete, cuda_unified, npu:<vendor>");
    if (hw->accel == EDGE_ACCEL_CUDA_UNIFIED) hw->unified_memory = true;
    return EMBER_OK;
}

static ember_status parse_gpus(const json_ctx *x, const cJSON *o, edge_hw *hw)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "cuda_devices"), *e;
    if (!v) return EMBER_OK;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > EDGE_MAX_GPUS)
        return bad(x, "cuda_devices", "an array of at most 8 objects {name, mem_bytes}");
    cJSON_ArrayForEach(e, v)
    {
        edge_gpu *g = &hw->gpus[hw->n_gpus];
        if (!cJSON_IsObject(e)) return bad(x, "cuda_devices", "an array of objects {name, mem_bytes}");
        ember_status st = get_string(x, e, "name", g->name, sizeof g->name);
        if (!st) st = get_int(x, e, "mem_bytes", 0, JSON_INT_MAX, &g->mem_bytes, NULL);
        if (st) return st;
        hw->n_gpus++;
    }
    return EMBER_OK;
}

static ember_status parse_names(const json_ctx *x, const cJSON *o, edge_hw *hw, bool *have_class)
{
    char name[32] = "";
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(o, "class");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(o, "arch");
    *have_class = cls != NULL;
    if (cls) {
        int c = -1;
        if (cJSON_IsString(cls)) c = edge_class_from_name(cls->valuestring);
        if (c < 0) return bad(x, "class", "one of x86_cpu, arm64_cpu, jetson, cuda_discrete, npu_phone");
        hw->cls = (edge_class)c;
    }
    hw->arch = edge_arch_from_flags(hw->flags);
    if (arch) {
        if (cJSON_IsString(arch)) snprintf(name, sizeof name, "%s", arch->valuestring);
        if (!strcmp(name, "x86_64")) hw->arch = EDGE_ARCH_X86_64;
        else if (!strcmp(name, "aarch64")) hw->arch = EDGE_ARCH_AARCH64;
        else if (!strcmp(name, "unknown")) hw->arch = EDGE_ARCH_UNKNOWN;
        else return bad(x, "arch", "one of x86_64, aarch64, unknown");
    }
    return get_string(x, o, "cpu_model", hw->cpu_model, sizeof hw->cpu_model);
}

/* What was not given follows from what was: n_logical from the highest CPU
 * named, then edge_hw_complete, then the class rules. */
static void fill_defaults(edge_hw *hw, bool have_logical, bool have_class)
{
    if (!have_logical) {
        int highest = -1;
        for (int i = 0; i < hw->n_clusters; i++)
            for (int cpu = 0; cpu < EDGE_MAX_CPUS; cpu++)
                if (edge_cpuset_has(&hw->clusters[i].cpus, cpu) && cpu > highest) highest = cpu;
        if (highest >= 0) hw->n_logical = highest + 1;
    }
    edge_hw_complete(hw);
    for (int i = hw->numa_nodes; i < EDGE_MAX_NODES; i++) /* lists past the node count mean nothing */
        memset(&hw->node_cpus[i], 0, sizeof hw->node_cpus[i]);
    if (!have_class) hw->cls = edge_classify(hw);
}

ember_status edge_hw_parse_json(const char *text, size_t len, const char *label, edge_hw *out)
{
    json_ctx x = {label};
    cJSON *o = NULL;
    edge_hw_init(out);
    ember_status st = io_json_parse(text, len, label, "hardware profile", &o);
    if (st) return st;
    bool have_class = false, have_logical = false;
    int64_t v = 0;
    if (!cJSON_IsObject(o)) st = ember_fail(EMBER_ERR_FORMAT, "%s: hardware profile must be a JSON object", label);
    if (!st) st = parse_flags(&x, o, out);
    if (!st) st = parse_names(&x, o, out, &have_class);
    if (!st && !(st = get_int(&x, o, "n_logical", 1, EDGE_MAX_CPUS, &v, &have_logical)) && have_logical)
        out->n_logical = (int32_t)v;
    if (!st) st = get_i32(&x, o, "n_physical", 1, EDGE_MAX_CPUS, &out->n_physical);
    if (!st) st = parse_clusters(&x, o, out);
    if (!st && cJSON_GetObjectItemCaseSensitive(o, "smt_siblings"))
        st = get_cpus(&x, cJSON_GetObjectItemCaseSensitive(o, "smt_siblings"), "smt_siblings",
                      &out->smt_siblings);
    if (!st && cJSON_GetObjectItemCaseSensitive(o, "allowed_cpus"))
        st = get_cpus(&x, cJSON_GetObjectItemCaseSensitive(o, "allowed_cpus"), "allowed_cpus",
                      &out->allowed_cpus);
    if (!st) st = parse_numa(&x, o, out);
    if (!st) st = get_int(&x, o, "ram_total_bytes", 0, JSON_INT_MAX, &out->ram_total_bytes, NULL);
    if (!st) out->ram_available_bytes = out->ram_total_bytes; /* the default when not given */
    if (!st) st = get_int(&x, o, "ram_available_bytes", 0, JSON_INT_MAX, &out->ram_available_bytes, NULL);
    if (!st) st = get_int(&x, o, "mem_bw_bytes_per_s", 0, JSON_INT_MAX, &out->mem_bw_bytes_per_s, NULL);
    if (!st) st = parse_accel(&x, o, out);
    if (!st) st = get_bool(&x, o, "tegra", &out->tegra);
    if (!st) st = get_bool(&x, o, "unified_memory", &out->unified_memory);
    if (!st) st = parse_gpus(&x, o, out);
    cJSON_Delete(o);
    if (st) {
        edge_hw_init(out);
        return st;
    }
    fill_defaults(out, have_logical, have_class);
    return EMBER_OK;
}

ember_status edge_hw_override(const char *value, edge_hw *out)
{
    const char *p = value;
    while (isspace((unsigned char)*p)) p++;
    if (*p == '{') {
        ember_status st = edge_hw_parse_json(value, strlen(value), "value", out);
        if (!st) snprintf(out->source, sizeof out->source, "override:env-json");
        return st;
    }
    char *text = NULL;
    size_t len = 0;
    ember_status st = io_read_text_file(value, PROFILE_FILE_CAP, &text, &len);
    if (st) {
        edge_hw_init(out);
        return st;
    }
    st = edge_hw_parse_json(text, len, value, out);
    free(text);
    if (!st) snprintf(out->source, sizeof out->source, "override:file:%.*s",
                      (int)(sizeof out->source - 16), value);
    return st;
}
