#include "serve/engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/pool.h"
#include "base/status.h"
#include "llm/batch.h"
#include "llm/spark.h"
#include "onnx/backend.h"
#include "serve/format.h"
#include "serve/prefix_cache.h"
#include "generate/textgen.h"
#include "kernels/exec.h"
#include "speculate/decoder.h"

/* How long an idle engine sleeps before looking at its queue's deadlines. */
#define IDLE_WAIT_S 0.05
/* A stream whose client has this many bytes unread pauses (skips decode
 * steps) until it catches up: a slow reader costs a row, not memory. */
#define MAX_UNREAD_BYTES ((size_t)256 << 10)

typedef struct slot {
    sv_job *job;
    ember_session *s;
    et_textgen *gen;
    size_t bytes;      /* KV reserved */
    size_t prefilled;  /* prompt tokens run so far */
    int32_t next;      /* the id the next decode step feeds */
    int decoding;      /* prompt done, `next` pending */
    int over;          /* the response ended this step */
    int keep;          /* it ended well: offer the session to the prefix cache */
    double prefill_ms; /* stats: the prompt's pieces so far */
    int32_t *held;     /* the tokens the session holds (prompt, then fed ids) */
    size_t n_held;
    /* prefix cache: ring snapshots at the prompt's message boundaries and
     * where it ended (j->n_bounds + 1 at most), in position order */
    llm_ring_snapshot *snaps;
    size_t n_snaps;
    size_t next_bound; /* the first of j->bounds not reached yet */
    spec_decoder *spec; /* speculating (j->speculate): its verify passes; NULL: plain */
} slot;

struct sv_engine {
    const ember_model *m;
    const et_tokenizer *tok;
    sv_engine_params p;
    sv_metrics *metrics;
    llm_batch *batch;   /* NULL on the onnx backend */
    sv_prefix_cache *prefix;
    pthread_t thread;
    int started;

    pthread_mutex_t mu; /* guards the queue, kv_used and stopping */
    pthread_cond_t cv;
    sv_job **queue;     /* ring of max_queue */
    int q_head, q_len;
    size_t kv_used;
    int stopping;

    /* engine thread only */
    slot *slots;        /* max_seqs */
    int n_slots;
    ember_session **rows; /* max_seqs: the batched step's sessions */
    int32_t *ids;         /* the step's rows (llm_batch_max_total_rows) */
    int32_t *counts;      /* max_seqs: each session's rows */
    float **outs;         /* max_seqs: a verifier's rows, NULL for a one-row session */
    int *row_slot;
    float *logits;      /* vocab: the sampler works on a copy */
    int decode_step_id; /* stats: the batched decode call's series */
    /* the onnx backend: each sequence's session holds its own ORT graphs
     * and caches (per-slot state); finished ones wait here, reset, for the
     * next sequence, so the graphs are loaded once per slot, not per request */
    ember_session **idle;
    int n_idle;
};

size_t sv_engine_kv_bytes(const sv_engine *e, const sv_job *j)
{
    const int32_t n = (int32_t)(j->n_prompt + (size_t)j->max_tokens);
    size_t bytes = llm_session_kv_bytes(e->m, n, e->p.kv_type);
    if (j->speculate == SV_SPECULATE_DRAFT && e->p.draft)
        bytes += llm_session_kv_bytes(e->p.draft, n, e->p.kv_type);
    return bytes;
}

static void set_gauges(sv_engine *e)
{
    pthread_mutex_lock(&e->metrics->mu);
    e->metrics->queue_depth = e->q_len;
    e->metrics->active = e->n_slots;
    e->metrics->kv_bytes_in_use = (int64_t)e->kv_used;
    pthread_mutex_unlock(&e->metrics->mu);
}

static void fail_job(sv_job *j, int status, const char *type, const char *code, const char *msg)
{
    sv_error err;
    sv_error_set(&err, status, type, NULL, code, "%s", msg);
    sv_format_error(j, &err);
}

static int on_event(void *user, const et_toolcall_event *ev)
{
    sv_job *j = user;
    return sv_format_event(j, ev) ? 1 : 0;
}

/* Ends slot i (moving the last slot into its place): the response's end, or
 * the error already written; frees the sequence and its reservation. */
static void release_slot(sv_engine *e, int i)
{
    slot *s = &e->slots[i];
    if (!e->batch && s->s) {
        ember_session_reset(s->s);
        e->idle[e->n_idle++] = s->s;
        free(s->held);
    } else if (s->keep && s->s) {
        sv_prefix_cache_put(e->prefix, s->s, s->held, s->n_held, s->snaps, s->n_snaps);
    } else {
        ember_session_free(s->s);
        free(s->held);
        for (size_t k = 0; k < s->n_snaps; k++) llm_ring_snapshot_free(&s->snaps[k]);
    }
    free(s->snaps);
    spec_decoder_free(s->spec);
    et_textgen_free(s->gen);
    sv_job_unref(s->job);
    pthread_mutex_lock(&e->mu);
    e->kv_used -= s->bytes;
    pthread_mutex_unlock(&e->mu);
    e->slots[i] = e->slots[--e->n_slots];
}

/* finish: what the last step said (LENGTH stays LENGTH at the end). */
static void finish_slot(sv_engine *e, slot *s, et_finish finish)
{
    sv_job *j = s->job;
    if (et_textgen_end(s->gen, &finish)) {
        fail_job(j, 500, "server_error", NULL, ember_last_error());
        return;
    }
    j->completion_tokens = et_textgen_count(s->gen);
    if (s->spec) {
        const spec_counts *c = spec_decoder_counts(s->spec);
        j->speculated = 1;
        j->spec_passes = c->steps;
        j->spec_drafted = c->drafted;
        j->spec_accepted = c->accepted;
    }
    pthread_mutex_lock(&e->metrics->mu);
    e->metrics->completion_tokens += (uint64_t)j->completion_tokens;
    pthread_mutex_unlock(&e->metrics->mu);
    sv_format_finish(j, et_finish_name(finish), (int32_t)j->n_prompt);
    s->keep = (size_t)ember_session_position(s->s) == s->n_held;
}

/* Picks the id after `logits` with the slot's sampler (on a copy: it edits
 * them) and writes its text; *finish says the response ends here. */
static ember_status choose(sv_engine *e, slot *s, const float *logits, et_finish *finish)
{
    memcpy(e->logits, logits, (size_t)ember_model_vocab_size(e->m) * sizeof *e->logits);
    if (s->job->t_first_token == 0) {
        s->job->t_first_token = sv_now();
        sv_metrics_observe(e->metrics, &e->metrics->ttft, s->job->t_first_token - s->job->t_submit);
    }
    return et_textgen_step(s->gen, e->logits, &s->next, finish);
}

/* Samples from the session's logits; 1 when the response is over. */
static int sample(sv_engine *e, slot *s)
{
    et_finish finish = ET_FINISH_NONE;
    if (choose(e, s, ember_session_logits(s->s), &finish)) {
        fail_job(s->job, 500, "server_error", NULL, ember_last_error());
        return -1;
    }
    if (finish) {
        finish_slot(e, s, finish);
        return 1;
    }
    s->decoding = 1;
    return 0;
}

/* The speculative path's sampler (spec_pick_fn): the same choose(). */
typedef struct spec_pick {
    sv_engine *e;
    slot *s;
    et_finish finish;
} spec_pick;

static ember_status pick_spec(void *user, const float *logits, int64_t held, int32_t *id, int *end)
{
    (void)held; /* the session is sized for max_tokens: textgen ends first */
    spec_pick *p = user;
    ember_status st = choose(p->e, p->s, logits, &p->finish);
    *id = p->s->next;
    *end = p->finish != ET_FINISH_NONE;
    return st;
}

/* One verify step of a speculating slot: its pending id and up to
 * draft_max drafts as one chunk of rows (speculate/decoder.h), each row's
 * pick made by the slot's own sampler in order, so the ids (and the
 * sampler's random draws) are those plain decoding gives. rows: the
 * chunk's logits from the engine's batched pass; NULL: a pass of its own.
 * Returns the ids fed; sets s->over when the response ended or failed. */
static int step_speculating(sv_engine *e, slot *s, const float *rows)
{
    const spec_counts before = *spec_decoder_counts(s->spec);
    spec_pick pk = {e, s, ET_FINISH_NONE};
    const int32_t *fed = NULL;
    int32_t n_fed = 0;
    int end = 0;
    ember_status st = rows ? spec_decoder_finish(s->spec, rows, &s->next, pick_spec, &pk, &fed, &n_fed, &end)
                           : spec_decoder_step(s->spec, &s->next, pick_spec, &pk, &fed, &n_fed, &end);
    for (int32_t i = 0; i < n_fed; i++) s->held[s->n_held++] = fed[i];
    const spec_counts *after = spec_decoder_counts(s->spec);
    pthread_mutex_lock(&e->metrics->mu);
    e->metrics->spec_steps += (uint64_t)(after->steps - before.steps);
    e->metrics->spec_drafted += (uint64_t)(after->drafted - before.drafted);
    e->metrics->spec_accepted += (uint64_t)(after->accepted - before.accepted);
    pthread_mutex_unlock(&e->metrics->mu);
    if (st) {
        fail_job(s->job, 500, "server_error", NULL, ember_last_error());
        s->over = 1;
    } else if (end) {
        finish_slot(e, s, pk.finish);
        s->over = 1;
    }
    return n_fed;
}

/* A new sequence: its session (sized to prompt + max_tokens exactly) and
 * its generator. */
static int start_slot(sv_engine *e, slot *s)
{
    sv_job *j = s->job;
    ember_session_params sp = ember_session_default_params();
    sp.max_context = (int32_t)(j->n_prompt + (size_t)j->max_tokens);
    sp.n_threads = 1;      /* the batch's pool runs everything */
    sp.prefill_chunk = 1;  /* the batch's scratch runs the prefill */
    sp.kv_type = e->p.kv_type;
    et_textgen_params gp = j->gp;
    gp.stats = e->p.stats;
    if (!e->batch) { /* onnx: ORT runs the step on its intra-op threads */
        sp.max_context = e->p.ctx;
        sp.n_threads = e->p.n_threads;
        if (e->n_idle) s->s = e->idle[--e->n_idle];
    }
    if ((!s->s && ember_session_create(e->m, &sp, &s->s)) ||
        et_textgen_create(e->tok, ember_model_vocab_size(e->m), &gp, on_event, j, &s->gen) ||
        et_textgen_begin(s->gen, j->prompt, j->n_prompt)) {
        fail_job(j, 500, "server_error", NULL, ember_last_error());
        return -1;
    }
    if (!(s->held = malloc((j->n_prompt + (size_t)j->max_tokens) * sizeof *s->held))) {
        fail_job(j, 500, "server_error", NULL, "out of memory");
        return -1;
    }
    memcpy(s->held, j->prompt, j->n_prompt * sizeof *s->held);
    s->n_held = j->n_prompt;
    if (e->p.prefix_cache_bytes && !(s->snaps = calloc(j->n_bounds + 1, sizeof *s->snaps))) {
        fail_job(j, 500, "server_error", NULL, "out of memory");
        return -1;
    }
    /* a draft model's session is sized like this one, on the batch's threads too */
    const ember_model *draft = j->speculate == SV_SPECULATE_DRAFT ? e->p.draft : NULL;
    if (j->speculate != SV_SPECULATE_OFF &&
        spec_decoder_create_on(s->s, llm_batch_exec(e->batch), j->draft_max, draft, &s->spec)) {
        fail_job(j, 500, "server_error", NULL, ember_last_error());
        return -1;
    }
    s->prefilled = sv_prefix_cache_resume(e->prefix, s->s, j->prompt, j->n_prompt);
    j->cached_tokens = (int32_t)s->prefilled;
    while (s->next_bound < j->n_bounds && (size_t)j->bounds[s->next_bound] <= s->prefilled) s->next_bound++;
    return 0;
}

/* A snapshot of the rings where the slot's prefill stands (a message
 * boundary), for the prefix cache; without memory for it, none. */
static void snapshot_here(sv_engine *e, slot *s)
{
    if (!e->p.prefix_cache_bytes) return;
    if (llm_ring_snapshot_take(s->s, &s->snaps[s->n_snaps])) llm_ring_snapshot_free(&s->snaps[s->n_snaps]);
    else s->n_snaps++;
}

/* Removes queued jobs whose client left or whose deadline passed. Under mu. */
static void drop_stale_queued(sv_engine *e, double now)
{
    int kept = 0, max = e->p.max_queue;
    for (int k = 0; k < e->q_len; k++) {
        sv_job *j = e->queue[(e->q_head + k) % max];
        int gone = sv_job_cancelled(j), late = now > j->deadline;
        if (gone || late) {
            if (late) fail_job(j, 504, "timeout_error", "timeout", "the request timed out in the queue");
            else sv_job_finish(j, 499, NULL, 0);
            sv_job_unref(j);
            continue;
        }
        e->queue[(e->q_head + kept++) % max] = j;
    }
    e->q_len = kept;
}

/* Moves queued jobs into free slots while their KV fits. Under mu. */
static void admit(sv_engine *e)
{
    while (e->q_len && e->n_slots < e->p.max_seqs) {
        sv_job *j = e->queue[e->q_head];
        size_t bytes = sv_engine_kv_bytes(e, j);
        if (e->kv_used + bytes > e->p.kv_budget) break; /* in order: no overtaking */
        e->q_head = (e->q_head + 1) % e->p.max_queue;
        e->q_len--;
        e->kv_used += bytes;
        ember_stats_record(e->p.stats, EMBER_STAT_QUEUE_WAIT, (sv_now() - j->t_submit) * 1e3);
        slot *s = &e->slots[e->n_slots++];
        memset(s, 0, sizeof *s);
        s->job = j;
        s->bytes = bytes;
    }
}

/* The onnx backend's decode: each row's session runs its own step through
 * ORT, one after the other (no batch: a graph takes one token), then
 * samples; a failing row ends alone. */
static void decode_each(sv_engine *e, int n)
{
    for (int r = 0; r < n; r++) {
        slot *s = &e->slots[e->row_slot[r]];
        double t_step = ember_stats_start(e->p.stats);
        if (ember_session_decode(s->s, e->ids[r])) {
            fail_job(s->job, 500, "server_error", NULL, ember_last_error());
            s->over = 1;
            continue;
        }
        ember_stats_stop(e->p.stats, e->decode_step_id, t_step);
        s->held[s->n_held++] = e->ids[r];
        s->over = sample(e, s) != 0;
        ember_stats_stop(e->p.stats, EMBER_STAT_TOKEN, t_step);
    }
}

/* One engine step over the admitted sequences (no lock held). Returns the
 * tokens it ran: 0 when every sequence waits for its reader. */
static int step(sv_engine *e)
{
    int ran = 0;
    const double now = sv_now();
    /* 1. the gone and the late */
    for (int i = 0; i < e->n_slots;) {
        sv_job *j = e->slots[i].job;
        if (sv_job_cancelled(j)) {
            sv_job_finish(j, 499, NULL, 0); /* nobody reads it */
            pthread_mutex_lock(&e->metrics->mu);
            e->metrics->cancelled++;
            pthread_mutex_unlock(&e->metrics->mu);
            release_slot(e, i);
            ran++; /* a freed row: the queue may move */
        } else if (now > j->deadline) {
            fail_job(j, 504, "timeout_error", "timeout", "the request timed out");
            release_slot(e, i);
            ran++;
        } else {
            i++;
        }
    }
    /* 2. prefill pieces; the last piece's logits give the first token */
    for (int i = 0; i < e->n_slots;) {
        slot *s = &e->slots[i];
        int over = 0;
        if (!s->decoding) {
            if (!s->s && start_slot(e, s)) over = 1;
            if (!over) {
                const sv_job *j = s->job;
                size_t left = j->n_prompt - s->prefilled;
                size_t n = left < (size_t)e->p.prefill_piece ? left : (size_t)e->p.prefill_piece;
                /* a piece ends at the next message boundary, to snapshot it */
                if (e->batch && s->next_bound < j->n_bounds &&
                    (size_t)j->bounds[s->next_bound] - s->prefilled < n)
                    n = (size_t)j->bounds[s->next_bound] - s->prefilled;
                double t0 = ember_stats_start(e->p.stats);
                const int32_t *ids = s->job->prompt + s->prefilled;
                ember_status st = e->batch ? llm_batch_prefill(e->batch, s->s, ids, n)
                                           : ember_session_prefill(s->s, ids, n);
                if (e->p.stats) s->prefill_ms += ember_clock_ms() - t0;
                if (st) {
                    fail_job(s->job, 500, "server_error", NULL, ember_last_error());
                    over = 1;
                } else {
                    ran += (int)n;
                    s->prefilled += n;
                    if (s->next_bound < j->n_bounds && (size_t)j->bounds[s->next_bound] == s->prefilled) {
                        snapshot_here(e, s);
                        s->next_bound++;
                    }
                    /* the drafter follows piece by piece what the target holds: a
                     * draft session runs the same piece (the first time also what
                     * the target resumed from the prefix cache), and prompt lookup
                     * sees the prompt so far */
                    if (s->spec && spec_decoder_begin(s->spec, s->held, s->prefilled, NULL, 0)) {
                        fail_job(s->job, 500, "server_error", NULL, ember_last_error());
                        over = 1;
                    } else if (s->prefilled == s->job->n_prompt) {
                        ember_stats_record(e->p.stats, EMBER_STAT_PREFILL, s->prefill_ms);
                        /* the boundary before the reply: the next turn's usual resume point */
                        snapshot_here(e, s);
                        over = sample(e, s) != 0;
                    }
                }
            }
        }
        if (over) release_slot(e, i);
        else i++;
    }
    /* 3. one batched step of everything that has a token pending: a
     * sequence's pending id as one row, or a speculating sequence's
     * pending id and drafts as a chunk of rows to verify (llm_batch_run:
     * every weight read once for all of them); a chunk that does not fit
     * the step's rows runs a verify pass of its own */
    int n = 0, n_ids = 0, verified = 0;
    const int32_t max_ids = e->batch ? llm_batch_max_total_rows(e->batch) : e->n_slots;
    for (int i = 0; i < e->n_slots; i++) {
        slot *s = &e->slots[i];
        if (!s->decoding || (s->job->req.stream && sv_job_unread(s->job) > MAX_UNREAD_BYTES)) continue;
        int32_t n_draft = 0, count = 1;
        const int32_t *chunk = &s->next;
        float *rows = NULL;
        ember_status st = s->spec ? spec_decoder_draft(s->spec, s->next, &n_draft) : EMBER_OK;
        if (!st && n_draft && n_ids + 1 + n_draft > max_ids - (e->n_slots - 1 - i)) {
            verified += step_speculating(e, s, NULL); /* the rows left are the others' */
            continue;
        }
        if (!st && n_draft) st = spec_decoder_prepare(s->spec, s->next, &chunk, &count, &rows);
        if (st) {
            fail_job(s->job, 500, "server_error", NULL, ember_last_error());
            s->over = 1;
            continue;
        }
        e->rows[n] = s->s;
        memcpy(e->ids + n_ids, chunk, (size_t)count * sizeof *chunk);
        e->counts[n] = count;
        e->outs[n] = rows;
        e->row_slot[n++] = i;
        n_ids += count;
    }
    if (!e->batch && n) { /* onnx: one row a sequence (no speculation there) */
        decode_each(e, n);
        n = 0; /* sampled there */
    }
    double t_step = ember_stats_start(e->p.stats);
    ember_status decoded = n ? llm_batch_run(e->batch, e->rows, e->ids, e->counts, n, e->outs) : EMBER_OK;
    if (n) ember_stats_stop(e->p.stats, e->decode_step_id, t_step);
    if (decoded) {
        for (int r = 0; r < n; r++) {
            fail_job(e->slots[e->row_slot[r]].job, 500, "server_error", NULL, ember_last_error());
            e->slots[e->row_slot[r]].over = 1;
        }
    } else {
        for (int r = 0; r < n; r++) {
            slot *s = &e->slots[e->row_slot[r]];
            if (e->outs[r]) {
                verified += step_speculating(e, s, e->outs[r]);
                continue;
            }
            s->held[s->n_held++] = s->next;
            if (s->spec && spec_decoder_fed(s->spec, s->next)) {
                fail_job(s->job, 500, "server_error", NULL, ember_last_error());
                s->over = 1;
                continue;
            }
            s->over = sample(e, s) != 0;
        }
        if (n) ember_stats_stop(e->p.stats, EMBER_STAT_TOKEN, t_step);
    }
    /* backwards: a release moves the last slot into the freed place, and
     * that one was already looked at */
    for (int i = e->n_slots - 1; i >= 0; i--)
        if (e->slots[i].over) release_slot(e, i);
    return ran + n_ids + verified;
}

/* Waits on the engine's condition for at most IDLE_WAIT_S. Under mu. */
static void idle_wait(sv_engine *e)
{
    struct timespec ts;
    double until = sv_now() + IDLE_WAIT_S;
    ts.tv_sec = (time_t)until;
    ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&e->cv, &e->mu, &ts);
}

static void *engine_main(void *arg)
{
    sv_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!e->stopping) {
        drop_stale_queued(e, sv_now());
        admit(e);
        set_gauges(e);
        if (e->n_slots == 0) {
            idle_wait(e);
            continue;
        }
        pthread_mutex_unlock(&e->mu);
        int ran = step(e);
        pthread_mutex_lock(&e->mu);
        if (!ran) idle_wait(e); /* every stream waits for its reader */
    }
    pthread_mutex_unlock(&e->mu);
    while (e->n_slots) {
        fail_job(e->slots[0].job, 503, "server_error", "shutting_down", "the server is shutting down");
        release_slot(e, 0);
    }
    return NULL;
}

int sv_engine_submit(sv_engine *e, sv_job *j, sv_error *err)
{
    size_t bytes = sv_engine_kv_bytes(e, j);
    if (bytes > e->p.kv_budget)
        return sv_error_set(err, 400, "invalid_request_error", "max_tokens", "context_length_exceeded",
                            "the prompt (%zu tokens) and max_tokens (%d) need %zu KV bytes, more "
                            "than the server's budget of %zu",
                            j->n_prompt, j->max_tokens, bytes, e->p.kv_budget);
    pthread_mutex_lock(&e->mu);
    int rc = 0;
    if (e->stopping) {
        rc = sv_error_set(err, 503, "server_error", NULL, "shutting_down", "the server is shutting down");
    } else if (e->q_len == e->p.max_queue) {
        rc = sv_error_set(err, 503, "server_error", NULL, "queue_full",
                          "the server is busy: %d requests are waiting; retry later", e->q_len);
    } else {
        sv_job_ref(j);
        e->queue[(e->q_head + e->q_len++) % e->p.max_queue] = j;
        pthread_cond_signal(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    if (rc && err->status == 503 && err->code && !strcmp(err->code, "queue_full")) {
        pthread_mutex_lock(&e->metrics->mu);
        e->metrics->rejected_full++;
        pthread_mutex_unlock(&e->metrics->mu);
    }
    return rc;
}

/* The onnx backend's first slot session, opened at start. */
static ember_status open_onnx_session(sv_engine *e)
{
    ember_session_params sp = ember_session_default_params();
    sp.max_context = e->p.ctx;
    sp.n_threads = e->p.n_threads;
    sp.prefill_chunk = 1;
    ember_status st = ember_session_create(e->m, &sp, &e->idle[0]);
    if (!st) e->n_idle = 1;
    return st;
}

ember_status sv_engine_create(const ember_model *model, const et_tokenizer *tok,
                              const sv_engine_params *p, sv_metrics *metrics, sv_engine **out)
{
    *out = NULL;
    if (p->max_seqs < 1 || p->max_seqs > 1024 || p->max_queue < 1 || p->max_queue > 1 << 20 ||
        p->ctx < 2 || p->ctx > ember_model_max_positions(model) || p->prefill_piece < 1)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "engine: max_seqs %d, max_queue %d, ctx %d (model: %d), prefill piece %d "
                          "out of range",
                          p->max_seqs, p->max_queue, p->ctx, ember_model_max_positions(model),
                          p->prefill_piece);
    sv_engine *e = calloc(1, sizeof *e);
    if (!e) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory creating the engine");
    e->m = model;
    e->tok = tok;
    e->p = *p;
    e->metrics = metrics;
    /* the default: max_seqs sequences of ctx tokens, each with a draft session when one is loaded */
    if (!e->p.kv_budget)
        e->p.kv_budget = (size_t)p->max_seqs * (llm_session_kv_bytes(model, p->ctx, p->kv_type) +
                                                (p->draft ? llm_session_kv_bytes(p->draft, p->ctx, p->kv_type) : 0));
    if (model->onnx) {
        /* the ORT caches live in each session's host loop: the prefix
         * cache's native KV snapshots cannot resume them */
        e->p.prefix_cache_bytes = 0;
        e->p.prefix_cache_dir = NULL;
        /* prompt pieces in whole prefill chunks, so a prompt runs through
         * the graphs exactly as one ember_session_prefill call runs it */
        const int32_t chunk = model->onnx->prefill_chunk;
        if (chunk > 1) e->p.prefill_piece = p->prefill_piece < chunk ? chunk : p->prefill_piece / chunk * chunk;
    }
    pthread_mutex_init(&e->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cv, &attr);
    pthread_condattr_destroy(&attr);
    ember_status st = EMBER_OK;
    if (model->onnx && p->draft)
        st = ember_fail(EMBER_ERR_UNSUPPORTED, "engine: speculative decoding is not available with the onnx "
                        "backend (its graph runs one token per step)");
    else if (model->onnx && !(e->idle = calloc((size_t)p->max_seqs, sizeof *e->idle)))
        st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory creating the engine");
    else if (model->onnx)
        st = open_onnx_session(e); /* a folder or provider ORT refuses fails here, not per request */
    else
        st = llm_batch_create(model, p->max_seqs, p->n_threads, &e->batch);
    if (!st) {
        e->queue = calloc((size_t)p->max_queue, sizeof *e->queue);
        e->slots = calloc((size_t)p->max_seqs, sizeof *e->slots);
        e->rows = calloc((size_t)p->max_seqs, sizeof *e->rows);
        e->ids = calloc((size_t)(e->batch ? llm_batch_max_total_rows(e->batch) : p->max_seqs), sizeof *e->ids);
        e->counts = calloc((size_t)p->max_seqs, sizeof *e->counts);
        e->outs = calloc((size_t)p->max_seqs, sizeof *e->outs);
        e->row_slot = calloc((size_t)p->max_seqs, sizeof *e->row_slot);
        e->logits = calloc((size_t)ember_model_vocab_size(model), sizeof *e->logits);
        e->prefix = sv_prefix_cache_create(e->p.prefix_cache_bytes, 64, metrics);
        if (!e->queue || !e->slots || !e->rows || !e->ids || !e->counts || !e->outs || !e->row_slot ||
            !e->logits || !e->prefix)
            st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory creating the engine");
        if (!st && e->p.prefix_cache_dir)
            st = sv_prefix_cache_persist(e->prefix, e->p.prefix_cache_dir, model, p->kv_type, NULL, NULL);
        /* the batched decode call as a whole, beside its layer types */
        e->decode_step_id = p->stats ? ember_stats_find(p->stats, "decode_step") : -1;
        if (!st && p->stats && e->decode_step_id < 0)
            st = ember_stats_add_series(p->stats, "decode_step", EMBER_STAT_TEXT, &e->decode_step_id);
        llm_batch_set_stats(e->batch, p->stats);
    }
    if (!st && pthread_create(&e->thread, NULL, engine_main, e))
        st = ember_fail(EMBER_ERR_NO_MEMORY, "engine: cannot start its thread");
    if (st) {
        sv_engine_free(e);
        return st;
    }
    e->started = 1;
    pthread_mutex_lock(&metrics->mu);
    metrics->kv_bytes_budget = (int64_t)e->p.kv_budget;
    pthread_mutex_unlock(&metrics->mu);
    *out = e;
    return EMBER_OK;
}

void sv_engine_shutdown(sv_engine *e)
{
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    int was_running = e->started && !e->stopping;
    e->stopping = 1;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (was_running) pthread_join(e->thread, NULL);
    pthread_mutex_lock(&e->mu);
    for (; e->q_len; e->q_len--, e->q_head = (e->q_head + 1) % e->p.max_queue) {
        sv_job *j = e->queue[e->q_head];
        fail_job(j, 503, "server_error", "shutting_down", "the server is shutting down");
        sv_job_unref(j);
    }
    pthread_mutex_unlock(&e->mu);
}

void sv_engine_free(sv_engine *e)
{
    if (!e) return;
    sv_engine_shutdown(e);
    llm_batch_free(e->batch);
    for (int i = 0; i < e->n_idle; i++) ember_session_free(e->idle[i]);
    free(e->idle);
    sv_prefix_cache_free(e->prefix);
    free(e->queue);
    free(e->slots);
    free(e->rows);
    free(e->ids);
    free(e->counts);
    free(e->outs);
    free(e->row_slot);
    free(e->logits);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}
