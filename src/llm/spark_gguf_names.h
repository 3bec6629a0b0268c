/* The spark2_5 GGUF tensor names, shared by the reader (spark_gguf.c) and
 * the writer (spark_gguf_write.c): one table for both directions. Internal
 * to src/llm. */
#ifndef EMBER_LLM_SPARK_GGUF_NAMES_H
#define EMBER_LLM_SPARK_GGUF_NAMES_H

#include <stddef.h>

#include "llm/quant_mix.h"

#define SPARK_GGUF_ARCH "spark2_5"

/* What a per-layer entry holds in spark_layer, and the length of a vector. */
typedef enum kind { K_MAT, K_VEC, K_QKV, K_QKV_BIAS } kind;
typedef enum len_dim { L_NONE, L_HIDDEN, L_QKV, L_HEADS, L_INTER } len_dim;

typedef struct layer_name {
    const char *gguf; /* after "blk.{i}." */
    const char *hf;   /* after "model.layers.{i}." */
    kind k;
    size_t field;     /* offsetof(spark_layer, ...) */
    len_dim len;      /* vectors */
    qm_role role;     /* matrices: what the quantization mix calls them */
} layer_name;

#define SPARK_GGUF_N_LAYER_NAMES 14
/* Per layer, in the order written: blk.{i}.gguf <-> model.layers.{i}.hf. */
extern const layer_name spark_gguf_layer_names[SPARK_GGUF_N_LAYER_NAMES];

#endif
