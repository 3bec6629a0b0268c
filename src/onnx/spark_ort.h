/* ember's host loop around an exported Spark decode step run by ONNX
 * Runtime: it owns the per-layer caches in the graph's layout (sliding
 * layers a ring, full layers the bucket), the masks and the rotary tables,
 * feeds one token per step and writes the step's new keys and values into
 * their slots. Everything is sized when it is opened; a step allocates
 * nothing. */
#ifndef EMBER_ONNX_SPARK_ORT_H
#define EMBER_ONNX_SPARK_ORT_H

#include <stdint.h>

#include "ember.h"
#include "llm/spark_config.h"

typedef struct spark_ort spark_ort;

/* Reads the context bucket of dir's decode graph from its manifest and
 * checks the graph was exported for a model with config c (its layers). */
ember_status spark_ort_manifest(const spark_config *c, const char *dir, int32_t *context);

/* Opens dir (an `ember export onnx` folder for a model with config c) with
 * the ONNX Runtime library at ort_lib. threads: ORT's intra-op threads (0:
 * its choice). Fails when the manifest does not match c. */
ember_status spark_ort_open(const spark_config *c, const char *dir, const char *ort_lib,
                            int threads, spark_ort **out);
void spark_ort_free(spark_ort *s);

/* Runs one step for token `id` at the next position; *logits (vocab floats)
 * stay valid until the next step. EMBER_ERR_CONTEXT_FULL at the bucket's
 * end. */
ember_status spark_ort_step(spark_ort *s, int32_t id, const float **logits);

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
const char *spark_ort_runtime_version(const spark_ort *s);

#endif
