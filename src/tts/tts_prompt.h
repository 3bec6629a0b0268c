/* The talker's prompt layout (spec §6), as pairs of ids per position: the
 * input at a position is P(text) + E(codec), either side possibly absent.
 * Pure, so the layout can be tested without a model. */
#ifndef EMBER_TTS_TTS_PROMPT_H
#define EMBER_TTS_TTS_PROMPT_H

#include <stddef.h>
#include <stdint.h>

#include "tts/qwen3_tts_config.h"

/* The codec side of the row that holds a Base model's speaker x-vector
 * instead of a codec embedding (the speaker slot of the codec prefix). */
#define TTS_CODEC_XVECTOR (-2)

typedef struct tts_prompt_row {
    int32_t text;  /* text id whose projected embedding is added, -1 for none */
    int32_t codec; /* codec id whose embedding is added, -1 for none,
                      TTS_CODEC_XVECTOR for the x-vector itself */
    int32_t ref_frame; /* 0: none; f + 1: reference frame f's codes, embedded
                          as a generated frame is fed back (in-context clone) */
} tts_prompt_row;

typedef struct tts_prompt {
    tts_prompt_row *rows; /* the prefill */
    size_t n_rows;
    int32_t *trailing;    /* streaming mode: text ids fed one per frame, then tts_pad */
    size_t n_trailing;
} tts_prompt;

/* ids: the tokenized "<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n"
 * (3 ids of prefix, then the text, then 5 of suffix). speaker: index into
 * c->speakers or -1 (no speaker id); language: index into c->languages or
 * -1 for "auto". A speaker with a dialect replaces the language when it is
 * auto or "chinese". streaming: text fed one id per frame instead of all in
 * the prompt. On success the caller frees with tts_prompt_free. */
ember_status tts_prompt_build(const tts_config *c, const int32_t *ids, size_t n_ids,
                              int32_t speaker, int32_t language, int streaming, tts_prompt *out);

/* The voice parts of a prompt (spec qwen3-tts-voices.md section 4): an
 * instruction block before everything, its ids those of
 * "<|im_start|>user\n{instruct}<|im_end|>\n" (all of them, text only; n 0:
 * none), and a speaker slot that holds the x-vector (a Base model's clone)
 * instead of a built-in speaker. */
typedef struct tts_prompt_voice {
    const int32_t *instruct;
    size_t n_instruct;
    int xvector;
    /* in-context cloning: the ids of "<|im_start|>assistant\n{ref_text}<|im_end|>\n"
     * (its text is ids[3:-2]) and the number of reference frames; n_ref_ids 0: none */
    const int32_t *ref_ids;
    size_t n_ref_ids;
    int32_t n_ref_frames;
} tts_prompt_voice;

/* tts_prompt_build with the voice parts (voice NULL: none). */
ember_status tts_prompt_build_voice(const tts_config *c, const int32_t *ids, size_t n_ids, int32_t speaker,
                                    int32_t language, int streaming, const tts_prompt_voice *voice,
                                    tts_prompt *out);
void tts_prompt_free(tts_prompt *p);

#endif
