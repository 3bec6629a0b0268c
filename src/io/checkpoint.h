/* A Hugging Face checkpoint directory: config.json plus either one
 * model.safetensors or shards listed in model.safetensors.index.json.
 * Lookups record which tensors were used so that a loader can reject
 * tensors it does not know about. */
#ifndef EMBER_IO_CHECKPOINT_H
#define EMBER_IO_CHECKPOINT_H

#include "ember.h"
#include "io/gguf.h"
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

/* A GGUF file opened as a checkpoint. The model code supplies the mapping,
 * so this layer knows nothing of any architecture:
 *   config_json: turns the file's metadata into the config.json text the
 *     model's own parser reads (malloc'd; *len bytes, NUL-terminated), or
 *     fails with a message naming the file and key (wrong architecture, a
 *     missing or mistyped key);
 *   hf_name: the Hugging Face name of a GGUF tensor, written into buf (cap
 *     bytes) and returned; NULL for a tensor the model does not know.
 * `model` names the architecture in messages ("spark2_5"). */

typedef struct ck_gguf_map {
    const char *model;
    ember_status (*config_json)(const gguf_file *f, char **json, size_t *len);
    const char *(*hf_name)(const char *gguf_name, char *buf, size_t cap);
} ck_gguf_map;

/* Maps `path` read-only. Tensors appear under their Hugging Face names with
 * shape [rows, cols] (GGUF ne reversed) and the file's dtypes (possibly
 * ET_Q8_0 / ET_Q4_0); ck_config_json returns the synthesized text. A tensor
 * the map does not know, or two mapping to one name, is an error. */
ember_status ck_open_gguf(const char *path, const ck_gguf_map *map, ck_dir **out);

/* The GGUF file behind a checkpoint opened with ck_open_gguf, else NULL. */
const gguf_file *ck_gguf(const ck_dir *ck);

/* Finds a tensor by name and marks it used. NULL if absent. *file (optional)
 * receives the file name that holds it, for error messages. */
const et_tensor *ck_get(ck_dir *ck, const char *name, const char **file);

/* The tensors of the checkpoint in name order (for writers that copy a
 * whole checkpoint); ck_tensor_at does not mark a tensor used. */
size_t ck_count(const ck_dir *ck);
const et_tensor *ck_tensor_at(const ck_dir *ck, size_t i);

/* Drops the resident pages of every mapped file: the loader calls it when it
 * converted every tensor into memory of its own, so the file pages would
 * only inflate RSS. Tensor views stay valid (pages fault back in). */
void ck_drop_resident(ck_dir *ck);

/* Marks every tensor whose name starts with prefix as used: a part of the
 * file the model deliberately does not read (the speech tokenizer's encoder
 * when only decoding). */
void ck_skip_prefix(ck_dir *ck, const char *prefix);

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
