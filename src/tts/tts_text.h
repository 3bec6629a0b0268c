/* The texts a Qwen3-TTS prompt is made of, tokenized as the official code
 * does (the whole framed string at once, then used whole or sliced by
 * tts_prompt.c): the target, an in-context reference's transcript, and an
 * instruction. One place for the templates, which the speech API and the
 * server share. */
#ifndef EMBER_TTS_TTS_TEXT_H
#define EMBER_TTS_TTS_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

typedef enum {
    TTS_TEXT_TARGET,    /* "<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n" */
    TTS_TEXT_REFERENCE, /* "<|im_start|>assistant\n{text}<|im_end|>\n" */
    TTS_TEXT_INSTRUCT   /* "<|im_start|>user\n{text}<|im_end|>\n" */
} tts_text_kind;

/* The ids of text in its frame (*ids malloc'd). */
ember_status tts_text_encode(const et_tokenizer *tok, tts_text_kind kind, const char *text, int32_t **ids,
                             size_t *n);

#endif
