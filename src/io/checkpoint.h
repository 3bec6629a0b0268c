/* A Hugging Face checkpoint directory: config.json plus either one
 * model.safetensors or shards listed in model.safetensors.index.json.
 * Lookups record which tensors were used so that a loader can reject
 * tensors it does not know about. */
#ifndef EMBER_IO_CHECKPOINT_H
#define EMBER_IO_CHECKPOINT_H

#include "ember.h"
#include "io/tensor.h"

typedef struct ck_dir ck_dir;

/* Opens the directory: reads config.json (kept as text, NUL-terminated) and
 * maps every safetensors file. With an index, every shard it names must exist
 * and every tensor it lists must be in the shard it names (and no tensor may
 * appear in two shards). */
ember_status ck_open(const char *dir, ck_dir **out);
void ck_close(ck_dir *ck);

const char *ck_path(const ck_dir *ck);
const char *ck_config_json(const ck_dir *ck);
size_t ck_config_len(const ck_dir *ck);

/* Finds a tensor by name and marks it used. NULL if absent. *file (optional)
 * receives the file name that holds it, for error messages. */
const et_tensor *ck_get(ck_dir *ck, const char *name, const char **file);

/* EMBER_OK if every tensor was fetched with ck_get, else an error naming the
 * first unused tensor and its file ("unexpected tensor"). */
ember_status ck_check_all_used(const ck_dir *ck);

/* The weight map of model.safetensors.index.json. Internal: exposed for the
 * tests and the fuzzer (fuzz/fuzz_index.c). */
typedef struct ck_index_entry {
    char *tensor;
    size_t shard;             /* index into ck_index.shards */
} ck_index_entry;

typedef struct ck_index {
    char **shards;            /* distinct shard file names, sorted */
    size_t n_shards;
    ck_index_entry *entries;  /* sorted by tensor name, names unique */
    size_t n_entries;
} ck_index;

/* Parses index JSON held in (json, len), not NUL-terminated. `label` names
 * the file in error messages. Requires an object with a non-empty
 * "weight_map" object of tensor name -> plain shard file name (no '/', '\\'
 * or ".."); a tensor listed twice is an error. On failure *out is empty. */
ember_status ck_parse_index(const char *json, size_t len, const char *label, ck_index *out);
void ck_index_free(ck_index *idx);

#endif
