/* Greedy replies and teacher-forced log-probabilities from one loaded model,
 * for evaluations that run many short sequences (bench/demo_eval.py): the
 * model is loaded once and one session is reset between requests.
 *
 *   build/bench/lm_score -m MODEL [--dtype T] [--kv-type T] [--threads N] [--chunk N]
 *       < requests.jsonl > results.jsonl
 *
 * One JSON object per input line, one result line per request, in order:
 *   {"ids": [...], "gen": N}         greedy continuation of the prompt ids, as
 *       `ember generate --greedy` makes it (the same sampler, stop ids and
 *       detokenizer): {"gen": [ids, the stop id included], "finish": "stop" |
 *       "length", "text": the reply as text, stop id excluded}
 *   {"ids": [...], "score_from": K}  teacher-forced over ids (1 <= K < len):
 *       the prefix ids[0..K) is prefilled, then each later id is decoded in
 *       turn: {"logprob": [log p(ids[i] | ids[0..i)) for i = K..len-1],
 *       "argmax": [the first argmax of the logits that predict ids[i]]}
 * A malformed request gets {"error": "..."}; the process goes on. Timing and
 * the load summary go to stderr. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "ember.h"
#include "generate/textgen.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    char *buf;
    size_t len, cap;
} text_buf;

static int collect_content(void *user, const et_toolcall_event *e)
{
    text_buf *t = user;
    if (e->kind != ET_TOOLCALL_CONTENT) return 0;
    if (t->len + e->len + 1 > t->cap) {
        size_t cap = 2 * (t->len + e->len + 1);
        char *grown = realloc(t->buf, cap);
        if (!grown) return 1;
        t->buf = grown;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, e->text, e->len);
    t->len += e->len;
    t->buf[t->len] = '\0';
    return 0;
}

static int parse_type(const char *s, ember_type *out)
{
    static const struct {
        const char *name;
        ember_type type;
    } types[] = {{"f32", EMBER_TYPE_F32},   {"f16", EMBER_TYPE_F16},   {"bf16", EMBER_TYPE_BF16},
                 {"q8_0", EMBER_TYPE_Q8_0}, {"q4_0", EMBER_TYPE_Q4_0}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(s, types[i].name)) {
            *out = types[i].type;
            return 0;
        }
    return 1;
}

static int32_t argmax_first(const float *l, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (l[i] > l[best]) best = i;
    return best;
}

/* log softmax(l)[id], in double. */
static double log_prob(const float *l, int32_t n, int32_t id)
{
    double m = l[argmax_first(l, n)], s = 0.0;
    for (int32_t i = 0; i < n; i++) s += exp((double)l[i] - m);
    return (double)l[id] - m - log(s);
}

static void print_error(const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    char *s = cJSON_PrintUnformatted(o);
    printf("%s\n", s ? s : "{\"error\": \"out of memory\"}");
    cJSON_free(s);
    cJSON_Delete(o);
}

/* The integer list under key, or NULL (message in *why). */
static int32_t *read_ids(const cJSON *req, const char *key, int32_t vocab, size_t *n, const char **why)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(req, key);
    int len = cJSON_GetArraySize(a);
    if (!cJSON_IsArray(a) || len < 1) {
        *why = "ids must be a non-empty list of token ids";
        return NULL;
    }
    int32_t *ids = malloc((size_t)len * sizeof *ids);
    if (!ids) {
        *why = "out of memory";
        return NULL;
    }
    size_t i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a)
    {
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble >= vocab ||
            v->valuedouble != (double)(int32_t)v->valuedouble) {
            free(ids);
            *why = "ids must be integers in [0, vocab)";
            return NULL;
        }
        ids[i++] = (int32_t)v->valuedouble;
    }
    *n = i;
    return ids;
}

static int greedy(ember_session *s, et_textgen *gen, text_buf *text, const int32_t *ids, size_t n,
                  long n_gen, int32_t vocab, float *logits)
{
    et_finish finish = ET_FINISH_NONE;
    int32_t *out = malloc((size_t)(n_gen > 0 ? n_gen : 1) * sizeof *out);
    long n_out = 0;
    text->len = 0;
    if (text->buf) text->buf[0] = '\0';
    if (!out || et_textgen_begin(gen, ids, n) || ember_session_prefill(s, ids, n)) goto fail;
    for (long i = 0; i < n_gen; i++) {
        int32_t next;
        memcpy(logits, ember_session_logits(s), (size_t)vocab * sizeof *logits);
        if (et_textgen_step(gen, logits, &next, &finish)) goto fail;
        out[n_out++] = next;
        if (finish) break;
        if (i + 1 == n_gen) {
            finish = ET_FINISH_LENGTH; /* the generator has no max_tokens of its own */
            break;
        }
        if (ember_session_decode(s, next)) goto fail;
    }
    if (et_textgen_end(gen, &finish)) goto fail;
    printf("{\"gen\": [");
    for (long i = 0; i < n_out; i++) printf(i ? ", %d" : "%d", out[i]);
    cJSON *t = cJSON_CreateString(text->buf ? text->buf : "");
    char *ts = t ? cJSON_PrintUnformatted(t) : NULL;
    printf("], \"finish\": \"%s\", \"text\": %s}\n", et_finish_name(finish), ts ? ts : "\"\"");
    cJSON_free(ts);
    cJSON_Delete(t);
    free(out);
    return 0;
fail:
    free(out);
    print_error(ember_last_error());
    return 1;
}

static int score(ember_session *s, const int32_t *ids, size_t n, long from, int32_t vocab)
{
    if (from < 1 || (size_t)from >= n) {
        print_error("score_from must be in [1, len(ids))");
        return 1;
    }
    double *lp = malloc(n * sizeof *lp);
    int32_t *am = malloc(n * sizeof *am);
    if (!lp || !am || ember_session_prefill(s, ids, (size_t)from)) goto fail;
    for (size_t i = (size_t)from; i < n; i++) {
        const float *l = ember_session_logits(s);
        lp[i] = log_prob(l, vocab, ids[i]);
        am[i] = argmax_first(l, vocab);
        if (i + 1 < n && ember_session_decode(s, ids[i])) goto fail;
    }
    printf("{\"logprob\": [");
    for (size_t i = (size_t)from; i < n; i++) printf(i > (size_t)from ? ", %.9g" : "%.9g", lp[i]);
    printf("], \"argmax\": [");
    for (size_t i = (size_t)from; i < n; i++) printf(i > (size_t)from ? ", %d" : "%d", am[i]);
    printf("]}\n");
    free(lp);
    free(am);
    return 0;
fail:
    free(lp);
    free(am);
    print_error(ember_last_error());
    return 1;
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s -m MODEL [--dtype f32|f16|bf16|q8_0|q4_0] [--kv-type f32|f16|q8_0]\n"
            "       [--threads N] [--chunk N] < requests.jsonl\n"
            "  requests: {\"ids\": [...], \"gen\": N} or {\"ids\": [...], \"score_from\": K}\n",
            argv0);
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    ember_model_params mp = ember_model_default_params();
    ember_session_params sp = ember_session_default_params();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = v != NULL;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) dir = v;
        else if (!strcmp(a, "--dtype")) ok = ok && !parse_type(v, &mp.weight_type);
        else if (!strcmp(a, "--kv-type")) ok = ok && !parse_type(v, &sp.kv_type);
        else if (!strcmp(a, "--threads")) ok = ok && (sp.n_threads = atoi(v)) > 0;
        else if (!strcmp(a, "--chunk")) ok = ok && (sp.prefill_chunk = atoi(v)) > 0;
        else ok = 0;
        if (!ok) {
            usage(argv[0]);
            return 2;
        }
        i++;
    }
    if (!dir) {
        usage(argv[0]);
        return 2;
    }
    double t0 = bench_now_s();
    ember_model *model = NULL;
    ember_session *s = NULL;
    et_tokenizer *tok = NULL;
    et_textgen *gen = NULL;
    float *logits = NULL;
    text_buf text = {0};
    int rc = 1;
    int32_t stop_ids[16];
    et_textgen_params gp;
    et_textgen_params_default(&gp);
    gp.sampling.temperature = 0.0f; /* greedy: the first argmax */
    if (ember_model_load(dir, &mp, &model) || et_tokenizer_load(dir, &tok) ||
        et_model_stop_ids(dir, tok, stop_ids, 16, &gp.n_stop_ids))
        goto fail;
    gp.stop_ids = stop_ids;
    if (sp.max_context > ember_model_max_positions(model)) sp.max_context = ember_model_max_positions(model);
    int32_t vocab = ember_model_vocab_size(model);
    if (ember_session_create(model, &sp, &s) || et_textgen_create(tok, vocab, &gp, collect_content, &text, &gen))
        goto fail;
    if (!(logits = malloc((size_t)vocab * sizeof *logits))) goto fail;
    fprintf(stderr, "lm_score: %s loaded in %.3f s (kernels %s)\n", dir, bench_now_s() - t0,
            ember_model_kernels(model));

    char *line = NULL;
    size_t line_cap = 0;
    ssize_t got;
    long n_req = 0, n_err = 0;
    double t1 = bench_now_s();
    while ((got = getline(&line, &line_cap, stdin)) > 0) {
        cJSON *req = cJSON_ParseWithLength(line, (size_t)got);
        const char *why = "a request must be a JSON object";
        size_t n = 0;
        int32_t *ids = cJSON_IsObject(req) ? read_ids(req, "ids", vocab, &n, &why) : NULL;
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(req, "gen");
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(req, "score_from");
        n_req++;
        if (!ids) {
            print_error(why);
            n_err++;
        } else if ((size_t)sp.max_context < n + (cJSON_IsNumber(g) ? (size_t)g->valuedouble : 0)) {
            print_error("the request does not fit the context");
            n_err++;
        } else {
            ember_session_reset(s);
            if (cJSON_IsNumber(g) && g->valuedouble >= 1)
                n_err += greedy(s, gen, &text, ids, n, (long)g->valuedouble, vocab, logits);
            else if (cJSON_IsNumber(k))
                n_err += score(s, ids, n, (long)k->valuedouble, vocab);
            else {
                print_error("give \"gen\" (>= 1) or \"score_from\"");
                n_err++;
            }
        }
        fflush(stdout);
        free(ids);
        cJSON_Delete(req);
    }
    free(line);
    fprintf(stderr, "lm_score: %ld requests (%ld failed) in %.3f s\n", n_req, n_err, bench_now_s() - t1);
    rc = n_err ? 1 : 0;
    goto done;
fail:
    fprintf(stderr, "lm_score: %s\n", ember_last_error());
done:
    free(logits);
    free(text.buf);
    et_textgen_free(gen);
    et_tokenizer_free(tok);
    ember_session_free(s);
    ember_model_free(model);
    return rc;
}
