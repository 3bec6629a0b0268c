/* What `ember tts` and `ember bench tts` share: the talker/predictor model
 * and the speech decoder from one Qwen3-TTS directory, a generation session
 * and a decoder stream with the cores split between them, the derived
 * profile (weight format, placement) and the cached calibration (the chunk
 * schedule, or the adaptive controller), and the options that choose all
 * of that. */
#ifndef EMBER_TOOLS_TTS_ENGINE_H
#define EMBER_TOOLS_TTS_ENGINE_H

#include <getopt.h>

#include "cli.h"
#include "edge/calibrate.h"
#include "edge/latency_report.h"
#include "tts/tts_pipeline.h"

typedef struct tts_engine_opts {
    const char *dir;
    ember_type dtype;         /* talker and predictor (--dtype); NONE: the profile's */
    ember_type decoder_dtype; /* --decoder-dtype f32|bf16 */
    const char *kernels;
    int gen_threads;          /* generator pool; 0: every CPU */
    tts_pipeline_params pipeline; /* --chunks, --decoder-threads, --alone-chunks */
    int warm_up;              /* one dropped request at open (--no-warm-up clears it) */
    int pin;                  /* pin threads to the profile's CPUs (--no-pin clears it) */
    cli_profile profile;      /* --profile auto|off|explain */
    int calibrate;            /* use the cached calibration (--no-calibration clears it) */
    /* what tts_engine_calibration_load found: run on a controller per request */
    int adaptive;
    edge_calibration calibration;
} tts_engine_opts;

typedef struct tts_engine {
    tts_model *m;
    c2w_model *dm;
    tts_session *gen;
    c2w_stream *dec;
    int gen_threads, dec_threads;
    /* the derived profile's CPUs: the generator's and the audio decoder's */
    int32_t gen_cpus[256], dec_cpus[256];
    int32_t n_gen_cpus, n_dec_cpus;
    edge_chunk_ctl ctl; /* the adaptive controller of the request in progress */
} tts_engine;

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
    TTS_OPT_NO_CALIBRATION
};
#define TTS_ENGINE_OPTIONS                                                                  \
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
        CLI_PROFILE_OPTIONS
extern const char tts_engine_usage[];

void tts_engine_opts_init(tts_engine_opts *o);
/* 1: handled, 0: not an engine option, -1: bad value (message printed). */
int tts_engine_option(int c, const char *arg, const char *cmd, tts_engine_opts *o);
/* Loads and creates everything, sized for max_frames after a prompt of up
 * to max_prompt ids: the talker and predictor in --dtype, else in the
 * derived profile's format (--profile off: as stored; e->m->weight_type
 * says which), the threads pinned where the profile places them (o->pipeline
 * then names the decoder's CPUs, inside e) unless --no-pin or --profile
 * off, and warms up. Returns 0, or -1 with a message printed. */
int tts_engine_open(tts_engine *e, tts_engine_opts *o, int32_t max_prompt,
                    int32_t max_frames, const char *cmd);
void tts_engine_close(tts_engine *e);

/* Chunk arrivals of one request, as the calibration and the latency report
 * take them (src/edge/latency_report.h). */
#define TTS_ENGINE_MAX_CHUNKS 4096
typedef struct tts_arrivals {
    edge_chunk_time chunks[TTS_ENGINE_MAX_CHUNKS];
    int32_t n;
} tts_arrivals;
void tts_arrivals_add(tts_arrivals *a, const tts_chunk_info *info, int32_t samples_per_frame);

/* Calibration (src/edge/calibrate.h) cached per hardware fingerprint and
 * model under $XDG_CACHE_HOME/ember: load replaces the default ramp by the
 * calibrated schedule, and when the calibration says adaptive sets
 * o->adaptive, unless the command line gave --chunks (a fixed schedule) or
 * --no-calibration (returns 1 when it did, 0 when not, and prints which on
 * stderr with `verbose`); save
 * calibrates from one request's arrivals and stores it. Failures only warn. */
int tts_engine_calibration_load(tts_engine_opts *o, const char *cmd, int verbose);
/* The measured calibration cached for the model in dir on this machine: 1
 * (with its path), 0 when there is none, or it cannot be read (warned). */
int tts_calibration_find(const char *dir, const char *cmd, edge_calibration *out, char *path, size_t cap);
/* Says on stderr which chunking a found calibration gives. */
void tts_calibration_describe(const edge_calibration *cal, const char *path, const char *cmd);
/* Before each request: a calibration that says adaptive gets a fresh
 * controller (e->ctl) in o->pipeline; otherwise the schedule stands. */
void tts_engine_start_request(tts_engine *e, tts_engine_opts *o);
void tts_engine_calibration_save(const tts_engine_opts *o, const tts_arrivals *a,
                                 int32_t sample_rate, const char *cmd);

#endif
