/* The calibration run of the a16 export forms: ember's own model (native
 * kernels, f32 activations) runs sample token ids, and the forward pass
 * records the min and max of every activation the graph quantizes to
 * uint16 (llm/forward.h's act_range); the exporter turns each range into a
 * QuantizeLinear scale and zero point (graph_ops.h go_qdq16). */
#ifndef EMBER_ONNX_CALIBRATE_H
#define EMBER_ONNX_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

/* Runs ids[0..n) through a native session of `context` positions, one
 * token per step (every row reaches the lm head), starting over when the
 * context is full; range gets spark_a16_slots(&m->cfg) [min, max] pairs,
 * each widened to hold 0. */
ember_status spark_a16_calibrate(const ember_model *m, const int32_t *ids, size_t n, int32_t context,
                                 float *range);

#endif
