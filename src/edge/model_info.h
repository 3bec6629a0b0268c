/* What the derived profile needs to know about a model: how many weights,
 * how many of them a decode step reads, and the KV cache geometry by layer
 * type. Read from a checkpoint directory's config.json (Spark-X2.5 or
 * Qwen3-TTS) and the sizes of its safetensors files; nothing is loaded. */
#ifndef EMBER_EDGE_MODEL_INFO_H
#define EMBER_EDGE_MODEL_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"

typedef enum edge_model_kind { EDGE_MODEL_LLM = 0, EDGE_MODEL_TTS } edge_model_kind;

typedef struct edge_model_info {
    edge_model_kind kind;
    ember_type stored_type; /* F32, F16 or BF16 (config.json torch_dtype) */
    int64_t n_weights;      /* parameters, from the geometry */
    int64_t weight_bytes;   /* as stored: the safetensors files' total size, or
                               n_weights x the stored element size without files */
    /* parameters read per decode step: per token (LLM: every matrix, the
     * output head included) or per audio frame (TTS: the talker once, the
     * code predictor once per remaining codebook) */
    int64_t read_weights_per_step;
    /* the decoding stack's cache (the LLM, or the TTS talker) */
    int32_t n_full, n_sliding, window; /* window counts the query itself */
    int32_t kv_heads, head_dim;
    int64_t kv_fixed_f32_bytes; /* caches of a fixed size per sequence, f32 (TTS predictor) */
    bool kv_f32_only;           /* the TTS stacks keep f32 caches whatever is asked */
    int32_t max_positions;
    /* for the per-sequence scratch estimate */
    int32_t hidden, intermediate, n_heads, vocab;
} edge_model_info;

/* From config.json text; file_bytes is the size of the weight files (0:
 * unknown, then n_weights x the stored element size). */
ember_status edge_model_info_from_config(const char *json, size_t len, const char *label,
                                         int64_t file_bytes, edge_model_info *out);

/* From a checkpoint directory: DIR/config.json plus every *.safetensors
 * under DIR (recursively: a TTS checkpoint keeps its codec in
 * speech_tokenizer/). Or from a GGUF model file (spark2_5 or qwen3_tts):
 * the config its metadata holds, its size, and its matrices' stored format. */
ember_status edge_model_info_load(const char *dir, edge_model_info *out);

#endif
