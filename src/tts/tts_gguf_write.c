/* Writing a Qwen3-TTS checkpoint directory as one qwen3_tts GGUF file
 * (tts_gguf.h): the talker file's and the speech tokenizer's tensors, each
 * in the format the loader would convert it to, and the configs verbatim.
 * Kept apart from the reader so a program that only loads speech models
 * does not link it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"
#include "io/gguf.h"
#include "io/read_file.h"
#include "kernels/formats.h"
#include "tokenizer/tok_gguf_write.h"
#include "tokenizer/tokenizer.h"
#include "tts/qwen3_tts_config.h"
#include "tts/tts_gguf.h"

/* One tensor to stream: rows of `cols` values, widened to fp32 and
 * narrowed to `to` (copied when the formats agree). */
typedef struct tensor_src {
    const et_tensor *t;
    et_dtype to;
    int64_t rows, cols;
} tensor_src;

static ember_status produce(void *ctx, gguf_sink *sink)
{
    const tensor_src *s = ctx;
    const size_t in_row = ek_row_bytes(s->t->dtype, s->cols), out_row = ek_row_bytes(s->to, s->cols);
    if (s->to == s->t->dtype) return gguf_sink_write(sink, s->t->data, (size_t)s->rows * in_row);
    float *f = malloc((size_t)s->cols * sizeof *f);
    char *out = malloc(out_row);
    ember_status st = f && out ? EMBER_OK
                               : ember_fail(EMBER_ERR_NO_MEMORY, "tensor '%s': out of memory", s->t->name);
    for (int64_t r = 0; r < s->rows && !st; r++) {
        ek_format_of(s->t->dtype)->to_f32((const char *)s->t->data + (size_t)r * in_row, f, s->cols);
        ek_format_of(s->to)->from_f32(f, out, s->cols);
        st = gguf_sink_write(sink, out, out_row);
    }
    free(f);
    free(out);
    return st;
}

/* Embedding tables, which the loader converts only to block formats
 * (wt_bind_table): a lookup reads one row, so a float copy gains nothing. */
static bool is_table(const char *name)
{
    return strstr(name, ".text_embedding.") || strstr(name, ".codec_embedding.");
}

/* The format `t` is written in: the talker's and predictor's matrices in
 * `type` where the loader would convert them (columns a block multiple;
 * tables only to block formats), else as stored; every other tensor of the
 * talker file (vectors, the speaker encoder) in F32; the speech tokenizer's
 * in `speech_type`, its vectors in F32. */
static et_dtype format_of(const et_tensor *t, bool speech, et_dtype type, et_dtype speech_type)
{
    if (t->n_dims < 2) return ET_F32;
    if (speech) return speech_type;
    if (strncmp(t->name, "talker.", 7) || t->n_dims != 2) return ET_F32;
    if (t->shape[1] % ek_format_of(type)->block) return t->dtype;
    if (is_table(t->name) && et_dtype_is_float(type)) return t->dtype;
    return type;
}

typedef struct writer {
    gguf_writer *w;
    tensor_src *srcs; /* one per tensor, alive until gguf_write */
    size_t n;
} writer;

static ember_status add_tensors(writer *wr, const ck_dir *ck, bool speech, et_dtype type,
                                et_dtype speech_type)
{
    char name[128];
    for (size_t i = 0; i < ck_count(ck); i++) {
        const et_tensor *t = ck_tensor_at(ck, i);
        if (!tts_gguf_name(t->name, name, sizeof name))
            return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: tensor '%s' is not part of a Qwen3-TTS model",
                              ck_path(ck), t->name);
        if (!et_dtype_is_float(t->dtype) || t->n_dims < 1)
            return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: tensor '%s' is %s; a speech checkpoint holds "
                              "float tensors", ck_path(ck), t->name, et_dtype_name(t->dtype));
        tensor_src *s = &wr->srcs[wr->n];
        s->t = t;
        s->to = format_of(t, speech, type, speech_type);
        s->cols = t->shape[t->n_dims - 1];
        s->rows = s->cols ? et_tensor_numel(t) / s->cols : 0;
        uint64_t ne[ET_MAX_DIMS];
        for (int d = 0; d < t->n_dims; d++) ne[d] = (uint64_t)t->shape[t->n_dims - 1 - d];
        ember_status st = gguf_add_tensor(wr->w, name, s->to, (uint32_t)t->n_dims, ne, NULL, produce, s);
        if (st) return ember_fail_prefix(st, "%s: tensor '%s'", ck_path(ck), t->name);
        wr->n++;
    }
    return EMBER_OK;
}

/* A JSON file of the checkpoint as a string key; `optional`: absent is fine. */
static ember_status put_file(gguf_writer *w, const char *dir, const char *file, const char *key,
                             bool optional)
{
    char path[1200];
    char *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    struct stat sb;
    if (optional && stat(path, &sb) != 0) return EMBER_OK;
    ember_status st = io_read_text_file(path, (size_t)16 << 20, &text, &len);
    if (!st) st = gguf_set_strn(w, key, text, len);
    free(text);
    return st;
}

/* The text tokenizer (vocab.json + merges.txt) as tokenizer.ggml.* keys,
 * one token per row of the text embedding. */
static ember_status put_vocab(gguf_writer *w, const char *dir, const ck_dir *talker, const char *label)
{
    tts_config cfg;
    char *json = NULL;
    size_t len = 0;
    const char *pre = NULL;
    ember_status st = tts_config_parse(ck_config_json(talker), ck_config_len(talker), label, &cfg);
    if (!st) st = et_tokenizer_json_from_vocab_merges(dir, &json, &len, &pre);
    if (!st) st = tok_gguf_put_json(w, json, len, dir, cfg.text_vocab, pre, -1, -1, -1);
    free(json);
    return st;
}

static ember_status put_metadata(gguf_writer *w, const char *dir, et_dtype type, const ck_dir *talker,
                                 const char *label)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/') b--;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(n - b), dir + b);
    ember_status st;
    if ((st = gguf_set_str(w, "general.architecture", TTS_GGUF_ARCH)) ||
        (st = gguf_set_str(w, "general.name", name)) ||
        (!et_dtype_is_float(type) && (st = gguf_set_u32(w, "general.quantization_version", 2))) ||
        (st = put_file(w, dir, "config.json", TTS_GGUF_KEY_CONFIG, false)) ||
        (st = put_file(w, dir, "generation_config.json", TTS_GGUF_KEY_GENERATION, true)) ||
        (st = put_file(w, dir, "speech_tokenizer/config.json", TTS_GGUF_KEY_DECODER, false)))
        return st;
    return put_vocab(w, dir, talker, label);
}

ember_status tts_gguf_write(const char *dir, const char *path, et_dtype type, et_dtype speech_type,
                            int (*progress)(void *ctx, size_t done, size_t total), void *ctx,
                            size_t *n_tensors)
{
    if (n_tensors) *n_tensors = 0;
    if (speech_type != ET_F32 && speech_type != ET_F16 && speech_type != ET_BF16)
        return ember_fail(EMBER_ERR_INVALID_ARG, "the speech tokenizer is written as f32, f16 or bf16 "
                          "(its convolutions are compute-bound: block formats would not help)");
    if (type >= ET_DTYPE_COUNT) return ember_fail(EMBER_ERR_INVALID_ARG, "tts_gguf_write: no format");
    ck_dir *talker = NULL, *speech = NULL;
    writer wr = {0};
    char label[1200];
    char talker_label[1200];
    ember_status st = tts_ck_open(dir, TTS_PART_TALKER, &talker, talker_label, sizeof talker_label);
    if (!st && ck_gguf(talker))
        st = ember_fail(EMBER_ERR_UNSUPPORTED, "%s: already a GGUF file; quantize the checkpoint "
                        "directory it was made from", dir);
    if (!st) st = tts_ck_open(dir, TTS_PART_SPEECH, &speech, label, sizeof label);
    if (!st && !strcmp(ck_path(speech), ck_path(talker)))
        st = ember_fail(EMBER_ERR_FORMAT, "%s: no speech_tokenizer/ directory (the speech decoder)", dir);
    if (!st && !(wr.srcs = calloc(ck_count(talker) + ck_count(speech) + 1, sizeof *wr.srcs)))
        st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    if (!st) st = gguf_writer_create(&wr.w);
    if (!st) st = put_metadata(wr.w, dir, type, talker, talker_label);
    if (!st) st = add_tensors(&wr, talker, false, type, speech_type);
    if (!st) st = add_tensors(&wr, speech, true, type, speech_type);
    if (!st) st = gguf_write(wr.w, path, progress, ctx);
    if (!st && n_tensors) *n_tensors = wr.n;
    gguf_writer_free(wr.w);
    free(wr.srcs);
    ck_close(speech);
    ck_close(talker);
    return st;
}
