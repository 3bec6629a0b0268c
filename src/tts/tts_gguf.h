/* A Qwen3-TTS model in one GGUF file (`ember quantize TTS_DIR out.gguf`),
 * ember's own layout, general.architecture "qwen3_tts":
 *
 * Tensors: every tensor of the checkpoint directory, the talker file's
 * (model.safetensors) and the speech tokenizer's
 * (speech_tokenizer/model.safetensors), under its Hugging Face name with a
 * short prefix (GGUF names must be under 64 bytes):
 *   talker.code_predictor.model.  <->  cp.
 *   talker.code_predictor.        <->  cpx.
 *   talker.model.                 <->  tk.
 *   talker.                       <->  tkx.
 *   speaker_encoder.              <->  spk.
 *   decoder.                      <->  dec.
 *   encoder.quantizer.acoustic_residual_vector_quantizer.  <->  enc.acoustic_rvq.
 *   encoder.quantizer.semantic_residual_vector_quantizer.  <->  enc.semantic_rvq.
 *   encoder.encoder_transformer.  <->  enc.tfm.
 *   encoder.                      <->  enc.
 * so the loaders bind the very tensors they bind from the directory (the
 * round trip is exact). llama.cpp's qwen3tts architecture is not used: its
 * converter folds the text projection into the embedding (different
 * numbers), splits the model over two files and bakes the decoder's Snake
 * and codebook arithmetic into the weights.
 *
 * Metadata:
 *   qwen3_tts.config_json                   the talker's config.json, verbatim
 *   qwen3_tts.generation_config_json        generation_config.json (optional)
 *   qwen3_tts.speech_tokenizer.config_json  speech_tokenizer/config.json
 *   tokenizer.ggml.*                        the text tokenizer (vocab.json and
 *                                           merges.txt), llama.cpp's keys
 * Each part is parsed by its own config parser, as from the directory. */
#ifndef EMBER_TTS_TTS_GGUF_H
#define EMBER_TTS_TTS_GGUF_H

#include <stddef.h>

#include "ember.h"
#include "io/checkpoint.h"
#include "io/gguf.h"
#include "io/tensor.h"

#define TTS_GGUF_ARCH "qwen3_tts"
#define TTS_GGUF_KEY_CONFIG TTS_GGUF_ARCH ".config_json"
#define TTS_GGUF_KEY_GENERATION TTS_GGUF_ARCH ".generation_config_json"
#define TTS_GGUF_KEY_DECODER TTS_GGUF_ARCH ".speech_tokenizer.config_json"

/* The parts of a Qwen3-TTS checkpoint, each read by its own loader. */
typedef enum tts_part {
    TTS_PART_TALKER,  /* talker.* (+ speaker_encoder.* in Base models), config.json */
    TTS_PART_SPEAKER, /* speaker_encoder.*, config.json */
    TTS_PART_SPEECH,  /* decoder.* and encoder.*, speech_tokenizer/config.json */
} tts_part;

/* Opens the part of the model at `path`: a checkpoint directory (the
 * speech parts in its speech_tokenizer/ when there is one) or a qwen3_tts
 * GGUF file. In a GGUF, the tensors of the other parts are marked used
 * (ck_check_all_used checks only this part's). `label` (cap bytes) gets the
 * config's name for messages: ".../config.json" or "file.gguf (key)". */
ember_status tts_ck_open(const char *path, tts_part part, ck_dir **out, char *label, size_t cap);

/* The config.json text of a part as its key holds it (malloc'd,
 * NUL-terminated), after checking general.architecture. Pure (fuzzed). */
ember_status tts_gguf_part_config(const gguf_file *f, tts_part part, char **json, size_t *len);

/* generation_config.json of the model at `path` (a directory or a GGUF
 * file), malloc'd into *text, or *text NULL when it has none. */
ember_status tts_read_generation_config(const char *path, const ck_dir *ck, char **text,
                                        size_t *len);

/* The GGUF name of a checkpoint tensor (into buf, cap bytes), or NULL when
 * no prefix fits or it would not fit; and back. */
const char *tts_gguf_name(const char *hf_name, char *buf, size_t cap);
const char *tts_gguf_hf_name(const char *gguf_name, char *buf, size_t cap);

/* Writes the checkpoint directory `dir` as a qwen3_tts GGUF at `path`:
 * the talker's and code predictor's matrices in `type` (kept as stored where
 * their columns are not a multiple of its block, and embedding tables kept
 * as stored for float types, as the loader would), the speech tokenizer's
 * weights in `speech_type` (F32, F16 or BF16), vectors and the speaker
 * encoder in F32. Nothing is left at `path` on failure. */
ember_status tts_gguf_write(const char *dir, const char *path, et_dtype type, et_dtype speech_type,
                            int (*progress)(void *ctx, size_t done, size_t total), void *ctx,
                            size_t *n_tensors);

#endif
