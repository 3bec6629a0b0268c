/* The `ember` command line, the part that needs only the public API
 * (include/): the subcommands, the shared options, --profile and --stats,
 * measuring helpers. A user-facing command file includes this header and
 * include/ headers alone; `make public-check` compiles those files
 * (PUBLIC_CLI in the Makefile) without -Isrc to keep it so. tools/cli.h
 * adds what the measurement and serving commands take from src/. */
#ifndef EMBER_TOOLS_CLI_PUBLIC_H
#define EMBER_TOOLS_CLI_PUBLIC_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "ember.h"

int cmd_generate(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_parity(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_tts_codes(int argc, char **argv);
int cmd_decode_codes(int argc, char **argv);
int cmd_tts(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_voice(int argc, char **argv); /* the Base speaker encoder on a recording */
int cmd_serve(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_bench_tts(int argc, char **argv); /* `bench tts-codes`, called by cmd_bench */
int cmd_bench_speech(int argc, char **argv); /* `bench tts` */
/* `tts-codes --golden FILE` (parity_tts.c): greedy frames and teacher-forced
 * logits against a reference/tts_golden.py file; prints a report (JSON
 * with json). Returns the exit status. */
int parity_tts_golden(const char *dir, ember_type weight_type, const char *kernels, int32_t n_threads,
                      const char *path, int json);

/* `bench llm --batch`: `rows` sessions decoding in lockstep (cmd_bench_batch.c). */
typedef struct cli_batch_result {
    int32_t rows;
    double step_ms, tok_s; /* median step time; rows tokens per step */
} cli_batch_result;
ember_status cli_bench_batch(ember_model *model, const ember_session_params *base, int threads,
                             int32_t rows, int n_prompt, int n_gen, int reps,
                             cli_batch_result *out);

/* Options shared by the commands that run a model (cli_common.c). */
enum {
    CLI_OPT_DTYPE = 1000,
    CLI_OPT_THREADS,
    CLI_OPT_KERNELS,
    CLI_OPT_GELU,
    CLI_OPT_CHUNK,
    CLI_OPT_KV_TYPE,
    CLI_OPT_BACKEND,
    CLI_OPT_ONNX_RUNTIME,
    CLI_OPT_ONNX_PROVIDER,
    CLI_OPT_ONNX_OPTION
};
#define CLI_COMMON_OPTIONS                                                                 \
    {"dtype", required_argument, 0, CLI_OPT_DTYPE},                                       \
        {"threads", required_argument, 0, CLI_OPT_THREADS},                               \
        {"kernels", required_argument, 0, CLI_OPT_KERNELS},                               \
        {"gelu", required_argument, 0, CLI_OPT_GELU},                                     \
        {"chunk", required_argument, 0, CLI_OPT_CHUNK},                                   \
        {"kv-type", required_argument, 0, CLI_OPT_KV_TYPE},                               \
        {"backend", required_argument, 0, CLI_OPT_BACKEND},                               \
        {"onnx-runtime", required_argument, 0, CLI_OPT_ONNX_RUNTIME},                     \
        {"onnx-provider", required_argument, 0, CLI_OPT_ONNX_PROVIDER},                   \
        {"onnx-option", required_argument, 0, CLI_OPT_ONNX_OPTION}
extern const char cli_common_usage[];
/* "f32", "f16", "bf16", "q8_0", "q4_0" -> the type; -1 for anything else. */
int cli_parse_type(const char *arg, ember_type *out);
/* The command-line name of a weight type ("q4_k"; "as stored" for NONE). */
const char *cli_type_name(ember_type t);
/* --backend cpu|onnx:DIR into *backend; *runtime from $EMBER_ONNXRUNTIME
 * unless --onnx-runtime set it. Non-zero for any other value. */
int cli_parse_backend(const char *arg, const char **backend, const char **runtime);
/* A repeated --onnx-option key=value appended to *list ("k=v;k=v", the
 * model params' onnx_options). Non-zero when arg has no key=value or
 * memory ran out. */
int cli_add_onnx_option(const char *arg, const char **list);
/* 1: handled, 0: not a common option, -1: bad value (message printed). */
int cli_common_option(int c, const char *arg, const char *cmd, ember_model_params *mp,
                      ember_session_params *sp);

/* Sampling and stop options (cli_sampling.c), for generate and chat. */
enum {
    CLI_OPT_GREEDY = 1100,
    CLI_OPT_TEMP,
    CLI_OPT_TOP_K,
    CLI_OPT_TOP_P,
    CLI_OPT_MIN_P,
    CLI_OPT_REPEAT_PENALTY,
    CLI_OPT_PRESENCE_PENALTY,
    CLI_OPT_FREQUENCY_PENALTY,
    CLI_OPT_SEED,
    CLI_OPT_STOP,
    CLI_OPT_LOGIT_BIAS,
    CLI_OPT_SPECULATE,
    CLI_OPT_DRAFT_MAX
};
#define CLI_SAMPLING_OPTIONS                                                               \
    {"greedy", no_argument, 0, CLI_OPT_GREEDY}, {"temp", required_argument, 0, CLI_OPT_TEMP}, \
        {"top-k", required_argument, 0, CLI_OPT_TOP_K},                                   \
        {"top-p", required_argument, 0, CLI_OPT_TOP_P},                                   \
        {"min-p", required_argument, 0, CLI_OPT_MIN_P},                                   \
        {"repeat-penalty", required_argument, 0, CLI_OPT_REPEAT_PENALTY},                 \
        {"presence-penalty", required_argument, 0, CLI_OPT_PRESENCE_PENALTY},             \
        {"frequency-penalty", required_argument, 0, CLI_OPT_FREQUENCY_PENALTY},           \
        {"seed", required_argument, 0, CLI_OPT_SEED},                                     \
        {"stop", required_argument, 0, CLI_OPT_STOP},                                     \
        {"logit-bias", required_argument, 0, CLI_OPT_LOGIT_BIAS},                         \
        {"speculate", required_argument, 0, CLI_OPT_SPECULATE},                           \
        {"draft-max", required_argument, 0, CLI_OPT_DRAFT_MAX}
enum { CLI_MAX_STOP = 16, CLI_MAX_BIAS = 64 };
typedef struct cli_sampling {
    float temperature, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty;
    int32_t top_k;
    struct { int temperature, top_k, top_p, min_p, repetition_penalty; } set; /* given on the command line */
    unsigned long long seed;
    const char *stop[CLI_MAX_STOP];
    size_t n_stop;
    ember_logit_bias bias[CLI_MAX_BIAS];
    size_t n_bias;
    ember_speculate speculate;
    int32_t draft_max;
    const char *draft_dir; /* --speculate draft:DIR */
} cli_sampling;
extern const char cli_sampling_usage[];
void cli_sampling_init(cli_sampling *s);
/* 1: handled, 0: not a sampling option, -1: bad value (message printed). */
int cli_sampling_option(int c, const char *arg, const char *cmd, cli_sampling *s);
/* The same as the API's generation parameters: p's sampling from the
 * model's generation_config.json (model_dir NULL: greedy), then what the
 * command line set, and its stop strings. p keeps pointers into s. */
ember_status cli_sampling_generate_params(const cli_sampling *s, const char *model_dir,
                                          ember_generate_params *p);
/* The draft model of --speculate draft:DIR, loaded with mp (the target's
 * weight format), into *out and p->draft_model; nothing without one. */
ember_status cli_sampling_load_draft(const cli_sampling *s, const ember_model_params *mp,
                                     ember_model **out, ember_generate_params *p);
/* One line on f with a reply's speculative decoding (verify passes, ids per
 * pass, accepted drafts); nothing when it did not speculate. */
void cli_print_speculation(FILE *f, const ember_generate_result *r);

/* --profile auto|off|explain (cli_profile.c), for generate, chat, serve,
 * tts and bench tts: the derived edge profile picks the weight format and
 * thread count the command line leaves open (auto is the default; explain
 * also prints why; off leaves the defaults: the stored format). */
typedef enum cli_profile { CLI_PROFILE_AUTO = 0, CLI_PROFILE_OFF, CLI_PROFILE_EXPLAIN } cli_profile;
enum { CLI_OPT_PROFILE = 1050 };
#define CLI_PROFILE_OPTIONS {"profile", required_argument, 0, CLI_OPT_PROFILE}
/* 1: handled, 0: not --profile, -1: bad value (message printed). */
int cli_profile_option(int c, const char *arg, const char *cmd, cli_profile *p);
/* Applies the profile for the model in dir to what the command line left
 * unset (weight_type NONE, n_threads 0). Returns 0, or -1 with a message. */
int cli_apply_profile(const char *dir, cli_profile mode, const char *cmd, ember_model_params *mp,
                      ember_session_params *sp);
/* Prints a failed profile's message (naming EMBER_HW_PROFILE when the
 * hardware profile came from it); returns -1. */
int cli_profile_error(const char *cmd, const char *hardware);
/* --stats FILE (cli_stats.c): a recorder when FILE or EMBER_STATS is given
 * (else NULL: off); close writes the JSON and prints the attribution table,
 * then frees it. */
ember_stats *cli_stats_open(const char *flag, const char *role, const char *cmd);
int cli_stats_close(ember_stats *st, const char *flag, const char *cmd);

/* Measuring (cli_measure.c): a monotonic clock in seconds, the median of n
 * values (sorts v), and the process's resident memory from /proc. */
double cli_now_s(void);
double cli_median(double *v, int n);
typedef struct cli_rss {
    size_t anon, file;
} cli_rss;
cli_rss cli_rss_now(void);
void cli_rss_peak(cli_rss *peak); /* raises *peak to what is resident now */

/* 1 when path is a model directory or a GGUF file (its magic): both carry
 * the tokenizer, the end-of-turn ids and the sampling defaults. */
int cli_is_model(const char *path);

/* The whole of a text file ("-": stdin), NUL-terminated (free); NULL on
 * failure, with "ember CMD: cannot read PATH" printed. */
char *cli_read_text(const char *path, const char *cmd);

/* A whole decimal integer in [lo, hi] into *out; 0, or -1 (nothing set). */
int cli_parse_int(const char *arg, long lo, long hi, int32_t *out);

/* Parses "1,2,3" into a malloc'd array; returns 0 on success. */
int cli_parse_ids(const char *text, int32_t **ids, size_t *n);

/* Index of the largest value (the first one on ties). */
int32_t cli_argmax(const float *x, int32_t n);

#endif
