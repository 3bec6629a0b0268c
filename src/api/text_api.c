/* The public text API (include/ember_text.h): thin wrappers over the
 * tokenizer (src/tokenizer), the chat template (src/template), generation
 * (src/generate) and the session (src/llm). The public handles are the internal objects under an opaque
 * name: an ember_tokenizer * is an et_tokenizer *, an ember_chat_template *
 * an et_chat_template *. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/api_internal.h"
#include "base/stats.h"
#include "base/status.h"
#include "ember_text.h"
#include "io/json_text.h"
#include "llm/session_internal.h"
#include "template/chat.h"
#include "generate/textgen.h"
#include "speculate/decoder.h"
#include "tokenizer/tokenizer.h"

#define TOK(t) ((const et_tokenizer *)(const void *)(t))
#define TMPL(t) ((const et_chat_template *)(const void *)(t))

void ember_free(void *p)
{
    free(p);
}

/* ---- tokenizer ---- */

ember_status ember_tokenizer_load(const char *path, ember_tokenizer **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tokenizer_load: out is NULL");
    *out = NULL;
    if (!path) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tokenizer_load: path is NULL");
    et_tokenizer *t = NULL;
    ember_status st = et_tokenizer_load(path, &t);
    if (!st) *out = (ember_tokenizer *)(void *)t;
    return st;
}

void ember_tokenizer_free(ember_tokenizer *tok)
{
    et_tokenizer_free((et_tokenizer *)(void *)tok);
}

ember_status ember_tokenizer_encode(const ember_tokenizer *tok, const char *text, size_t len,
                                    int add_special, int32_t **ids, size_t *n_ids)
{
    if (ids) *ids = NULL;
    if (n_ids) *n_ids = 0;
    if (!tok || (!text && len) || !ids || !n_ids)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tokenizer_encode: a NULL argument");
    return et_tokenizer_encode(TOK(tok), text ? text : "", len, add_special != 0, ids, n_ids);
}

ember_status ember_tokenizer_decode(const ember_tokenizer *tok, const int32_t *ids, size_t n,
                                    int skip_special, char **text, size_t *len)
{
    size_t dummy;
    if (text) *text = NULL;
    if (len) *len = 0;
    if (!tok || (!ids && n) || !text)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tokenizer_decode: a NULL argument");
    int32_t vocab = (int32_t)et_tokenizer_vocab_size(TOK(tok));
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            return ember_fail(EMBER_ERR_INVALID_ARG,
                              "ember_tokenizer_decode: id %d (at %zu) is out of range, outside the vocabulary [0, %d)",
                              ids[i], i, vocab);
    return et_tokenizer_decode(TOK(tok), ids, n, skip_special != 0, text, len ? len : &dummy);
}

int32_t ember_tokenizer_vocab_size(const ember_tokenizer *tok)
{
    return tok ? (int32_t)et_tokenizer_vocab_size(TOK(tok)) : 0;
}

const char *ember_tokenizer_piece(const ember_tokenizer *tok, int32_t id)
{
    return tok ? et_tokenizer_token(TOK(tok), id) : NULL;
}

int32_t ember_tokenizer_find(const ember_tokenizer *tok, const char *piece)
{
    return tok && piece ? et_tokenizer_find(TOK(tok), piece) : -1;
}

int ember_tokenizer_is_special(const ember_tokenizer *tok, int32_t id)
{
    return tok && et_tokenizer_is_special(TOK(tok), id);
}

ember_status ember_tokenizer_end_of_turn_ids(const ember_tokenizer *tok, const char *model_dir,
                                             int32_t *ids, size_t cap, size_t *n)
{
    if (n) *n = 0;
    if (!tok || !model_dir || (!ids && cap) || !n)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_tokenizer_end_of_turn_ids: a NULL argument");
    return et_model_stop_ids(model_dir, TOK(tok), ids, cap, n);
}

/* ---- chat template ---- */

ember_status ember_chat_template_load(const char *model_dir, ember_chat_template **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_chat_template_load: out is NULL");
    *out = NULL;
    if (!model_dir) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_chat_template_load: dir is NULL");
    et_chat_template *t = NULL;
    ember_status st = et_chat_template_load(model_dir, &t);
    if (!st) *out = (ember_chat_template *)(void *)t;
    return st;
}

ember_status ember_chat_template_from_string(const char *source, const char *bos, const char *eos,
                                             ember_chat_template **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_chat_template_from_string: out is NULL");
    *out = NULL;
    if (!source)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_chat_template_from_string: source is NULL");
    et_chat_template *t = NULL;
    ember_status st = et_chat_template_from_string(source, bos, eos, &t);
    if (!st) *out = (ember_chat_template *)(void *)t;
    return st;
}

void ember_chat_template_free(ember_chat_template *t)
{
    et_chat_template_free((et_chat_template *)(void *)t);
}

ember_chat_params ember_chat_default_params(void)
{
    ember_chat_params p = {1, -1, NULL};
    return p;
}

static ember_status parse_json(const char *text, const char *what, int want_array, cJSON **out)
{
    *out = NULL;
    ember_status st = io_json_parse(text, strlen(text), "ember", what, out);
    if (st) return st;
    if (want_array ? !cJSON_IsArray(*out) : !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return ember_fail(EMBER_ERR_FORMAT, "%s must be a JSON %s", what, want_array ? "array" : "object");
    }
    return EMBER_OK;
}

ember_status ember_chat_template_render(const ember_chat_template *t, const char *messages_json,
                                        const char *tools_json, const ember_chat_params *p,
                                        char **prompt)
{
    if (prompt) *prompt = NULL;
    if (!t || !messages_json || !prompt)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_chat_template_render: a NULL argument");
    ember_chat_params dp = ember_chat_default_params();
    if (!p) p = &dp;
    cJSON *messages = NULL, *tools = NULL, *extra = NULL;
    ember_status st = parse_json(messages_json, "messages", 1, &messages);
    if (!st && tools_json) st = parse_json(tools_json, "tools", 1, &tools);
    if (!st && p->extra_json) st = parse_json(p->extra_json, "extra template variables", 0, &extra);
    if (!st) {
        et_chat_input in = {messages, tools, p->add_generation_prompt != 0,
                            p->enable_thinking < 0 ? -1 : p->enable_thinking != 0, extra};
        st = et_chat_render(TMPL(t), &in, prompt);
    }
    cJSON_Delete(messages);
    cJSON_Delete(tools);
    cJSON_Delete(extra);
    return st;
}

/* ---- generation ---- */

ember_generate_params ember_generate_default_params(void)
{
    ember_generate_params p;
    memset(&p, 0, sizeof p);
    p.temperature = 1.0f;
    p.top_p = 1.0f;
    p.repetition_penalty = 1.0f;
    p.max_tokens = 256;
    p.parse_tools = 1;
    return p;
}

ember_status ember_generate_params_from_model(const char *model_dir, ember_generate_params *p)
{
    if (!model_dir || !p)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_generate_params_from_model: a NULL argument");
    et_sampler_params sp;
    et_sampler_params_default(&sp);
    sp.temperature = p->temperature;
    sp.top_k = p->top_k;
    sp.top_p = p->top_p;
    sp.min_p = p->min_p;
    sp.repetition_penalty = p->repetition_penalty;
    ember_status st = et_model_sampling_defaults(model_dir, &sp);
    if (st) return st;
    p->temperature = sp.temperature;
    p->top_k = sp.top_k;
    p->top_p = sp.top_p;
    p->min_p = sp.min_p;
    p->repetition_penalty = sp.repetition_penalty;
    return EMBER_OK;
}

const char *ember_finish_name(ember_finish f)
{
    switch (f) {
    case EMBER_FINISH_STOP: return "stop";
    case EMBER_FINISH_LENGTH: return "length";
    case EMBER_FINISH_TOOL_CALLS: return "tool_calls";
    case EMBER_FINISH_CANCELLED: return "cancelled";
    default: return "";
    }
}

void ember_session_cancel(ember_session *session)
{
    if (session) atomic_store(&session->cancel, 1);
}

typedef struct sink_ctx {
    const ember_generate_params *p;
    const api_hooks *h;
} sink_ctx;

static int on_event(void *user, const et_toolcall_event *e)
{
    sink_ctx *k = user;
    const ember_generate_params *p = k->p;
    if (k->h->also && k->h->also(k->h->also_user, e)) return 1;
    if (e->kind == ET_TOOLCALL_CALL) {
        ember_tool_call call = {e->id, e->name, e->arguments};
        return p->on_tool_call ? p->on_tool_call(p->user, &call) : 0;
    }
    if (!p->on_text || !e->len) return 0;
    return p->on_text(p->user, e->kind == ET_TOOLCALL_REASONING ? EMBER_TEXT_REASONING : EMBER_TEXT_CONTENT,
                      e->text, e->len);
}

static ember_status to_textgen(const ember_generate_params *p, et_textgen_params *gp)
{
    et_textgen_params_default(gp);
    et_sampler_params *sp = &gp->sampling;
    sp->temperature = p->temperature;
    sp->top_k = p->top_k;
    sp->top_p = p->top_p;
    sp->min_p = p->min_p;
    sp->repetition_penalty = p->repetition_penalty;
    sp->presence_penalty = p->presence_penalty;
    sp->frequency_penalty = p->frequency_penalty;
    /* the two bias structs have the same members in the same order */
    sp->logit_bias = (const et_logit_bias *)(const void *)p->logit_bias;
    sp->n_logit_bias = p->n_logit_bias;
    sp->seed = p->seed;
    gp->stop = p->stop;
    gp->n_stop = p->n_stop;
    gp->stop_ids = p->stop_ids;
    gp->n_stop_ids = p->n_stop_ids;
    gp->max_tokens = p->max_tokens;
    gp->parse_tools = p->parse_tools != 0;
    gp->stats = p->stats;
    if (p->max_tokens < 0) return ember_fail(EMBER_ERR_INVALID_ARG, "max_tokens %d is negative", p->max_tokens);
    const char *tc = p->tool_choice;
    if (!tc || !strcmp(tc, "auto") || !strcmp(tc, "none")) return EMBER_OK;
    if (!p->parse_tools) return ember_fail(EMBER_ERR_INVALID_ARG, "tool_choice '%s' needs parse_tools", tc);
    if (!strcmp(tc, "required")) {
        if (!p->n_tool_names)
            return ember_fail(EMBER_ERR_INVALID_ARG, "tool_choice 'required' with no tool_names");
        gp->force_tools = p->tool_names;
        gp->n_force_tools = p->n_tool_names;
    } else {
        gp->force_tools = &p->tool_choice;
        gp->n_force_tools = 1;
        gp->single_call = 1;
    }
    return EMBER_OK;
}

static ember_finish finish_of(et_finish f)
{
    switch (f) {
    case ET_FINISH_LENGTH: return EMBER_FINISH_LENGTH;
    case ET_FINISH_TOOL_CALLS: return EMBER_FINISH_TOOL_CALLS;
    default: return EMBER_FINISH_STOP;
    }
}

/* The decode loop's state: what picking an id needs and what it found. */
typedef struct gen_state {
    ember_session *s;
    et_textgen *g;
    const ember_generate_params *p;
    float *logits; /* the sampler's copy: it edits them */
    size_t vocab;
    et_finish finish;
    double t_first;
    int cancelled;
} gen_state;

/* Picks the id after `row` when the session would hold `held` tokens: a
 * pending cancel first, then the sampler and the text, on_token, and a full
 * context. *end: the response ends here (the id, if any, is not fed). */
static ember_status pick_next(void *user, const float *row, int64_t held, int32_t *id, int *end)
{
    gen_state *gs = user;
    const ember_generate_params *p = gs->p;
    *end = 0;
    if (atomic_exchange(&gs->s->cancel, 0)) {
        gs->cancelled = *end = 1;
        return EMBER_OK;
    }
    memcpy(gs->logits, row, gs->vocab * sizeof *gs->logits);
    ember_status st = et_textgen_step(gs->g, gs->logits, id, &gs->finish);
    if (st) return st;
    if (gs->t_first == 0) gs->t_first = ember_clock_ms();
    if (p->on_token && p->on_token(p->user, *id)) {
        gs->cancelled = *end = 1;
        return EMBER_OK;
    }
    if (!gs->finish && held >= gs->s->p.max_context) gs->finish = ET_FINISH_LENGTH;
    *end = gs->finish != ET_FINISH_NONE;
    return EMBER_OK;
}

/* One id per forward step. */
static ember_status decode_plain(gen_state *gs, const api_hooks *h, int decode_id)
{
    ember_session *s = gs->s;
    ember_stats *stats = gs->p->stats;
    for (;;) {
        int32_t next;
        int end;
        double tt = ember_stats_start(stats);
        ember_status st = pick_next(gs, ember_session_logits(s), s->pos, &next, &end);
        if (st || end) {
            if (!st && !gs->cancelled) ember_stats_stop(stats, EMBER_STAT_TOKEN, tt);
            return st;
        }
        double td = ember_stats_start(stats);
        st = ember_session_decode(s, next);
        ember_stats_stop(stats, decode_id, td);
        if (!st && h->fed) st = api_ids_push(h->fed, next);
        ember_stats_stop(stats, EMBER_STAT_TOKEN, tt);
        if (st) return st;
    }
}

/* Drafts verified several at a time (speculate/decoder.h): the same ids.
 * Each id's time is its verify step's, shared by the ids the step gave. */
static ember_status decode_speculating(gen_state *gs, const int32_t *ids, size_t n,
                                       const api_hooks *h, int decode_id, ember_generate_result *r)
{
    const ember_generate_params *p = gs->p;
    if (p->speculate != EMBER_SPECULATE_NGRAM && p->speculate != EMBER_SPECULATE_DRAFT)
        return ember_fail(EMBER_ERR_INVALID_ARG, "speculate %d is not a speculation mode", (int)p->speculate);
    if ((p->speculate == EMBER_SPECULATE_DRAFT) != (p->draft_model != NULL))
        return ember_fail(EMBER_ERR_INVALID_ARG, "speculate: a draft_model goes with EMBER_SPECULATE_DRAFT only");
    if (p->draft_max < 0 || p->draft_max > 64)
        return ember_fail(EMBER_ERR_INVALID_ARG, "draft_max %d must be in [0, 64] (0: 8)", p->draft_max);
    spec_decoder *d = NULL;
    ember_status st = spec_decoder_create(gs->s, p->draft_max ? p->draft_max : 8, p->draft_model, &d);
    /* the draft session marks its rings where the caller snapshots the
     * target's (a conversation's resume points): a later turn resumes it there */
    size_t marks[2], n_marks = 0;
    for (int i = 0; i < 2; i++)
        if (h->snapshot[i] && h->snapshot_at[i] > 0 && h->snapshot_at[i] <= n &&
            (!n_marks || h->snapshot_at[i] > marks[n_marks - 1]))
            marks[n_marks++] = h->snapshot_at[i];
    if (!st) st = spec_decoder_begin(d, ids, n, marks, n_marks);
    int32_t next;
    int end = 0;
    if (!st) st = pick_next(gs, ember_session_logits(gs->s), gs->s->pos, &next, &end);
    while (!st && !end) {
        double t0 = ember_stats_start(p->stats);
        const int32_t *fed;
        int32_t n_fed;
        st = spec_decoder_step(d, &next, pick_next, gs, &fed, &n_fed, &end);
        if (p->stats) {
            double ms = ember_clock_ms() - t0;
            ember_stats_record(p->stats, decode_id, ms);
            for (int32_t i = 0; i < n_fed; i++) ember_stats_record(p->stats, EMBER_STAT_TOKEN, ms / n_fed);
        }
        for (int32_t i = 0; !st && h->fed && i < n_fed; i++) st = api_ids_push(h->fed, fed[i]);
    }
    if (d) {
        const spec_counts *c = spec_decoder_counts(d);
        r->verify_steps = (int32_t)c->steps;
        r->drafted_tokens = (int32_t)c->drafted;
        r->accepted_tokens = (int32_t)c->accepted;
        r->draft_prefill_tokens = (int32_t)c->draft_prefill;
    }
    spec_decoder_free(d);
    return st;
}

ember_status api_generate(ember_session *s, const ember_tokenizer *tok, const int32_t *ids, size_t n,
                          size_t n_cached, const ember_generate_params *p, const api_hooks *h,
                          ember_generate_result *res)
{
    ember_generate_result r;
    memset(&r, 0, sizeof r);
    if (res) *res = r;
    if (!s || (!ids && n) || !p || n_cached > n)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_session_generate: a NULL argument");
    if (n == n_cached && !ember_session_logits(s))
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_session_generate: no prompt and nothing in the session");
    double t0 = ember_clock_ms();
    et_textgen_params gp;
    ember_status st = to_textgen(p, &gp);
    if (st) return st;
    int32_t vocab = ember_model_vocab_size(s->m);
    static const api_hooks none = {0};
    if (!h) h = &none;
    sink_ctx k = {p, h};
    et_textgen *g = NULL;
    float *logits = malloc((size_t)vocab * sizeof *logits);
    if (!logits) return ember_fail(EMBER_ERR_NO_MEMORY, "ember_session_generate: out of memory");
    st = et_textgen_create(TOK(tok), vocab, &gp, on_event, &k, &g);
    if (!st) st = et_textgen_begin(g, ids + n_cached, n - n_cached);
    r.prompt_tokens = (int32_t)n;
    r.cached_tokens = (int32_t)n_cached;
    if (!st && n > n_cached) {
        /* in pieces when snapshots are wanted inside the new tokens */
        double tp = ember_stats_start(p->stats);
        size_t at = n_cached;
        for (int i = 0; i < 2 && !st; i++) {
            if (!h->snapshot[i] || h->snapshot_at[i] <= at || h->snapshot_at[i] > n) continue;
            st = ember_session_prefill(s, ids + at, h->snapshot_at[i] - at);
            at = h->snapshot_at[i];
            llm_ring_snapshot_free(h->snapshot[i]);
            if (!st) st = llm_ring_snapshot_take(s, h->snapshot[i]);
        }
        if (!st && at < n) st = ember_session_prefill(s, ids + at, n - at);
        ember_stats_stop(p->stats, EMBER_STAT_PREFILL, tp);
    }
    r.prefill_ms = ember_clock_ms() - t0;
    /* the whole forward step of a token (the session splits its layers by
     * type; textgen times the sampler and the detokenizer), or with
     * speculation the verify pass (its count against the tokens': ids per
     * pass) */
    const char *step_name = p->speculate ? "verify_step" : "decode_step";
    int decode_id = p->stats ? ember_stats_find(p->stats, step_name) : -1;
    if (!st && p->stats && decode_id < 0)
        st = ember_stats_add_series(p->stats, step_name, EMBER_STAT_TEXT, &decode_id);
    gen_state gs = {s, g, p, logits, (size_t)vocab, ET_FINISH_NONE, 0, 0};
    if (!st) st = p->speculate ? decode_speculating(&gs, ids, n, h, decode_id, &r) : decode_plain(&gs, h, decode_id);
    et_finish finish = gs.finish;
    double t_first = gs.t_first;
    int cancelled = gs.cancelled;
    if (st == EMBER_ERR_CANCELLED) cancelled = 1;
    if (!st && !cancelled) st = et_textgen_end(g, &finish);
    double t_end = ember_clock_ms();
    r.completion_tokens = g ? et_textgen_count(g) : 0;
    r.tool_calls = g ? et_textgen_calls(g) : 0;
    r.first_token_ms = t_first > 0 ? t_first - t0 : 0;
    r.decode_ms = t_first > 0 ? t_end - t_first : 0;
    r.total_ms = t_end - t0;
    r.finish = cancelled ? EMBER_FINISH_CANCELLED : st ? EMBER_FINISH_NONE : finish_of(finish);
    if (cancelled) st = ember_fail(EMBER_ERR_CANCELLED, "generation cancelled");
    if (res) *res = r;
    et_textgen_free(g);
    free(logits);
    return st;
}

ember_status ember_session_generate(ember_session *session, const ember_tokenizer *tok,
                                    const int32_t *prompt, size_t n_prompt,
                                    const ember_generate_params *p, ember_generate_result *res)
{
    ember_generate_params dp = ember_generate_default_params();
    return api_generate(session, tok, prompt, n_prompt, 0, p ? p : &dp, NULL, res);
}

ember_status api_ids_push(api_ids *a, int32_t id)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        int32_t *grown = realloc(a->ids, cap * sizeof *grown);
        if (!grown) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
        a->ids = grown;
        a->cap = cap;
    }
    a->ids[a->n++] = id;
    return EMBER_OK;
}
