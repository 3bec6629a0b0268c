/* Text to audio while it is being generated: the talker and code predictor
 * (a tts_session) produce codec frames on the calling thread while a
 * decoder thread turns them into PCM with a c2w_stream, chunk by chunk.
 *
 * Frames are handed to the decoder in chunks that follow a schedule (by
 * default the ramp 2, 4, 8, 16, 25, the last size repeating): a small first
 * chunk gets audio out early, and each later chunk is larger so the audio
 * already delivered covers the time to produce the next one. A controller
 * (tts_chunk_controller) can decide each size instead, from the arrivals so
 * far. Because the decoder streams exactly (code2wav.h), the chunking never
 * changes the samples, only when they arrive.
 *
 * The two sides share the CPU: the generator reads ~1.7 GB of weights per
 * frame (memory-bound), the decoder does ~5 GFLOP per frame (compute-bound).
 * Rather than both taking every core and fighting, they trade cores: while
 * the decoder works on a chunk it uses decoder_threads of its pool and the
 * generator the rest of the machine; while the decoder waits for frames the
 * generator uses all of its threads. The first chunk can be decoded on all
 * cores while the generator waits, which brings the first audio forward. */
#ifndef EMBER_TTS_TTS_PIPELINE_H
#define EMBER_TTS_TTS_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/stats.h"
#include "tts/code2wav.h"
#include "tts/tts_session.h"

#define TTS_MAX_SCHEDULE 32

typedef struct tts_chunk_info {
    int32_t index;       /* 0, 1, ... */
    int32_t first_frame; /* the chunk's first frame in the utterance */
    int32_t n_frames;
    double ready_ms;     /* since tts_synthesize started: the PCM is ready */
    double decode_ms;    /* the decoder's time for this chunk */
} tts_chunk_info;

/* Receives each chunk's PCM (n_samples floats in [-1, 1], 24 kHz mono) on
 * the decoder thread, in order. Returning nonzero cancels the request: the
 * generator stops at its next frame and tts_synthesize returns
 * EMBER_ERR_CANCELLED. */
typedef int (*tts_pcm_fn)(void *user, const float *pcm, size_t n_samples,
                          const tts_chunk_info *info);

typedef struct tts_schedule {
    int32_t sizes[TTS_MAX_SCHEDULE]; /* frames per chunk; the last repeats */
    int32_t n;                       /* 0: the default ramp 2, 4, 8, 16, 25 */
} tts_schedule;

/* Parses "2,4,8,16,25" (1..TTS_MAX_SCHEDULE positive sizes). */
ember_status tts_schedule_parse(const char *text, tts_schedule *out);
/* Frames in chunk i of the schedule. */
int32_t tts_schedule_size(const tts_schedule *s, int32_t i);

/* A chunk size decided while the request runs (an adaptive controller:
 * edge_chunk_ctl through edge_chunk_ctl_callback). It is asked for chunk 0
 * before the first frame (now_ms 0, frames_emitted 0), and for chunk i+1
 * the moment chunk i's audio is ready (now_ms: that chunk's ready_ms,
 * frames_emitted: the frames whose audio is out, chunk i's included), from
 * one thread at a time. The answer is clamped to [1, max_frames]. */
typedef int32_t (*tts_chunk_size_fn)(void *user, double now_ms, int32_t frames_emitted);

typedef struct tts_chunk_controller {
    tts_chunk_size_fn next; /* NULL: the schedule decides */
    void *user;
    int32_t max_frames;     /* the largest chunk it may ask for; 0: 25 (the default ramp's steady size) */
} tts_chunk_controller;

typedef struct tts_pipeline_params {
    tts_schedule schedule;
    /* when controller.next is set it decides every chunk and the schedule
     * is not used; the audio is the same either way, only its timing moves */
    tts_chunk_controller controller;
    int32_t decoder_threads;  /* decoder threads while the generator runs; 0: half the CPUs */
    /* the first alone_chunks chunks (-1: all) decode on every decoder
     * thread while the generator pauses; the rest decode beside it */
    int32_t alone_chunks;
    /* step statistics (NULL: off), one recorder per thread: the generator's
     * (talker, predictor per frame) and the decoder's (codec decode
     * per chunk, handoff: a chunk's wait from its last frame to its decode) */
    ember_stats *gen_stats, *dec_stats;
    /* the CPUs the decoder thread runs on (pool_pin_self); n 0: anywhere */
    const int32_t *decoder_cpus;
    int32_t n_decoder_cpus;
} tts_pipeline_params;

tts_pipeline_params tts_pipeline_default_params(void);

typedef struct tts_synth_stats {
    int32_t frames, chunks;
    double prefill_ms;   /* the prompt, before the first frame */
    double talker_ms, predictor_ms, decoder_ms; /* totals */
    double first_audio_ms; /* the first chunk's ready_ms */
    double total_ms;
} tts_synth_stats;

/* Runs one request: prefill, frames until EOS or max_frames, each chunk
 * decoded and passed to `cb` as soon as it is ready. `dec` is reset first.
 * stats (optional) is filled on success and on cancellation. */
ember_status tts_synthesize(tts_session *gen, c2w_stream *dec, const tts_request *rq,
                            const tts_pipeline_params *p, tts_pcm_fn cb, void *user,
                            tts_synth_stats *stats);

#endif
