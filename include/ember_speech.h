/*
 * ember_speech.h - Qwen3-TTS text to speech, streamed chunk by chunk.
 *
 * Included by ember.h; include either. Compiles as C99 and C++. Conventions
 * as in ember_text.h: statuses, ember_last_error(), no printing, no exit.
 *
 *     ember_tts_params tp = ember_tts_default_params();
 *     ember_tts *tts;  ember_tts_load("Qwen3-TTS-12Hz-0.6B-CustomVoice/", &tp, &tts);
 *     ember_speech_request rq = ember_speech_default_request();
 *     rq.text = "Hello."; rq.speaker = "ryan"; rq.language = "english";
 *     ember_tts_speak(tts, &rq, NULL, on_s16, file, &timings);
 *
 * An ember_tts holds the talker, the code predictor, the speech decoder and
 * one generation stream: it runs one request at a time (one thread at a
 * time); load several to speak in parallel. While a request runs, frames are
 * generated on the calling thread and decoded to PCM on a decoder thread,
 * whose chunks the callbacks receive, in order, the moment each is ready.
 */
#ifndef EMBER_SPEECH_H
#define EMBER_SPEECH_H

#include "ember.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ember_tts ember_tts;
typedef struct ember_voice ember_voice; /* a saved voice (below) */

typedef struct ember_tts_params {
    ember_type weight_type;  /* talker and predictor: NONE (default) keeps the file's */
    ember_type decoder_type; /* speech decoder: NONE (default) fp32 arithmetic with weights
                                a file stores as f16 kept f16; F32 widens them; BF16 */
    const char *kernels;     /* NULL: the best set this CPU runs */
    int32_t n_threads;       /* generator threads incl. the caller; 0: one per CPU */
    int32_t decoder_threads; /* decoder threads while the generator runs; 0: half the
                                CPUs (a chunk decoded alone uses every CPU) */
    int32_t max_frames;      /* the longest utterance in 80 ms frames; default 1000 */
    int32_t max_text_tokens; /* the longest text; default 512 */
    int32_t alone_chunks;    /* the first N chunks of a request (-1: all) decode on every
                                CPU while the generator waits, the rest beside it;
                                default 1: the first audio as early as possible */
    /* Where the threads run: the generator's (the caller's thread and its
     * helpers) and the decoder's are pinned to these CPUs; n 0 (default):
     * unpinned. ember_profile_apply_tts fills both from the derived profile. */
    int32_t generator_cpus[256];
    int32_t n_generator_cpus;
    int32_t decoder_cpus[256];
    int32_t n_decoder_cpus;
    int warm_up;             /* 1: one short request whose audio is dropped runs at load,
                                so the first real one finds caches and buffers warm
                                (~100 ms earlier first audio); default 0 */
    int calibration;         /* 1: requests without chunks follow this machine's cached
                                calibration for the model (under $XDG_CACHE_HOME/ember:
                                a measured chunk ramp, or the adaptive controller), and
                                each finished request refreshes that cache; default 0:
                                the default ramp, nothing read or written */
    int codes_only;          /* 1: load the talker and predictor only (no
                                speech_tokenizer/ needed): ember_tts_codes works,
                                ember_tts_speak fails; default 0 */
    const char *backend;     /* NULL or "cpu": ember's kernels run the talker and
                                predictor; "onnx:DIR": their steps run through the
                                graphs `ember export onnx` wrote to DIR from this
                                model (ember_export_onnx_tts), on ONNX Runtime's
                                CPU provider, ember's host loop around them; the
                                speech decoder too where DIR has its graphs
                                (code2wav_N.onnx, from a model loaded whole),
                                else it stays native. Prompt plus frames
                                are capped at the graphs' context bucket; the
                                calibration (above) is neither read nor written */
    const char *onnx_runtime; /* the libonnxruntime for "onnx:DIR" (NULL:
                                "libonnxruntime.so.1" on the loader's path) */
    const char *onnx_provider; /* its execution provider and options, as in */
    const char *onnx_options;  /* ember_model_params (NULL: CPU, none) */
} ember_tts_params;

ember_tts_params ember_tts_default_params(void);

/* dir: a Qwen3-TTS checkpoint directory (config.json, model.safetensors,
 * speech_tokenizer/, tokenizer), or a GGUF file ember_tts_quantize wrote
 * (its matrices used as stored, mapped). Errors name the file or tensor at
 * fault. */
ember_status ember_tts_load(const char *dir, const ember_tts_params *p, ember_tts **out);
void ember_tts_free(ember_tts *tts);

/* Writes the checkpoint directory `dir` as one GGUF file at `path` that
 * ember_tts_load reads alone (docs/API.md, "Speech models as GGUF"): the
 * talker's and code predictor's matrices in `type` (a single format of
 * ember_quantize_types(): "q8_0", "q4_0", "q4_k", ..., "bf16"; not a mix),
 * the speech decoder and encoder in `speech_type` ("f32", "f16" or "bf16";
 * NULL: "f32"), norms, biases and the speaker encoder in f32, with the
 * configs and the text tokenizer. progress may be NULL; *n_tensors (may be
 * NULL) gets the tensors written. The file is written whole or not at all. */
ember_status ember_tts_quantize(const char *dir, const char *path, const char *type,
                                const char *speech_type, ember_progress_fn progress, void *user,
                                size_t *n_tensors);

/* Samples per second of the PCM (24000; 0 with codes_only). */
int32_t ember_tts_sample_rate(const ember_tts *tts);
/* Codes per frame (16). */
int32_t ember_tts_codebooks(const ember_tts *tts);

/* What the load set up, as a JSON object in *json (ember_free): the
 * "weights" format that runs, "decoder_weights" (the speech decoder's:
 * "f32", "f16" or "bf16"; empty without a decoder), "kernels", "generator_threads",
 * "decoder_threads", "generator_cpus" and "decoder_cpus" (empty: unpinned),
 * "model_type" ("custom_voice", "base": cloning, "voice_design"), "small"
 * (a 0.6B model: instructions are ignored), "xvector_dim",
 * "samples_per_frame", "sample_rate", "speakers" and "languages" (the
 * checkpoint's), and "chunking": "default", "calibrated" (a measured ramp)
 * or "adaptive", with the calibration's "ramp", "rate_fps", "path" and a
 * one-line "description" of them. */
ember_status ember_tts_info(const ember_tts *tts, char **json);

typedef struct ember_speech_request {
    const char *text;     /* UTF-8; required unless text_ids are given */
    const char *speaker;  /* a speaker of the checkpoint ("ryan"), or NULL */
    const char *language; /* "english", ..., NULL or "auto" */
    uint64_t seed;        /* default 0 */
    int greedy;           /* argmax for talker and predictor; default 0 (sampled as the
                             model's generation_config says) */
    int32_t max_frames;   /* 0 (default): the model's max_new_tokens, capped by the
                             params' max_frames */
    int32_t min_frames;   /* the end of speech is refused before; 0 (default): the
                             model's min_new_tokens (a benchmark sets max_frames) */
    const char *chunks;   /* frames per chunk, "2,4,8,16,25" (the last repeats);
                             NULL: the calibration's (params.calibration), else that
                             default ramp */
    /* the prompt's token ids instead of text: those of
     * "<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n" */
    const int32_t *text_ids;
    size_t n_text_ids;
    int streaming_text;   /* 1: the text enters one token per frame, as it would while
                             an LLM still writes it; 0: all in the prompt; -1
                             (default): the mode's own (1 for a clone, else 0) */
    /* sampling of the talker and the predictor alike; negative (default):
     * generation_config's. temperature 0 is greedy. */
    float temperature;
    int32_t top_k;        /* 0: off */
    float top_p;          /* in (0, 1] */
    float repetition_penalty; /* > 0 */
    ember_stats *stats;   /* step statistics (NULL: off): per frame the talker and
                             predictor, per chunk the decoder and its handoff */
    /* The voice beyond a built-in speaker (see "model_type" in ember_tts_info):
     * an instruction ("speak slowly", or a VoiceDesign model's description of
     * the voice; a 0.6B model ignores it, as the official code does; a Base
     * model refuses it), and a Base model's speaker x-vector (n_xvector
     * floats: "xvector_dim"), which takes the speaker's place. */
    const char *instruct;
    const float *xvector;
    int32_t n_xvector;
    const ember_voice *voice; /* a saved voice, in place of xvector; one for
                                 another model size is refused */
    /* In-context cloning (the official default for a clone): beside the
     * x-vector, what the reference recording says and its codes
     * (ember_voice_codes: n_ref_frames x codebooks). The recording's audio
     * leads the decoder's stream unheard, so the first audio continues it.
     * A saved voice made with a transcript brings both. */
    const char *ref_text;
    const int32_t *ref_codes;
    int32_t n_ref_frames;
    int xvector_only; /* 1: the x-vector alone, even from a voice with a transcript */
} ember_speech_request;

ember_speech_request ember_speech_default_request(void);

typedef struct ember_speech_chunk {
    int32_t index;       /* 0, 1, ... */
    int32_t first_frame; /* its first frame in the utterance */
    int32_t n_frames;
    double ready_ms;     /* since the request started: the audio is ready */
    double decode_ms;    /* the decoder's time on this chunk */
} ember_speech_chunk;

/* n samples of mono PCM, floats in [-1, 1] or s16. Called on the decoder
 * thread, in order, valid during the call. Non-zero cancels the request. */
typedef int (*ember_pcm_f32_fn)(void *user, const float *pcm, size_t n, const ember_speech_chunk *chunk);
typedef int (*ember_pcm_s16_fn)(void *user, const int16_t *pcm, size_t n, const ember_speech_chunk *chunk);

typedef struct ember_speech_timings {
    int32_t frames, chunks;
    double prefill_ms;     /* the prompt, before the first frame */
    double talker_ms, predictor_ms, decoder_ms; /* totals */
    double first_audio_ms; /* the first chunk ready */
    double total_ms;
    int32_t prompt_tokens; /* the talker's prompt */
    int stopped_at_eos;    /* 1: the model ended the utterance; 0: max_frames did */
} ember_speech_timings;

/* Speaks one request: each decoded chunk goes to on_f32 and/or on_s16 (either
 * may be NULL; both get the same samples). timings (may be NULL) is filled on
 * success and on cancellation. Errors: INVALID_ARG (no text, an unknown
 * speaker or language, a bad chunks string, text over max_text_tokens),
 * CANCELLED (a callback or ember_tts_cancel). */
ember_status ember_tts_speak(ember_tts *tts, const ember_speech_request *rq, ember_pcm_f32_fn on_f32,
                             ember_pcm_s16_fn on_s16, void *user, ember_speech_timings *timings);

/* One frame's codes (ember_tts_codebooks() of them), valid during the call,
 * on the generating thread. Non-zero cancels the request. */
typedef int (*ember_codes_fn)(void *user, const int32_t *codes, int32_t n_codes, int32_t frame);

/* The frames alone, without decoding them to audio (for another decoder, a
 * file, a test): each frame's codes go to on_codes as it is made. Works on
 * a codes_only load too. The request's chunks are ignored; timings as in
 * ember_tts_speak (no chunks, no decoder time). Errors as ember_tts_speak. */
ember_status ember_tts_codes(ember_tts *tts, const ember_speech_request *rq, ember_codes_fn on_codes,
                             void *user, ember_speech_timings *timings);

/* Stops the request running on tts at its next chunk (any thread). A cancel
 * that arrives while none runs stops the next one at its first chunk. */
void ember_tts_cancel(ember_tts *tts);

/* ---- the speech decoder alone: codec frames -> PCM ------------------- */

/* Qwen3-TTS's Code2Wav decoder, for frames made elsewhere (another
 * process, an accelerator, a file). One stream: frames pushed in order,
 * in chunks of any size; the audio does not depend on the split. One
 * thread at a time; load several to decode in parallel. */
typedef struct ember_codec ember_codec;

typedef struct ember_codec_params {
    ember_type weight_type;  /* NONE/F32 (default): fp32 throughout; BF16: bf16 products */
    const char *kernels;     /* NULL: the best set this CPU runs */
    int32_t n_threads;       /* incl. the caller; 0: one per CPU */
    int32_t frames_per_pass; /* frames the front stages take at once; 0: 25 */
    int winograd;            /* 1 (default): Winograd F(2,7) residual convolutions
                                (~1.4x faster, fp32 rounding); 0: direct */
} ember_codec_params;

ember_codec_params ember_codec_default_params(void);
/* dir: a Qwen3-TTS directory (its speech_tokenizer/) or the decoder's own
 * directory (config.json, model.safetensors). Errors name the file or tensor. */
ember_status ember_codec_load(const char *dir, const ember_codec_params *p, ember_codec **out);
void ember_codec_free(ember_codec *codec);

int32_t ember_codec_sample_rate(const ember_codec *codec);       /* 24000 */
int32_t ember_codec_samples_per_frame(const ember_codec *codec); /* 1920: 80 ms */
int32_t ember_codec_codebooks(const ember_codec *codec);         /* codes per frame: 16 */
const char *ember_codec_kernels(const ember_codec *codec);        /* the kernel set in use */

/* Decodes n_frames frames (frame-major, ember_codec_codebooks() codes each,
 * each code below the codebook size) after those pushed before: pcm gets
 * n_frames x samples_per_frame floats. Errors: INVALID_ARG (a code out of
 * range; the stream is unchanged). */
ember_status ember_codec_push(ember_codec *codec, const int32_t *codes, int32_t n_frames, float *pcm);
/* Starts a new utterance. */
void ember_codec_reset(ember_codec *codec);
/* The stateless alternative, for comparison: decodes n_ctx frames of left
 * context and then n_new frames from a fresh state, keeping the n_new
 * frames' samples (codes holds n_ctx + n_new frames). Resets the stream. */
ember_status ember_codec_push_windowed(ember_codec *codec, const int32_t *codes, int32_t n_ctx,
                                       int32_t n_new, float *pcm);

/* ---- voices: what cloning takes from a recording --------------------- */

/* What an audio file held. */
typedef struct ember_audio_info {
    int32_t file_sample_rate, channels, bits;
    int is_float;               /* float samples (else PCM integers) */
    double seconds;             /* the file's length */
    float peak;                 /* largest |sample| of the mono mix: 0 is silence */
    int64_t full_scale_samples; /* samples at full scale: clipping */
} ember_audio_info;

/* Reads a WAV file as people have them (PCM 8/16/24/32-bit or float 32/64,
 * plain or extensible, 1-16 channels averaged to mono) and resamples it to
 * sample_rate (libsoxr) when the file has another: *pcm (ember_free) gets
 * *n floats. max_seconds > 0 refuses a longer file rather than cutting it.
 * Silent and clipped audio is read as it is (info says so). Errors: IO,
 * FORMAT (malformed, truncated, empty, NaN samples; naming the file),
 * UNSUPPORTED (another encoding), INVALID_ARG (too long). */
ember_status ember_audio_read(const char *path, int32_t sample_rate, double max_seconds, float **pcm, size_t *n,
                              ember_audio_info *info);

/* The encoders of voice cloning: a Base model's speaker encoder (the
 * x-vector of a recording) and the speech tokenizer's encoder (a
 * recording's codes, 16 per 80 ms frame). Immutable once loaded: several
 * threads may encode at once. */
typedef struct ember_voice_encoder ember_voice_encoder;

typedef struct ember_voice_params {
    const char *kernels; /* NULL: the best set this CPU runs */
    int32_t n_threads;   /* 0 or 1 (default): the caller's thread alone */
    int speaker;         /* 1 (default): load the speaker encoder (Base models) */
    int codes;           /* 1: load the speech tokenizer's encoder; default 0 */
} ember_voice_params;

ember_voice_params ember_voice_default_params(void);
/* dir: a Qwen3-TTS directory (speaker: a Base model's). Errors name the file
 * or tensor at fault. */
ember_status ember_voice_encoder_load(const char *dir, const ember_voice_params *p, ember_voice_encoder **out);
void ember_voice_encoder_free(ember_voice_encoder *v);

int32_t ember_voice_xvector_dim(const ember_voice_encoder *v); /* 0 without the speaker encoder */
size_t ember_voice_min_samples(const ember_voice_encoder *v);  /* the shortest clip at 24 kHz */
/* The x-vector (ember_voice_xvector_dim floats) of n samples of 24 kHz
 * mono. Errors: INVALID_ARG (no speaker encoder; shorter than the minimum,
 * naming it). */
ember_status ember_voice_xvector(const ember_voice_encoder *v, const float *pcm, size_t n, float *xvector);

int32_t ember_voice_codebooks(const ember_voice_encoder *v);             /* 0 without the codes encoder */
int64_t ember_voice_code_frames(const ember_voice_encoder *v, size_t n); /* frames of n samples */
/* The codes (ember_voice_code_frames x codebooks) of n >= 1 samples of 24
 * kHz mono; gaps (may be NULL): each choice's margin to the runner-up
 * codebook row (a near tie is one that another float computation may
 * decide the other way). */
ember_status ember_voice_codes(const ember_voice_encoder *v, const float *pcm, size_t n, int32_t *codes,
                               float *gaps);

/* A saved voice: a recording's x-vector and codes, with its transcript,
 * made once (ember_voice_create) and reused by any number of requests of
 * the same model size (ember_speech_request.voice) without the encoders.
 * The file (ember_voice_save) is small, versioned and checksummed;
 * ember_voice_load refuses a damaged one or another version by name. A
 * voice is immutable: share it between threads freely. */
/* From n samples of 24 kHz mono: the x-vector (enc needs its speaker
 * encoder) and, when enc has the codes encoder, the reference codes;
 * ref_text (may be NULL) is what the recording says. */
ember_status ember_voice_create(const ember_voice_encoder *enc, const float *pcm, size_t n, const char *ref_text,
                                ember_voice **out);
/* Written atomically: a crash leaves the old file or the new. */
ember_status ember_voice_save(const ember_voice *voice, const char *path);
ember_status ember_voice_load(const char *path, ember_voice **out);
void ember_voice_free(ember_voice *voice);
/* The voice's summary as JSON in *json (ember_free): "xvector_dim" (1024:
 * a 0.6B Base model's, 2048: 1.7B), "frames", "codebooks", "ref_text",
 * "model" (the directory it was made with). */
ember_status ember_voice_info(const ember_voice *voice, char **json);

/* ---- WAV files ------------------------------------------------------- */

/* A 16-bit mono WAV file written as PCM arrives (floats in [-1, 1], rounded
 * and clipped to s16). The header's lengths are set by ember_wav_close.
 * After a failed write, ember_wav_abort removes the partial file (a failed
 * open or close removes it itself). Errors: IO naming the path. */
typedef struct ember_wav ember_wav;

ember_status ember_wav_open(const char *path, int32_t sample_rate, ember_wav **out);
ember_status ember_wav_write(ember_wav *wav, const float *pcm, size_t n);
/* Finishes the file and frees wav (also on error, when the file is removed). */
ember_status ember_wav_close(ember_wav *wav);
/* Removes the file and frees wav. */
void ember_wav_abort(ember_wav *wav);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_SPEECH_H */
