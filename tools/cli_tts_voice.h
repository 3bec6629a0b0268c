/* The voice options every speech command takes (tts, bench tts): a style
 * instruction, a recording to clone (with its transcript for in-context
 * cloning), a saved voice, x-vector only; checked together and turned into
 * the request's voice over the public API alone. */
#ifndef EMBER_TOOLS_CLI_TTS_VOICE_H
#define EMBER_TOOLS_CLI_TTS_VOICE_H

#include "cli_tts.h"

typedef struct cli_tts_voice {
    const char *instruct;  /* --instruct */
    const char *ref_audio; /* --ref-audio: a WAV to clone (Base models) */
    const char *ref_text;  /* --ref-text: what it says (in-context cloning) */
    const char *path;      /* --voice: a file of `ember voice create` */
    int xvector_only;      /* --xvector-only */
} cli_tts_voice;

enum { TTS_OPT_INSTRUCT = 1300, TTS_OPT_REF_AUDIO, TTS_OPT_REF_TEXT, TTS_OPT_VOICE, TTS_OPT_XVECTOR_ONLY };
#define CLI_TTS_VOICE_OPTIONS                                                      \
    {"instruct", required_argument, 0, TTS_OPT_INSTRUCT},                         \
        {"ref-audio", required_argument, 0, TTS_OPT_REF_AUDIO},                   \
        {"ref-text", required_argument, 0, TTS_OPT_REF_TEXT},                     \
        {"voice", required_argument, 0, TTS_OPT_VOICE},                           \
        {"xvector-only", no_argument, 0, TTS_OPT_XVECTOR_ONLY}
extern const char cli_tts_voice_usage[];

/* 1: handled, 0: not a voice option. */
int cli_tts_voice_option(int c, const char *arg, cli_tts_voice *v);

/* Checks the combination (2 with a message when it makes no sense), then
 * sets rq's instruct and xvector_only and its voice: made from --ref-audio
 * with the model's encoders, or read from --voice (*voice, freed by the
 * caller; NULL for neither). With timing (a bench), the clip is read and
 * encoded n_make times with the encoders loaded once, timing[i] the
 * milliseconds of each (the voice kept is the last), *load_ms the encoders'
 * load. 0, or 1 with a message when the voice could not be had. */
int cli_tts_voice_request(const cli_tts_opts *to, const cli_tts_voice *v, const char *cmd, int n_make,
                          double *timing, double *load_ms, ember_speech_request *rq, ember_voice **voice);

/* The prompt rows a voice adds (its frames and its transcript's bytes,
 * which bound its tokens); 0 for NULL. */
int32_t cli_tts_voice_rows(const ember_voice *voice);

/* The prompt mode the request runs in on the loaded model: "speaker",
 * "instruct" (1.7B CustomVoice), "instruct_ignored" (0.6B),
 * "voice_design", "clone_xvector" or "clone_in_context". */
const char *cli_tts_mode(const ember_speech_request *rq, const cli_tts_info *info);

#endif
