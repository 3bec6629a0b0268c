#include "onnx/spark_decode_layout.h"

#include "base/status.h"

const char *spark_decode_type_name(int type)
{
    return type == SPARK_FULL ? "full" : "sliding";
}

ember_status spark_decode_layout_of(const spark_config *c, int32_t context,
                                    spark_decode_layout *out)
{
    if (context < 2 || context > c->max_positions)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "context %d must be in [2, %d] (max_position_embeddings)",
                          context, c->max_positions);
    out->context = context;
    for (int t = 0; t < SPARK_LAYER_TYPES; t++) {
        out->has_type[t] = spark_config_count_layers(c, (spark_layer_type)t) > 0;
        out->half[t] = c->rope[t].rot_dims / 2;
    }
    /* past entries a step may see: window-1 in a ring, or the whole bucket */
    int32_t ring = c->sliding_window - 1;
    out->slots[SPARK_FULL] = context - 1;
    out->slots[SPARK_SLIDING] = ring < context - 1 ? ring : context - 1;
    return EMBER_OK;
}
