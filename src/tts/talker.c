/* The talker side of a TTS session: scratch sized at creation, the prompt
 * prefill (projected text embeddings plus codec embeddings), and the frame
 * step: codebook 0 from the codec head (suppression, EOS ban, repetition
 * penalty, sampling), the predictor, then the next input, the sum of the
 * frame's codebook embeddings plus the text-stream term. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/pool.h"
#include "base/status.h"
#include "kernels/ops.h"
#include "onnx/tts_ort.h"
#include "tts/tts_internal.h"

double tts_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + 1e-6 * (double)ts.tv_nsec;
}

tts_session_params tts_session_default_params(void)
{
    tts_session_params p = {4096, 64, 0, NULL, NULL, NULL, NULL};
    return p;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static ember_status alloc_scratch(tts_session *s)
{
    const tts_config *c = &s->m->cfg;
    const size_t n = (size_t)s->p.prefill_chunk, th = (size_t)c->talker.hidden;
    const size_t ph = (size_t)c->predictor.hidden, groups = (size_t)c->n_groups - 1;
    const size_t sizes[] = {n * th, n * (size_t)c->text_hidden, n * (size_t)c->text_hidden, th,
                            (size_t)c->talker.vocab, (size_t)c->talker.vocab, 2 * th, 2 * ph, ph,
                            groups * (size_t)c->predictor.vocab, (size_t)c->predictor.vocab, th};
    float **dst[] = {&s->x, &s->text_in, &s->text_mid, &s->h_last, &s->talker_logits,
                     &s->work_logits, &s->pred_in, &s->pred_x, &s->pred_norm, &s->pred_logits,
                     &s->pred_work, &s->pad_term};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) total += sizes[i];
    s->block = calloc(total, sizeof(float));
    /* activations of the widest matrix input, for a whole prefill chunk */
    int64_t cols = max64(tts_stack_max_cols(&c->talker), tts_stack_max_cols(&c->predictor));
    cols = max64(cols, c->text_hidden);
    s->qbuf = malloc(ek_exec_qbuf_bytes((int)n, cols) + 64);
    if (!s->block || !s->qbuf)
        return ember_fail(EMBER_ERR_NO_MEMORY, "TTS session: cannot allocate %zu bytes of scratch",
                          total * sizeof(float));
    float *p = s->block;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        *dst[i] = p;
        p += sizes[i];
    }
    return EMBER_OK;
}

ember_status tts_session_create(const tts_model *m, const tts_session_params *params,
                                tts_session **out)
{
    if (!out) return ember_fail(EMBER_ERR_INVALID_ARG, "tts_session_create: out is NULL");
    *out = NULL;
    if (!m) return ember_fail(EMBER_ERR_INVALID_ARG, "tts_session_create: model is NULL");
    tts_session_params p = params ? *params : tts_session_default_params();
    if (p.max_context < 2 || p.max_context > m->cfg.talker.max_positions)
        return ember_fail(EMBER_ERR_INVALID_ARG, "TTS max_context %d must be in [2, %d]",
                          p.max_context, m->cfg.talker.max_positions);
    if (p.prefill_chunk < 2 || p.prefill_chunk > 4096)
        return ember_fail(EMBER_ERR_INVALID_ARG, "TTS prefill_chunk %d must be in [2, 4096]",
                          p.prefill_chunk);
    if (p.n_threads < 0 || p.n_threads > 1024)
        return ember_fail(EMBER_ERR_INVALID_ARG, "n_threads %d must be in [0, 1024]", p.n_threads);
    if (p.n_threads == 0) p.n_threads = pool_cpu_count();

    tts_session *s = calloc(1, sizeof *s);
    if (!s) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory creating a TTS session");
    s->m = m;
    s->p = p;
    s->exec.kernels = m->kernels;
    ember_status st = p.n_threads > 1 ? pool_create(p.n_threads, &s->exec.pool) : EMBER_OK;
    if (!st && p.onnx_dir) {
        const ort_choice rt = {p.onnx_runtime, p.onnx_provider, p.onnx_options};
        st = tts_ort_open(&m->cfg, p.onnx_dir, &rt, p.n_threads, &s->ort);
        /* the graphs' bucket bounds the talker's positions; prompts go in
         * the talker prefill graph's chunks (the rest as steps) */
        if (!st && s->p.max_context > tts_ort_context(s->ort)) s->p.max_context = tts_ort_context(s->ort);
        if (!st && tts_ort_chunk_rows(s->ort) > 1 && tts_ort_chunk_rows(s->ort) <= 4096)
            s->p.prefill_chunk = tts_ort_chunk_rows(s->ort);
        if (st) st = ember_fail_prefix(st, "onnx backend %s", p.onnx_dir);
    }
    if (!st) st = alloc_scratch(s);
    if (!st)
        st = tts_stack_state_init(&s->talker, &m->talker, &s->exec, s->qbuf, p.n_threads,
                                  s->p.max_context, s->p.prefill_chunk);
    if (!st)
        st = tts_stack_state_init(&s->predictor, &m->predictor, &s->exec, s->qbuf, p.n_threads,
                                  m->cfg.n_groups, 2);
    if (st) {
        tts_session_free(s);
        return st;
    }
    *out = s;
    return EMBER_OK;
}

void tts_session_free(tts_session *s)
{
    if (!s) return;
    pool_free(s->exec.pool);
    tts_ort_free(s->ort);
    tts_stack_state_free(&s->talker);
    tts_stack_state_free(&s->predictor);
    et_sampler_free(s->talker_sampler);
    et_sampler_free(s->pred_sampler);
    tts_prompt_free(&s->prompt);
    free(s->block);
    free(s->qbuf);
    free(s);
}

/* out[t] = text_projection(text_embedding[ids[t]]) for n <= prefill_chunk
 * ids; out rows are talker hidden apart. */
static void project_text(tts_session *s, const int32_t *ids, int32_t n, float *out)
{
    const tts_model *m = s->m;
    const int64_t d = m->cfg.text_hidden;
    for (int32_t t = 0; t < n; t++) ek_row_to_f32(s->text_in + t * d, &m->text_embed, ids[t]);
    ek_matmul(&s->exec, s->text_mid, d, s->text_in, n, &m->text_fc1, m->text_fc1_b, s->qbuf);
    for (int64_t i = 0; i < (int64_t)n * d; i++) s->text_mid[i] = ek_silu(s->text_mid[i]);
    ek_matmul(&s->exec, out, m->cfg.talker.hidden, s->text_mid, n, &m->text_fc2, m->text_fc2_b,
              s->qbuf);
}

/* The normed last state and the codec logits from the residual row x. */
static void talker_head(tts_session *s, const float *x)
{
    const tts_model *m = s->m;
    const tts_stack_config *tc = &m->cfg.talker;
    ek_rmsnorm(s->h_last, x, m->talker.final_norm, tc->hidden, tc->rms_eps);
    ek_matmul(&s->exec, s->talker_logits, tc->vocab, s->h_last, 1, &m->codec_head, NULL, s->qbuf);
}

ember_status tts_talker_rows(tts_session *s, float *x, int64_t pos, int32_t n, int head)
{
    const int64_t th = s->m->cfg.talker.hidden;
    if (!s->ort) {
        tts_stack_forward(&s->talker, x, pos, n);
        if (head) talker_head(s, x + (int64_t)(n - 1) * th);
        return EMBER_OK;
    }
    const float *logits = NULL, *hidden = NULL;
    const int32_t N = tts_ort_chunk_rows(s->ort);
    for (int32_t t = 0; t < n;) {
        const int chunk = N && n - t >= N;
        ember_status st = chunk ? tts_ort_talker_chunk(s->ort, x + t * th, &logits, &hidden)
                                : tts_ort_talker_step(s->ort, x + t * th, &logits, &hidden);
        if (st) return st;
        t += chunk ? N : 1;
    }
    if (head) {
        memcpy(s->talker_logits, logits, (size_t)s->m->cfg.talker.vocab * sizeof *logits);
        memcpy(s->h_last, hidden, (size_t)th * sizeof *hidden);
    }
    return EMBER_OK;
}

static ember_status make_samplers(tts_session *s, const tts_request *r)
{
    const tts_gen_config *g = r->sampling ? r->sampling : &s->m->gen;
    et_sampler_params tp, pp;
    et_sampler_params_default(&tp);
    tp.temperature = r->greedy || !g->talker.do_sample ? 0.0f : g->talker.temperature;
    tp.top_k = g->talker.top_k;
    tp.top_p = g->talker.top_p;
    tp.repetition_penalty = g->repetition_penalty;
    tp.seed = r->seed;
    et_sampler_params_default(&pp);
    pp.temperature = r->greedy || !g->subtalker.do_sample ? 0.0f : g->subtalker.temperature;
    pp.top_k = g->subtalker.top_k;
    pp.top_p = g->subtalker.top_p;
    /* a stream of draws of its own, independent of the talker's */
    pp.seed = r->seed ^ 0x9e3779b97f4a7c15ull;
    et_sampler_free(s->talker_sampler);
    et_sampler_free(s->pred_sampler);
    s->talker_sampler = s->pred_sampler = NULL;
    ember_status st = et_sampler_create(&tp, s->m->cfg.talker.vocab, &s->talker_sampler);
    if (!st) st = et_sampler_create(&pp, s->m->cfg.predictor.vocab, &s->pred_sampler);
    return st;
}

/* Adds a frame's embedding to x: codebook 0's codec embedding and each
 * later codebook's predictor embedding (a generated frame fed back, or a
 * reference frame in the prompt). */
static void frame_embedding(tts_session *s, const int32_t *codes, float *x)
{
    const tts_model *m = s->m;
    const int64_t th = m->cfg.talker.hidden;
    for (int32_t g = 0; g < m->cfg.n_groups; g++) {
        ek_row_to_f32(s->pred_in, g ? &m->cp_embed[g - 1] : &m->codec_embed, codes[g]);
        for (int64_t i = 0; i < th; i++) x[i] += s->pred_in[i];
    }
}

ember_status tts_session_start(tts_session *s, const tts_request *r)
{
    if (!s || !r) return ember_fail(EMBER_ERR_INVALID_ARG, "tts_session_start: NULL argument");
    const tts_config *c = &s->m->cfg;
    int32_t speaker = -1, language = -1;
    if (r->speaker && (speaker = tts_config_speaker(c, r->speaker)) < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "unknown speaker '%s' (not in config.json spk_id)",
                          r->speaker);
    if (r->language && strcmp(r->language, "auto") &&
        (language = tts_config_language(c, r->language)) < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "unknown language '%s' (not in config.json codec_language_id)",
                          r->language);
    if (r->max_frames < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "max_frames %d must not be negative", r->max_frames);
    if (r->min_frames < 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "min_frames %d must not be negative", r->min_frames);
    if (r->xvector && c->type != TTS_BASE)
        return ember_fail(EMBER_ERR_INVALID_ARG, "a reference voice (x-vector) needs a Base model; this one is %s",
                          c->type == TTS_VOICE_DESIGN ? "VoiceDesign" : "CustomVoice");
    if (!r->xvector && c->type == TTS_BASE)
        return ember_fail(EMBER_ERR_INVALID_ARG, "a Base model clones a voice: it needs a reference (x-vector)");
    if (r->n_instruct_ids && c->type == TTS_BASE)
        return ember_fail(EMBER_ERR_INVALID_ARG, "a Base model takes no instruction");
    /* the official code drops a 0.6B model's instruction */
    if ((r->n_ref_ids || r->n_ref_frames) && (!r->ref_ids || !r->ref_codes || !r->n_ref_frames))
        return ember_fail(EMBER_ERR_INVALID_ARG, "in-context cloning takes the reference text's ids and frames");
    for (size_t i = 0; r->ref_codes && i < (size_t)r->n_ref_frames * (size_t)c->n_groups; i++)
        if (r->ref_codes[i] < 0 || r->ref_codes[i] >= c->predictor.vocab)
            return ember_fail(EMBER_ERR_INVALID_ARG, "reference code %d at %zu is out of range", r->ref_codes[i], i);
    const tts_prompt_voice voice = {r->instruct_ids, c->small ? 0 : r->n_instruct_ids, r->xvector != NULL,
                                    r->ref_ids, r->n_ref_ids, r->n_ref_frames};
    s->started = 0;
    tts_prompt_free(&s->prompt);
    ember_status st = tts_prompt_build_voice(c, r->text_ids, r->n_text_ids, speaker, language, r->streaming,
                                             &voice, &s->prompt);
    if (st) return st;
    if (s->prompt.n_rows >= (size_t)s->p.max_context)
        return ember_fail(EMBER_ERR_CONTEXT_FULL, "TTS prompt of %zu positions does not fit max_context %d",
                          s->prompt.n_rows, s->p.max_context);
    if ((st = make_samplers(s, r))) return st;

    const int64_t th = c->talker.hidden;
    const int32_t chunk = s->p.prefill_chunk;
    int32_t ids[4096];
    project_text(s, &c->tts_pad, 1, s->pad_term);
    if (s->ort) tts_ort_talker_reset(s->ort);
    for (size_t done = 0; done < s->prompt.n_rows;) {
        int32_t n = (int32_t)(s->prompt.n_rows - done < (size_t)chunk ? s->prompt.n_rows - done
                                                                      : (size_t)chunk);
        const tts_prompt_row *rows = s->prompt.rows + done;
        for (int32_t t = 0; t < n; t++) ids[t] = rows[t].text;
        project_text(s, ids, n, s->x);
        for (int32_t t = 0; t < n; t++) {
            if (rows[t].ref_frame) { /* a reference frame, as a generated one is fed back */
                frame_embedding(s, r->ref_codes + (size_t)(rows[t].ref_frame - 1) * (size_t)c->n_groups,
                                s->x + t * th);
                continue;
            }
            if (rows[t].codec == -1) continue;
            const float *add = s->pred_in; /* the codec embedding, or the x-vector as it is */
            if (rows[t].codec == TTS_CODEC_XVECTOR) add = r->xvector;
            else ek_row_to_f32(s->pred_in, &s->m->codec_embed, rows[t].codec);
            for (int64_t i = 0; i < th; i++) s->x[t * th + i] += add[i];
        }
        const int last = done + (size_t)n == s->prompt.n_rows;
        if ((st = tts_talker_rows(s, s->x, (int64_t)done, n, last))) return st;
        done += (size_t)n;
    }
    s->pos = (int64_t)s->prompt.n_rows;
    s->next_trailing = 0;
    s->frames = 0;
    s->max_frames = r->max_frames ? r->max_frames : s->m->gen.max_new_tokens;
    s->min_frames = r->min_frames ? r->min_frames : s->m->gen.min_new_tokens;
    s->finished = 0;
    s->greedy = r->greedy;
    s->talker_ms = s->pred_ms = 0.0;
    s->started = 1;
    return EMBER_OK;
}

/* Codebook 0: the codec ids above the codebook range are suppressed except
 * EOS, which is banned until min_new_tokens frames exist. */
static int32_t choose_c0(tts_session *s)
{
    const tts_config *c = &s->m->cfg;
    memcpy(s->work_logits, s->talker_logits, (size_t)c->talker.vocab * sizeof(float));
    for (int32_t i = c->predictor.vocab; i < c->talker.vocab; i++)
        if (i != c->codec_eos) s->work_logits[i] = -INFINITY;
    if (s->frames < s->min_frames) s->work_logits[c->codec_eos] = -INFINITY;
    return et_sampler_sample(s->talker_sampler, s->work_logits);
}

ember_status tts_session_step(tts_session *s, const int32_t *force, int32_t *codes, int *done)
{
    if (!s || !codes || !done)
        return ember_fail(EMBER_ERR_INVALID_ARG, "tts_session_step: NULL argument");
    *done = 0;
    if (!s->started) return ember_fail(EMBER_ERR_INVALID_ARG, "tts_session_step: no request started");
    const tts_config *c = &s->m->cfg;
    const int32_t groups = c->n_groups;
    if (force)
        for (int32_t g = 0; g < groups; g++) {
            int32_t lim = g ? c->predictor.vocab : c->talker.vocab;
            if (force[g] < 0 || force[g] >= lim)
                return ember_fail(EMBER_ERR_INVALID_ARG, "forced code %d of group %d is outside [0, %d)",
                                  force[g], g, lim);
        }
    if (s->finished || s->frames >= s->max_frames) {
        s->finished = 1;
        *done = 1;
        return EMBER_OK;
    }
    if (s->pos >= s->p.max_context)
        return ember_fail(EMBER_ERR_CONTEXT_FULL, "TTS session: max_context %d reached after %d frames",
                          s->p.max_context, s->frames);
    double t0 = tts_now_ms();
    int32_t c0 = force ? force[0] : choose_c0(s);
    et_sampler_accept(s->talker_sampler, c0);
    if (c0 == c->codec_eos) {
        s->finished = 1;
        *done = 1;
        return EMBER_OK;
    }
    double t1 = tts_now_ms();
    ember_status st = tts_predictor_frame(s, c0, force, codes);
    if (st) return st;
    codes[0] = c0;
    double t2 = tts_now_ms();

    /* the next input: every codebook's embedding plus the text-stream term */
    const int64_t th = c->talker.hidden;
    memset(s->x, 0, (size_t)th * sizeof *s->x);
    frame_embedding(s, codes, s->x);
    const float *text_term = s->pad_term;
    if (s->next_trailing < s->prompt.n_trailing) {
        project_text(s, &s->prompt.trailing[s->next_trailing++], 1, s->pred_in);
        text_term = s->pred_in;
    }
    for (int64_t i = 0; i < th; i++) s->x[i] += text_term[i];
    if ((st = tts_talker_rows(s, s->x, s->pos, 1, 1))) return st;
    s->pos++;
    s->frames++;
    double t3 = tts_now_ms();
    s->talker_ms += (t1 - t0) + (t3 - t2);
    s->pred_ms += t2 - t1;
    return EMBER_OK;
}

const float *tts_session_talker_logits(const tts_session *s)
{
    return s && s->started ? s->talker_logits : NULL;
}

const float *tts_session_predictor_logits(const tts_session *s, int32_t g)
{
    if (!s || !s->started || s->frames == 0 || g < 0 || g >= s->m->cfg.n_groups - 1) return NULL;
    return s->pred_logits + (size_t)g * (size_t)s->m->cfg.predictor.vocab;
}

int32_t tts_session_frames(const tts_session *s) { return s ? s->frames : 0; }

int32_t tts_session_threads(const tts_session *s) { return pool_size(s->exec.pool); }

void tts_session_use_threads(tts_session *s, int32_t n) { pool_set_active(s->exec.pool, n); }

ember_status tts_session_pin(tts_session *s, const int32_t *cpus, int32_t n)
{
    return pool_pin(s->exec.pool, cpus, n);
}
int32_t tts_session_prompt_length(const tts_session *s) { return s ? (int32_t)s->prompt.n_rows : 0; }
double tts_session_talker_ms(const tts_session *s) { return s ? s->talker_ms : 0.0; }
double tts_session_predictor_ms(const tts_session *s) { return s ? s->pred_ms : 0.0; }
