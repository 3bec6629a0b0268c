#include "llm/verify.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "llm/forward.h"
#include "llm/session_internal.h"
#include "nn/kv.h"

struct llm_verifier {
    ember_session *s;
    llm_work work;  /* max_draft+1 rows: the session's own may be one row (a server's) */
    kv_undo undo;
    float *rows;    /* (max_draft+1) x vocab logits */
    int32_t n;      /* rows of the last verify; 0 when none is pending */
};

ember_status llm_verifier_create(ember_session *s, int32_t max_draft, llm_verifier **out)
{
    return llm_verifier_create_on(s, NULL, max_draft, out);
}

ember_status llm_verifier_create_on(ember_session *s, const ek_exec *exec, int32_t max_draft,
                                    llm_verifier **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "llm_verifier_create: out is NULL");
    *out = NULL;
    if (!s) return ember_fail(EMBER_ERR_INVALID_ARG, "llm_verifier_create: session is NULL");
    if (max_draft < 1 || max_draft > 256)
        return ember_fail(EMBER_ERR_INVALID_ARG, "draft_max %d must be in [1, 256]", max_draft);
    if (s->ort)
        return ember_fail(EMBER_ERR_UNSUPPORTED,
                          "speculative decoding: the onnx backend runs one token per step");
    llm_verifier *v = calloc(1, sizeof *v);
    if (!v) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory creating a verifier");
    v->s = s;
    const size_t vocab = (size_t)s->m->cfg.vocab, rows = (size_t)max_draft + 1;
    ember_status st = llm_work_init(&v->work, s->m, exec ? exec : &s->exec, (int32_t)rows);
    if (!st) st = kv_undo_init(&v->undo, &s->kv, (int32_t)rows);
    if (!st && !(v->rows = malloc(rows * vocab * sizeof *v->rows)))
        st = ember_fail(EMBER_ERR_NO_MEMORY, "verify logits: cannot allocate %zu bytes",
                        rows * vocab * sizeof *v->rows);
    if (st) {
        llm_verifier_free(v);
        return st;
    }
    *out = v;
    return EMBER_OK;
}

void llm_verifier_free(llm_verifier *v)
{
    if (!v) return;
    llm_work_free(&v->work);
    kv_undo_free(&v->undo);
    free(v->rows);
    free(v);
}

int32_t llm_verifier_max_draft(const llm_verifier *v)
{
    return v ? kv_undo_limit(&v->undo, &v->s->kv) - 1 : 0;
}

ember_status llm_verify_prepare(llm_verifier *v, const int32_t *ids, int32_t n, float **rows)
{
    if (!v || !rows) return ember_fail(EMBER_ERR_INVALID_ARG, "llm_verify: NULL argument");
    const int32_t limit = kv_undo_limit(&v->undo, &v->s->kv);
    if (n < 1 || n > limit)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "verify: %d rows (1 to %d: draft_max+1, at most a sliding ring's slots)", n,
                          limit);
    ember_status st = session_check_input(v->s, ids, (size_t)n, "verify");
    if (st) return st;
    kv_undo_save(&v->undo, &v->s->kv, v->s->pos, n);
    v->n = n;
    *rows = v->rows;
    return EMBER_OK;
}

ember_status llm_verify(llm_verifier *v, const int32_t *ids, int32_t n, const float **rows)
{
    float *out = NULL;
    ember_status st = llm_verify_prepare(v, ids, n, &out);
    if (st) return st;
    session_forward_chunk(v->s, &v->work, ids, n, 0);
    llm_logits(&v->work, 0, n, out);
    *rows = out;
    return EMBER_OK;
}

ember_status llm_verify_accept(llm_verifier *v, int32_t keep)
{
    if (!v || !v->n || keep < 1 || keep > v->n || v->s->pos != v->undo.p0 + v->n)
        return ember_fail(EMBER_ERR_INVALID_ARG, "verify accept: keep %d of %d rows verified last (none when the session moved since)",
                          keep, v ? v->n : 0);
    ember_session *s = v->s;
    kv_undo_restore(&v->undo, &s->kv, keep);
    s->pos = v->undo.p0 + keep;
    llm_session_drop_marks(s, s->pos);
    const size_t vocab = (size_t)s->m->cfg.vocab;
    memcpy(s->logits, v->rows + (size_t)(keep - 1) * vocab, vocab * sizeof *s->logits);
    s->has_logits = 1;
    v->n = 0;
    return EMBER_OK;
}
