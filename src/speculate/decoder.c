#include "speculate/decoder.h"

#include <stdlib.h>
#include <string.h>

#include "base/stats.h"
#include "base/status.h"
#include "kernels/exec.h"
#include "llm/session_internal.h"
#include "llm/verify.h"
#include "speculate/adapt.h"
#include "speculate/draft_model.h"
#include "speculate/ngram.h"

/* An extra verify row's cost in one-row steps, before any is measured: the
 * batched kernels read each weight once for all rows. */
#define SPEC_ROW_COST 0.1f

struct spec_decoder {
    ember_session *s;
    llm_verifier *v;
    spec_adapt adapt;
    int32_t draft_max;
    int32_t *seq;  /* the last tokens the session holds, then the chunk being verified */
    size_t n_seq, cap;
    int64_t base;  /* the position of seq[0]: the tokens before it are not known here */
    spec_draft_model *draft; /* NULL: the n-gram drafter */
    int32_t n_draft;         /* drafts after chunk[0] from spec_decoder_draft; -1: none yet */
    int prepared;            /* spec_decoder_prepare ran: the caller's pass comes next */
    int keep_draft;          /* leave the draft session with s when freed */
    spec_counts counts;
};

static ember_status create(ember_session *s, const ek_exec *exec, int32_t draft_max,
                           const ember_model *draft, int keep_draft, spec_decoder **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "spec_decoder_create: out is NULL");
    *out = NULL;
    spec_decoder *d = calloc(1, sizeof *d);
    if (!d) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory creating a speculative decoder");
    ember_status st = llm_verifier_create_on(s, exec, draft_max, &d->v);
    if (st) {
        free(d);
        return st;
    }
    d->s = s;
    d->draft_max = llm_verifier_max_draft(d->v);
    d->keep_draft = keep_draft;
    if (draft && keep_draft) d->draft = spec_draft_model_take(s, draft, exec, d->draft_max);
    if (draft && !d->draft && (st = spec_draft_model_create(draft, s, exec, d->draft_max, &d->draft))) {
        spec_decoder_free(d);
        return st;
    }
    if (d->draft && spec_draft_model_limit(d->draft) < d->draft_max)
        d->draft_max = spec_draft_model_limit(d->draft);
    d->cap = (size_t)s->p.max_context + 1;
    if (!(d->seq = malloc(d->cap * sizeof *d->seq))) {
        spec_decoder_free(d);
        return ember_fail(EMBER_ERR_NO_MEMORY, "speculative decoder: out of memory");
    }
    spec_adapt_init(&d->adapt, d->draft_max, SPEC_ROW_COST);
    d->n_draft = -1;
    *out = d;
    return EMBER_OK;
}

ember_status spec_decoder_create(ember_session *s, int32_t draft_max, const ember_model *draft,
                                 spec_decoder **out)
{
    return create(s, NULL, draft_max, draft, 1, out);
}

ember_status spec_decoder_create_on(ember_session *s, const ek_exec *exec, int32_t draft_max,
                                    const ember_model *draft, spec_decoder **out)
{
    return create(s, exec, draft_max, draft, 0, out);
}

void spec_decoder_free(spec_decoder *d)
{
    if (!d) return;
    llm_verifier_free(d->v);
    if (d->keep_draft && d->draft) spec_draft_model_keep(d->s, d->draft);
    else spec_draft_model_free(d->draft);
    free(d->seq);
    free(d);
}

ember_status spec_decoder_begin(spec_decoder *d, const int32_t *ids, size_t n, const size_t *marks,
                                size_t n_marks)
{
    if (n > (size_t)d->s->pos || (n && !ids))
        return ember_fail(EMBER_ERR_INVALID_ARG, "speculative decoder: %zu ids for a session holding %lld",
                          n, (long long)d->s->pos);
    if (d->draft && n != (size_t)d->s->pos)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "speculate draft: the draft model needs every token the session holds "
                          "(%zu given, %lld held)", n, (long long)d->s->pos);
    memcpy(d->seq, ids, n * sizeof *ids);
    d->n_seq = n;
    d->n_draft = -1;
    d->prepared = 0;
    d->base = d->s->pos - (int64_t)n;
    if (!d->draft) return EMBER_OK;
    size_t ran = 0;
    ember_status st = spec_draft_model_begin(d->draft, ids, n, marks, n_marks, &ran);
    d->counts.draft_prefill += (int64_t)ran;
    return st;
}

/* The chunk after the held tokens: next, then the drafts. */
static int32_t *chunk_of(spec_decoder *d) { return d->seq + d->n_seq; }

static ember_status check_in_step(const spec_decoder *d)
{
    if (d->base + (int64_t)d->n_seq != d->s->pos)
        return ember_fail(EMBER_ERR_INVALID_ARG, "speculative decoder: the session moved (%lld, not %lld)",
                          (long long)d->s->pos, (long long)(d->base + (int64_t)d->n_seq));
    return EMBER_OK;
}

ember_status spec_decoder_draft(spec_decoder *d, int32_t next, int32_t *n_draft)
{
    ember_session *s = d->s;
    *n_draft = 0;
    d->n_draft = -1;
    ember_status st = check_in_step(d);
    if (st) return st;
    int32_t *chunk = chunk_of(d);
    chunk[0] = next;
    int32_t k = spec_adapt_k(&d->adapt);
    const int64_t room = s->p.max_context - s->pos - 1; /* next itself fits (the caller checked) */
    if (k > room) k = (int32_t)room;
    if (k < 0) k = 0;
    if (d->draft) {
        st = spec_draft_model_propose(d->draft, next, k, chunk + 1);
        if (st) return st;
        d->n_draft = k;
    } else {
        d->n_draft = k ? ngram_draft(d->seq, d->n_seq + 1, k, chunk + 1) : 0;
    }
    *n_draft = d->n_draft;
    return EMBER_OK;
}

ember_status spec_decoder_fed(spec_decoder *d, int32_t next)
{
    if (d->n_draft != 0 || chunk_of(d)[0] != next || d->s->pos != d->base + (int64_t)d->n_seq + 1)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "speculative decoder: only an undrafted id, just fed, goes outside a step");
    d->n_seq++;
    d->n_draft = -1;
    /* the draft session takes it too, as after a step that kept it */
    return d->draft ? spec_draft_model_accept(d->draft, 1) : EMBER_OK;
}

/* The drafts of this step (drafting them first when the caller did not). */
static ember_status drafts_for(spec_decoder *d, int32_t next, int32_t *n_draft)
{
    if (d->n_draft >= 0 && chunk_of(d)[0] != next)
        return ember_fail(EMBER_ERR_INVALID_ARG, "speculative decoder: the drafts follow %d, not %d",
                          chunk_of(d)[0], next);
    if (d->n_draft < 0) return spec_decoder_draft(d, next, n_draft);
    *n_draft = d->n_draft;
    return check_in_step(d);
}

/* After the verify pass of next and n_draft drafts gave `rows`: picks
 * row by row while the drafts agree, keeps what was picked from. */
static ember_status finish_step(spec_decoder *d, int32_t n_draft, const float *rows, int32_t *next,
                                spec_pick_fn pick, void *user, const int32_t **fed, int32_t *n_fed,
                                int *end)
{
    ember_session *s = d->s;
    const int32_t *chunk = chunk_of(d);
    d->n_draft = -1;
    const size_t vocab = (size_t)s->m->cfg.vocab;
    const int64_t p0 = s->pos - 1 - n_draft;
    int32_t j = 0, picked = 0, rejected = 0;
    ember_status st = EMBER_OK;
    for (;; j++) { /* row j follows chunk[0..j] */
        st = pick(user, rows + (size_t)j * vocab, p0 + j + 1, &picked, end);
        if (st || *end || j == n_draft) break; /* the pick after the last draft is a bonus */
        if (picked != chunk[j + 1]) {
            rejected = 1;
            break;
        }
    }
    const int32_t keep = j + 1; /* next and the j drafts that agreed */
    spec_adapt_update(&d->adapt, j + rejected, j);
    d->counts.steps++;
    d->counts.drafted += n_draft;
    d->counts.accepted += j;
    ember_status acc = llm_verify_accept(d->v, keep);
    if (!st) st = acc;
    if (d->draft) {
        acc = spec_draft_model_accept(d->draft, keep);
        if (!st) st = acc;
    }
    *fed = chunk;
    d->n_seq += (size_t)keep;
    *n_fed = keep;
    if (!*end) *next = picked;
    return st;
}

ember_status spec_decoder_step(spec_decoder *d, int32_t *next, spec_pick_fn pick, void *user,
                               const int32_t **fed, int32_t *n_fed, int *end)
{
    *end = 0;
    *n_fed = 0;
    *fed = chunk_of(d);
    int32_t n_draft = 0;
    ember_status st = drafts_for(d, *next, &n_draft);
    if (st) return st;
    const float *rows = NULL;
    double t0 = ember_clock_ms();
    st = llm_verify(d->v, chunk_of(d), 1 + n_draft, &rows);
    if (st) return st;
    spec_adapt_time(&d->adapt, 1 + n_draft, ember_clock_ms() - t0);
    return finish_step(d, n_draft, rows, next, pick, user, fed, n_fed, end);
}

ember_status spec_decoder_prepare(spec_decoder *d, int32_t next, const int32_t **ids, int32_t *n,
                                  float **rows)
{
    *n = 0;
    int32_t n_draft = 0;
    ember_status st = drafts_for(d, next, &n_draft);
    if (!st) st = llm_verify_prepare(d->v, chunk_of(d), 1 + n_draft, rows);
    if (st) return st;
    d->n_draft = n_draft;
    d->prepared = 1;
    *ids = chunk_of(d);
    *n = 1 + n_draft;
    return EMBER_OK;
}

ember_status spec_decoder_finish(spec_decoder *d, const float *rows, int32_t *next, spec_pick_fn pick,
                                 void *user, const int32_t **fed, int32_t *n_fed, int *end)
{
    *end = 0;
    *n_fed = 0;
    *fed = chunk_of(d);
    if (!d->prepared || chunk_of(d)[0] != *next || d->s->pos != d->base + (int64_t)d->n_seq + 1 + d->n_draft)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "speculative decoder: finish follows prepare and the pass of its rows");
    d->prepared = 0;
    return finish_step(d, d->n_draft, rows, next, pick, user, fed, n_fed, end);
}

const spec_counts *spec_decoder_counts(const spec_decoder *d) { return &d->counts; }
