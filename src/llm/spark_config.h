/* Spark-X2.5 hyper-parameters, read from a Hugging Face config.json.
 * The parser is pure (text in, struct out) so it can be fuzzed. */
#ifndef EMBER_LLM_SPARK_CONFIG_H
#define EMBER_LLM_SPARK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "nn/kv.h"

#define SPARK_MAX_LAYERS 256

typedef enum spark_layer_type {
    SPARK_SLIDING = 0, /* "sliding_attention": sees itself and window-1 keys */
    SPARK_FULL = 1,    /* "full_attention": sees every earlier key */
    SPARK_LAYER_TYPES
} spark_layer_type;

typedef enum spark_gate_mode {
    SPARK_GATE_NONE = 0, /* headwise_attn_output_gate: false */
    SPARK_GATE_SIGMOID,
    SPARK_GATE_SILU
} spark_gate_mode;

typedef struct spark_rope {
    float theta;       /* rope_theta */
    float factor;      /* partial_rotary_factor */
    int32_t rot_dims;  /* int(head_dim * factor): leading dims rotated */
} spark_rope;

typedef struct spark_config {
    int32_t n_layers, hidden, intermediate;
    int32_t n_heads, n_kv_heads, head_dim;
    int32_t vocab, sliding_window, max_positions;
    float rms_eps;
    spark_gate_mode gate;
    bool attention_bias, mlp_bias, tie_embeddings;
    int32_t bos_id, eos_id, pad_id; /* -1 when absent */
    spark_rope rope[SPARK_LAYER_TYPES];
    uint8_t layer_type[SPARK_MAX_LAYERS]; /* spark_layer_type per layer */
} spark_config;

/* Parses config.json text (json need not be NUL-terminated). `label` names the
 * file in messages. Every value ember cannot run is rejected naming its key. */
ember_status spark_config_parse(const char *json, size_t len, const char *label,
                                spark_config *out);

int32_t spark_config_count_layers(const spark_config *c, spark_layer_type t);

/* The KV cache shape of a Spark model: its sliding layers' window, full
 * layers' 0. */
void spark_kv_shape(const spark_config *c, kv_shape *out);

#endif
