/* Shared pieces of the TTS commands (tts-codes, bench tts-codes). */
#ifndef EMBER_TOOLS_TTS_CLI_H
#define EMBER_TOOLS_TTS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "tts/tts_session.h"

/* The ids of "<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n"
 * with DIR/tokenizer.json (malloc'd). Returns 0, or -1 with a message printed. */
int tts_cli_encode(const char *dir, const char *text, int32_t **ids, size_t *n);

/* `ember tts-codes --golden FILE`: greedy frames and teacher-forced logits
 * against a reference/tts_golden.py file; prints a report (JSON with json).
 * Returns the exit status. */
int tts_cli_golden(const tts_model *m, const tts_session_params *sp, const char *golden_path,
                   int json);

#endif
