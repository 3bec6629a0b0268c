/* A saved voice (`ember voice create`, ember_voice_save): what cloning takes
 * from a reference recording, kept so later requests reuse it without
 * running the encoders again. Little-endian:
 *
 *   "EMBRVOIC"          8-byte magic
 *   u32 version         VOICE_FILE_VERSION
 *   u32 json_bytes      then that many bytes of a JSON object:
 *                       {"xvector_dim": D, "frames": F, "codebooks": Q,
 *                        "ref_text": "..." | null, "model": "..."}
 *                       (model: the directory's name, for messages)
 *   f32[D]              the speaker x-vector
 *   i32[F x Q]          the reference codes, frame-major (F may be 0)
 *   u64                 cksum64 (base/checksum.h) of everything before
 *
 * The x-vector's size is the talker's width, so it tells a 0.6B Base voice
 * (1024) from a 1.7B one (2048): a voice for another model is refused by it.
 * Parsing is strict (untrusted input: fuzzed by fuzz/fuzz_voice_file.c). */
#ifndef EMBER_TTS_VOICE_FILE_H
#define EMBER_TTS_VOICE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"

#define VOICE_FILE_VERSION 1
#define VOICE_MAX_DIM 65536
#define VOICE_MAX_FRAMES (12 * 60 * 60) /* an hour at 12.5 frames per second */
#define VOICE_MAX_CODEBOOKS 64

typedef struct voice_data {
    int32_t xvector_dim, n_frames, codebooks;
    float *xvector;
    int32_t *codes;  /* n_frames x codebooks; NULL when none */
    char *ref_text;  /* NULL when none */
    char *model;
} voice_data;

/* The file's bytes (*out malloc'd). */
ember_status voice_serialize(const voice_data *v, uint8_t **out, size_t *len);
/* Parses a whole file; `label` names it in errors. On error nothing is
 * allocated. */
ember_status voice_parse(const uint8_t *data, size_t len, const char *label, voice_data *out);
void voice_data_free(voice_data *v);

#endif
