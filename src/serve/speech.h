/* POST /v1/audio/speech: the speech engine beside the text engine. One
 * thread owns the Qwen3-TTS model, a generation session and a decoder
 * stream and runs one request at a time through the streaming pipeline
 * (tts/tts_pipeline.h); HTTP threads parse and validate the request, queue
 * it (a full queue answers 503) and then only read the job's bytes. With
 * "stream": true the audio goes out as each chunk is decoded (a WAV header
 * with open-ended sizes, or raw PCM), so the first bytes arrive after the
 * first decoded chunk; otherwise the whole file comes at the end. */
#ifndef EMBER_SERVE_SPEECH_H
#define EMBER_SERVE_SPEECH_H

#include <stddef.h>

#include "edge/calibrate.h"
#include "ember.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/server.h"

typedef struct sv_speech_params {
    const char *dir;         /* the Qwen3-TTS directory (with speech_tokenizer/) */
    ember_type weight_type;  /* talker and predictor; NONE: as stored */
    int n_threads;           /* 0: one per CPU the process may use */
    int max_queue;           /* requests waiting before 503; 0: 8 */
    double timeout_s;        /* per request; 0: 600 */
    size_t max_input_bytes;  /* of "input"; 0: 4096 */
    int32_t max_frames;      /* audio frames per request (80 ms each); 0: 4096 (5.5 min) */
    /* this machine's calibration (copied): its chunk schedule, or an adaptive
     * controller per request when it says so; NULL: the default ramp */
    const edge_calibration *calibration;
    const char *voices_dir;  /* saved voices for a Base model (speech_voices.h); NULL: none */
    const char *onnx_dir;    /* the talker and predictor steps on ONNX Runtime: an `ember
                                export onnx` folder of this model; NULL: native */
    const char *onnx_runtime; /* its libonnxruntime (NULL: libonnxruntime.so.1), */
    const char *onnx_provider; /* provider and options (ort_api.h's ort_choice) */
    const char *onnx_options;
} sv_speech_params;

typedef struct sv_speech sv_speech;

/* Loads the model and starts the engine thread; metrics gets the
 * time-to-first-audio histogram and must outlive the engine. */
ember_status sv_speech_create(const sv_speech_params *p, sv_metrics *metrics, sv_speech **out);
/* Stops the thread (running and queued requests end) and frees. */
void sv_speech_free(sv_speech *s);

/* The speech model's name (its directory's). */
const char *sv_speech_model_name(const sv_speech *s);

/* What a client may ask for, for GET /capabilities: {"model",
 * "model_type" (custom_voice, base, voice_design), "voices" (built-in
 * speakers or saved voices), "instructions" (whether they are followed),
 * "languages", "sample_rate", "max_frames", "frame_ms", "max_input_bytes",
 * "formats"}; NULL when out of memory. */
struct cJSON *sv_speech_capabilities(const sv_speech *s);

/* Handles a POST /v1/audio/speech body: fills out with the audio, a stream
 * job, or an OpenAI-style error (400 naming the field, 503 when busy). */
void sv_speech_handle(sv_speech *s, const char *body, size_t len, sv_response *out);

#endif
