/* The derived profile: the settings ember picks for a model on a machine
 * (weight format, threads and pinning, KV budget, sequences, audio chunk
 * schedule, timeouts), each with a one-line reason. `ember probe --derive
 * MODEL` prints it; the commands that run a model merge it with what the
 * command line set (edge_profile_apply), explicit flags winning.
 *
 * ember runs on the CPU on every class: a Jetson's or a workstation's GPU
 * and a phone's NPU are recorded by the probe, and the class chooses the
 * conservative constants (headroom, sequence cap, chunk start, margin) of
 * that kind of machine. The rules and the numbers are in profile.c. */
#ifndef EMBER_EDGE_PROFILE_H
#define EMBER_EDGE_PROFILE_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "edge/hw_profile.h"
#include "edge/model_info.h"

#define EDGE_MAX_RAMP 8

typedef struct edge_derive_opts {
    int32_t context;       /* tokens per sequence; 0: min(4096, the model's maximum) */
    ember_type kv_type;    /* NONE: F32 (ember's default, exact) */
    int32_t prefill_chunk; /* 0: ember_session_default_params()'s */
} edge_derive_opts;

typedef enum edge_why {
    EDGE_WHY_DTYPE = 0,
    EDGE_WHY_THREADS,
    EDGE_WHY_AUDIO,
    EDGE_WHY_KV,
    EDGE_WHY_SEQS,
    EDGE_WHY_CHUNKS,
    EDGE_WHY_TIMEOUTS,
    EDGE_N_WHY
} edge_why;

typedef struct edge_profile {
    edge_class cls;
    ember_type weight_type;   /* the format the weights run in */
    bool convert;             /* weight_type differs from the stored one */
    int64_t weight_bytes;     /* in weight_type */
    double bw_bytes_per_s;    /* the read bandwidth the estimate used */
    bool bw_given;            /* from the profile (measured), not the class's nominal one */
    double step_rate;         /* predicted decode steps per second (tokens, or audio frames) */
    int32_t n_threads;
    edge_cpuset decode_cpus, audio_cpus;
    int32_t context;
    ember_type kv_type;
    int64_t pool_bytes, act_bytes, headroom_bytes, kv_budget_bytes;
    int64_t kv_bytes_per_token;  /* what one more token of context adds (full layers) */
    int64_t kv_bytes_per_seq;    /* a whole sequence at `context` */
    int32_t max_seqs;            /* sequences at `context` that never need preemption */
    int32_t max_context_one_seq; /* the longest context one sequence fits */
    int32_t chunk_ramp[EDGE_MAX_RAMP], n_ramp;
    int32_t chunk_margin_ms;
    int32_t load_timeout_s, step_timeout_ms;
    char why[EDGE_N_WHY][512];
} edge_profile;

/* Derives the profile; fails only on bad options (a context over the
 * model's maximum, a KV format ember has no cache for). */
ember_status edge_derive(const edge_hw *hw, const edge_model_info *m, const edge_derive_opts *o,
                         edge_profile *out);

/* What the command line set explicitly: 0 / EMBER_TYPE_NONE = not given. */
typedef struct edge_explicit {
    ember_type weight_type;
    int32_t n_threads;
    int32_t max_context;
    ember_type kv_type;
} edge_explicit;

/* Writes the profile's choices into the load and session parameters,
 * except where `x` holds an explicit choice, which wins. */
void edge_profile_apply(const edge_profile *p, const edge_explicit *x, ember_model_params *mp,
                        ember_session_params *sp);

/* The profile as JSON (NULL when out of memory). */
cJSON *edge_profile_to_json(const edge_profile *p);

const char *edge_type_name(ember_type t);

/* The machine's hardware profile: the probe of root (NULL: "/") when given,
 * else `hardware` (a JSON object or the path of a JSON file; errors carry
 * edge_hw_override's message, unprefixed) when non-empty, else the probe of
 * this machine. */
ember_status edge_hw_for(const char *root, const char *hardware, edge_hw *out);

/* The profile of the model in dir on that machine (what the API's
 * ember_profile_apply and the CLI's --profile share): EMBER_OK with
 * *found = true and *prof; EMBER_OK with *found = false when the model has
 * no profile (a GGUF file, an unreadable config), its reason in
 * reason[cap]; an error for a bad hardware profile or bad options. */
ember_status edge_profile_for(const char *dir, const char *root, const char *hardware,
                              const edge_derive_opts *o, edge_profile *prof, bool *found,
                              char *reason, size_t cap);

#endif
