/* What the two halves of the public speech API share: the loaded engine
 * (src/api/speech.c: load, placement, warm-up, calibration, info) and its
 * requests (src/api/speech_request.c: speak, codes). */
#ifndef EMBER_API_SPEECH_INTERNAL_H
#define EMBER_API_SPEECH_INTERNAL_H

#include <stdatomic.h>

#include "edge/calibrate.h"
#include "ember_speech.h"
#include "tokenizer/tokenizer.h"
#include "tts/code2wav.h"
#include "tts/tts_pipeline.h"
#include "tts/voice_file.h"

struct ember_voice {
    voice_data d;
};

/* How a request without its own chunks is cut: the default ramp, the
 * calibration's measured ramp, or the adaptive controller. */
typedef enum { SPEECH_CHUNKS_DEFAULT, SPEECH_CHUNKS_CALIBRATED, SPEECH_CHUNKS_ADAPTIVE } speech_chunking;

struct ember_tts {
    tts_model *m;
    c2w_model *dm;   /* NULL with codes_only */
    tts_session *gen;
    c2w_stream *dec; /* NULL with codes_only */
    et_tokenizer *tok;         /* NULL when the directory has none: text_ids only */
    char tok_error[512];       /* why there is none */
    ember_tts_params p;
    int32_t gen_threads, dec_threads; /* the pools' sizes */
    atomic_int cancel;
    int16_t *s16; /* the s16 copy of a chunk */
    size_t s16_cap;
    /* the calibration (params.calibration): its cache file, what it said,
     * and the chunk arrivals of the request in progress, to refresh it */
    speech_chunking chunking;
    edge_calibration cal;
    char cal_path[1024];
    edge_chunk_ctl ctl;
    edge_chunk_time *arrivals;
    int32_t n_arrivals, cap_arrivals;
};

#endif
