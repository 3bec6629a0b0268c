#include "llm/prefix.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "llm/session_internal.h"
#include "onnx/spark_ort.h"

/* Positions of a sliding layer visible at pos: the last window-1 (or fewer). */
static int64_t ring_first(const kv_layer *L, int64_t pos)
{
    return pos > L->window - 1 ? pos - (L->window - 1) : 0;
}

static char *row_at(const kv_layer *L, void *base, int32_t g, int64_t p)
{
    return (char *)base + ((size_t)g * (size_t)L->capacity + (size_t)kv_slot(L, p)) * L->row_bytes;
}

size_t llm_ring_snapshot_bytes(const ember_session *s, int64_t pos)
{
    const kv_cache *kv = &s->kv;
    size_t bytes = 0;
    for (int32_t i = 0; i < kv->n_layers; i++) {
        const kv_layer *L = &kv->layers[i];
        if (L->window) bytes += 2 * (size_t)kv->kv_heads * (size_t)(pos - ring_first(L, pos)) * L->row_bytes;
    }
    return bytes;
}

ember_status llm_ring_snapshot_take(const ember_session *s, llm_ring_snapshot *out)
{
    memset(out, 0, sizeof *out);
    if (s->ort) { /* the backend's rings as they lie: only its own rewind reads them */
        out->pos = s->pos;
        out->bytes = spark_ort_ring_bytes(s->ort);
        if (out->bytes && !(out->rows = malloc(out->bytes)))
            return ember_fail(EMBER_ERR_NO_MEMORY, "ring snapshot: cannot allocate %zu bytes", out->bytes);
        if (out->bytes) spark_ort_ring_save(s->ort, out->rows);
        return EMBER_OK;
    }
    const kv_cache *kv = &s->kv;
    size_t bytes = llm_ring_snapshot_bytes(s, s->pos);
    out->pos = s->pos;
    out->bytes = bytes;
    if (bytes && !(out->rows = malloc(bytes)))
        return ember_fail(EMBER_ERR_NO_MEMORY, "ring snapshot: cannot allocate %zu bytes", bytes);
    char *p = out->rows;
    for (int32_t i = 0; i < kv->n_layers; i++) {
        const kv_layer *L = &kv->layers[i];
        if (!L->window) continue;
        for (int side = 0; side < 2; side++)
            for (int32_t g = 0; g < kv->kv_heads; g++)
                for (int64_t pos = ring_first(L, s->pos); pos < s->pos; pos++) {
                    memcpy(p, row_at(L, side ? L->v : L->k, g, pos), L->row_bytes);
                    p += L->row_bytes;
                }
    }
    return EMBER_OK;
}

void llm_ring_snapshot_free(llm_ring_snapshot *snap)
{
    free(snap->rows);
    memset(snap, 0, sizeof *snap);
}

/* In the order llm_ring_snapshot_take wrote them. */
void llm_ring_snapshot_restore(ember_session *s, const llm_ring_snapshot *snap)
{
    const int64_t n = snap->pos;
    const char *row = snap->rows;
    kv_cache *kv = &s->kv;
    for (int32_t i = 0; i < kv->n_layers; i++) {
        kv_layer *L = &kv->layers[i];
        if (!L->window) continue;
        for (int side = 0; side < 2; side++)
            for (int32_t g = 0; g < kv->kv_heads; g++)
                for (int64_t pos = ring_first(L, n); pos < n; pos++) {
                    memcpy(row_at(L, side ? L->v : L->k, g, pos), row, L->row_bytes);
                    row += L->row_bytes;
                }
    }
}

ember_status llm_session_resume(ember_session *dst, const ember_session *src, int64_t n,
                                const llm_ring_snapshot *snap)
{
    if (!dst || !src || dst->m != src->m || dst->pos != 0 || dst->kv.layers[0].type != src->kv.layers[0].type)
        return ember_fail(EMBER_ERR_INVALID_ARG, "resume: needs an empty session of the same model and KV format");
    if (src->ort) return ember_fail(EMBER_ERR_UNSUPPORTED, "resume: not with the onnx backend");
    if (n < 1 || n > src->pos || n >= dst->p.max_context || (n < src->pos && (!snap || snap->pos != n)))
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "resume: %lld tokens from a session holding %lld into max_context %d%s",
                          (long long)n, (long long)src->pos, dst->p.max_context,
                          n < src->pos ? " needs a snapshot at that position" : "");
    const kv_cache *from = &src->kv;
    for (int32_t i = 0; i < from->n_layers; i++) {
        const kv_layer *S = &from->layers[i];
        kv_layer *D = &dst->kv.layers[i];
        for (int side = 0; side < 2; side++)
            for (int32_t g = 0; g < from->kv_heads; g++) {
                if (!S->window) { /* full: the first n rows, contiguous in both */
                    memcpy(row_at(D, side ? D->v : D->k, g, 0), row_at(S, side ? S->v : S->k, g, 0),
                           (size_t)n * S->row_bytes);
                } else if (n == src->pos) { /* the source's rings hold exactly these */
                    for (int64_t pos = ring_first(S, n); pos < n; pos++)
                        memcpy(row_at(D, side ? D->v : D->k, g, pos), row_at(S, side ? S->v : S->k, g, pos),
                               S->row_bytes);
                }
            }
    }
    if (n < src->pos) llm_ring_snapshot_restore(dst, snap); /* the source ran past n */
    dst->pos = n;
    dst->has_logits = 0;
    return EMBER_OK;
}

ember_status llm_session_rewind(ember_session *s, int64_t n, const llm_ring_snapshot *snap)
{
    if (!s || n < 0 || n > s->pos || (n < s->pos && (!snap || snap->pos != n)))
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "rewind: a session holding %lld tokens goes back to %lld only with a snapshot there",
                          s ? (long long)s->pos : 0LL, (long long)n);
    if (s->ort) /* the backend's own caches; its snapshots are raw rings */
        spark_ort_rewind(s->ort, (int32_t)n, n < s->pos ? snap->rows : NULL);
    else if (n < s->pos)
        llm_ring_snapshot_restore(s, snap); /* full layers: rows 0..n are untouched */
    s->pos = n;
    llm_session_drop_marks(s, n);
    s->has_logits = 0;
    return EMBER_OK;
}

size_t llm_resume_point(size_t n, const llm_ring_snapshot *snaps, size_t n_snaps, size_t same,
                        const llm_ring_snapshot **snap)
{
    *snap = NULL;
    if (same == n) return n;
    for (size_t k = n_snaps; k-- > 0;)
        if ((size_t)snaps[k].pos <= same) {
            *snap = &snaps[k];
            return (size_t)snaps[k].pos;
        }
    return 0;
}

void llm_session_add_mark(ember_session *s, llm_ring_snapshot *snap)
{
    if (s->n_marks == LLM_SESSION_MAX_MARKS) {
        llm_ring_snapshot_free(&s->marks[0]);
        memmove(s->marks, s->marks + 1, --s->n_marks * sizeof *s->marks);
    }
    s->marks[s->n_marks++] = *snap;
    memset(snap, 0, sizeof *snap);
}

void llm_session_drop_marks(ember_session *s, int64_t after)
{
    while (s->n_marks && s->marks[s->n_marks - 1].pos > after) llm_ring_snapshot_free(&s->marks[--s->n_marks]);
}
