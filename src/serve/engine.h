/* The engine: one thread owns the model's sessions and runs every admitted
 * sequence. HTTP threads only submit jobs and read their output (job.h).
 *
 * Each step, the engine
 *   1. drops sequences whose client left or whose deadline passed (their KV
 *      reservation is released at once, so a waiting request can start),
 *   2. admits queued jobs in arrival order while their exact KV bytes (the
 *      session's geometry for prompt + max_tokens: sliding layers capped at
 *      the window, full layers the whole length) fit the budget and a row
 *      is free; nothing admitted is ever preempted,
 *   3. runs one prefill piece of each newly admitted sequence (pieces keep
 *      a long prompt from stalling the others' streams), after resuming
 *      what it can from the prefix cache (prefix_cache.h),
 *   4. decodes one token of every other sequence in one batched step
 *      (llm/batch.h: one matmul per weight matrix for all rows); a job
 *      that speculates (j->speculate) puts its pending id and its drafts
 *      (prompt lookup, or the draft model's session that the sequence
 *      keeps beside its own, run on the batch's threads) into the same
 *      step as a chunk of rows to verify (speculate/decoder.h), its ids
 *      the ones plain decoding gives; without drafts this step it is one
 *      row like the others, and a chunk that does not fit the step's rows
 *      runs a verify pass of its own,
 *   5. samples, streams and finishes sequences (text/textgen.h).
 * With a stats recorder (--stats) it times each request's queue wait and
 * prefill, each batched step (the series decode_step, its sliding and full
 * layers, and `token`: the step with the sampling and detokenizing of all
 * its rows, the time each row waits for its next token) and every
 * sampler and detokenizer call.
 * A full queue refuses at submission (503 with Retry-After).
 *
 * On the onnx backend (a model loaded with "onnx:DIR") there is no batch:
 * ORT runs a graph of one token (or one prefill chunk) per call over host
 * buffers its session owns, so each slot holds its own ember session with
 * its own ORT sessions and caches (per-slot state; each slot's ORT copy of
 * the weights costs memory: --max-seqs 1 runs sequences one at a time).
 * Step 4 runs the slots' steps one after another on the engine thread,
 * each on ORT's intra-op threads (n_threads). A finished slot's session is
 * reset and kept for the next sequence (graphs load once per slot). The
 * prefix cache (native KV snapshots) and speculation are off; prompt
 * pieces are whole prefill chunks, so a prompt runs through the graphs as
 * one ember_session_prefill call runs it, and the served context is the
 * graphs' bucket.
 *
 * Speech (/v1/audio/speech) is not served yet: a TTS engine would be a
 * second engine of the same shape (its own thread, queue and jobs, writing
 * audio bytes into the job instead of SSE text), registered beside this
 * one by the server; the metrics already have its time-to-first-audio
 * histogram. */
#ifndef EMBER_SERVE_ENGINE_H
#define EMBER_SERVE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/stats.h"
#include "ember.h"
#include "serve/job.h"
#include "serve/metrics.h"
#include "tokenizer/tokenizer.h"

typedef struct sv_engine_params {
    int max_seqs;       /* sequences decoded together (rows per step) */
    int32_t ctx;        /* the most tokens one sequence may hold */
    int n_threads;      /* 0: one per online CPU */
    int max_queue;      /* jobs waiting for admission before 503 */
    size_t kv_budget;   /* KV bytes all sequences may reserve; 0: max_seqs
                           sequences of ctx tokens */
    ember_type kv_type;
    int32_t prefill_piece; /* prompt tokens per sequence per step */
    size_t prefix_cache_bytes; /* finished conversations kept for reuse; 0: off */
    ember_stats *stats; /* step statistics, recorded by the engine thread only
                           (read it after sv_engine_shutdown); NULL: off */
    const char *prefix_cache_dir; /* the prefix cache also on disk here
                                     (prefix_cache.h); NULL: memory only */
    const ember_model *draft; /* the draft model of jobs that speculate with
                           one (the same vocabulary; it must outlive the
                           engine); NULL: none */
} sv_engine_params;

typedef struct sv_engine sv_engine;

/* Starts the engine thread. model, tok (detokenizes the replies) and
 * metrics (gauges, token counts) must outlive the engine. */
ember_status sv_engine_create(const ember_model *model, const et_tokenizer *tok,
                              const sv_engine_params *p, sv_metrics *metrics, sv_engine **out);
/* Stops the thread; running and queued jobs end with 503, and later
 * submissions are refused (503). The engine stays valid until freed. */
void sv_engine_shutdown(sv_engine *e);
void sv_engine_free(sv_engine *e); /* shuts down first if needed */

/* The KV bytes a job's sequence reserves: its session of prompt +
 * max_tokens, and as much again in the draft model's format when it
 * drafts with one. */
size_t sv_engine_kv_bytes(const sv_engine *e, const sv_job *j);

/* Queues a job whose prompt and max_tokens are set and checked against
 * ctx. On success the engine holds a reference until it finishes the job.
 * On failure (queue full: 503; never fits the budget: 400) *err says why. */
int sv_engine_submit(sv_engine *e, sv_job *j, sv_error *err);

#endif
