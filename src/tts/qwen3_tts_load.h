/* A loaded Qwen3-TTS model (talker + code predictor): config, sampling
 * defaults and weights. Immutable after load, so any number of TTS sessions
 * can share one. Matrices stay in the file's format (mmapped) unless a
 * weight_type asks for a conversion at load. */
#ifndef EMBER_TTS_QWEN3_TTS_LOAD_H
#define EMBER_TTS_QWEN3_TTS_LOAD_H

#include "ember.h"
#include "io/checkpoint.h"
#include "kernels/matmul.h"
#include "tts/qwen3_tts_config.h"

/* One Qwen3 decoder layer: q/k per-head RMSNorm, no biases, SwiGLU MLP.
 * The speech decoder's layers have no q/k norms but scale both residual
 * branches per channel (LayerScale). */
typedef struct tts_layer {
    const float *attn_norm, *mlp_norm; /* hidden */
    const float *q_norm, *k_norm;      /* head_dim, shared by every head; NULL: none */
    const float *attn_scale, *mlp_scale; /* hidden; NULL: none */
    ek_matrix wq, wk, wv, wo;
    ek_matrix w_gate, w_up, w_down;
} tts_layer;

typedef struct tts_stack {
    const tts_stack_config *cfg;
    tts_layer layers[TTS_MAX_LAYERS];
    const float *final_norm;
} tts_stack;

typedef struct tts_model {
    tts_config cfg;
    tts_gen_config gen;
    ck_dir *ck;
    const ek_kernel_set *kernels;
    ember_type weight_type;

    ek_matrix text_embed;            /* text_vocab x text_hidden (lookups only) */
    ek_matrix text_fc1, text_fc2;    /* text_projection */
    const float *text_fc1_b, *text_fc2_b;
    ek_matrix codec_embed;           /* talker vocab x hidden (lookups only) */
    ek_matrix codec_head;            /* talker vocab x hidden */
    tts_stack talker, predictor;
    ek_matrix cp_embed[TTS_MAX_GROUPS - 1]; /* predictor vocab x talker hidden (lookups) */
    ek_matrix cp_head[TTS_MAX_GROUPS - 1];  /* predictor vocab x predictor hidden */
    int has_mtp;                     /* small_to_mtp_projection present (hidden sizes differ) */
    ek_matrix mtp_proj;              /* predictor hidden x talker hidden */
    const float *mtp_b;

    int32_t n_unconverted;           /* matrices kept as stored: columns not a block multiple */
    float *vectors;                  /* fp32 norm weights and biases */
    void **converted;
    size_t n_converted;
} tts_model;

typedef struct tts_model_params {
    ember_type weight_type; /* NONE: as stored; F32, BF16, F16, Q8_0, Q4_0: converted at load */
    const char *kernels;    /* NULL: the best set this CPU runs */
} tts_model_params;

/* Loads DIR (config.json, generation_config.json if present, model.safetensors).
 * Every missing, mis-shaped or unexpected tensor is an error naming it; on
 * failure *out is NULL and nothing stays allocated or mapped. */
ember_status tts_model_load(const char *dir, const tts_model_params *params, tts_model **out);
void tts_model_free(tts_model *m);

/* Bytes of the matrices one frame reads: the talker's layers and codec head,
 * and (separately) the predictor's layers, one lm head and the projection,
 * for one of its passes. */
size_t tts_model_talker_bytes(const tts_model *m);
size_t tts_model_predictor_pass_bytes(const tts_model *m);

#endif
