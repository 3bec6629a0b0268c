/* `ember probe`: the hardware profile of this machine (or of a snapshot tree
 * with --root), and with --derive MODEL the settings ember derives for that
 * model on it, each with its reason. EMBER_HW_PROFILE (a JSON object or the
 * path of a JSON file) replaces the probe; --root wins over it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edge/hw_json.h"
#include "edge/model_info.h"
#include "edge/probe.h"
#include "edge/profile.h"

static const char probe_usage[] =
    "usage: ember probe [--json] [--root DIR] [--derive MODEL_DIR [--context N] [--kv-type f32|f16|q8_0]]\n"
    "  --json              print JSON (the hardware profile; with --derive {hardware, model, profile})\n"
    "  --root DIR          probe the /proc and /sys tree under DIR instead of this machine\n"
    "  --derive MODEL_DIR  the settings derived for this model, each with its reason\n"
    "  --context N         tokens per sequence for the KV budget (default min(4096, model maximum))\n"
    "  --kv-type T         KV cache format for the budget (default f32)\n"
    "EMBER_HW_PROFILE=<JSON object or path of a JSON file> replaces the probe (not with --root).\n";

static void print_hw_text(const edge_hw *hw)
{
    printf("class        %s (source: %s)\n", edge_class_name(hw->cls), hw->source);
    printf("arch         %s\n", edge_arch_name(hw->arch));
    printf("cpu          %s\n", hw->cpu_model[0] ? hw->cpu_model : "(unknown)");
    printf("flags       ");
    for (int f = 0; f < EDGE_N_FLAGS; f++)
        if (edge_has(hw, (edge_flag)f)) printf(" %s", edge_flag_name((edge_flag)f));
    printf("\ncores        %d logical, %d physical\n", hw->n_logical, hw->n_physical);
    for (int i = 0; i < hw->n_clusters; i++) {
        char cpus[512];
        edge_cpuset_format(&hw->clusters[i].cpus, cpus, sizeof cpus);
        printf("cluster %-4d cpus %s, max %lld kHz, capacity %d\n", i, cpus,
               (long long)hw->clusters[i].max_khz, hw->clusters[i].capacity);
    }
    printf("numa nodes   %d\n", hw->numa_nodes);
    printf("memory       %.2f GiB total, %.2f GiB available\n", hw->ram_total_bytes / 1073741824.0,
           hw->ram_available_bytes / 1073741824.0);
    printf("accelerator  %s%s%s%s\n",
           hw->accel == EDGE_ACCEL_NPU ? "npu:" : hw->accel == EDGE_ACCEL_CUDA_UNIFIED ? "cuda_unified"
                                              : hw->accel == EDGE_ACCEL_CUDA_DISCRETE ? "cuda_discrete"
                                                                                      : "none",
           hw->accel == EDGE_ACCEL_NPU ? hw->npu_vendor : "", hw->tegra ? " (tegra" : "",
           hw->tegra ? ", unified memory)" : "");
    for (int i = 0; i < hw->n_gpus; i++) printf("gpu %-8d %s\n", i, hw->gpus[i].name);
}

static int print_json(cJSON *o)
{
    char *text = o ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (!text) {
        fprintf(stderr, "ember probe: out of memory\n");
        return 1;
    }
    printf("%s\n", text);
    free(text);
    return 0;
}

static int derive(const edge_hw *hw, const char *model_dir, const edge_derive_opts *opts, int json)
{
    edge_model_info m;
    edge_profile p;
    if (edge_model_info_load(model_dir, &m) != EMBER_OK || edge_derive(hw, &m, opts, &p) != EMBER_OK) {
        fprintf(stderr, "ember probe: %s\n", ember_last_error());
        return 1;
    }
    if (json) {
        cJSON *o = cJSON_CreateObject(), *model = cJSON_CreateObject();
        if (o && model) {
            cJSON_AddItemToObject(o, "hardware", edge_hw_to_json(hw));
            cJSON_AddItemToObject(o, "model", model);
            cJSON_AddStringToObject(model, "kind", m.kind == EDGE_MODEL_TTS ? "tts" : "llm");
            cJSON_AddStringToObject(model, "stored_type", edge_type_name(m.stored_type));
            cJSON_AddNumberToObject(model, "n_weights", (double)m.n_weights);
            cJSON_AddNumberToObject(model, "weight_bytes", (double)m.weight_bytes);
            cJSON_AddItemToObject(o, "profile", edge_profile_to_json(&p));
        } else {
            cJSON_Delete(model);
        }
        return print_json(o);
    }
    printf("%s on %s (%s): %s, %lld weights, %.2f GB as stored (%s)\n", model_dir,
           edge_class_name(hw->cls), hw->source, m.kind == EDGE_MODEL_TTS ? "tts" : "llm",
           (long long)m.n_weights, m.weight_bytes / 1e9, edge_type_name(m.stored_type));
    for (int i = 0; i < EDGE_N_WHY; i++) printf("  %s\n", p.why[i]);
    return 0;
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
    edge_derive_opts dopts = {0, EMBER_TYPE_NONE, 0};
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case OPT_JSON: json = 1; break;
        case OPT_ROOT: root = optarg; break;
        case OPT_DERIVE: model_dir = optarg; break;
        case OPT_CONTEXT:
            dopts.context = (int32_t)strtol(optarg, &end, 10);
            if (*end || dopts.context < 1) {
                fprintf(stderr, "ember probe: --context needs a positive integer, not '%s'\n", optarg);
                return 2;
            }
            break;
        case OPT_KV:
            dopts.kv_type = !strcmp(optarg, "f32")    ? EMBER_TYPE_F32
                            : !strcmp(optarg, "f16")  ? EMBER_TYPE_F16
                            : !strcmp(optarg, "q8_0") ? EMBER_TYPE_Q8_0
                                                      : EMBER_TYPE_NONE;
            if (!dopts.kv_type) {
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
    edge_hw *hw = malloc(sizeof *hw);
    if (!hw) {
        fprintf(stderr, "ember probe: out of memory\n");
        return 1;
    }
    ember_status st = root ? edge_probe(root, hw) : edge_hw_detect("/", getenv("EMBER_HW_PROFILE"), hw);
    int rc;
    if (st) {
        fprintf(stderr, "ember probe: %s\n", ember_last_error());
        rc = 1;
    } else if (model_dir) {
        rc = derive(hw, model_dir, &dopts, json);
    } else if (json) {
        rc = print_json(edge_hw_to_json(hw));
    } else {
        print_hw_text(hw);
        rc = 0;
    }
    free(hw);
    return rc;
}
