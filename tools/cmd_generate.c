/* `ember generate`: a prompt (text, or token ids) in, a continuation out.
 * Text prompts are tokenized with the model's tokenizer (tokenizer.json, or
 * the one a GGUF file carries) and the continuation streams to stdout as it
 * is sampled; token-id prompts (the parity and benchmark path) print ids and
 * run exactly -n steps. */
#include <getopt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "ember.h"
#include "io/gguf.h"
#include "text/textgen.h"
#include "text/tokenizer.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember generate -m MODEL (-p TEXT | --prompt-file FILE | --ids 1,2,3) [-n 128]\n"
            "                      [--tokenizer PATH] [--no-special] [--print-ids]\n"
            "                      [--max-context N] [sampling options] [options]\n"
            "  -p TEXT          a text prompt: the continuation streams to stdout\n"
            "  --ids 1,2,3      a prompt of token ids: prints the generated ids with --print-ids\n"
            "                   and runs exactly -n steps (no stop ids)\n"
            "  -n N             at most N new tokens (default 128)\n"
            "  --tokenizer PATH tokenizer.json or its directory (default: the model's directory,\n"
            "                   or the tokenizer inside a GGUF model)\n"
            "  --no-special     do not add the tokenizer's special tokens (BOS) to the prompt\n"
            "  timing goes to stderr\n%s%s",
            cli_sampling_usage, cli_common_usage);
}

static int print_content(void *user, const et_toolcall_event *e)
{
    (void)user;
    if (e->kind == ET_TOOLCALL_CONTENT) {
        fwrite(e->text, 1, e->len, stdout);
        fflush(stdout);
    }
    return 0;
}

/* A model directory or a GGUF file: both carry the tokenizer, the stop ids
 * and the sampling defaults. */
static int is_model(const char *path)
{
    struct stat sb;
    return (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) || gguf_is_gguf_file(path);
}

/* The whole of a file, NUL-terminated; NULL on failure (message printed). */
static char *read_prompt_file(const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t cap = 4096, n = 0;
    char *buf = f ? malloc(cap) : NULL;
    while (buf) {
        n += fread(buf + n, 1, cap - 1 - n, f);
        if (n < cap - 1) break;
        char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
        }
        buf = grown;
        cap *= 2;
    }
    if (!buf) fprintf(stderr, "ember generate: cannot read %s\n", path);
    else buf[n] = '\0';
    if (f && f != stdin) fclose(f);
    return buf;
}

int cmd_generate(int argc, char **argv)
{
    enum { OPT_IDS = 1, OPT_PRINT_IDS, OPT_MAX_CONTEXT, OPT_TOKENIZER, OPT_NO_SPECIAL, OPT_PROMPT_FILE,
           OPT_STATS };
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},     {"prompt", required_argument, 0, 'p'},
        {"ids", required_argument, 0, OPT_IDS},   {"n", required_argument, 0, 'n'},
        {"print-ids", no_argument, 0, OPT_PRINT_IDS},
        {"max-context", required_argument, 0, OPT_MAX_CONTEXT},
        {"tokenizer", required_argument, 0, OPT_TOKENIZER},
        {"no-special", no_argument, 0, OPT_NO_SPECIAL},
        {"prompt-file", required_argument, 0, OPT_PROMPT_FILE},
        {"stats", required_argument, 0, OPT_STATS},
        {"help", no_argument, 0, 'h'},            CLI_COMMON_OPTIONS, CLI_PROFILE_OPTIONS,
        CLI_SAMPLING_OPTIONS,                     {0, 0, 0, 0}};
    const char *dir = NULL, *ids_text = NULL, *prompt = NULL, *prompt_file = NULL,
               *tok_path = NULL, *stats_path = NULL;
    ember_stats *stats = NULL;
    int decode_id = -1;
    long n_gen = 128;
    int print_ids = 0, max_context_given = 0, add_special = 1;
    ember_model_params mp = ember_model_default_params();
    ember_session_params sp = ember_session_default_params();
    cli_sampling sampling;
    cli_sampling_init(&sampling);
    cli_profile profile = CLI_PROFILE_AUTO;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:p:n:h", opts, NULL)) != -1) {
        int r;
        switch (c) {
        case 'm': dir = optarg; break;
        case 'p': prompt = optarg; break;
        case OPT_PROMPT_FILE: prompt_file = optarg; break;
        case OPT_STATS: stats_path = optarg; break;
        case OPT_IDS: ids_text = optarg; break;
        case 'n': n_gen = strtol(optarg, NULL, 10); break;
        case OPT_PRINT_IDS: print_ids = 1; break;
        case OPT_TOKENIZER: tok_path = optarg; break;
        case OPT_NO_SPECIAL: add_special = 0; break;
        case OPT_MAX_CONTEXT:
            sp.max_context = (int32_t)strtol(optarg, NULL, 10);
            max_context_given = 1;
            break;
        case 'h': usage(stdout); return 0;
        default:
            if ((r = cli_profile_option(c, optarg, "generate", &profile)) == 1) break;
            if (r == 0 && (r = cli_sampling_option(c, optarg, "generate", &sampling)) == 1) break;
            if (r == 0 && (r = cli_common_option(c, optarg, "generate", &mp, &sp)) == 1) break;
            if (r == 0) usage(stderr);
            return 2;
        }
    }
    int text_mode = prompt || prompt_file;
    if (!dir || (text_mode == !!ids_text) || (prompt && prompt_file) || n_gen < 0 ||
        n_gen > 1000000) {
        usage(stderr);
        return 2;
    }
    if (!tok_path && text_mode) {
        struct stat sb;
        if (stat(dir, &sb) != 0) {
            fprintf(stderr, "ember generate: %s: %s\n", dir, strerror(errno));
            return 2;
        }
        if (!is_model(dir)) {
            fprintf(stderr, "ember generate: %s is not a model directory or GGUF file: give --tokenizer PATH\n", dir);
            return 2;
        }
        tok_path = dir;
    }

    int rc = 1;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    char *prompt_buf = NULL;
    ember_model *model = NULL;
    ember_session *s = NULL;
    et_tokenizer *tok = NULL;
    et_textgen *gen = NULL;
    et_textgen_params gp;
    int32_t stop_ids[16];
    et_textgen_params_default(&gp);

    if (ids_text && cli_parse_ids(ids_text, &ids, &n_ids)) {
        fprintf(stderr, "ember generate: --ids must be a comma-separated list of token ids\n");
        return 2;
    }
    double t0 = cli_now_s();
    if (text_mode) {
        if (prompt_file && !(prompt = prompt_buf = read_prompt_file(prompt_file))) goto done;
        if (et_tokenizer_load(tok_path, &tok) ||
            et_tokenizer_encode(tok, prompt, strlen(prompt), add_special, &ids, &n_ids))
            goto fail;
        if (n_ids == 0) {
            fprintf(stderr, "ember generate: the prompt is empty after tokenization\n");
            goto done;
        }
        if (is_model(dir) && et_model_stop_ids(dir, tok, stop_ids, 16, &gp.n_stop_ids)) goto fail;
        gp.stop_ids = stop_ids;
    }
    if (cli_sampling_params(&sampling, is_model(dir) ? dir : NULL, &gp)) goto fail;
    gp.max_tokens = (int32_t)n_gen;
    if (cli_apply_profile(dir, profile, "generate", &mp, &sp)) goto done;
    if (ember_model_load(dir, &mp, &model) != EMBER_OK) goto fail;
    /* Unless told otherwise, make room for the prompt and every new token. */
    if (!max_context_given && (size_t)sp.max_context < n_ids + (size_t)n_gen)
        sp.max_context = (int32_t)(n_ids + (size_t)n_gen);
    if (sp.max_context > ember_model_max_positions(model))
        sp.max_context = ember_model_max_positions(model);
    if (ember_session_create(model, &sp, &s) != EMBER_OK) goto fail;
    int32_t vocab = ember_model_vocab_size(model);
    /* the whole forward step of a token (the session splits its layers by
     * type; textgen times the sampler and the detokenizer) */
    if ((stats = cli_stats_open(stats_path, "text", "generate")))
        ember_stats_add_series(stats, "decode_step", EMBER_STAT_TEXT, &decode_id);
    ember_session_set_stats(s, stats);
    gp.stats = stats;
    if (et_textgen_create(tok, vocab, &gp, print_content, NULL, &gen) ||
        et_textgen_begin(gen, ids, n_ids))
        goto fail;
    float *logits = malloc((size_t)vocab * sizeof *logits);
    if (!logits) {
        fprintf(stderr, "ember generate: out of memory\n");
        goto done;
    }
    double t1 = cli_now_s();
    double ts = ember_stats_start(stats);
    if (ember_session_prefill(s, ids, n_ids) != EMBER_OK) goto fail_logits;
    ember_stats_stop(stats, EMBER_STAT_PREFILL, ts);
    double t2 = cli_now_s();
    et_finish finish = ET_FINISH_NONE;
    for (long i = 0; i < n_gen; i++) {
        int32_t next;
        double tt = ember_stats_start(stats);
        memcpy(logits, ember_session_logits(s), (size_t)vocab * sizeof *logits);
        if (et_textgen_step(gen, logits, &next, &finish)) goto fail_logits;
        if (print_ids) printf(i ? ",%d" : "%d", next);
        if (finish || i + 1 == n_gen) {
            ember_stats_stop(stats, EMBER_STAT_TOKEN, tt);
            break;
        }
        double td = ember_stats_start(stats);
        if (ember_session_decode(s, next) != EMBER_OK) goto fail_logits;
        ember_stats_stop(stats, decode_id, td);
        ember_stats_stop(stats, EMBER_STAT_TOKEN, tt);
    }
    if (et_textgen_end(gen, &finish)) goto fail_logits;
    if (print_ids || text_mode) printf("\n");
    double t3 = cli_now_s();
    int32_t n_out = et_textgen_count(gen);
    fprintf(stderr,
            "load %.3f s; prompt %zu tokens, %.1f tok/s; generated %d tokens, %.1f tok/s; "
            "finish %s\n",
            t1 - t0, n_ids, (double)n_ids / (t2 - t1), n_out,
            n_out > 1 ? (double)(n_out - 1) / (t3 - t2) : 0.0, et_finish_name(finish));
    rc = 0;
    free(logits);
    if (cli_stats_close(stats, stats_path, "generate")) rc = 1;
    stats = NULL;
    goto done;
fail_logits:
    free(logits);
fail:
    fprintf(stderr, "ember generate: %s\n", ember_last_error());
done:
    ember_stats_free(stats);
    et_textgen_free(gen);
    et_tokenizer_free(tok);
    ember_session_free(s);
    ember_model_free(model);
    free(ids);
    free(prompt_buf);
    return rc;
}
