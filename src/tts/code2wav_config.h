/* The Qwen3-TTS 12 Hz speech tokenizer's decoder hyper-parameters, from the
 * decoder_config object of speech_tokenizer/config.json. Pure (text in,
 * struct out) so it can be fuzzed; values ember cannot run are rejected
 * naming their key. */
#ifndef EMBER_TTS_CODE2WAV_CONFIG_H
#define EMBER_TTS_CODE2WAV_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "tts/qwen3_tts_config.h"

#define C2W_MAX_QUANTIZERS 64
#define C2W_MAX_BLOCKS 8   /* decoder blocks (upsample_rates) */
#define C2W_MAX_UPSAMPLE 4 /* ConvNeXt upsample stages (upsampling_ratios) */

typedef struct c2w_config {
    int32_t n_quantizers;  /* codebooks per frame (16) */
    int32_t codebook_size; /* entries per codebook (2048) */
    int32_t vq_dim;        /* codebook vector width: codebook_dim / 2 (256) */
    int32_t codebook_dim;  /* the quantizer's output width (512) */
    int32_t latent;        /* latent_dim (1024) */
    tts_stack_config transformer; /* hidden 512, 8 layers, 16 x 64, window below */
    int32_t sliding_window;       /* a query sees itself and window-1 earlier frames (72) */
    int32_t decoder_dim;          /* channels after decoder.0 (1536), halved per block */
    int32_t n_blocks, upsample_rates[C2W_MAX_BLOCKS];     /* [8, 5, 4, 3] */
    int32_t n_upsample, upsampling_ratios[C2W_MAX_UPSAMPLE]; /* [2, 2] */
    int32_t samples_per_frame; /* product of every rate (1920) */
    int32_t sample_rate;       /* output_sample_rate (24000) */
} c2w_config;

/* Parses speech_tokenizer/config.json text; `label` names the file. */
ember_status c2w_config_parse(const char *json, size_t len, const char *label, c2w_config *out);

/* Channels entering decoder block b (b = n_blocks: the final Snake and conv). */
static inline int32_t c2w_block_channels(const c2w_config *c, int32_t b)
{
    return c->decoder_dim >> b;
}

#endif
