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

ember_status tts_prompt_build(const tts_config *c, const int32_t *ids, size_t n_ids,
                              int32_t speaker, int32_t language, int streaming, tts_prompt *out)
{
    return tts_prompt_build_voice(c, ids, n_ids, speaker, language, streaming, NULL, out);
}

ember_status tts_prompt_build_voice(const tts_config *c, const int32_t *ids, size_t n_ids, int32_t speaker,
                                    int32_t language, int streaming, const tts_prompt_voice *voice,
                                    tts_prompt *out)
{
    static const tts_prompt_voice none = {NULL, 0, 0};
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
    size_t r = 0;
    for (size_t i = 0; i < voice->n_instruct; i++) out->rows[r++] = (tts_prompt_row){voice->instruct[i], -1};
    for (size_t i = 0; i < PREFIX; i++) out->rows[r++] = (tts_prompt_row){ids[i], -1};
    /* the codec prefix minus its bos; the row aligned with pad carries tts_bos */
    for (size_t i = 0; i + 1 < k; i++)
        out->rows[r++] = (tts_prompt_row){i + 2 < k ? c->tts_pad : c->tts_bos, codec[i]};
    if (streaming) {
        out->rows[r++] = (tts_prompt_row){text[0], c->codec_bos};
        for (size_t i = 1; i < n_text; i++) out->trailing[out->n_trailing++] = text[i];
        out->trailing[out->n_trailing++] = c->tts_eos;
    } else {
        for (size_t i = 0; i < n_text; i++) out->rows[r++] = (tts_prompt_row){text[i], c->codec_pad};
        out->rows[r++] = (tts_prompt_row){c->tts_eos, c->codec_pad};
        out->rows[r++] = (tts_prompt_row){c->tts_pad, c->codec_bos};
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
