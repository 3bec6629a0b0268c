/* The code predictor: per frame a fresh cache (positions restart at 0), a
 * 2-position prefill (the talker's normed state, then E(c0)), then one
 * position per codebook, each with its own lm head and embedding. */
#include <string.h>

#include "kernels/ops.h"
#include "onnx/tts_ort.h"
#include "tts/tts_internal.h"

/* n rows of talker-hidden inputs into the predictor's hidden size: the
 * small_to_mtp_projection where the sizes differ, else the identity. */
static void to_predictor(tts_session *s, const float *in, int32_t n, float *out)
{
    const tts_model *m = s->m;
    if (m->has_mtp)
        ek_matmul(&s->exec, out, m->cfg.predictor.hidden, in, n, &m->mtp_proj, m->mtp_b, s->qbuf);
    else
        memcpy(out, in, (size_t)n * (size_t)m->cfg.talker.hidden * sizeof *out);
}

/* Codebook g+1's code from its logits (in s->pred_logits): forced, or
 * sampled. */
static int32_t predictor_choose(tts_session *s, int32_t g, const int32_t *force)
{
    const int32_t vocab = s->m->cfg.predictor.vocab;
    if (force) return force[g + 1];
    memcpy(s->pred_work, s->pred_logits + (size_t)g * (size_t)vocab, (size_t)vocab * sizeof *s->pred_work);
    return et_sampler_sample(s->pred_sampler, s->pred_work);
}

/* The same frame through the onnx backend's predictor step: one position
 * at a time (the state, E(c0), then each codebook fed back), the lm head
 * of codebook g+1 chosen by index; the projection is inside the graph. */
static ember_status frame_onnx(tts_session *s, int32_t c0, const int32_t *force, int32_t *codes)
{
    const tts_model *m = s->m;
    const int32_t groups = m->cfg.n_groups - 1, vocab = m->cfg.predictor.vocab;
    const float *logits;
    tts_ort_predictor_reset(s->ort);
    ember_status st = tts_ort_predictor_step(s->ort, s->h_last, 0, &logits);
    ek_row_to_f32(s->pred_in, &m->codec_embed, c0);
    for (int32_t g = 0; !st && g < groups; g++) {
        if ((st = tts_ort_predictor_step(s->ort, s->pred_in, g, &logits))) break;
        memcpy(s->pred_logits + (size_t)g * (size_t)vocab, logits, (size_t)vocab * sizeof *logits);
        codes[g + 1] = predictor_choose(s, g, force);
        if (g + 1 < groups) ek_row_to_f32(s->pred_in, &m->cp_embed[g], codes[g + 1]);
    }
    return st;
}

ember_status tts_predictor_frame(tts_session *s, int32_t c0, const int32_t *force, int32_t *codes)
{
    if (s->ort) return frame_onnx(s, c0, force, codes);
    const tts_model *m = s->m;
    const tts_stack_config *pc = &m->cfg.predictor;
    const int64_t th = m->cfg.talker.hidden, ph = pc->hidden;
    const int32_t groups = m->cfg.n_groups - 1;

    memcpy(s->pred_in, s->h_last, (size_t)th * sizeof *s->pred_in);
    ek_row_to_f32(s->pred_in + th, &m->codec_embed, c0);
    to_predictor(s, s->pred_in, 2, s->pred_x);
    tts_stack_forward(&s->predictor, s->pred_x, 0, 2);
    const float *last = s->pred_x + ph;

    for (int32_t g = 0; g < groups; g++) {
        float *logits = s->pred_logits + (size_t)g * (size_t)pc->vocab;
        ek_rmsnorm(s->pred_norm, last, s->predictor.w->final_norm, ph, pc->rms_eps);
        ek_matmul(&s->exec, logits, pc->vocab, s->pred_norm, 1, &m->cp_head[g], NULL, s->qbuf);
        codes[g + 1] = predictor_choose(s, g, force);
        if (g + 1 == groups) break; /* the last embedding only feeds the talker */
        ek_row_to_f32(s->pred_in, &m->cp_embed[g], codes[g + 1]);
        to_predictor(s, s->pred_in, 1, s->pred_x);
        tts_stack_forward(&s->predictor, s->pred_x, g + 2, 1);
        last = s->pred_x;
    }
    return EMBER_OK;
}
