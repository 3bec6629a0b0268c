/* The exported Qwen3-TTS talker and code-predictor steps through ONNX
 * Runtime against ember's native steps: two TTS sessions on one model, one
 * native and two with the onnx backend, run the same greedy request for
 * FRAMES frames (EOS banned until then). One onnx session is teacher-forced
 * with the native frames: at every frame its talker logits (codebook 0)
 * and its predictor logits of every codebook are compared with native's
 * on the same history (SNR in dB; argmax agreement). The other runs free:
 * its greedy frames must equal native's.
 *
 *   tts_onnx_parity MODEL_DIR EXPORT_DIR LIBONNXRUNTIME FRAMES [MIN_SNR_DB [MIN_FRAMES]]
 *
 * The request: a built-in speaker (CustomVoice) or a fixed x-vector (Base),
 * and a fixed text of ids (the tiny checkpoints have no tokenizer use for
 * it). Prints one summary line and the milliseconds per frame each side
 * spent in the talker and the predictor (reported, never asserted); exits 1
 * when a logits row falls below MIN_SNR_DB (default 100) or fewer than
 * MIN_FRAMES (default: all) leading free-running frames equal native's
 * (reduced forms such as f16 set floors). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "tts/qwen3_tts_load.h"
#include "tts/tts_session.h"
#include "parity_math.h"

typedef struct worst {
    double db;
    int32_t frame, group; /* group -1: the talker */
} worst;

static void note(worst *w, double db, int32_t frame, int32_t group)
{
    if (db < w->db) {
        w->db = db;
        w->frame = frame;
        w->group = group;
    }
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: tts_onnx_parity MODEL_DIR EXPORT_DIR LIBONNXRUNTIME FRAMES [MIN_SNR_DB [MIN_FRAMES]]\n");
        return 2;
    }
    const int32_t frames = atoi(argv[4]);
    const double min_db = argc > 5 ? atof(argv[5]) : 100.0;
    const int32_t min_frames = argc > 6 ? atoi(argv[6]) : frames;
    tts_model_params mp = {EMBER_TYPE_NONE, NULL};
    tts_model *m = NULL;
    tts_session *nat = NULL, *ort = NULL, *free_run = NULL;
    if (tts_model_load(argv[1], &mp, &m) != EMBER_OK) {
        fprintf(stderr, "tts_onnx_parity: %s\n", ember_last_error());
        return 1;
    }
    const tts_config *c = &m->cfg;
    const int32_t groups = c->n_groups;
    tts_session_params sp = tts_session_default_params();
    sp.n_threads = 1;
    sp.max_context = 256;
    tts_session_params op = sp;
    op.onnx_dir = argv[2];
    op.onnx_runtime = argv[3];
    /* "<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n" */
    int32_t ids[24] = {c->im_start, c->assistant, 198};
    size_t n = 3;
    for (int32_t i = 0; i < 16; i++) ids[n++] = (1000 + 37 * i) % c->text_vocab;
    const int32_t tail[5] = {c->im_end, 198, c->im_start, c->assistant, 198};
    for (int32_t i = 0; i < 5; i++) ids[n++] = tail[i];
    float *xvector = calloc((size_t)c->talker.hidden, sizeof *xvector);
    for (int32_t i = 0; xvector && i < c->talker.hidden; i++) xvector[i] = 0.5f * sinf(0.37f * (float)i);
    tts_request rq;
    memset(&rq, 0, sizeof rq);
    rq.text_ids = ids;
    rq.n_text_ids = n;
    rq.speaker = c->type == TTS_CUSTOM_VOICE && c->n_speakers ? c->speakers[0].name : NULL;
    rq.xvector = c->type == TTS_BASE ? xvector : NULL;
    rq.greedy = 1;
    rq.max_frames = rq.min_frames = frames;
    int rc = 1;
    if (!xvector || frames < 1 || tts_session_create(m, &sp, &nat) || tts_session_create(m, &op, &ort) ||
        tts_session_create(m, &op, &free_run) || tts_session_start(nat, &rq) || tts_session_start(ort, &rq) ||
        tts_session_start(free_run, &rq)) {
        fprintf(stderr, "tts_onnx_parity: %s\n", ember_last_error());
        goto out;
    }
    worst talker = {1e9, -1, -1}, pred = {1e9, -1, -1};
    int32_t same = 0, first_diff = -1, made = 0, rows = 0, agree = 0;
    int32_t a[TTS_MAX_GROUPS], b[TTS_MAX_GROUPS], forced[TTS_MAX_GROUPS];
    for (int32_t f = 0; f < frames; f++) {
        const float *ta = tts_session_talker_logits(nat), *tb = tts_session_talker_logits(ort);
        note(&talker, snr_db(ta, tb, c->talker.vocab), f, -1);
        agree += argmax(ta, c->talker.vocab) == argmax(tb, c->talker.vocab);
        rows++;
        int done_a = 0, done_b = 0, done_c = 0;
        if (tts_session_step(nat, NULL, a, &done_a) || tts_session_step(ort, a, forced, &done_b) ||
            tts_session_step(free_run, NULL, b, &done_c)) {
            fprintf(stderr, "tts_onnx_parity: frame %d: %s\n", f, ember_last_error());
            goto out;
        }
        if (done_a || done_b || done_c) break;
        made++;
        for (int32_t g = 0; g + 1 < groups; g++) {
            const float *pa = tts_session_predictor_logits(nat, g), *pb = tts_session_predictor_logits(ort, g);
            note(&pred, snr_db(pa, pb, c->predictor.vocab), f, g);
            agree += argmax(pa, c->predictor.vocab) == argmax(pb, c->predictor.vocab);
            rows++;
        }
        if (first_diff < 0 && !memcmp(a, b, (size_t)groups * sizeof *a)) same++;
        else if (first_diff < 0) first_diff = f;
    }
    printf("tts_onnx_parity: %s, %d frames (prompt %d positions): talker logits SNR min %.1f dB (frame %d), "
           "predictor logits min %.1f dB (frame %d, codebook %d), argmax %d/%d identical (teacher-forced); "
           "free-running greedy frames: the first %d of %d identical\n",
           argv[1], made, tts_session_prompt_length(nat), talker.db, talker.frame, pred.db, pred.frame,
           pred.group + 1, agree, rows, same, made);
    if (first_diff >= 0) printf("tts_onnx_parity: first differing frame %d\n", first_diff);
    printf("tts_onnx_parity: per frame, talker native %.3f ms / ORT %.3f ms, predictor native %.3f ms / "
           "ORT %.3f ms\n", tts_session_talker_ms(nat) / (made ? made : 1), tts_session_talker_ms(ort) / (made ? made : 1),
           tts_session_predictor_ms(nat) / (made ? made : 1), tts_session_predictor_ms(ort) / (made ? made : 1));
    rc = made != frames || same < min_frames || talker.db < min_db || pred.db < min_db;
out:
    tts_session_free(nat);
    tts_session_free(ort);
    tts_session_free(free_run);
    tts_model_free(m);
    free(xvector);
    return rc;
}
