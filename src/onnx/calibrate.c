#include "onnx/calibrate.h"

#include <string.h>

#include "base/status.h"
#include "llm/session_internal.h"
#include "llm/spark.h"
#include "onnx/spark_decode_graph.h"

_Static_assert(SPARK_A16_PER_LAYER == LLM_RANGES_PER_LAYER,
               "the graph quantizes the activations the forward pass records");

ember_status spark_a16_calibrate(const ember_model *m, const int32_t *ids, size_t n, int32_t context,
                                 float *range)
{
    if (m->onnx) return ember_fail(EMBER_ERR_INVALID_ARG, "calibration: the model must run ember's own kernels");
    if (!ids || n == 0) return ember_fail(EMBER_ERR_INVALID_ARG, "calibration: no sample token ids");
    memset(range, 0, 2 * (size_t)spark_a16_slots(&m->cfg) * sizeof *range);
    ember_session_params sp = ember_session_default_params();
    sp.max_context = context;
    sp.prefill_chunk = 1;
    ember_session *s;
    ember_status st = ember_session_create(m, &sp, &s);
    if (st) return st;
    s->work.act_range = range;
    for (size_t i = 0; !st && i < n; i++) {
        if (ember_session_position(s) == context) ember_session_reset(s);
        st = ember_session_decode(s, ids[i]);
    }
    ember_session_free(s);
    return st ? ember_fail_prefix(st, "calibration") : EMBER_OK;
}
