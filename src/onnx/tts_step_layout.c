#include "onnx/tts_step_layout.h"

#include <string.h>

#include "base/status.h"

static const char *const kind_names[] = {"talker", "predictor", "talker_prefill"};
static const char *const files[] = {"talker.onnx", "predictor.onnx", "talker_prefill.onnx"};

const char *tts_graph_file(tts_graph_kind kind)
{
    return files[kind];
}

const char *tts_graph_kind_name(tts_graph_kind kind)
{
    return kind_names[kind];
}

ember_status tts_step_layout_of(const tts_config *c, tts_graph_kind kind, int32_t context,
                                int32_t tokens, spark_onnx_form form, tts_step_layout *out)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
    out->form = form;
    out->in_dim = c->talker.hidden;
    out->tokens = 1;
    if (kind != TTS_GRAPH_PREDICTOR) {
        if (context < 2 || context > c->talker.max_positions)
            return ember_fail(EMBER_ERR_INVALID_ARG, "context %d must be in [2, %d] (the talker's "
                              "max_position_embeddings)", context, c->talker.max_positions);
        out->stack = &c->talker;
        out->context = context;
        if (kind == TTS_GRAPH_TALKER_CHUNK && (tokens < 2 || tokens > context))
            return ember_fail(EMBER_ERR_INVALID_ARG, "talker prefill chunk %d must be in [2, %d] (the context)",
                              tokens, context);
        if (kind == TTS_GRAPH_TALKER_CHUNK) out->tokens = tokens;
    } else {
        /* a frame: the talker's state, E(c0), then codebooks 1..n_groups-2
         * fed back (the last one only feeds the talker) */
        out->stack = &c->predictor;
        out->context = c->n_groups;
        out->heads = c->n_groups - 1;
    }
    out->slots = out->context - 1;
    out->half = out->stack->head_dim / 2;
    return EMBER_OK;
}
