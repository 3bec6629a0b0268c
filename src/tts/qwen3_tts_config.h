/* Qwen3-TTS hyper-parameters and special ids from config.json, and the
 * sampling defaults from generation_config.json. The parsers are pure (text
 * in, struct out) so they can be fuzzed; every value ember cannot run is
 * rejected naming its key ("talker_config.code_predictor_config.head_dim"). */
#ifndef EMBER_TTS_QWEN3_TTS_CONFIG_H
#define EMBER_TTS_QWEN3_TTS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"

#define TTS_MAX_LAYERS 128
#define TTS_MAX_NAMED 64  /* languages or speakers */
#define TTS_NAME_MAX 48   /* bytes of a language or speaker name, NUL included */
#define TTS_MAX_GROUPS 32 /* num_code_groups */

/* One Qwen3-style decoder stack (talker, code predictor, or the speech
 * decoder's transformer). */
typedef struct tts_stack_config {
    int32_t n_layers, hidden, intermediate;
    int32_t n_heads, n_kv_heads, head_dim;
    int32_t vocab, max_positions;
    float rms_eps, rope_theta;
    int32_t sliding_window; /* 0: causal over everything; else a query sees window-1 keys back */
    bool qk_norm;           /* per-head RMSNorm of q and k (talker, predictor) */
    bool layer_scale;       /* LayerScale on both residual branches (speech decoder) */
} tts_stack_config;

typedef struct tts_named_id {
    char name[TTS_NAME_MAX];
    int32_t id;
    int32_t dialect; /* speakers: index into languages of their dialect, -1 for none */
} tts_named_id;

/* tts_model_type: which prompts the checkpoint was trained for. */
typedef enum {
    TTS_CUSTOM_VOICE, /* built-in speakers (spk_id); instruct on 1.7B */
    TTS_BASE,         /* voice cloning: a speaker x-vector (speaker_encoder.*) */
    TTS_VOICE_DESIGN  /* a voice described by an instruction */
} tts_model_type;

typedef struct tts_config {
    tts_model_type type;
    bool small;       /* tts_model_size "0b6": the official code drops instructions */
    /* text-side special ids */
    int32_t im_start, im_end, assistant, tts_bos, tts_eos, tts_pad;
    int32_t text_vocab, text_hidden;
    int32_t n_groups; /* num_code_groups: codebook 0 from the talker + n_groups-1 */
    /* codec-side special ids */
    int32_t codec_pad, codec_bos, codec_eos, think, nothink, think_bos, think_eos;
    tts_stack_config talker, predictor;
    tts_named_id languages[TTS_MAX_NAMED];
    int32_t n_languages;
    tts_named_id speakers[TTS_MAX_NAMED];
    int32_t n_speakers;
} tts_config;

/* Parses config.json text (need not be NUL-terminated); `label` names the file. */
ember_status tts_config_parse(const char *json, size_t len, const char *label, tts_config *out);

/* Index of a language or speaker by name (case-sensitive, as in config.json), -1 if absent. */
int32_t tts_config_language(const tts_config *c, const char *name);
int32_t tts_config_speaker(const tts_config *c, const char *name);

typedef struct tts_sampling {
    bool do_sample;
    float temperature, top_p;
    int32_t top_k;
} tts_sampling;

typedef struct tts_gen_config {
    tts_sampling talker, subtalker;
    float repetition_penalty; /* talker codebook-0 stream only */
    int32_t max_new_tokens, min_new_tokens;
} tts_gen_config;

/* The defaults the official code uses when generation_config.json is absent:
 * sampled at 0.9 / top-k 50 / top-p 1 for both, penalty 1.05, 4096 frames
 * at most, at least 2. */
void tts_gen_config_default(tts_gen_config *g);
/* Parses generation_config.json over the defaults already in *g. */
ember_status tts_gen_config_parse(const char *json, size_t len, const char *label,
                                  tts_gen_config *g);

#endif
