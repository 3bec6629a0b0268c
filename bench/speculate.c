/* Speculative decoding against plain decoding on the same prompts, through
 * the public API (ember_session_generate), for the identity check and the
 * tokens/s benchmark alike.
 *
 *   build/bench/speculate -m MODEL [--draft-max 1,2,4,8] [--reps R] [-n MAX_TOKENS]
 *       [--temp T --seed S] [--threads N] [--draft DIR [--draft-dtype T]] < prompts.jsonl
 *
 * With --draft, the speculative variants draft with that model (loaded with
 * its weights converted to --draft-dtype: none, f32, bf16, q8_0, q4_0)
 * instead of prompt lookup.
 *
 * prompts.jsonl: one {"ids": [...]} per line (rendered, tokenized prompts).
 * Per repetition, every variant (plain, then speculation with each
 * draft_max) answers every prompt, the variants alternating so a load
 * change on a shared machine hits them alike; a variant's tokens/s is its
 * generated ids over its decode time (first id to last) summed over the
 * prompts, and the JSON gives the median over repetitions (and the same
 * per CPU second of the process, from the first id to the end: steadier
 * than wall time on a shared machine when run with --threads 1). Stop ids: the
 * model's end-of-turn ids. identical: the prompts whose ids equal plain
 * decoding's, position by position (greedy, or sampled with the same seed).
 * Never asserts time; the caller judges the JSON. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "bench_stats.h"
#include "ember.h"

enum { MAX_VARIANTS = 16, MAX_REPS = 32, MAX_STOP = 16 };

typedef struct ids_buf {
    int32_t *ids;
    size_t n, cap;
    double cpu_first; /* process CPU seconds at the first id */
} ids_buf;

static int push_id(void *user, int32_t id)
{
    ids_buf *b = user;
    if (!b->n) b->cpu_first = bench_cpu_s();
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        int32_t *grown = realloc(b->ids, cap * sizeof *grown);
        if (!grown) return 1;
        b->ids = grown;
        b->cap = cap;
    }
    b->ids[b->n++] = id;
    return 0;
}

typedef struct prompt {
    int32_t *ids;
    size_t n;
    ids_buf plain; /* plain decoding's reply */
} prompt;

static int read_prompts(prompt **out, size_t *n_out)
{
    char *line = NULL;
    size_t cap = 0, n = 0, room = 0;
    prompt *p = NULL;
    while (getline(&line, &cap, stdin) > 0) {
        cJSON *j = cJSON_Parse(line), *ids = cJSON_GetObjectItem(j, "ids");
        int len = cJSON_GetArraySize(ids);
        if (!cJSON_IsArray(ids) || len < 1) {
            fprintf(stderr, "speculate: line %zu: want {\"ids\": [...]}\n", n + 1);
            cJSON_Delete(j);
            return -1;
        }
        if (n == room) {
            room = room ? 2 * room : 64;
            p = realloc(p, room * sizeof *p);
        }
        memset(&p[n], 0, sizeof p[n]);
        p[n].ids = malloc((size_t)len * sizeof *p[n].ids);
        for (int i = 0; i < len; i++) p[n].ids[i] = (int32_t)cJSON_GetArrayItem(ids, i)->valuedouble;
        p[n++].n = (size_t)len;
        cJSON_Delete(j);
    }
    free(line);
    *out = p;
    *n_out = n;
    return 0;
}

typedef struct totals {
    double decode_s, decode_cpu_s;
    int64_t tokens, steps, drafted, accepted;
    int identical;
} totals;

/* One variant over every prompt: draft_max 0 is plain decoding (its replies
 * kept in the prompts on the first repetition, the reference of the rest). */
static int run_variant(ember_session *s, prompt *ps, size_t n_ps, ember_generate_params gp,
                       const ember_model *draft, int draft_max, int first_rep, totals *t)
{
    memset(t, 0, sizeof *t);
    ids_buf got = {0};
    gp.speculate = !draft_max ? EMBER_SPECULATE_NONE : draft ? EMBER_SPECULATE_DRAFT : EMBER_SPECULATE_NGRAM;
    gp.draft_max = draft_max;
    gp.draft_model = draft_max ? draft : NULL;
    gp.on_token = push_id;
    for (size_t i = 0; i < n_ps; i++) {
        ember_generate_result r;
        ember_session_reset(s);
        got.n = 0;
        gp.user = &got;
        if (ember_session_generate(s, NULL, ps[i].ids, ps[i].n, &gp, &r) != EMBER_OK) {
            fprintf(stderr, "speculate: prompt %zu: %s\n", i, ember_last_error());
            free(got.ids);
            return -1;
        }
        t->decode_s += r.decode_ms / 1e3;
        t->decode_cpu_s += got.n ? bench_cpu_s() - got.cpu_first : 0;
        t->tokens += r.completion_tokens > 1 ? r.completion_tokens - 1 : 0; /* ids after the first */
        t->steps += r.verify_steps;
        t->drafted += r.drafted_tokens;
        t->accepted += r.accepted_tokens;
        if (!draft_max && first_rep) {
            ps[i].plain.n = 0;
            for (size_t k = 0; k < got.n; k++) push_id(&ps[i].plain, got.ids[k]);
        }
        t->identical += got.n == ps[i].plain.n && !memcmp(got.ids, ps[i].plain.ids, got.n * sizeof *got.ids);
    }
    free(got.ids);
    return 0;
}

int main(int argc, char **argv)
{
    const char *model_dir = NULL, *drafts = "1,2,4,8", *draft_dir = NULL, *draft_dtype = "none";
    int reps = 3, threads = 0;
    ember_generate_params gp = ember_generate_default_params();
    gp.temperature = 0;
    gp.max_tokens = 128;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-m") && v) model_dir = argv[++i];
        else if (!strcmp(a, "--draft-max") && v) drafts = argv[++i];
        else if (!strcmp(a, "--reps") && v) reps = atoi(argv[++i]);
        else if (!strcmp(a, "-n") && v) gp.max_tokens = atoi(argv[++i]);
        else if (!strcmp(a, "--temp") && v) gp.temperature = (float)atof(argv[++i]);
        else if (!strcmp(a, "--seed") && v) gp.seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--threads") && v) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--draft") && v) draft_dir = argv[++i];
        else if (!strcmp(a, "--draft-dtype") && v) draft_dtype = argv[++i];
        else {
            fprintf(stderr, "usage: speculate -m MODEL [--draft-max 1,2,4,8] [--reps R] [-n N] "
                            "[--temp T --seed S] [--threads N] [--draft DIR [--draft-dtype T]] < prompts.jsonl\n");
            return 2;
        }
    }
    int variants[MAX_VARIANTS] = {0}; /* 0: plain */
    int n_var = 1 + bench_int_list(drafts, 1, 64, variants + 1, MAX_VARIANTS - 1);
    if (n_var < 1) {
        fprintf(stderr, "speculate: bad --draft-max list '%s'\n", drafts);
        return 2;
    }
    if (!model_dir || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "speculate: -m MODEL is needed; --reps 1..%d\n", MAX_REPS);
        return 2;
    }
    prompt *ps = NULL;
    size_t n_ps = 0;
    if (read_prompts(&ps, &n_ps) || !n_ps) {
        fprintf(stderr, "speculate: no prompts on stdin\n");
        return 2;
    }
    size_t longest = 0;
    for (size_t i = 0; i < n_ps; i++) longest = ps[i].n > longest ? ps[i].n : longest;

    ember_model *m = NULL, *draft = NULL;
    ember_model_params dmp = ember_model_default_params();
    if (bench_parse_dtype(draft_dtype, &dmp.weight_type)) {
        fprintf(stderr, "speculate: --draft-dtype none|f32|bf16|q8_0|q4_0\n");
        return 2;
    }
    ember_tokenizer *tok = NULL;
    ember_session *s = NULL;
    int32_t stop[MAX_STOP];
    size_t n_stop = 0;
    ember_session_params sp = ember_session_default_params();
    sp.max_context = (int32_t)longest + gp.max_tokens + 1;
    sp.n_threads = threads;
    if (ember_model_load(model_dir, NULL, &m) || ember_tokenizer_load(model_dir, &tok) ||
        ember_tokenizer_end_of_turn_ids(tok, model_dir, stop, MAX_STOP, &n_stop) ||
        ember_session_create(m, &sp, &s) || (draft_dir && ember_model_load(draft_dir, &dmp, &draft))) {
        fprintf(stderr, "speculate: %s\n", ember_last_error());
        return 1;
    }
    gp.stop_ids = stop;
    gp.n_stop_ids = n_stop;
    gp.parse_tools = 0;

    static totals runs[MAX_REPS][MAX_VARIANTS];
    for (int r = 0; r < reps; r++)
        for (int v = 0; v < n_var; v++)
            if (run_variant(s, ps, n_ps, gp, draft, variants[v], r == 0, &runs[r][v])) return 1;

    cJSON *out = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(out, "variants");
    cJSON_AddStringToObject(out, "model", model_dir);
    if (draft_dir) {
        cJSON_AddStringToObject(out, "draft", draft_dir);
        cJSON_AddStringToObject(out, "draft_dtype", draft_dtype);
    }
    cJSON_AddNumberToObject(out, "prompts", (double)n_ps);
    cJSON_AddNumberToObject(out, "max_tokens", gp.max_tokens);
    cJSON_AddNumberToObject(out, "temperature", gp.temperature);
    cJSON_AddNumberToObject(out, "reps", reps);
    double plain_tps = 0, plain_cpu_tps = 0;
    for (int v = 0; v < n_var; v++) {
        double tps[MAX_REPS], cpu_tps[MAX_REPS];
        for (int r = 0; r < reps; r++) {
            const totals *x = &runs[r][v];
            tps[r] = x->decode_s > 0 ? x->tokens / x->decode_s : 0;
            cpu_tps[r] = x->decode_cpu_s > 0 ? x->tokens / x->decode_cpu_s : 0;
        }
        const totals *t = &runs[0][v];
        double med = bench_quantile(tps, reps, 0.5), cpu_med = bench_quantile(cpu_tps, reps, 0.5);
        if (!v) {
            plain_tps = med;
            plain_cpu_tps = cpu_med;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "mode", !v ? "plain" : draft ? "draft" : "ngram");
        cJSON_AddNumberToObject(o, "draft_max", variants[v]);
        cJSON_AddNumberToObject(o, "tokens_per_s", med);
        cJSON_AddNumberToObject(o, "speedup", plain_tps > 0 ? med / plain_tps : 0);
        cJSON_AddItemToObject(o, "tokens_per_s_runs", cJSON_CreateDoubleArray(tps, reps));
        /* per CPU second: steadier on a shared machine, meaningful with --threads 1 */
        cJSON_AddNumberToObject(o, "tokens_per_cpu_s", cpu_med);
        cJSON_AddNumberToObject(o, "cpu_speedup", plain_cpu_tps > 0 ? cpu_med / plain_cpu_tps : 0);
        cJSON_AddNumberToObject(o, "tokens", (double)t->tokens);
        int worst = t->identical;
        for (int r = 1; r < reps; r++) worst = runs[r][v].identical < worst ? runs[r][v].identical : worst;
        cJSON_AddNumberToObject(o, "identical", worst); /* the fewest over the repetitions */
        if (v) {
            cJSON_AddNumberToObject(o, "verify_steps", (double)t->steps);
            cJSON_AddNumberToObject(o, "acceptance", t->drafted ? (double)t->accepted / t->drafted : 0);
            /* ids per verify pass: the accepted drafts plus the one each pass picks itself */
            cJSON_AddNumberToObject(o, "tokens_per_verify", t->steps ? (double)(t->steps + t->accepted) / t->steps : 0);
        }
        cJSON_AddItemToArray(list, o);
    }
    char *json = cJSON_Print(out);
    printf("%s\n", json);
    free(json);
    cJSON_Delete(out);
    for (size_t i = 0; i < n_ps; i++) {
        free(ps[i].ids);
        free(ps[i].plain.ids);
    }
    free(ps);
    ember_session_free(s);
    ember_tokenizer_free(tok);
    ember_model_free(draft);
    ember_model_free(m);
    return 0;
}
