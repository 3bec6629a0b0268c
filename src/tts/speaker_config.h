/* The speaker encoder's hyper-parameters (Qwen3TTSSpeakerEncoderConfig):
 * config.json's "speaker_encoder_config" over the class defaults (the real
 * files set only enc_dim and sample_rate). Only Base models
 * (tts_model_type "base") have a speaker encoder. Pure (text in, struct
 * out) so it can be fuzzed; every value ember cannot run is refused naming
 * its key. */
#ifndef EMBER_TTS_SPEAKER_CONFIG_H
#define EMBER_TTS_SPEAKER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

#define SPK_MAX_LAYERS 8  /* entries of enc_channels */
#define SPK_MAX_SCALE 64  /* enc_res2net_scale */

typedef struct spk_config {
    int32_t mel_dim, enc_dim;
    /* enc_channels / enc_kernel_sizes / enc_dilations: entry 0 is the first
     * TDNN (blocks.0), entries 1..n-2 the SE-Res2Net blocks, n-1 the mfa */
    int32_t n_layers;
    int32_t channels[SPK_MAX_LAYERS], kernels[SPK_MAX_LAYERS], dilations[SPK_MAX_LAYERS];
    int32_t attention_channels, res2net_scale, se_channels, sample_rate;
} spk_config;

/* Parses config.json text (need not be NUL-terminated); `label` names the
 * file. EMBER_ERR_UNSUPPORTED for a model that is not a Base model. */
ember_status spk_config_parse(const char *json, size_t len, const char *label, spk_config *out);

#endif
