/* ember's host loop around an exported Spark decode step (and, when the
 * folder has one, its prefill chunk) run by ONNX Runtime: it owns the
 * per-layer caches in the graphs' layout (sliding layers a ring, full layers
 * the bucket), the masks and the rotary tables, feeds one token per decode
 * step or a chunk of N per prefill run, and writes the new keys and values
 * into their slots. Graph I/O is f32 or f16 as the folder's form says; the
 * logits handed back are f32. Everything is sized when it is opened; a step
 * allocates nothing. */
#ifndef EMBER_ONNX_SPARK_ORT_H
#define EMBER_ONNX_SPARK_ORT_H

#include <stdint.h>

#include "ember.h"
#include "llm/spark_config.h"
#include "onnx/ort_api.h"
#include "onnx/spark_decode_layout.h"

typedef struct spark_ort spark_ort;

/* What an exported folder's manifest says about its graphs. */
typedef struct spark_ort_info {
    int32_t context;       /* the bucket */
    int32_t prefill_chunk; /* tokens per prefill run; 0 when there is no prefill graph */
    spark_onnx_form form;
} spark_ort_info;

/* Reads dir's manifest and checks its graphs were exported for a model
 * with config c (its layers). */
/* The model's shape as an export's manifest records it ("model": hidden
 * size, heads, KV heads, head_dim, intermediate size, vocabulary, window),
 * so that running the graphs beside another checkpoint is refused by name
 * (a graph holds its own weights: it would run silently, or fail inside
 * ONNX Runtime on a tensor's dimensions). */
struct cJSON;
void spark_ort_model_shape_add(struct cJSON *root, const spark_config *c);

ember_status spark_ort_manifest(const spark_config *c, const char *dir, spark_ort_info *info);

/* Opens dir (an `ember export onnx` folder for a model with config c) with
 * the ONNX Runtime library and provider rt names. threads: ORT's intra-op
 * threads (0: its choice). Fails when the manifest does not match c. */
ember_status spark_ort_open(const spark_config *c, const char *dir, const ort_choice *rt,
                            int threads, spark_ort **out);
void spark_ort_free(spark_ort *s);

/* Runs one step for token `id` at the next position; *logits (vocab floats)
 * stay valid until the next step. EMBER_ERR_CONTEXT_FULL at the bucket's
 * end. */
ember_status spark_ort_step(spark_ort *s, int32_t id, const float **logits);

/* The prefill graph's chunk size (0: the folder has none). */
int32_t spark_ort_chunk_tokens(const spark_ort *s);
/* Runs the prefill graph on the next spark_ort_chunk_tokens ids;
 * *logits: one row of vocab floats per token, valid until the next run.
 * EMBER_ERR_UNSUPPORTED without a prefill graph, EMBER_ERR_CONTEXT_FULL
 * when the chunk would pass the bucket's end. */
ember_status spark_ort_chunk(spark_ort *s, const int32_t *ids, const float **logits);

/* The sliding layers' rings as they lie (spark_ort_ring_bytes bytes), and
 * back: what a conversation keeps to return to an earlier position
 * (llm/prefix.h). spark_ort_rewind takes s back to position pos (at most
 * its position) with rings saved at pos (NULL when pos is the position). */
size_t spark_ort_ring_bytes(const spark_ort *s);
void spark_ort_ring_save(const spark_ort *s, void *dst);
void spark_ort_rewind(spark_ort *s, int32_t pos, const void *rings);

/* Forgets every token (caches masked again). */
void spark_ort_reset(spark_ort *s);

int32_t spark_ort_position(const spark_ort *s);
int32_t spark_ort_context(const spark_ort *s);
spark_onnx_form spark_ort_form(const spark_ort *s);
const char *spark_ort_runtime_version(const spark_ort *s);

#endif
