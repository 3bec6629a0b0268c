/* The text side of generation: sampler -> detokenizer -> stop strings ->
 * tool-call parser -> the caller's sink. See textgen.h. */
#include "generate/textgen.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/gguf.h"
#include "io/json_text.h"
#include "io/read_file.h"
#include "tokenizer/gguf_text.h"
#include "generate/stop.h"

struct et_textgen {
    const et_tokenizer *tok;
    et_textgen_params p;
    int32_t *stop_ids;
    et_sampler *sampler;
    et_detok *detok;
    et_stop *stop;
    et_toolcall *tools; /* NULL: every piece of text is content */
    et_toolcall_sink sink;
    void *user;
    int32_t vocab;
    int32_t count, calls;
    int stopped; /* a stop string matched: later text is dropped */

    /* force_tools: each candidate opening of the response as ids */
    struct forced_call {
        int32_t *ids;
        size_t n_ids;
        char *name;
        char *call;     /* the opening from the open tag on, as the parser sees the block */
    } *forced;
    size_t n_forced;
    unsigned char *live; /* per candidate: agrees with every id sampled so far */
    float *saved;        /* the allowed ids' logits while the rest are masked */
    size_t forced_pos;   /* ids sampled under the constraint */
    int constraining;    /* the opening is not complete yet */
    int block_open;      /* the forced call has not come out yet */
    int call_done;       /* single_call: the call came out, the rest is dropped */
};

void et_textgen_params_default(et_textgen_params *p)
{
    memset(p, 0, sizeof *p);
    et_sampler_params_default(&p->sampling);
}

const char *et_finish_name(et_finish f)
{
    switch (f) {
    case ET_FINISH_STOP: return "stop";
    case ET_FINISH_LENGTH: return "length";
    case ET_FINISH_TOOL_CALLS: return "tool_calls";
    default: return NULL;
    }
}

/* The first candidate still in the running: the call a forced block makes. */
static const struct forced_call *chosen_call(const et_textgen *g)
{
    for (size_t k = 0; k < g->n_forced; k++)
        if (g->live[k]) return &g->forced[k];
    return NULL;
}

static int is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* The arguments of a forced block that did not parse (block[0..len), open
 * tag first): what the model generated after the forced opening, without
 * the close tag and the brace that closes the call object when the block
 * was closed. "" when the block ended inside the opening. */
static char *forced_arguments(const struct forced_call *c, const char *close_tag, const char *block,
                              size_t len)
{
    size_t at = strlen(c->call), k = strlen(close_tag);
    const char *a = len > at ? block + at : block + len;
    size_t n = len > at ? len - at : 0;
    if (n >= k && !memcmp(a + n - k, close_tag, k)) {
        n -= k;
        while (n && is_space(a[n - 1])) n--;
        if (n && a[n - 1] == '}') n--;
    }
    while (n && is_space(a[n - 1])) n--;
    while (n && is_space(*a)) a++, n--; /* the opening stops before the space (see forced_create) */
    char *args = malloc(n + 1);
    if (args) {
        memcpy(args, a, n);
        args[n] = '\0';
    }
    return args;
}

/* Counts and numbers the calls on their way to the caller's sink (ids are
 * per response: call_0, call_1, ...), turns a forced block that did not
 * parse into its call, and drops what follows a single call. */
static int count_sink(void *user, const et_toolcall_event *e)
{
    et_textgen *g = user;
    if (g->call_done) return 0;
    et_toolcall_event ev = *e;
    const struct forced_call *c = g->block_open ? chosen_call(g) : NULL;
    char id[32], *args = NULL;
    if (c && e->kind == ET_TOOLCALL_CONTENT && e->malformed) {
        size_t n = strlen(c->call) < e->len ? strlen(c->call) : e->len;
        if (!memcmp(e->text, c->call, n)) {
            const char *close = et_toolcall_format_named("hermes")->close_tag;
            if (!(args = forced_arguments(c, close, e->text, e->len))) return 1;
            ev = (et_toolcall_event){ET_TOOLCALL_CALL, NULL, 0, 0, NULL, NULL, c->name, args};
        }
    }
    if (ev.kind == ET_TOOLCALL_CALL) {
        snprintf(id, sizeof id, "call_%d", (int)g->calls++);
        ev.id = id;
        g->block_open = 0;
    }
    int rc = g->sink(g->user, &ev);
    free(args);
    if (ev.kind == ET_TOOLCALL_CALL && g->p.single_call) g->call_done = 1;
    return rc;
}

/* The candidate openings of force_tools: the text the chat templates render
 * before a call's arguments, after closing the reasoning the prompt opened.
 * It stops at the colon: BPE vocabularies merge the space that follows with
 * the arguments' brace (" {"), so an opening that ended in the space would
 * leave the model a token boundary it never saw in training (a trained
 * model then writes junk). */
static ember_status forced_create(et_textgen *g, const et_textgen_params *p, const char *open_tag)
{
    g->forced = calloc(p->n_force_tools, sizeof *g->forced);
    g->live = calloc(p->n_force_tools, 1);
    g->saved = calloc(p->n_force_tools, sizeof *g->saved);
    if (!g->forced || !g->live || !g->saved) return ember_fail(EMBER_ERR_NO_MEMORY, "textgen: out of memory");
    g->n_forced = p->n_force_tools;
    const char *lead = p->start_in_reasoning ? "</think>\n\n" : "";
    for (size_t k = 0; k < p->n_force_tools; k++) {
        struct forced_call *c = &g->forced[k];
        const char *name = p->force_tools[k];
        size_t n = strlen(lead) + strlen(open_tag) + strlen(name) + 64;
        char *text = malloc(n);
        c->name = malloc(strlen(name) + 1);
        if (!text || !c->name) {
            free(text);
            return ember_fail(EMBER_ERR_NO_MEMORY, "textgen: out of memory");
        }
        strcpy(c->name, name);
        snprintf(text, n, "%s%s\n{\"name\": \"%s\", \"arguments\":", lead, open_tag, name);
        c->call = text;
        ember_status st = et_tokenizer_encode(g->tok, text, strlen(text), false, &c->ids, &c->n_ids);
        memmove(text, text + strlen(lead), strlen(text) - strlen(lead) + 1);
        if (st) return st;
        if (!c->n_ids) return ember_fail(EMBER_ERR_INVALID_ARG, "textgen: the forced call of '%s' has no tokens", name);
    }
    return EMBER_OK;
}

static void forced_free(et_textgen *g)
{
    for (size_t k = 0; g->forced && k < g->n_forced; k++) {
        free(g->forced[k].ids);
        free(g->forced[k].name);
        free(g->forced[k].call);
    }
    free(g->forced);
    free(g->live);
    free(g->saved);
}

/* Leaves finite only the logits of the ids that continue a live candidate. */
static void forced_mask(et_textgen *g, float *logits, int32_t vocab)
{
    for (size_t k = 0; k < g->n_forced; k++)
        if (g->live[k]) g->saved[k] = logits[g->forced[k].ids[g->forced_pos]];
    for (int32_t v = 0; v < vocab; v++) logits[v] = -INFINITY;
    for (size_t k = 0; k < g->n_forced; k++)
        if (g->live[k]) logits[g->forced[k].ids[g->forced_pos]] = g->saved[k];
}

/* After sampling *id under the mask: keeps the candidates that agree (an id
 * outside them, possible only when every allowed logit was -inf, becomes
 * the first live candidate's), and ends the constraint when one is whole. */
static void forced_advance(et_textgen *g, int32_t *id)
{
    const struct forced_call *first = chosen_call(g);
    int agrees = 0;
    for (size_t k = 0; k < g->n_forced; k++)
        agrees |= g->live[k] && g->forced[k].ids[g->forced_pos] == *id;
    if (!agrees) *id = first->ids[g->forced_pos];
    for (size_t k = 0; k < g->n_forced; k++)
        g->live[k] = g->live[k] && g->forced[k].ids[g->forced_pos] == *id;
    g->forced_pos++;
    for (size_t k = 0; k < g->n_forced; k++)
        if (g->live[k] && g->forced[k].n_ids == g->forced_pos) {
            /* a whole opening: it is the call (the others drop out) */
            memset(g->live, 0, g->n_forced);
            g->live[k] = 1;
            g->constraining = 0;
        }
}

ember_status et_textgen_create(const et_tokenizer *tok, int32_t vocab_size,
                               const et_textgen_params *p, et_toolcall_sink sink, void *user,
                               et_textgen **out)
{
    *out = NULL;
    if (!p || !sink || vocab_size <= 0 || p->max_tokens < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "textgen: bad arguments");
    if (!tok && (p->n_stop || p->parse_tools))
        return ember_fail(EMBER_ERR_INVALID_ARG, "stop strings and tool calls need a tokenizer");
    if (p->n_force_tools && (!p->parse_tools || !p->force_tools))
        return ember_fail(EMBER_ERR_INVALID_ARG, "textgen: forced tool calls need parse_tools and the names");
    et_textgen *g = calloc(1, sizeof *g);
    if (!g) return ember_fail(EMBER_ERR_NO_MEMORY, "textgen: out of memory");
    g->tok = tok;
    g->p = *p;
    g->sink = sink;
    g->user = user;
    g->p.stop = NULL;
    g->p.n_stop = 0;
    g->p.force_tools = NULL;
    g->vocab = vocab_size;
    ember_status st = EMBER_OK;
    if (p->n_stop_ids) {
        g->stop_ids = malloc(p->n_stop_ids * sizeof *g->stop_ids);
        if (!g->stop_ids) st = ember_fail(EMBER_ERR_NO_MEMORY, "textgen: out of memory");
        else memcpy(g->stop_ids, p->stop_ids, p->n_stop_ids * sizeof *g->stop_ids);
    }
    g->p.stop_ids = g->stop_ids;
    if (!st) st = et_sampler_create(&p->sampling, vocab_size, &g->sampler);
    if (!st && tok) st = et_detok_create(tok, true, &g->detok);
    if (!st) st = et_stop_create(p->stop, p->n_stop, &g->stop);
    if (!st && p->parse_tools) {
        et_toolcall_params tp;
        et_toolcall_params_default(&tp);
        tp.start_in_reasoning = p->start_in_reasoning;
        st = et_toolcall_create(&tp, &g->tools);
    }
    if (!st && p->n_force_tools) st = forced_create(g, p, et_toolcall_format_named("hermes")->open_tag);
    if (st) {
        et_textgen_free(g);
        return st;
    }
    *out = g;
    return EMBER_OK;
}

void et_textgen_free(et_textgen *g)
{
    if (!g) return;
    et_sampler_free(g->sampler);
    et_detok_free(g->detok);
    et_stop_free(g->stop);
    et_toolcall_free(g->tools);
    forced_free(g);
    free(g->stop_ids);
    free(g);
}

ember_status et_textgen_begin(et_textgen *g, const int32_t *prompt, size_t n)
{
    et_sampler_reset(g->sampler, g->p.sampling.seed);
    et_stop_reset(g->stop);
    if (g->tools) et_toolcall_reset(g->tools);
    /* a fresh detokenizer: the previous response may have left bytes held */
    et_detok_free(g->detok);
    g->detok = NULL;
    ember_status st = g->tok ? et_detok_create(g->tok, true, &g->detok) : EMBER_OK;
    if (st) return st;
    g->count = g->calls = 0;
    g->stopped = g->call_done = 0;
    if (g->n_forced) memset(g->live, 1, g->n_forced);
    g->forced_pos = 0;
    g->constraining = g->block_open = g->n_forced > 0;
    return et_sampler_add_prompt(g->sampler, prompt, n);
}

/* Text that passed the stop strings: to the tool parser, or straight out. */
static ember_status emit(et_textgen *g, const char *text, size_t len)
{
    if (!len) return EMBER_OK;
    if (g->tools) return et_toolcall_feed(g->tools, text, len, count_sink, g);
    et_toolcall_event e = {ET_TOOLCALL_CONTENT, text, len, 0, NULL, NULL, NULL, NULL};
    return g->sink(g->user, &e) ? ember_fail(EMBER_ERR_CANCELLED, "generation cancelled")
                                : EMBER_OK;
}

static ember_status feed_text(et_textgen *g, const char *text, size_t len)
{
    et_stop_result r;
    ember_status st = et_stop_feed(g->stop, text, len, &r);
    if (st) return st;
    if (r.stopped) g->stopped = 1;
    return emit(g, r.text, r.len);
}

ember_status et_textgen_step(et_textgen *g, float *logits, int32_t *id, et_finish *finish)
{
    *finish = ET_FINISH_NONE;
    double t0 = ember_stats_start(g->p.stats);
    if (g->constraining) forced_mask(g, logits, g->vocab);
    *id = et_sampler_sample(g->sampler, logits);
    if (g->constraining) forced_advance(g, id);
    et_sampler_accept(g->sampler, *id);
    ember_stats_stop(g->p.stats, EMBER_STAT_SAMPLER, t0);
    g->count++;
    if (et_stop_is_stop_id(g->stop_ids, g->p.n_stop_ids, *id)) {
        *finish = ET_FINISH_STOP;
        return EMBER_OK;
    }
    const char *text;
    size_t len;
    t0 = ember_stats_start(g->p.stats);
    ember_status st = g->detok ? et_detok_push(g->detok, *id, &text, &len) : EMBER_OK;
    if (!st && g->detok) st = feed_text(g, text, len);
    ember_stats_stop(g->p.stats, EMBER_STAT_DETOKENIZE, t0);
    if (st) return st;
    if (g->stopped || g->call_done) *finish = ET_FINISH_STOP;
    else if (g->p.max_tokens && g->count >= g->p.max_tokens) *finish = ET_FINISH_LENGTH;
    return EMBER_OK;
}

ember_status et_textgen_end(et_textgen *g, et_finish *finish)
{
    ember_status st = EMBER_OK;
    if (!g->stopped && !g->call_done && g->detok) {
        const char *text;
        size_t len;
        et_stop_result r;
        st = et_detok_flush(g->detok, &text, &len);
        if (!st) st = feed_text(g, text, len);
        if (!st && !g->stopped) {
            et_stop_finish(g->stop, &r);
            st = emit(g, r.text, r.len);
        }
    }
    if (!st && g->tools) st = et_toolcall_finish(g->tools, count_sink, g);
    if (*finish == ET_FINISH_NONE) *finish = ET_FINISH_STOP;
    if (*finish == ET_FINISH_STOP && g->calls) *finish = ET_FINISH_TOOL_CALLS;
    return st;
}

int32_t et_textgen_count(const et_textgen *g) { return g->count; }
int32_t et_textgen_calls(const et_textgen *g) { return g->calls; }
int32_t et_textgen_forced(const et_textgen *g) { return (int32_t)g->forced_pos; }

/* ---- the model's stop ids ------------------------------------------------ */

static void add_id(int32_t *ids, size_t cap, size_t *n, int32_t id)
{
    for (size_t i = 0; i < *n; i++)
        if (ids[i] == id) return;
    if (*n < cap && id >= 0) ids[(*n)++] = id;
}

/* dir/name parsed, or NULL (and OK) if the file does not exist. */
static ember_status read_json(const char *dir, const char *name, cJSON **out)
{
    char path[4096];
    struct stat sb;
    char *text;
    size_t len;
    *out = NULL;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", dir);
    if (stat(path, &sb) != 0) return EMBER_OK;
    ember_status st = io_read_text_file(path, (size_t)64 << 20, &text, &len);
    if (st) return st;
    st = io_json_parse(text, len, path, "file", out);
    free(text);
    return st;
}

/* An eos_token_id value: an id or a list of ids. */
static ember_status add_id_value(const cJSON *v, const char *file, int32_t *ids, size_t cap,
                                 size_t *n)
{
    if (!v || cJSON_IsNull(v)) return EMBER_OK;
    if (cJSON_IsNumber(v)) {
        add_id(ids, cap, n, (int32_t)v->valuedouble);
        return EMBER_OK;
    }
    if (!cJSON_IsArray(v)) return ember_fail(EMBER_ERR_FORMAT, "%s: eos_token_id must be an id or a list", file);
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsNumber(e)) return ember_fail(EMBER_ERR_FORMAT, "%s: eos_token_id lists ids", file);
        add_id(ids, cap, n, (int32_t)e->valuedouble);
    }
    return EMBER_OK;
}

/* A GGUF model file instead of a directory: the same answers from its
 * metadata (gguf_text.c). *is_gguf false: path is not one. */
static ember_status from_gguf(const char *path, bool *is_gguf, int32_t *ids, size_t cap, size_t *n,
                              et_sampler_params *p)
{
    *is_gguf = gguf_is_gguf_file(path);
    if (!*is_gguf) return EMBER_OK;
    gguf_file *f = NULL;
    ember_status st = gguf_open(path, &f);
    if (!st) st = ids ? et_gguf_stop_ids(f, ids, cap, n) : et_gguf_sampling_defaults(f, p);
    gguf_close(f);
    return st;
}

ember_status et_model_stop_ids(const char *dir, const et_tokenizer *tok, int32_t *ids, size_t cap,
                               size_t *n)
{
    static const char *const files[] = {"generation_config.json", "config.json"};
    cJSON *j = NULL;
    bool gguf;
    *n = 0;
    ember_status st = from_gguf(dir, &gguf, ids, cap, n, NULL);
    for (size_t i = 0; i < 2 && !st && !gguf; i++) {
        st = read_json(dir, files[i], &j);
        if (!st && j) st = add_id_value(cJSON_GetObjectItemCaseSensitive(j, "eos_token_id"), files[i], ids, cap, n);
        cJSON_Delete(j);
        j = NULL;
    }
    if (!st && !gguf) st = read_json(dir, "tokenizer_config.json", &j);
    if (!st && j && tok) {
        const cJSON *eos = cJSON_GetObjectItemCaseSensitive(j, "eos_token");
        if (cJSON_IsObject(eos)) eos = cJSON_GetObjectItemCaseSensitive(eos, "content");
        if (cJSON_IsString(eos)) add_id(ids, cap, n, et_tokenizer_find(tok, eos->valuestring));
    }
    cJSON_Delete(j);
    /* ids the tokenizer does not have cannot be generated: drop them */
    if (tok) {
        size_t k = 0;
        for (size_t i = 0; i < *n; i++)
            if ((size_t)ids[i] < et_tokenizer_vocab_size(tok)) ids[k++] = ids[i];
        *n = k;
    }
    return st;
}

static void set_number(const cJSON *j, const char *key, float *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (cJSON_IsNumber(v)) *out = (float)v->valuedouble;
}

ember_status et_model_sampling_defaults(const char *dir, et_sampler_params *p)
{
    cJSON *j = NULL;
    bool gguf;
    ember_status st = from_gguf(dir, &gguf, NULL, 0, NULL, p);
    if (st || gguf) return st;
    st = read_json(dir, "generation_config.json", &j);
    if (st) return st;
    const cJSON *sample = j ? cJSON_GetObjectItemCaseSensitive(j, "do_sample") : NULL;
    if (!cJSON_IsTrue(sample)) {
        p->temperature = 0.0f;
    } else {
        float top_k = (float)p->top_k;
        set_number(j, "temperature", &p->temperature);
        set_number(j, "top_p", &p->top_p);
        set_number(j, "min_p", &p->min_p);
        set_number(j, "top_k", &top_k);
        p->top_k = (int32_t)top_k;
    }
    if (j) set_number(j, "repetition_penalty", &p->repetition_penalty);
    cJSON_Delete(j);
    return EMBER_OK;
}
