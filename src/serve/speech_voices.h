/* The server's saved voices (`serve --voices DIR`): every DIR/NAME.voice
 * (written by `ember voice create`) read at start, so a speech request's
 * "voice" can name one. A file that cannot be read, or was made for another
 * model size, stops the server at start with its name: a voice that would
 * fail every request is better found then. */
#ifndef EMBER_SERVE_SPEECH_VOICES_H
#define EMBER_SERVE_SPEECH_VOICES_H

#include <stdint.h>

#include "ember.h"
#include "tts/voice_file.h"

#define SV_VOICE_NAME_MAX 64

typedef struct sv_voices {
    char (*names)[SV_VOICE_NAME_MAX];
    voice_data *voices;
    int32_t n;
} sv_voices;

/* Reads DIR's voices; xvector_dim is the model's (its talker's width). */
ember_status sv_voices_load(const char *dir, int32_t xvector_dim, sv_voices *out);
/* The voice called name, or NULL. */
const voice_data *sv_voices_find(const sv_voices *v, const char *name);
void sv_voices_free(sv_voices *v);

#endif
