#include "onnx/spark_decode_layout.h"

#include <string.h>

#include "base/status.h"

static const char *const form_names[] = {"f32", "f16", "qdq8", "qdq4", "qdq8a16", "qdq4a16", "lpbq4a16"};

const char *spark_onnx_form_name(spark_onnx_form form)
{
    return form_names[form];
}

int spark_onnx_form_parse(const char *name, spark_onnx_form *out)
{
    for (int i = 0; i < (int)(sizeof form_names / sizeof *form_names); i++)
        if (name && !strcmp(name, form_names[i])) {
            *out = (spark_onnx_form)i;
            return 0;
        }
    return 1;
}

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
    out->tokens = 1;
    out->form = SPARK_ONNX_F32;
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
