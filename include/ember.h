/*
 * ember.h - the public C API of ember, an on-device inference runtime.
 *
 * A model is loaded once from a Hugging Face checkpoint directory (config.json
 * plus one or sharded safetensors files, mmapped read-only). A loaded model is
 * immutable and can serve many sessions at once; a session owns its KV caches,
 * scratch buffers and position. All per-token buffers are sized when the
 * session is created: nothing is allocated while decoding.
 *
 * Every call that can fail returns an ember_status. On failure,
 * ember_last_error() returns a message naming the file, tensor or key at fault.
 * The message is kept per thread and stays valid until the next failing call
 * on that thread. The library never exits or aborts the process.
 *
 * Usage:
 *
 *     ember_model_params mp = ember_model_default_params();
 *     ember_model *model;
 *     if (ember_model_load("Spark-X2.5-1.7B/", &mp, &model) != EMBER_OK) {
 *         fprintf(stderr, "%s\n", ember_last_error());
 *         return 1;
 *     }
 *     ember_session_params sp = ember_session_default_params();
 *     sp.max_context = 8192;                 // full-layer caches sized here
 *     ember_session *s;
 *     if (ember_session_create(model, &sp, &s) != EMBER_OK) { ... }
 *     ember_session_prefill(s, ids, n_ids);  // chunked internally
 *     for (int i = 0; i < 32; i++) {
 *         const float *logits = ember_session_logits(s);   // vocab floats
 *         int32_t next = argmax(logits, ember_model_vocab_size(model));
 *         ember_session_decode(s, next);
 *     }
 *     ember_session_free(s);
 *     ember_model_free(model);
 *
 * The header compiles as C99 and as C++.
 */
#ifndef EMBER_H
#define EMBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ember_status {
    EMBER_OK = 0,
    EMBER_ERR_INVALID_ARG,  /* a NULL handle, a bad parameter value */
    EMBER_ERR_IO,           /* a file could not be opened, read or mapped */
    EMBER_ERR_FORMAT,       /* malformed checkpoint: bad JSON, wrong shape, ... */
    EMBER_ERR_UNSUPPORTED,  /* well-formed but not something ember can run */
    EMBER_ERR_NO_MEMORY,
    EMBER_ERR_CONTEXT_FULL, /* the session reached max_context */
    EMBER_ERR_CANCELLED     /* a callback asked to stop */
} ember_status;

/* A short fixed name for a status ("format error", ...). Never NULL. */
const char *ember_status_name(ember_status status);

/* The message of the last failure on the calling thread ("" if none). */
const char *ember_last_error(void);

/* The version of these headers; ember_version_string() is the library's
 * (they differ when a program runs against another build of libember). */
#define EMBER_VERSION_MAJOR 0
#define EMBER_VERSION_MINOR 1
#define EMBER_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" of the library. Static, never NULL. */
const char *ember_version_string(void);

/* How the library was built and what it runs here, as a JSON object in
 * *json (ember_free): {"version", "compiler",
 * "arch", "kernels_built": the kernel sets compiled in ("scalar", "avx2",
 * "avx512" on x86-64; "scalar", "neon" on aarch64), "kernels_runnable": those
 * this CPU runs, "kernels_default": the set a model uses when its params
 * name none, "cpu": {the instruction-set flags cpuid reports}}. Any thread.
 * Errors: NO_MEMORY. */
ember_status ember_build_info(char **json);

/* How the MLP's GELU is computed. ERF is exact and the model's own; TANH is the
 * approximation some other runtimes use (expect ~70 dB logits SNR against ERF). */
typedef enum ember_gelu {
    EMBER_GELU_ERF = 0,
    EMBER_GELU_TANH = 1
} ember_gelu;

/* Weight storage formats. Q8_0, Q4_0, the K-quants (Q2_K..Q6_K, IQ4_NL,
 * IQ4_XS) and Q4_1, Q5_0, Q5_1 are GGUF's block formats, byte for byte. The
 * K-quants hold rows whose length is a multiple of 256 (IQ4_NL and the
 * others: 32); converting at load leaves other rows as they are. */
typedef enum ember_type {
    EMBER_TYPE_NONE = 0, /* keep what the file holds */
    EMBER_TYPE_F32,
    EMBER_TYPE_F16,
    EMBER_TYPE_BF16,
    EMBER_TYPE_Q8_0,
    EMBER_TYPE_Q4_0,
    EMBER_TYPE_Q2_K,
    EMBER_TYPE_Q3_K,
    EMBER_TYPE_Q4_K,
    EMBER_TYPE_Q5_K,
    EMBER_TYPE_Q6_K,
    EMBER_TYPE_IQ4_NL,
    EMBER_TYPE_IQ4_XS,
    EMBER_TYPE_Q4_1,
    EMBER_TYPE_Q5_0,
    EMBER_TYPE_Q5_1
} ember_type;

typedef struct ember_model_params {
    ember_gelu gelu;        /* default EMBER_GELU_ERF */
    ember_type weight_type; /* convert every weight matrix at load; default NONE */
    const char *kernels;    /* NULL: the fastest set this CPU runs; or "scalar",
                               "avx2", "avx512", "neon" (an error if the CPU
                               cannot run it) */
    int all_full_attention; /* benchmarking only: run every layer as full
                               attention (the flat-cache baseline) */
    const char *backend;    /* NULL or "cpu": ember's kernels run every step;
                               "onnx:DIR": sessions run each token through the
                               decode-step graph `ember export onnx` wrote to DIR
                               (ember_export.h), on ONNX Runtime's CPU provider,
                               with ember's host loop (caches, masks, rotary
                               tables) around it. Sessions then cap max_context
                               at the graph's context bucket; batched decoding
                               (the server) is not available */
    const char *onnx_runtime; /* the libonnxruntime to load for "onnx:DIR"
                               (NULL: "libonnxruntime.so.1" on the loader's
                               search path) */
    const char *onnx_provider; /* ONNX Runtime's execution provider for
                               "onnx:DIR": NULL or "cpu": its CPU provider;
                               else a name SessionOptionsAppendExecutionProvider
                               takes ("qnn", "coreml", "xnnpack", ...; any case).
                               A provider the library lacks fails at session
                               creation, naming it and the library's own */
    const char *onnx_options; /* NULL, or "key=value" entries separated by ';':
                               keys starting "session." or "ep." are ORT session
                               config entries (session.disable_cpu_ep_fallback=1),
                               the rest the provider's options
                               (backend_path=libQnnHtp.so) */
} ember_model_params;

typedef struct ember_model ember_model;

ember_model_params ember_model_default_params(void);

/* Loads a checkpoint directory. On success *out owns the model; on failure
 * *out is NULL and nothing is left allocated or mapped. */
ember_status ember_model_load(const char *dir, const ember_model_params *params,
                              ember_model **out);
void ember_model_free(ember_model *model);

int32_t ember_model_vocab_size(const ember_model *model);
int32_t ember_model_n_layers(const ember_model *model);
/* The longest context the checkpoint declares (max_position_embeddings). */
int32_t ember_model_max_positions(const ember_model *model);
/* The kernel set in use ("avx512", "scalar", ...). */
const char *ember_model_kernels(const ember_model *model);
/* Bytes of weights the model reads per token (every matrix once). */
size_t ember_model_weight_bytes(const ember_model *model);

/* Bytes of tensor data done and in all; non-zero cancels. */
typedef int (*ember_progress_fn)(void *user, size_t done, size_t total);

/* The names ember_model_quantize takes, ", "-separated: f32 .. q5_k put
 * every weight matrix in that format; q4_0 .. iq4_xs are llama.cpp's mixes
 * of the same names (q4_0: Q4_0 with a Q6_K output; q4_k_m: Q4_K with Q6_K
 * for half the QKV and FFN-down matrices, ...). Static. */
const char *ember_quantize_types(void);

/* Writes model as a GGUF file (llama.cpp's spark2_5 layout, tokenizer, chat
 * template and sampling defaults included) with its weight matrices in
 * `type` (ember_quantize_types()); norms and biases stay f32. n_threads
 * convert rows in parallel (0: one per CPU; the bytes do not depend on it).
 * progress may be NULL. *n_tensors (may be NULL) gets the tensors written.
 * The file is written whole or not at all. Errors: INVALID_ARG (an unknown
 * type), IO, CANCELLED. Reads the model only: other threads may run
 * sessions on it. */
ember_status ember_model_quantize(const ember_model *model, const char *path, const char *type,
                                  int32_t n_threads, ember_progress_fn progress, void *user,
                                  size_t *n_tensors);

typedef struct ember_session_params {
    int32_t max_context;   /* tokens the session can hold; sizes the full-layer
                              caches. default 4096, capped by the model's
                              max_position_embeddings */
    int32_t prefill_chunk; /* tokens per prefill step; default 128 */
    int32_t n_threads;     /* worker threads incl. the caller; 0 = one per
                              online CPU (default) */
    ember_type kv_type;    /* KV cache format: F32 (default), F16 or Q8_0 */
} ember_session_params;

typedef struct ember_session ember_session;

ember_session_params ember_session_default_params(void);

ember_status ember_session_create(const ember_model *model,
                                  const ember_session_params *params,
                                  ember_session **out);
void ember_session_free(ember_session *session);

/* Feeds n_ids tokens after what the session already holds, in chunks of
 * prefill_chunk. Afterwards ember_session_logits() holds the logits that
 * predict the token after the last one fed. n_ids may be 1. */
ember_status ember_session_prefill(ember_session *session, const int32_t *ids,
                                   size_t n_ids);

/* Feeds one token (the single-token decode step). */
ember_status ember_session_decode(ember_session *session, int32_t id);

/* vocab_size floats predicting the next token, or NULL before any input.
 * Valid until the next prefill/decode/reset on this session. */
const float *ember_session_logits(const ember_session *session);

/* Tokens held so far (the position of the next token). */
int32_t ember_session_position(const ember_session *session);

/* Forgets all tokens; keeps the buffers. */
void ember_session_reset(ember_session *session);

/* Bytes allocated for the KV caches of this session. */
size_t ember_session_cache_bytes(const ember_session *session);

/* Step statistics (ember_stats.h; NULL: off, the default): each
 * one-token decode step then records the time of its full-attention and of
 * its sliding-window layers. The recorder belongs to the caller's thread. */
typedef struct ember_stats ember_stats;
void ember_session_set_stats(ember_session *session, ember_stats *stats);

/* Bytes of KV cache a decode step at the current position reads (every
 * visible cached key and value of every layer). */
size_t ember_session_cache_read_bytes(const ember_session *session);

/* Benchmarking only: pretends the session already holds n_tokens tokens by
 * filling the caches with deterministic pseudo-random keys and values, so a
 * decode at a long context can be timed without prefilling it first (decode
 * cost does not depend on what the cache holds). Logits are cleared. */
ember_status ember_session_bench_fill(ember_session *session, int32_t n_tokens);

#ifdef __cplusplus
}
#endif

/* The rest of the public API, by concern (each also includes this file). */
#include "ember_text.h"
#include "ember_speech.h"
#include "ember_stats.h"
#include "ember_profile.h"
#include "ember_export.h"

#endif /* EMBER_H */
