/* A TTS session: one request's talker and code-predictor state (KV caches,
 * scratch, samplers, position) over a shared, immutable tts_model. Several
 * sessions can run on one model at once, each on its own thread pool.
 *
 *   tts_session_create(model, &params, &s);
 *   tts_session_start(s, &request);           // builds and prefills the prompt
 *   while (tts_session_step(s, NULL, codes, &done) == EMBER_OK && !done)
 *       emit(codes);                           // n_groups (16) codes per frame
 *   tts_session_free(s);
 */
#ifndef EMBER_TTS_TTS_SESSION_H
#define EMBER_TTS_TTS_SESSION_H

#include <stdint.h>

#include "tts/qwen3_tts_load.h"

typedef struct tts_session_params {
    int32_t max_context;   /* talker positions (prompt + frames); default 4096 */
    int32_t prefill_chunk; /* default 64 */
    int32_t n_threads;     /* incl. the caller; 0 = one per online CPU */
    /* NULL: ember's kernels run the talker and predictor; else an `ember
     * export onnx` folder whose step graphs ONNX Runtime (the library at
     * onnx_runtime, NULL: libonnxruntime.so.1) runs instead, ember's host
     * loop around them (prompt, sampling, embeddings); max_context is
     * capped at the graphs' bucket */
    const char *onnx_dir;
    const char *onnx_runtime;
    const char *onnx_provider; /* ort_api.h's ort_choice: NULL: CPU */
    const char *onnx_options;
} tts_session_params;

tts_session_params tts_session_default_params(void);

typedef struct tts_request {
    const int32_t *text_ids; /* "<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n" */
    size_t n_text_ids;
    const char *speaker;     /* a key of spk_id, or NULL for none */
    const char *language;    /* a key of codec_language_id, or NULL / "auto" */
    int streaming;           /* text fed one id per frame (default: all in the prompt) */
    int greedy;              /* argmax for talker and predictor (penalty still applies) */
    uint64_t seed;
    int32_t max_frames;      /* 0: generation_config's max_new_tokens */
    int32_t min_frames;      /* 0: generation_config's min_new_tokens (EOS banned before) */
    const tts_gen_config *sampling; /* NULL: the model's generation_config */
    /* the voice (qwen3-tts-voices.md section 4): the ids of
     * "<|im_start|>user\n{instruct}<|im_end|>\n" (CustomVoice 1.7B, VoiceDesign;
     * dropped on a 0.6B model, as the official code does), and a Base
     * model's speaker x-vector (talker hidden floats) in the speaker slot */
    const int32_t *instruct_ids;
    size_t n_instruct_ids;
    const float *xvector;
    /* in-context cloning (with the x-vector): the ids of
     * "<|im_start|>assistant\n{ref_text}<|im_end|>\n" and the reference
     * recording's frames (n_ref_frames x n_groups codes); the audio of those
     * frames leads the decoder's stream and is not heard */
    const int32_t *ref_ids;
    size_t n_ref_ids;
    const int32_t *ref_codes;
    int32_t n_ref_frames;
} tts_request;

typedef struct tts_session tts_session;

ember_status tts_session_create(const tts_model *m, const tts_session_params *p, tts_session **out);
void tts_session_free(tts_session *s);

/* Starts a request: resets the caches and samplers, builds the prompt and
 * prefills it. Afterwards tts_session_talker_logits() predicts frame 0. */
ember_status tts_session_start(tts_session *s, const tts_request *r);

/* Produces the next frame into codes[0..n_groups-1]. *done is set (and
 * nothing written) when codebook 0 is EOS or max_frames were produced.
 * force (NULL normally) teacher-forces the frame's codes instead of
 * sampling them, so logits can be compared against a reference. */
ember_status tts_session_step(tts_session *s, const int32_t *force, int32_t *codes, int *done);

/* Raw logits (before suppression and penalties) of the talker for the next
 * frame (talker vocab floats), and of predictor group g (0 = codebook 1)
 * in the last frame (predictor vocab floats). */
const float *tts_session_talker_logits(const tts_session *s);
const float *tts_session_predictor_logits(const tts_session *s, int32_t g);
int32_t tts_session_frames(const tts_session *s);
int32_t tts_session_prompt_length(const tts_session *s);

/* The session's threads (its pool's size), and how many of them the next
 * steps use (1..threads): a pipeline lends cores to its decoder this way. */
int32_t tts_session_threads(const tts_session *s);
void tts_session_use_threads(tts_session *s, int32_t n);
/* Pins the session's worker threads to cpus[0..n) (pool_pin). */
ember_status tts_session_pin(tts_session *s, const int32_t *cpus, int32_t n);

/* Milliseconds spent so far in the talker (prefill excluded) and the predictor. */
double tts_session_talker_ms(const tts_session *s);
double tts_session_predictor_ms(const tts_session *s);

#endif
