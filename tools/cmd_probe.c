/* `ember probe`: the hardware profile of this machine (or of a snapshot tree
 * with --root), and with --derive MODEL the settings ember derives for that
 * model on it, each with its reason. EMBER_HW_PROFILE (a JSON object or the
 * path of a JSON file) replaces the probe; --root wins over it. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_public.h"
#include "ember.h"

static const char probe_usage[] =
    "usage: ember probe [--json] [--root DIR] [--derive MODEL_DIR [--context N] [--kv-type f32|f16|q8_0]]\n"
    "  --json              print JSON (the hardware profile; with --derive {hardware, model, profile})\n"
    "  --root DIR          probe the /proc and /sys tree under DIR instead of this machine\n"
    "  --derive MODEL_DIR  the settings derived for this model, each with its reason\n"
    "  --context N         tokens per sequence for the KV budget (default min(4096, model maximum))\n"
    "  --kv-type T         KV cache format for the budget (default f32)\n"
    "EMBER_HW_PROFILE=<JSON object or path of a JSON file> replaces the probe (not with --root).\n";

static const char *str(const cJSON *o, const char *key)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return v ? v : "";
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

/* A list of cpus as ranges: "0-3,6". */
static void print_cpus(const cJSON *cpus)
{
    const cJSON *e = cJSON_IsArray(cpus) ? cpus->child : NULL;
    for (int first = 1; e; first = 0) {
        int lo = e->valueint, hi = lo;
        while (e->next && e->next->valueint == hi + 1) {
            e = e->next;
            hi++;
        }
        printf(hi == lo ? "%s%d" : "%s%d-%d", first ? "" : ",", lo, hi);
        e = e->next;
    }
}

static int has_flag(const cJSON *flags, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, flags)
    {
        if (e->valuestring && !strcmp(e->valuestring, name)) return 1;
    }
    return 0;
}

static void print_hw_text(const cJSON *hw)
{
    /* the ISA flags in the probe's own order, then any others it names */
    static const char *const order[] = {
        "avx2", "fma", "f16c", "avx512", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile",
        "amx_bf16", "amx_int8", "neon", "fp16_arith", "dotprod", "i8mm", "bf16", "sve", "sve2", "sme"};
    const size_t n_order = sizeof order / sizeof order[0];
    const cJSON *flags = cJSON_GetObjectItemCaseSensitive(hw, "cpu_flags"), *e;
    const char *cpu = str(hw, "cpu_model");
    printf("class        %s (source: %s)\n", str(hw, "class"), str(hw, "source"));
    printf("arch         %s\n", str(hw, "arch"));
    printf("cpu          %s\n", cpu[0] ? cpu : "(unknown)");
    printf("flags       ");
    for (size_t i = 0; i < n_order; i++)
        if (has_flag(flags, order[i])) printf(" %s", order[i]);
    cJSON_ArrayForEach(e, flags)
    {
        const char *name = e->valuestring ? e->valuestring : "";
        size_t i = 0;
        while (i < n_order && strcmp(order[i], name)) i++;
        if (i == n_order) printf(" %s", name);
    }
    printf("\ncores        %d logical, %d physical\n", (int)num(hw, "n_logical"), (int)num(hw, "n_physical"));
    int i = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(hw, "clusters"))
    {
        printf("cluster %-4d cpus ", i++);
        print_cpus(cJSON_GetObjectItemCaseSensitive(e, "cpus"));
        printf(", max %lld kHz, capacity %d\n", (long long)num(e, "max_khz"), (int)num(e, "capacity"));
    }
    printf("numa nodes   %d\n", (int)num(hw, "numa_nodes"));
    printf("memory       %.2f GiB total, %.2f GiB available\n", num(hw, "ram_total_bytes") / 1073741824.0,
           num(hw, "ram_available_bytes") / 1073741824.0);
    int tegra = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(hw, "tegra"));
    printf("accelerator  %s%s%s\n", str(hw, "accelerator"), tegra ? " (tegra" : "",
           tegra ? ", unified memory)" : "");
    i = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(hw, "cuda_devices"))
        printf("gpu %-8d %s\n", i++, str(e, "name"));
}

/* Parses the library's JSON (ember_free'd here); NULL with a message. */
static cJSON *parse(char *json)
{
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    ember_free(json);
    if (!o) fprintf(stderr, "ember probe: out of memory\n");
    return o;
}

static int print_json(cJSON *o)
{
    char *text = o ? cJSON_Print(o) : NULL;
    if (!text) {
        fprintf(stderr, "ember probe: out of memory\n");
        return 1;
    }
    printf("%s\n", text);
    cJSON_free(text);
    return 0;
}

static int derive(const char *model_dir, const ember_profile_params *pp, int json)
{
    char *text = NULL;
    if (ember_profile_derive(model_dir, pp, &text) != EMBER_OK) {
        fprintf(stderr, "ember probe: %s\n", ember_last_error());
        return 1;
    }
    cJSON *o = parse(text);
    if (!o) return 1;
    int rc = 0;
    if (json) {
        rc = print_json(o);
    } else {
        const cJSON *hw = cJSON_GetObjectItemCaseSensitive(o, "hardware");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "model");
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "profile"), "why");
        const cJSON *e;
        printf("%s on %s (%s): %s, %lld weights, %.2f GB as stored (%s)\n", model_dir, str(hw, "class"),
               str(hw, "source"), str(m, "kind"), (long long)num(m, "n_weights"),
               num(m, "weight_bytes") / 1e9, str(m, "stored_type"));
        cJSON_ArrayForEach(e, why) printf("  %s\n", e->valuestring ? e->valuestring : "");
    }
    cJSON_Delete(o);
    return rc;
}

int cmd_probe(int argc, char **argv)
{
    enum { OPT_JSON = 1, OPT_ROOT, OPT_DERIVE, OPT_CONTEXT, OPT_KV, OPT_HELP };
    static const struct option opts[] = {{"json", no_argument, 0, OPT_JSON},
                                         {"root", required_argument, 0, OPT_ROOT},
                                         {"derive", required_argument, 0, OPT_DERIVE},
                                         {"context", required_argument, 0, OPT_CONTEXT},
                                         {"kv-type", required_argument, 0, OPT_KV},
                                         {"help", no_argument, 0, OPT_HELP},
                                         {0, 0, 0, 0}};
    int json = 0, c;
    const char *root = NULL, *model_dir = NULL;
    ember_profile_params pp = ember_profile_default_params();
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case OPT_JSON: json = 1; break;
        case OPT_ROOT: root = optarg; break;
        case OPT_DERIVE: model_dir = optarg; break;
        case OPT_CONTEXT:
            pp.context = (int32_t)strtol(optarg, &end, 10);
            if (*end || pp.context < 1) {
                fprintf(stderr, "ember probe: --context needs a positive integer, not '%s'\n", optarg);
                return 2;
            }
            break;
        case OPT_KV:
            pp.kv_type = !strcmp(optarg, "f32")    ? EMBER_TYPE_F32
                            : !strcmp(optarg, "f16")  ? EMBER_TYPE_F16
                            : !strcmp(optarg, "q8_0") ? EMBER_TYPE_Q8_0
                                                      : EMBER_TYPE_NONE;
            if (!pp.kv_type) {
                fprintf(stderr, "ember probe: --kv-type is f32, f16 or q8_0, not '%s'\n", optarg);
                return 2;
            }
            break;
        case OPT_HELP: fputs(probe_usage, stdout); return 0;
        default: fputs(probe_usage, stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ember probe: unexpected argument '%s'\n%s", argv[optind], probe_usage);
        return 2;
    }
    pp.root = root;
    pp.hardware = root ? NULL : getenv("EMBER_HW_PROFILE");
    /* the hardware first, so that its errors name EMBER_HW_PROFILE when it
     * came from there; then the model's */
    char *text = NULL;
    if (ember_hardware_probe(&pp, &text) != EMBER_OK) {
        fprintf(stderr, "ember probe: %s%s\n", pp.hardware && *pp.hardware ? "EMBER_HW_PROFILE: " : "",
                ember_last_error());
        return 1;
    }
    if (model_dir) {
        ember_free(text);
        return derive(model_dir, &pp, json);
    }
    cJSON *hw = parse(text);
    if (!hw) return 1;
    int rc = 0;
    if (json) rc = print_json(hw);
    else print_hw_text(hw);
    cJSON_Delete(hw);
    return rc;
}
