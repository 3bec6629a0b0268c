/*
 * ember_profile.h - the hardware probe and the derived profile.
 *
 * Included by ember.h; include either. Compiles as C99 and C++. Conventions
 * as in ember_text.h: statuses, ember_last_error(), no printing, no exit;
 * JSON comes back in a string the caller releases with ember_free().
 *
 * The probe reads what the machine has (class, architecture, CPU flags,
 * core clusters, NUMA nodes, memory, accelerators) from /proc and /sys. The
 * derived profile is what ember picks for one model on that machine: the
 * weight format, threads and the CPUs they run on, the KV budget and how
 * many sequences fit, the audio chunk schedule, timeouts, each with a
 * one-line reason. `ember probe [--derive MODEL] --json` prints the same
 * JSON.
 *
 * Loading with the profile applied (what `ember generate` does by default):
 *
 *     ember_model_params mp = ember_model_default_params();
 *     ember_session_params sp = ember_session_default_params();
 *     mp.weight_type = EMBER_TYPE_Q8_0;      // optional: a choice made here wins
 *     ember_profile_params pp = ember_profile_default_params();
 *     pp.hardware = getenv("EMBER_HW_PROFILE");   // optional: replace the probe
 *     int applied;
 *     ember_profile_apply("Spark-X2.5-1.7B/", &pp, &mp, &sp, &applied, NULL);
 *     ember_model_load("Spark-X2.5-1.7B/", &mp, &model);
 *     ember_session_create(model, &sp, &session);
 *
 * Threads: every call here may run on any thread, concurrently.
 */
#ifndef EMBER_PROFILE_H
#define EMBER_PROFILE_H

#include "ember.h"
#include "ember_speech.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ember_profile_params {
    const char *root;      /* probe the /proc and /sys tree under this directory
                              (a snapshot of another machine); NULL: this one */
    const char *hardware;  /* a hardware profile that replaces the probe: a JSON
                              object (as ember_hardware_probe writes) or the path
                              of a file holding one; NULL or "": probe. root wins */
    /* for ember_profile_derive only (the *_apply calls take them from the
     * session parameters they are given): */
    int32_t context;       /* tokens per sequence for the KV budget; 0 (default):
                              min(4096, the model's maximum) */
    ember_type kv_type;    /* KV cache format for the budget; NONE (default): F32 */
    int32_t prefill_chunk; /* 0 (default): 128 */
} ember_profile_params;

ember_profile_params ember_profile_default_params(void);

/* The hardware profile of the machine (or of p->root, or p->hardware) as a
 * JSON object in *json (ember_free). p may be NULL (defaults). Errors: IO
 * (root is not a readable directory), FORMAT/IO naming p->hardware when it
 * is not a valid profile. */
ember_status ember_hardware_probe(const ember_profile_params *p, char **json);

/* The profile derived for the model in model_dir (a Spark or Qwen3-TTS
 * directory; only its config.json and safetensors headers are read) as
 * {"hardware": {...}, "model": {kind, stored_type, n_weights, weight_bytes},
 * "profile": {class, weight_type, convert, threads, decode_cpus, audio_cpus,
 * context, kv_type, max_seqs, chunk_ramp, ..., "why": {dtype, threads, audio,
 * kv, seqs, chunks, timeouts}}} in *json (ember_free). Errors: those of
 * ember_hardware_probe; IO/FORMAT naming the model's file at fault;
 * INVALID_ARG for a context over the model's maximum or a KV format with no
 * cache. */
ember_status ember_profile_derive(const char *model_dir, const ember_profile_params *p, char **json);

/* Applies the profile of the Spark model in model_dir to what mp and sp
 * leave open, before ember_model_load and ember_session_create: the weight
 * format (when mp->weight_type is NONE; the profile converts only where the
 * stored format is too large or slow), the thread count (when sp->n_threads
 * is 0), and the context and KV format (when 0/NONE). Choices already made
 * win. sp->max_context, kv_type and prefill_chunk are what the KV budget is
 * derived for. mp or sp may be NULL (that half is left alone).
 *
 * *applied (may be NULL): 1 when a profile was applied; 0 when the model
 * has none (a GGUF file, a directory whose config the profile cannot read):
 * then mp and sp are unchanged and the status is still EMBER_OK.
 * why (may be NULL): *why (ember_free) gets the reasons of what was applied,
 * one line each ("weights q8_0 (converted at load): ...", "threads 4: ...",
 * the KV budget and the sequences that fit), or the reason there was no
 * profile. Errors: a bad p->hardware or p->root (naming it), bad options. */
ember_status ember_profile_apply(const char *model_dir, const ember_profile_params *p,
                                 ember_model_params *mp, ember_session_params *sp, int *applied,
                                 char **why);

/* The same for a Qwen3-TTS directory before ember_tts_load: the talker and
 * predictor's weight format (when tp->weight_type is NONE), and where the
 * threads run (when n_generator_cpus / n_decoder_cpus are 0): the
 * generator on the profile's decode CPUs, the audio decoder on its audio
 * CPUs. Thread counts stay tp's. *applied and *why as above (why: the
 * format's, the threads' and the placement's reasons). */
ember_status ember_profile_apply_tts(const char *dir, const ember_profile_params *p, ember_tts_params *tp,
                                     int *applied, char **why);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_PROFILE_H */
