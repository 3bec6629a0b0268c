#include "tts/tts_prompt.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"

enum { PREFIX = 3, SUFFIX = 5, MAX_CODEC_PREFIX = 8 };

/* The codec side of the prefill: think/nothink, think_bos, language, think_eos,
 * speaker, pad, bos (language and speaker optional). */
static size_t codec_prefix(const tts_config *c, int32_t speaker, int32_t language, int xvector, int32_t *out)
{
    int32_t lang_id = language >= 0 ? c->languages[language].id : -1;
    if (speaker >= 0 && c->speakers[speaker].dialect >= 0 &&
        (language < 0 || !strcmp(c->languages[language].name, "chinese")))
        lang_id = c->languages[c->speakers[speaker].dialect].id;
    size_t n = 0;
    if (lang_id >= 0) {
        out[n++] = c->think;
        out[n++] = c->think_bos;
        out[n++] = lang_id;
    } else {
        out[n++] = c->nothink;
        out[n++] = c->think_bos;
    }
    out[n++] = c->think_eos;
    if (xvector) out[n++] = TTS_CODEC_XVECTOR;
    else if (speaker >= 0) out[n++] = c->speakers[speaker].id;
    out[n++] = c->codec_pad;
    out[n++] = c->codec_bos;
    return n;
}

/* The rows every layout begins with: the instruction, the role, and the
 * codec prefix minus its bos (the row aligned with pad carries tts_bos).
 * Returns how many. */
static size_t head_rows(const tts_config *c, const int32_t *ids, const tts_prompt_voice *v, const int32_t *codec,
                        size_t k, tts_prompt_row *rows)
{
    size_t r = 0;
    for (size_t i = 0; i < v->n_instruct; i++) rows[r++] = (tts_prompt_row){v->instruct[i], -1, 0};
    for (size_t i = 0; i < PREFIX; i++) rows[r++] = (tts_prompt_row){ids[i], -1, 0};
    for (size_t i = 0; i + 1 < k; i++) rows[r++] = (tts_prompt_row){i + 2 < k ? c->tts_pad : c->tts_bos, codec[i], 0};
    return r;
}

/* In-context cloning (layouts C and D of qwen3-tts-voices.md section 4):
 * after the role and the codec prefix (an x-vector speaker), the text Q =
 * [reference text, target text, tts_eos] meets the codec stream D = [bos,
 * reference frame 0..F-1]. Non-streaming: every Q row over codec pad, then
 * bos, then the frames, each over tts_pad. Streaming: Q and D side by side
 * for F+1 rows (Q padded with tts_pad when shorter), Q's rest trailing. */
static ember_status icl_prompt(const tts_config *c, const int32_t *ids, size_t n_ids, int32_t language,
                               int streaming, const tts_prompt_voice *v, tts_prompt *out)
{
    const size_t n_ref = v->n_ref_ids, F = (size_t)v->n_ref_frames;
    if (n_ref < PREFIX + 2 || v->ref_ids[0] != c->im_start || v->ref_ids[1] != c->assistant ||
        v->ref_ids[n_ref - 2] != c->im_end || F < 1 || !v->xvector)
        return ember_fail(EMBER_ERR_INVALID_ARG, "TTS prompt: in-context cloning takes an x-vector, the ids of "
                                                 "<|im_start|>assistant\\n{ref_text}<|im_end|>\\n and reference frames");
    for (size_t i = 0; i < n_ref; i++)
        if (v->ref_ids[i] < 0 || v->ref_ids[i] >= c->text_vocab)
            return ember_fail(EMBER_ERR_INVALID_ARG, "TTS prompt: reference text id %d is outside [0, %d)",
                              v->ref_ids[i], c->text_vocab);
    /* Q: the reference text, the target text, tts_eos */
    const size_t n_q = (n_ref - PREFIX - 2) + (n_ids - PREFIX - SUFFIX) + 1;
    int32_t *q = malloc(n_q * sizeof *q);
    if (!q) return ember_fail(EMBER_ERR_NO_MEMORY, "TTS prompt: out of memory");
    size_t k = 0;
    for (size_t i = PREFIX; i + 2 < n_ref; i++) q[k++] = v->ref_ids[i];
    for (size_t i = PREFIX; i + SUFFIX < n_ids; i++) q[k++] = ids[i];
    q[k++] = c->tts_eos;
    int32_t codec[MAX_CODEC_PREFIX];
    const size_t kc = codec_prefix(c, -1, language, 1, codec);
    const size_t n_tail = streaming ? F + 1 : n_q + 1 + F;
    out->rows = malloc((v->n_instruct + PREFIX + kc - 1 + n_tail) * sizeof *out->rows);
    out->trailing = malloc((n_q + 1) * sizeof *out->trailing);
    if (!out->rows || !out->trailing) {
        free(q);
        tts_prompt_free(out);
        return ember_fail(EMBER_ERR_NO_MEMORY, "TTS prompt: out of memory");
    }
    size_t r = head_rows(c, ids, v, codec, kc, out->rows);
    if (streaming) {
        for (size_t j = 0; j <= F; j++) /* D_j: bos, then frame j-1 */
            out->rows[r++] = (tts_prompt_row){j < n_q ? q[j] : c->tts_pad, j ? -1 : c->codec_bos, (int32_t)j};
        for (size_t j = F + 1; j < n_q; j++) out->trailing[out->n_trailing++] = q[j];
    } else {
        for (size_t j = 0; j < n_q; j++) out->rows[r++] = (tts_prompt_row){q[j], c->codec_pad, 0};
        out->rows[r++] = (tts_prompt_row){c->tts_pad, c->codec_bos, 0};
        for (size_t f = 0; f < F; f++) out->rows[r++] = (tts_prompt_row){c->tts_pad, -1, (int32_t)f + 1};
    }
    out->n_rows = r;
    free(q);
    return EMBER_OK;
}

ember_status tts_prompt_build(const tts_config *c, const int32_t *ids, size_t n_ids,
                              int32_t speaker, int32_t language, int streaming, tts_prompt *out)
{
    return tts_prompt_build_voice(c, ids, n_ids, speaker, language, streaming, NULL, out);
}

ember_status tts_prompt_build_voice(const tts_config *c, const int32_t *ids, size_t n_ids, int32_t speaker,
                                    int32_t language, int streaming, const tts_prompt_voice *voice,
                                    tts_prompt *out)
{
    static const tts_prompt_voice none = {NULL, 0, 0, NULL, 0, 0};
    if (!voice) voice = &none;
    memset(out, 0, sizeof *out);
    if (!ids || n_ids < PREFIX + SUFFIX)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "TTS prompt: %zu ids; expected <|im_start|>assistant\\n{text}"
                          "<|im_end|>\\n<|im_start|>assistant\\n (at least 8 ids)", n_ids);
    if (ids[0] != c->im_start || ids[1] != c->assistant || ids[n_ids - 5] != c->im_end ||
        ids[n_ids - 3] != c->im_start || ids[n_ids - 2] != c->assistant)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "TTS prompt: ids must be <|im_start|>assistant\\n{text}<|im_end|>\\n"
                          "<|im_start|>assistant\\n (%d, %d, ..., %d, ?, %d, %d, ?)",
                          c->im_start, c->assistant, c->im_end, c->im_start, c->assistant);
    for (size_t i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= c->text_vocab)
            return ember_fail(EMBER_ERR_INVALID_ARG, "TTS prompt: id %d at %zu is outside [0, %d)",
                              ids[i], i, c->text_vocab);
    if (speaker >= c->n_speakers || language >= c->n_languages)
        return ember_fail(EMBER_ERR_INVALID_ARG, "TTS prompt: speaker or language out of range");
    if (voice->xvector && speaker >= 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "TTS prompt: an x-vector and a built-in speaker both");
    for (size_t i = 0; i < voice->n_instruct; i++)
        if (voice->instruct[i] < 0 || voice->instruct[i] >= c->text_vocab)
            return ember_fail(EMBER_ERR_INVALID_ARG, "TTS prompt: instruct id %d at %zu is outside [0, %d)",
                              voice->instruct[i], i, c->text_vocab);
    const int32_t *text = ids + PREFIX;
    const size_t n_text = n_ids - PREFIX - SUFFIX;
    if (voice->n_ref_ids) return icl_prompt(c, ids, n_ids, language, streaming, voice, out);
    if (streaming && n_text == 0)
        return ember_fail(EMBER_ERR_INVALID_ARG, "TTS prompt: streaming mode needs some text");

    int32_t codec[MAX_CODEC_PREFIX];
    const size_t k = codec_prefix(c, speaker, language, voice->xvector, codec);
    const size_t n_rows = voice->n_instruct + PREFIX + (k - 1) + (streaming ? 1 : n_text + 2);
    out->rows = malloc(n_rows * sizeof *out->rows);
    out->trailing = malloc((n_text + 1) * sizeof *out->trailing);
    if (!out->rows || !out->trailing) {
        tts_prompt_free(out);
        return ember_fail(EMBER_ERR_NO_MEMORY, "TTS prompt: out of memory");
    }
    size_t r = head_rows(c, ids, voice, codec, k, out->rows);
    if (streaming) {
        out->rows[r++] = (tts_prompt_row){text[0], c->codec_bos, 0};
        for (size_t i = 1; i < n_text; i++) out->trailing[out->n_trailing++] = text[i];
        out->trailing[out->n_trailing++] = c->tts_eos;
    } else {
        for (size_t i = 0; i < n_text; i++) out->rows[r++] = (tts_prompt_row){text[i], c->codec_pad, 0};
        out->rows[r++] = (tts_prompt_row){c->tts_eos, c->codec_pad, 0};
        out->rows[r++] = (tts_prompt_row){c->tts_pad, c->codec_bos, 0};
    }
    out->n_rows = r;
    return EMBER_OK;
}

void tts_prompt_free(tts_prompt *p)
{
    free(p->rows);
    free(p->trailing);
    memset(p, 0, sizeof *p);
}
