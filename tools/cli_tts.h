/* What the speech commands (tts, tts-codes, bench tts) share over the public
 * API: the options that shape an ember_tts (weights, threads, placement,
 * chunks, warm-up, calibration, --profile), the load with the derived
 * profile applied, and what the load says about itself. */
#ifndef EMBER_TOOLS_CLI_TTS_H
#define EMBER_TOOLS_CLI_TTS_H

#include "cli_public.h"
#include "ember_speech.h"

typedef struct cli_tts_opts {
    const char *dir;
    ember_tts_params params; /* warm-up and calibration on, as a command runs */
    cli_profile profile;     /* --profile auto|off|explain */
    int pin;                 /* place the threads where the profile says (--no-pin clears) */
    const char *chunks;      /* --chunks: a fixed schedule for every request */
} cli_tts_opts;

enum {
    TTS_OPT_DECODER_DTYPE = 1200,
    TTS_OPT_DECODER_THREADS,
    TTS_OPT_CHUNKS,
    TTS_OPT_DTYPE,
    TTS_OPT_THREADS,
    TTS_OPT_KERNELS,
    TTS_OPT_ALONE_CHUNKS,
    TTS_OPT_NO_WARM_UP,
    TTS_OPT_NO_PIN,
    TTS_OPT_NO_CALIBRATION,
    TTS_OPT_BACKEND,
    TTS_OPT_ONNX_RUNTIME,
    TTS_OPT_ONNX_PROVIDER,
    TTS_OPT_ONNX_OPTION
};
#define CLI_TTS_OPTIONS                                                                     \
    {"dtype", required_argument, 0, TTS_OPT_DTYPE},                                        \
        {"threads", required_argument, 0, TTS_OPT_THREADS},                                \
        {"kernels", required_argument, 0, TTS_OPT_KERNELS},                                \
        {"decoder-dtype", required_argument, 0, TTS_OPT_DECODER_DTYPE},                    \
        {"decoder-threads", required_argument, 0, TTS_OPT_DECODER_THREADS},                \
        {"chunks", required_argument, 0, TTS_OPT_CHUNKS},                                  \
        {"alone-chunks", required_argument, 0, TTS_OPT_ALONE_CHUNKS},                      \
        {"no-warm-up", no_argument, 0, TTS_OPT_NO_WARM_UP},                                \
        {"no-pin", no_argument, 0, TTS_OPT_NO_PIN},                                        \
        {"no-calibration", no_argument, 0, TTS_OPT_NO_CALIBRATION},                        \
        {"backend", required_argument, 0, TTS_OPT_BACKEND},                                \
        {"onnx-runtime", required_argument, 0, TTS_OPT_ONNX_RUNTIME},                      \
        {"onnx-provider", required_argument, 0, TTS_OPT_ONNX_PROVIDER},                    \
        {"onnx-option", required_argument, 0, TTS_OPT_ONNX_OPTION},                        \
        CLI_PROFILE_OPTIONS
extern const char cli_tts_usage[];

void cli_tts_opts_init(cli_tts_opts *o);
/* 1: handled, 0: not a speech engine option, -1: bad value (message printed). */
int cli_tts_option(int c, const char *arg, const char *cmd, cli_tts_opts *o);

/* --profile: the format the command line leaves open and, unless --no-pin,
 * where the threads run (explain prints why). Returns 0, or -1 with a
 * message. */
int cli_tts_apply_profile(cli_tts_opts *o, const char *cmd);

/* What a loaded ember_tts says about itself (ember_tts_info), as the
 * summaries print it. */
typedef struct cli_tts_info {
    char weights[16], decoder_weights[16], kernels[32], speaker[64], language[64];
    char model_type[16]; /* custom_voice, base, voice_design */
    int small;           /* a 0.6B model: instructions are ignored */
    int32_t xvector_dim;
    int32_t generator_threads, decoder_threads, samples_per_frame, sample_rate;
    int adaptive; /* the calibration's controller cuts the chunks */
} cli_tts_info;

/* Applies the derived profile (the format, and unless --no-pin the
 * placement; explain prints why), loads for texts of up to
 * max_text_tokens and utterances of up to max_frames, and with verbose says
 * on stderr which calibration cuts the chunks. NULL with a message printed. */
ember_tts *cli_tts_load(cli_tts_opts *o, int32_t max_text_tokens, int32_t max_frames, const char *cmd,
                        int verbose, cli_tts_info *info);

#endif
