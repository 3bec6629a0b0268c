/* The public prompt-cache calls on a session (include/ember_text.h): marks
 * (ring snapshots the session keeps), and saving and restoring its state
 * through state_file.h. */
#include <string.h>

#include "base/status.h"
#include "ember_text.h"
#include "llm/session_internal.h"
#include "llm/state_file.h"

ember_status ember_session_mark(ember_session *s)
{
    if (!s) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_session_mark: session is NULL");
    if (s->pos == 0 || (s->n_marks && s->marks[s->n_marks - 1].pos == s->pos)) return EMBER_OK;
    llm_ring_snapshot snap;
    ember_status st = llm_ring_snapshot_take(s, &snap);
    if (!st) llm_session_add_mark(s, &snap);
    return st;
}

ember_status ember_session_save(const ember_session *s, const int32_t *tokens, size_t n_tokens,
                                const char *path)
{
    if (!s || !path) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_session_save: a NULL argument");
    if (n_tokens != (size_t)s->pos)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_session_save: %zu tokens given; the session holds %lld",
                          n_tokens, (long long)s->pos);
    return llm_state_save(s, tokens, s->marks, s->n_marks, NULL, 0, path);
}

ember_status ember_session_load(ember_session *s, const char *path, const int32_t *prompt, size_t n_prompt,
                                size_t *n_restored)
{
    if (n_restored) *n_restored = 0;
    if (!s || !path || (!prompt && n_prompt))
        return ember_fail(EMBER_ERR_INVALID_ARG, "ember_session_load: a NULL argument");
    llm_saved saved;
    ember_status st = llm_state_load(s, path, &saved);
    if (st) return st;
    llm_session_drop_marks(s, -1); /* they were the old tokens' */
    for (size_t k = 0; k < saved.n_snaps; k++) llm_session_add_mark(s, &saved.snaps[k]);
    size_t at = saved.n_tokens;
    if (prompt) {
        /* one prompt token is left to run, so that logits follow */
        size_t same = 0, limit = saved.n_tokens < n_prompt ? saved.n_tokens : n_prompt ? n_prompt - 1 : 0;
        while (same < limit && saved.tokens[same] == prompt[same]) same++;
        const llm_ring_snapshot *snap;
        at = llm_resume_point(saved.n_tokens, s->marks, s->n_marks, same, &snap);
        if (at == 0) ember_session_reset(s);
        else if (at < saved.n_tokens) st = llm_session_rewind(s, (int64_t)at, snap);
    }
    llm_saved_free(&saved);
    if (st) {
        ember_session_reset(s);
        return st;
    }
    if (n_restored) *n_restored = at;
    return EMBER_OK;
}
