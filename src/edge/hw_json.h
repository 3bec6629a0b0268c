/* The hardware profile as JSON: what `ember probe --json` prints and what
 * EMBER_HW_PROFILE may hold. The parser takes untrusted text (it is fuzzed):
 * unknown keys are ignored, missing ones take the defaults of edge_hw_init
 * (then edge_hw_complete fills what follows from the rest: n_physical,
 * clusters, class), a key of the wrong type or out of range is an error
 * naming the key.
 *
 * Keys: class, arch, cpu_model, cpu_flags [names], n_logical, n_physical,
 * clusters [{cpus [..], max_khz, capacity}] fastest first, smt_siblings [..],
 * allowed_cpus [..] (empty: all),
 * numa_nodes, numa_cpus [[..] per node], ram_total_bytes,
 * ram_available_bytes, mem_bw_bytes_per_s, accelerator ("none",
 * "cuda_discrete", "cuda_unified", "npu:<vendor>"), tegra, unified_memory,
 * cuda_devices [{name, mem_bytes}], source (printed, never read back). */
#ifndef EMBER_EDGE_HW_JSON_H
#define EMBER_EDGE_HW_JSON_H

#include <cjson/cJSON.h>

#include "edge/hw_profile.h"

/* The profile as a JSON object; NULL when out of memory. */
cJSON *edge_hw_to_json(const edge_hw *hw);

/* Parses a profile from `len` bytes of JSON (need not be NUL-terminated);
 * `label` names the text in errors. out->source is left "probe": the
 * caller says where the text came from. */
ember_status edge_hw_parse_json(const char *text, size_t len, const char *label, edge_hw *out);

/* EMBER_HW_PROFILE's value: a JSON object (first non-blank byte '{') ->
 * source "override:env-json"; anything else is a path to a JSON file ->
 * source "override:file:PATH". */
ember_status edge_hw_override(const char *value, edge_hw *out);

#endif
