/* What a session is made of, for the library's own use (the batch decoder
 * runs sessions' caches through its own scratch). Not public API. */
#ifndef EMBER_LLM_SESSION_INTERNAL_H
#define EMBER_LLM_SESSION_INTERNAL_H

#include <stdatomic.h>

#include "ember.h"
#include "llm/forward.h"
#include "llm/prefix.h"
#include "nn/kv.h"

struct ember_session {
    const ember_model *m;
    ember_session_params p;
    kv_cache kv;
    ek_exec exec;    /* the model's kernels on this session's thread pool */
    int64_t pos;     /* tokens held */
    int has_logits;
    float *logits;   /* vocab */
    llm_work work;   /* prefill_chunk rows */
    ember_stats *stats; /* decode-step timers by layer type; NULL: off */
    atomic_int cancel;  /* ember_session_cancel: set from any thread, taken by generate */
    /* ember_session_mark: the rings at earlier positions, increasing */
    llm_ring_snapshot marks[LLM_SESSION_MAX_MARKS];
    size_t n_marks;
    struct spark_ort *ort; /* the model's onnx backend: ONNX Runtime runs each token */
    /* state a layer above keeps with the session between calls (the draft
     * model's session of speculative decoding: speculate/draft_model.h),
     * freed with it by kept_free; NULL: none */
    void *kept;
    void (*kept_free)(void *kept);
};

/* The cache format of a session's kv_type (ET_DTYPE_COUNT when invalid). */
et_dtype session_kv_dtype(ember_type t);

/* Checks that n ids (n >= 1) fit the session and are inside the vocabulary;
 * `what` names the caller in the message. Touches nothing. */
ember_status session_check_input(const ember_session *s, const int32_t *ids, size_t n,
                                 const char *what);

/* Runs n <= w->rows checked ids through every layer as one chunk; with
 * want_logits, the last token's logits land in s->logits. Every row's final
 * hidden state stays in w->x (llm_logits can read any of them). */
void session_forward_chunk(ember_session *s, llm_work *w, const int32_t *ids, int32_t n,
                           int want_logits);

/* Runs n checked ids through the model on w's scratch and kernels, in
 * chunks of w->rows, appending to s's caches; s's logits then predict the
 * token after the last id. */
void session_forward(ember_session *s, llm_work *w, const int32_t *ids, size_t n);

#endif
