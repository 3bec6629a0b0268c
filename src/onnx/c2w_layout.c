/* The shapes of the speech decoder's streaming graphs (c2w_graph.h),
 * shared by the graph writer, the manifest and the ONNX Runtime host loop:
 * the state tensors, the stages, the exported chunk sizes and files. */
#include "onnx/c2w_layout.h"

#include <stdio.h>

static const int32_t dilations[3] = {1, 3, 9};

int c2w_graph_states(const c2w_config *c, c2w_state_info *out)
{
    const tts_stack_config *t = &c->transformer;
    int n = 0;
#define STATE(r, d0, d1, d2, ...)                                                         \
    do {                                                                                  \
        c2w_state_info *s = &out[n++];                                                    \
        s->rank = r;                                                                      \
        s->dims[0] = d0;                                                                  \
        s->dims[1] = d1;                                                                  \
        s->dims[2] = d2;                                                                  \
        snprintf(s->name, sizeof s->name, __VA_ARGS__);                                   \
    } while (0)
#define MEANING(...) snprintf(out[n - 1].meaning, sizeof out[n - 1].meaning, __VA_ARGS__)
    STATE(3, 1, c->codebook_dim, 2, "hist_pre_conv");
    MEANING("pre_conv (k3) history: the last 2 frames' quantizer outputs, channels-first");
    for (int32_t l = 0; l < t->n_layers; l++) {
        STATE(3, t->n_kv_heads, t->head_dim, c->sliding_window - 1, "ring_key_%d", l);
        MEANING("transformer layer %d: the previous %d frames' rotated keys [kv_head][dim][frame], "
                "oldest first (zeros, masked, before the stream's start)", l, c->sliding_window - 1);
        STATE(3, t->n_kv_heads, c->sliding_window - 1, t->head_dim, "ring_value_%d", l);
        MEANING("transformer layer %d: the previous %d frames' values [kv_head][frame][dim], "
                "oldest first", l, c->sliding_window - 1);
    }
    for (int32_t u = 0; u < c->n_upsample; u++) {
        STATE(3, 1, c->latent, 6, "hist_upsample_%d", u);
        MEANING("upsample stage %d: the ConvNeXt depthwise conv's (k7) last 6 input rows (after "
                "the transposed conv)", u);
    }
    STATE(3, 1, c->latent, 6, "hist_decoder_0");
    MEANING("decoder.0 conv (k7): its last 6 input rows");
    for (int32_t b = 0; b < c->n_blocks; b++) {
        STATE(3, 1, c2w_block_channels(c, b), 1, "carry_block_%d", b);
        MEANING("decoder block %d: the transposed conv's (k = 2 x %d, stride %d) previous input "
                "row, after the block's Snake: the overlap it adds to this chunk's first rows",
                b, c->upsample_rates[b], c->upsample_rates[b]);
        for (int32_t u = 0; u < 3; u++) {
            STATE(3, 1, c2w_block_channels(c, b + 1), 6 * dilations[u], "hist_block_%d_unit_%d", b, u);
            MEANING("decoder block %d, residual unit %d: conv1's (k7, dilation %d) last %d input "
                    "rows (after act1)", b, u, dilations[u], 6 * dilations[u]);
        }
    }
    STATE(3, 1, c2w_block_channels(c, c->n_blocks), 6, "hist_final");
    MEANING("final conv (k7): its last 6 input rows (after the final Snake)");
#undef STATE
#undef MEANING
    return n;
}

int c2w_graph_default_sizes(int32_t *sizes, int max)
{
    static const int32_t sz[] = {1, 2, 4, 8, 16, 25};
    int n = 0;
    for (size_t i = 0; i < sizeof sz / sizeof *sz && n < max; i++) sizes[n++] = sz[i];
    return n;
}

void c2w_graph_file(int32_t frames, char *out, size_t size)
{
    snprintf(out, size, "code2wav_%d.onnx", (int)frames);
}

int c2w_graph_stages(const c2w_config *c, c2w_stage_info *out)
{
    int n = 0, state = 0;
    int64_t rows = 1; /* rows per frame entering the stage */
#define STAGE(states, ci, co, up, ...)                                  \
    do {                                                                \
        c2w_stage_info *s = &out[n++];                                  \
        snprintf(s->name, sizeof s->name, __VA_ARGS__);                 \
        s->first_state = state;                                         \
        s->n_states = states;                                           \
        s->cin = ci;                                                    \
        s->cout = co;                                                   \
        s->in_rows = rows;                                              \
        rows *= up;                                                     \
        s->out_rows = rows;                                             \
        state += states;                                                \
    } while (0)
    STAGE(1 + 2 * c->transformer.n_layers, 0, c->latent, 1, "front");
    for (int32_t u = 0; u < c->n_upsample; u++) STAGE(1, c->latent, c->latent, c->upsampling_ratios[u], "upsample_%d", u);
    STAGE(1, c->latent, c->decoder_dim, 1, "decoder_0");
    for (int32_t b = 0; b < c->n_blocks; b++)
        STAGE(4, c2w_block_channels(c, b), c2w_block_channels(c, b + 1), c->upsample_rates[b], "block_%d", b);
    STAGE(1, c2w_block_channels(c, c->n_blocks), 1, 1, "final");
#undef STAGE
    return n;
}

void c2w_graph_stage_file(int32_t frames, const char *stage, char *out, size_t size)
{
    snprintf(out, size, "code2wav_%d_%s.onnx", (int)frames, stage);
}

