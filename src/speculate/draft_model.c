#include "speculate/draft_model.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/exec.h"
#include "llm/forward.h"
#include "llm/prefix.h"
#include "llm/session_internal.h"
#include "nn/kv.h"

/* Prompt tokens per pass when the draft session catches up with the target. */
#define DRAFT_PREFILL_ROWS 32
/* Ring snapshots a kept draft session holds (see spec_draft_model_begin). */
#define DRAFT_MAX_MARKS 3

struct spec_draft_model {
    ember_session *s; /* one thread, one-row scratch: `work` runs its passes */
    llm_work work;    /* DRAFT_PREFILL_ROWS rows on the shared threads */
    int32_t *held;    /* the s->pos tokens the draft session holds */
    kv_undo undo;
    int32_t max_draft;
    int32_t chunk[SPEC_DRAFT_CHUNK_MAX]; /* next and the drafts of the last step */
    int32_t k;                           /* drafts of the last step */
};

ember_status spec_draft_model_check(const ember_model *draft, const ember_model *target)
{
    if (!draft) return ember_fail(EMBER_ERR_INVALID_ARG, "speculate draft: no draft model");
    if (ember_model_vocab_size(draft) != ember_model_vocab_size(target))
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "speculate draft: the draft model's vocabulary (%d) is not the target's (%d)",
                          ember_model_vocab_size(draft), ember_model_vocab_size(target));
    return EMBER_OK;
}

ember_status spec_draft_model_create(const ember_model *draft, const ember_session *target,
                                     const ek_exec *exec, int32_t max_draft, spec_draft_model **out)
{
    *out = NULL;
    ember_status st = spec_draft_model_check(draft, target->m);
    if (st) return st;
    if (max_draft < 1 || max_draft > SPEC_DRAFT_CHUNK_MAX - 1)
        return ember_fail(EMBER_ERR_INVALID_ARG, "speculate draft: draft_max %d must be in [1, %d]",
                          max_draft, SPEC_DRAFT_CHUNK_MAX - 1);
    spec_draft_model *m = calloc(1, sizeof *m);
    if (!m) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory creating a draft session");
    ember_session_params sp = ember_session_default_params();
    sp.max_context = target->p.max_context;
    sp.n_threads = 1;
    sp.prefill_chunk = 1;
    sp.kv_type = target->p.kv_type;
    const ek_exec on = {draft->kernels, (exec ? exec : &target->exec)->pool};
    st = ember_session_create(draft, &sp, &m->s);
    if (!st && m->s->ort)
        st = ember_fail(EMBER_ERR_UNSUPPORTED, "speculate draft: not with the onnx backend");
    if (!st) st = llm_work_init(&m->work, draft, &on, DRAFT_PREFILL_ROWS);
    if (!st && !(m->held = malloc((size_t)sp.max_context * sizeof *m->held)))
        st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory creating a draft session");
    if (!st) st = kv_undo_init(&m->undo, &m->s->kv, max_draft + 1);
    if (st) {
        spec_draft_model_free(m);
        return st;
    }
    m->max_draft = max_draft;
    *out = m;
    return EMBER_OK;
}

void spec_draft_model_free(spec_draft_model *m)
{
    if (!m) return;
    kv_undo_free(&m->undo);
    llm_work_free(&m->work);
    ember_session_free(m->s);
    free(m->held);
    free(m);
}

int32_t spec_draft_model_limit(const spec_draft_model *m)
{
    int32_t limit = kv_undo_limit(&m->undo, &m->s->kv) - 1;
    return limit < m->max_draft ? limit : m->max_draft;
}

/* ids[0..n) through the draft session on the shared threads. */
static ember_status feed(spec_draft_model *m, const int32_t *ids, size_t n)
{
    ember_status st = session_check_input(m->s, ids, n, "speculate draft");
    if (st) return st;
    memcpy(m->held + m->s->pos, ids, n * sizeof *ids);
    session_forward(m->s, &m->work, ids, n);
    return EMBER_OK;
}

/* Takes the draft session back to the longest prefix of ids[0..n) that it
 * can resume: all it holds when that begins ids, else the latest of its
 * marks at or before the first difference, else nothing (a reset). */
static void resume(spec_draft_model *m, const int32_t *ids, size_t n)
{
    ember_session *s = m->s;
    size_t same = 0, held = (size_t)s->pos;
    while (same < n && same < held && ids[same] == m->held[same]) same++;
    const llm_ring_snapshot *snap = NULL;
    size_t at = llm_resume_point(held, s->marks, s->n_marks, same, &snap);
    if (at == 0 || llm_session_rewind(s, (int64_t)at, snap)) ember_session_reset(s);
}

ember_status spec_draft_model_begin(spec_draft_model *m, const int32_t *ids, size_t n,
                                    const size_t *marks, size_t n_marks, size_t *n_run)
{
    ember_session *s = m->s;
    m->k = -1;
    *n_run = 0;
    resume(m, ids, n);
    const size_t from = (size_t)s->pos;
    ember_status st = EMBER_OK;
    for (size_t i = 0; i <= n_marks && !st; i++) {
        const size_t to = i < n_marks ? marks[i] : n;
        if (to <= (size_t)s->pos || to > n) continue;
        st = feed(m, ids + s->pos, to - (size_t)s->pos);
        llm_ring_snapshot snap = {0};
        if (!st && i < n_marks && !llm_ring_snapshot_take(s, &snap)) llm_session_add_mark(s, &snap);
        llm_ring_snapshot_free(&snap);
    }
    /* a snapshot is the size of the rings: keep the earliest mark (an
     * agent's system part) and the latest ones (the last turns') */
    while (s->n_marks > DRAFT_MAX_MARKS) {
        llm_ring_snapshot_free(&s->marks[1]);
        memmove(s->marks + 1, s->marks + 2, (--s->n_marks - 1) * sizeof *s->marks);
    }
    *n_run = (size_t)s->pos - from;
    return st;
}

static int32_t argmax(const float *x, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

ember_status spec_draft_model_propose(spec_draft_model *m, int32_t next, int32_t k, int32_t *out)
{
    if (k < 0 || k > spec_draft_model_limit(m))
        return ember_fail(EMBER_ERR_INVALID_ARG, "speculate draft: %d drafts (at most %d)", k,
                          spec_draft_model_limit(m));
    ember_session *s = m->s;
    const int32_t vocab = ember_model_vocab_size(s->m);
    m->chunk[0] = next;
    m->k = k;
    /* the k decodes below write positions pos..pos+k-1 */
    if (k) kv_undo_save(&m->undo, &s->kv, s->pos, k);
    for (int32_t i = 0; i < k; i++) {
        ember_status st = feed(m, &m->chunk[i], 1);
        if (st) return st;
        m->chunk[i + 1] = out[i] = argmax(s->logits, vocab);
    }
    return EMBER_OK;
}

ember_status spec_draft_model_accept(spec_draft_model *m, int32_t keep)
{
    if (m->k < 0 || keep < 1 || keep > m->k + 1)
        return ember_fail(EMBER_ERR_INVALID_ARG, "speculate draft: keep %d of %d", keep, m->k + 1);
    ember_session *s = m->s;
    const int32_t k = m->k;
    m->k = -1;
    if (keep == k + 1) /* every draft agreed: the last one is not in the draft session yet */
        return feed(m, &m->chunk[k], 1);
    kv_undo_restore(&m->undo, &s->kv, keep);
    s->pos -= k - keep; /* held[0..pos) is still what it holds */
    s->has_logits = 0;
    return EMBER_OK;
}

const float *spec_draft_model_logits(const spec_draft_model *m) { return ember_session_logits(m->s); }

static void free_kept(void *m) { spec_draft_model_free(m); }

spec_draft_model *spec_draft_model_take(ember_session *target, const ember_model *draft,
                                        const ek_exec *exec, int32_t max_draft)
{
    spec_draft_model *m = target->kept_free == free_kept ? target->kept : NULL;
    if (!m) return NULL;
    target->kept = NULL;
    target->kept_free = NULL;
    if (m->s->m != draft || m->max_draft != max_draft ||
        m->work.exec.pool != (exec ? exec : &target->exec)->pool) {
        spec_draft_model_free(m);
        return NULL;
    }
    return m;
}

void spec_draft_model_keep(ember_session *target, spec_draft_model *m)
{
    if (target->kept_free) target->kept_free(target->kept);
    target->kept = m;
    target->kept_free = free_kept;
}
