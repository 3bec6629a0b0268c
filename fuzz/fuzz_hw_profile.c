/* libFuzzer target: the hardware profile JSON (EMBER_HW_PROFILE is untrusted
 * input). Any input gives a profile or an error, never a crash, leak or
 * undefined behaviour; a profile that parses prints to JSON that parses to
 * the same JSON again, and the derivation on it gives usable settings.
 * Seeds (fuzz/corpus/hw_profile): `ember probe --json --root` of each
 * tests/data/hw tree, and two hand-written overrides. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edge/hw_json.h"
#include "edge/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *print(const edge_hw *hw)
{
    cJSON *o = edge_hw_to_json(hw);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static edge_hw hw, again; /* large; one input at a time */
    if (edge_hw_parse_json((const char *)data, size, "fuzz", &hw) != EMBER_OK) return 0;
    if (hw.n_logical < 1 || hw.n_physical < 1 || hw.n_clusters < 1 || hw.n_clusters > EDGE_MAX_CLUSTERS ||
        hw.numa_nodes < 1 || (unsigned)hw.cls >= EDGE_N_CLASSES || hw.n_gpus > EDGE_MAX_GPUS)
        __builtin_trap();
    char *first = print(&hw);
    if (!first) return 0;
    if (edge_hw_parse_json(first, strlen(first), "fuzz-again", &again) != EMBER_OK) __builtin_trap();
    char *second = print(&again);
    if (second && strcmp(first, second)) __builtin_trap();
    free(first);
    free(second);

    /* a Spark model of the 1.7B shape (tests/unit/test_profile.c works it out) */
    const edge_model_info m = {.kind = EDGE_MODEL_LLM, .stored_type = EMBER_TYPE_BF16,
                               .n_weights = 1619576832LL, .weight_bytes = 3239153664LL,
                               .read_weights_per_step = 1619576832LL, .n_full = 7, .n_sliding = 21,
                               .window = 512, .kv_heads = 2, .head_dim = 256, .max_positions = 1 << 20,
                               .hidden = 2048, .intermediate = 6144, .n_heads = 8, .vocab = 131072};
    edge_profile p;
    if (edge_derive(&hw, &m, NULL, &p) != EMBER_OK) __builtin_trap();
    if (p.n_threads < 1 || edge_cpuset_count(&p.decode_cpus) != p.n_threads ||
        edge_cpuset_count(&p.audio_cpus) < 1 || p.max_seqs < 0 || p.n_ramp < 2 || p.kv_budget_bytes < 0)
        __builtin_trap();
    return 0;
}
