/* The code predictor: per frame a fresh cache (positions restart at 0), a
 * 2-position prefill (the talker's normed state, then E(c0)), then one
 * position per codebook, each with its own lm head and embedding. */
#include <string.h>

#include "kernels/ops.h"
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

void tts_predictor_frame(tts_session *s, int32_t c0, const int32_t *force, int32_t *codes)
{
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
        int32_t code;
        if (force) {
            code = force[g + 1];
        } else {
            memcpy(s->pred_work, logits, (size_t)pc->vocab * sizeof *logits);
            code = et_sampler_sample(s->pred_sampler, s->pred_work);
        }
        codes[g + 1] = code;
        if (g + 1 == groups) break; /* the last embedding only feeds the talker */
        ek_row_to_f32(s->pred_in, &m->cp_embed[g], code);
        to_predictor(s, s->pred_in, 1, s->pred_x);
        tts_stack_forward(&s->predictor, s->pred_x, g + 2, 1);
        last = s->pred_x;
    }
}
