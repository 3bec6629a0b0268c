/* The TTS session's fields, shared by talker.c (prompt, talker steps) and
 * predictor.c (the 15 codebooks of a frame). Not a public header. */
#ifndef EMBER_TTS_TTS_INTERNAL_H
#define EMBER_TTS_TTS_INTERNAL_H

#include "kernels/exec.h"
#include "generate/sampler.h"
#include "tts/tts_prompt.h"
#include "tts/tts_session.h"
#include "tts/tts_stack.h"

typedef struct tts_ort tts_ort;

struct tts_session {
    const tts_model *m;
    tts_session_params p;
    ek_exec exec;
    tts_stack_state talker, predictor;
    tts_ort *ort; /* the onnx backend's steps, or NULL: native */
    et_sampler *talker_sampler, *pred_sampler; /* made per request */
    void *qbuf;

    /* scratch, one allocation; rows are per prefill-chunk position */
    float *x;                   /* chunk x talker hidden: residual stream */
    float *text_in, *text_mid;  /* chunk x text hidden */
    float *h_last;              /* talker hidden: normed last state */
    float *talker_logits;       /* talker vocab, raw */
    float *work_logits;         /* talker vocab, what the sampler modifies */
    float *pred_in;             /* 2 x talker hidden: predictor inputs before projection */
    float *pred_x;              /* 2 x predictor hidden */
    float *pred_norm;           /* predictor hidden */
    float *pred_logits;         /* (n_groups - 1) x predictor vocab, raw */
    float *pred_work;           /* predictor vocab */
    float *pad_term;            /* talker hidden: P(tts_pad) */
    float *block;

    tts_prompt prompt;
    size_t next_trailing;       /* streaming: the next trailing text id to feed */
    int64_t pos;                /* talker positions held */
    int32_t frames, max_frames, min_frames;
    int started, finished, greedy;
    double talker_ms, pred_ms;
};

/* Runs the code predictor for one frame whose codebook 0 is c0 (s->h_last
 * holds the talker state that produced it): fills codes[1..n_groups-1],
 * sampled, or taken from force[1..] when force is not NULL. */
ember_status tts_predictor_frame(tts_session *s, int32_t c0, const int32_t *force, int32_t *codes);

/* The talker over n embedded rows x (n x hidden) at positions pos..: the
 * native stack or the onnx backend; the last row's normed state and codec
 * logits land in s->h_last and s->talker_logits when `head` is set. */
ember_status tts_talker_rows(tts_session *s, float *x, int64_t pos, int32_t n, int head);

double tts_now_ms(void);

#endif
