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

#include "cli_public.h"
#include "ember.h"
#include "ember_stats.h"
#include "ember_text.h"

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
            "  --prompt-cache FILE  resume the longest prefix of the prompt FILE holds (the\n"
            "                   whole prompt of an earlier run, or up to a special token of it),\n"
            "                   run the rest, and save the session back to FILE\n"
            "  timing goes to stderr\n%s%s",
            cli_sampling_usage, cli_common_usage);
}

/* Text deltas of the reply (reasoning included) stream to stdout. */
static int print_text(void *user, ember_text_kind kind, const char *text, size_t len)
{
    (void)user;
    (void)kind;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* Each sampled id: kept for --prompt-cache, printed for --print-ids. */
typedef struct sampled {
    int print, n_printed;
    int32_t *ids;
    size_t n, cap;
    int oom;
} sampled;

static int on_id(void *user, int32_t id)
{
    sampled *k = user;
    if (k->print) printf(k->n_printed++ ? ",%d" : "%d", id);
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 256;
        int32_t *ids = realloc(k->ids, cap * sizeof *ids);
        if (!ids) return k->oom = 1;
        k->ids = ids;
        k->cap = cap;
    }
    k->ids[k->n++] = id;
    return 0;
}

/* --prompt-cache: restores what FILE holds of the prompt, then runs the
 * prompt but its last token, marking the session after each special token
 * (where a later prompt that shares only the beginning, a system prompt,
 * can resume) and at the end (where the same prompt again resumes).
 * *n_cached: the prompt tokens restored from FILE. */
static ember_status resume_prompt(ember_session *s, const ember_tokenizer *tok, const char *path,
                                  const int32_t *ids, size_t n, size_t *n_cached)
{
    struct stat sb;
    *n_cached = 0;
    ember_status st = stat(path, &sb) == 0 ? ember_session_load(s, path, ids, n, n_cached) : EMBER_OK;
    for (size_t at = *n_cached; !st && at < n - 1;) {
        size_t end = at + 1;
        while (end < n - 1 && !(tok && ember_tokenizer_is_special(tok, ids[end - 1]))) end++;
        st = ember_session_prefill(s, ids + at, end - at);
        if (!st) st = ember_session_mark(s);
        at = end;
    }
    return st;
}

/* Saves the session back to FILE: the prompt and what was fed after it. */
static ember_status save_session(const ember_session *s, const char *path, const int32_t *ids, size_t n,
                                 const sampled *k)
{
    size_t held = (size_t)ember_session_position(s), fed = held > n ? held - n : 0;
    int32_t *all = malloc((held ? held : 1) * sizeof *all);
    if (!all) {
        fprintf(stderr, "ember generate: out of memory saving %s\n", path);
        return EMBER_ERR_NO_MEMORY;
    }
    memcpy(all, ids, (held < n ? held : n) * sizeof *all);
    if (fed) memcpy(all + n, k->ids, fed * sizeof *all);
    ember_status st = ember_session_save(s, all, held, path);
    free(all);
    return st;
}

int cmd_generate(int argc, char **argv)
{
    enum { OPT_IDS = 1, OPT_PRINT_IDS, OPT_MAX_CONTEXT, OPT_TOKENIZER, OPT_NO_SPECIAL, OPT_PROMPT_FILE,
           OPT_STATS, OPT_PROMPT_CACHE };
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},     {"prompt", required_argument, 0, 'p'},
        {"ids", required_argument, 0, OPT_IDS},   {"n", required_argument, 0, 'n'},
        {"print-ids", no_argument, 0, OPT_PRINT_IDS},
        {"max-context", required_argument, 0, OPT_MAX_CONTEXT},
        {"tokenizer", required_argument, 0, OPT_TOKENIZER},
        {"no-special", no_argument, 0, OPT_NO_SPECIAL},
        {"prompt-file", required_argument, 0, OPT_PROMPT_FILE},
        {"stats", required_argument, 0, OPT_STATS},
        {"prompt-cache", required_argument, 0, OPT_PROMPT_CACHE},
        {"help", no_argument, 0, 'h'},            CLI_COMMON_OPTIONS, CLI_PROFILE_OPTIONS,
        CLI_SAMPLING_OPTIONS,                     {0, 0, 0, 0}};
    const char *dir = NULL, *ids_text = NULL, *prompt = NULL, *prompt_file = NULL,
               *tok_path = NULL, *stats_path = NULL, *cache_path = NULL;
    ember_stats *stats = NULL;
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
        case OPT_PROMPT_CACHE: cache_path = optarg; break;
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
        if (!cli_is_model(dir)) {
            fprintf(stderr, "ember generate: %s is not a model directory or GGUF file: give --tokenizer PATH\n", dir);
            return 2;
        }
        tok_path = dir;
    }

    int rc = 1;
    int32_t *ids = NULL, *text_ids = NULL; /* text_ids: the tokenizer's (ember_free) */
    size_t n_ids = 0;
    char *prompt_buf = NULL;
    ember_model *model = NULL, *draft = NULL;
    ember_session *s = NULL;
    ember_tokenizer *tok = NULL;
    ember_generate_params gp = ember_generate_default_params();
    int32_t stop_ids[16];
    sampled k = {print_ids, 0, NULL, 0, 0, 0};
    size_t n_cached = 0;

    if (ids_text && cli_parse_ids(ids_text, &ids, &n_ids)) {
        fprintf(stderr, "ember generate: --ids must be a comma-separated list of token ids\n");
        return 2;
    }
    double t0 = cli_now_s();
    if (text_mode) {
        if (prompt_file && !(prompt = prompt_buf = cli_read_text(prompt_file, "generate"))) goto done;
        if (ember_tokenizer_load(tok_path, &tok) ||
            ember_tokenizer_encode(tok, prompt, strlen(prompt), add_special, &text_ids, &n_ids))
            goto fail;
        ids = text_ids;
        if (n_ids == 0) {
            fprintf(stderr, "ember generate: the prompt is empty after tokenization\n");
            goto done;
        }
        if (cli_is_model(dir) &&
            ember_tokenizer_end_of_turn_ids(tok, dir, stop_ids, 16, &gp.n_stop_ids))
            goto fail;
        gp.stop_ids = stop_ids;
        gp.on_text = print_text;
    }
    if (cli_sampling_generate_params(&sampling, cli_is_model(dir) ? dir : NULL, &gp)) goto fail;
    gp.max_tokens = (int32_t)n_gen;
    /* the id prompt is a parity and benchmark path: ids only, exactly -n steps */
    gp.parse_tools = 0;
    gp.on_token = on_id;
    gp.user = &k;
    if (cli_apply_profile(dir, profile, "generate", &mp, &sp)) goto done;
    if (ember_model_load(dir, &mp, &model) != EMBER_OK) goto fail;
    if (cli_sampling_load_draft(&sampling, &mp, &draft, &gp)) goto fail;
    /* Unless told otherwise, make room for the prompt and every new token. */
    if (!max_context_given && (size_t)sp.max_context < n_ids + (size_t)n_gen)
        sp.max_context = (int32_t)(n_ids + (size_t)n_gen);
    if (sp.max_context > ember_model_max_positions(model))
        sp.max_context = ember_model_max_positions(model);
    if (ember_session_create(model, &sp, &s) != EMBER_OK) goto fail;
    stats = cli_stats_open(stats_path, "text", "generate");
    ember_session_set_stats(s, stats);
    gp.stats = stats;
    double t1 = cli_now_s();
    ember_generate_result res;
    memset(&res, 0, sizeof res);
    /* with a prompt cache, the prompt but its last token is in the session
     * before generating */
    double t_cache = cli_now_s();
    if (cache_path && resume_prompt(s, tok, cache_path, ids, n_ids, &n_cached)) goto fail;
    size_t held = (size_t)ember_session_position(s);
    t_cache = cli_now_s() - t_cache;
    if (n_gen > 0 && ember_session_generate(s, tok, ids + held, n_ids - held, &gp, &res) != EMBER_OK) goto fail;
    if (k.oom) {
        fprintf(stderr, "ember generate: out of memory\n");
        goto done;
    }
    if (print_ids || text_mode) printf("\n");
    double prefill_s = res.prefill_ms / 1e3 + t_cache, decode_s = res.decode_ms / 1e3;
    size_t run = n_ids - n_cached;
    char cached[64] = "";
    if (cache_path) snprintf(cached, sizeof cached, " (%zu from the prompt cache)", n_cached);
    fprintf(stderr,
            "load %.3f s; prompt %zu tokens%s, %.1f tok/s; generated %d tokens, %.1f tok/s; finish %s\n",
            t1 - t0, n_ids, cached, prefill_s > 0 ? (double)run / prefill_s : 0.0, res.completion_tokens,
            res.completion_tokens > 1 ? (double)(res.completion_tokens - 1) / decode_s : 0.0,
            ember_finish_name(res.finish));
    cli_print_speculation(stderr, &res);
    if (cache_path && save_session(s, cache_path, ids, n_ids, &k)) goto fail;
    rc = 0;
    if (cli_stats_close(stats, stats_path, "generate")) rc = 1;
    stats = NULL;
    goto done;
fail:
    fprintf(stderr, "ember generate: %s\n", ember_last_error());
done:
    ember_stats_free(stats);
    ember_tokenizer_free(tok);
    ember_session_free(s);
    ember_model_free(draft);
    ember_model_free(model);
    if (text_ids) ember_free(text_ids);
    else free(ids);
    free(prompt_buf);
    free(k.ids);
    return rc;
}
