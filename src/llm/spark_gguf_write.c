/* The spark2_5 GGUF writer for `ember quantize` (spark_gguf_write): every
 * weight matrix in the format the quantization mix gives it, streamed; the
 * metadata llama.cpp reads, the vocab (spark_gguf_vocab.c) and the chat
 * template and sampling defaults (spark_gguf_text.c). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "base/status.h"
#include "kernels/formats.h"
#include "kernels/rows8.h"
#include "llm/spark.h"
#include "llm/spark_gguf.h"
#include "llm/spark_gguf_names.h"

#define ARCH SPARK_GGUF_ARCH

/* A matrix to stream: up to three parts stacked by rows (Q, K, V). */
typedef struct mat_src {
    ek_matrix part[3];
    int n_parts;
    et_dtype to;
    ember_pool *pool; /* converts batches of rows in parallel */
} mat_src;

/* Rows converted per batch: about this many output bytes (the writer then
 * streams the batch while nothing else runs; a few MiB keeps it cheap). */
#define BATCH_BYTES ((size_t)4 << 20)

/* One batch: rows r0 .. r0+n of part m, converted to `to` in out. */
typedef struct batch {
    const ek_matrix *m;
    et_dtype to;
    int64_t r0, n, cols;
    char *out;
    size_t out_row;
    float *scratch; /* 2 x cols floats per worker */
} batch;

static void convert_rows(void *ctx, int part, int n_parts, int worker)
{
    const batch *b = ctx;
    const ek_matrix *m = b->m;
    float *row = b->scratch + (size_t)worker * 2 * (size_t)b->cols, *plain = row + b->cols;
    const size_t in_row = ek_row_bytes(m->dtype, b->cols);
    int64_t begin, end;
    pool_split(b->n, 1, part, n_parts, &begin, &end);
    for (int64_t i = begin; i < end; i++) {
        const int64_t r = b->r0 + i;
        const char *src = (const char *)m->data + (size_t)r * in_row;
        if (m->layout == EK_LAYOUT_ROWS8) { /* back in the file's row layout */
            ek_rows8_unpack_row(m, r, plain);
            src = (const char *)plain;
        }
        char *dst = b->out + (size_t)i * b->out_row;
        if (m->dtype == b->to) {
            memcpy(dst, src, in_row); /* as is: no round trip */
        } else {
            ek_format_of(m->dtype)->to_f32(src, row, b->cols);
            ek_format_of(b->to)->from_f32(row, dst, b->cols);
        }
    }
}

static ember_status produce_matrix(void *ctx, gguf_sink *sink)
{
    const mat_src *s = ctx;
    const int64_t cols = s->part[0].cols;
    const size_t out_row = ek_row_bytes(s->to, cols);
    int64_t per_batch = (int64_t)(BATCH_BYTES / out_row);
    if (per_batch < 1) per_batch = 1;
    int64_t most = 0;
    for (int p = 0; p < s->n_parts; p++) most = s->part[p].rows > most ? s->part[p].rows : most;
    if (per_batch > most) per_batch = most;
    const int workers = pool_size(s->pool);
    char *out = malloc((size_t)per_batch * out_row + 1);
    float *scratch = malloc((size_t)workers * 2 * (size_t)cols * sizeof *scratch + 1);
    ember_status st = EMBER_OK;
    if (!out || !scratch) st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory converting a matrix");
    for (int p = 0; p < s->n_parts && !st; p++) {
        batch b = {&s->part[p], s->to, 0, 0, cols, out, out_row, scratch};
        for (b.r0 = 0; b.r0 < s->part[p].rows && !st; b.r0 += b.n) {
            b.n = s->part[p].rows - b.r0 < per_batch ? s->part[p].rows - b.r0 : per_batch;
            pool_run(s->pool, convert_rows, &b, workers);
            st = gguf_sink_write(sink, out, (size_t)b.n * out_row);
        }
    }
    free(out);
    free(scratch);
    return st;
}

static ember_status put_metadata(gguf_writer *w, const ember_model *m, const quant_mix *mix)
{
    const spark_config *c = &m->cfg;
    const gguf_file *src = ck_gguf(m->ck);
    const char *name = NULL;
    char base[256];
    ember_status st;

    if (src && gguf_find(src, "general.name") && gguf_get_str(src, "general.name", &name, NULL))
        name = NULL;
    if (!name) {
        const char *p = ck_path(m->ck);
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/') n--;
        size_t b = n;
        while (b > 0 && p[b - 1] != '/') b--;
        snprintf(base, sizeof base, "%.*s", (int)(n - b), p + b);
        name = base;
    }
    uint8_t pattern[SPARK_MAX_LAYERS];
    for (int32_t i = 0; i < c->n_layers; i++) pattern[i] = c->layer_type[i] == SPARK_SLIDING;
    if ((st = gguf_set_str(w, "general.architecture", ARCH)) ||
        (st = gguf_set_str(w, "general.name", name)) ||
        (st = gguf_set_u32(w, "general.file_type", quant_mix_file_type(mix))) ||
        (!et_dtype_is_float(quant_mix_base(mix)) && (st = gguf_set_u32(w, "general.quantization_version", 2))) ||
        (st = gguf_set_u32(w, ARCH ".block_count", (uint32_t)c->n_layers)) ||
        (st = gguf_set_u32(w, ARCH ".context_length", (uint32_t)c->max_positions)) ||
        (st = gguf_set_u32(w, ARCH ".embedding_length", (uint32_t)c->hidden)) ||
        (st = gguf_set_u32(w, ARCH ".feed_forward_length", (uint32_t)c->intermediate)) ||
        (st = gguf_set_u32(w, ARCH ".vocab_size", (uint32_t)c->vocab)) ||
        (st = gguf_set_u32(w, ARCH ".attention.head_count", (uint32_t)c->n_heads)) ||
        (st = gguf_set_u32(w, ARCH ".attention.head_count_kv", (uint32_t)c->n_kv_heads)) ||
        (st = gguf_set_u32(w, ARCH ".attention.key_length", (uint32_t)c->head_dim)) ||
        (st = gguf_set_u32(w, ARCH ".attention.value_length", (uint32_t)c->head_dim)) ||
        (st = gguf_set_f32(w, ARCH ".attention.layer_norm_rms_epsilon", c->rms_eps)) ||
        (st = gguf_set_arr(w, ARCH ".attention.sliding_window_pattern", GGUF_TYPE_BOOL, pattern,
                           (size_t)c->n_layers)) ||
        (st = gguf_set_u32(w, ARCH ".rope.dimension_count", (uint32_t)c->rope[SPARK_FULL].rot_dims)) ||
        (st = gguf_set_u32(w, ARCH ".rope.dimension_count_swa",
                           (uint32_t)c->rope[SPARK_SLIDING].rot_dims)) ||
        (st = gguf_set_f32(w, ARCH ".rope.freq_base", c->rope[SPARK_FULL].theta)) ||
        (st = gguf_set_f32(w, ARCH ".rope.freq_base_swa", c->rope[SPARK_SLIDING].theta)))
        return st;
    if (c->sliding_window > 0 &&
        (st = gguf_set_u32(w, ARCH ".attention.sliding_window", (uint32_t)c->sliding_window)))
        return st;
    if (c->gate == SPARK_GATE_SILU &&
        (st = gguf_set_str(w, ARCH ".attention.gate_activation", "silu")))
        return st;
    bool synthesized = false;
    if ((st = spark_gguf_vocab(w, m, &synthesized))) return st;
    /* a template over invented token texts would only mislead */
    if ((st = spark_gguf_text(w, m, !synthesized))) return st;
    if (synthesized)
        return gguf_set_str(w, "general.description",
                            "written by ember: the source had no tokenizer.json, so the vocab is "
                            "synthesized (256 byte-level tokens, the special ids, [PADn] "
                            "fillers, no merges); token ids are right, token texts are not the "
                            "model's");
    if (src) {
        const char *desc;
        if (gguf_find(src, "general.description") &&
            !gguf_get_str(src, "general.description", &desc, NULL))
            return gguf_set_str(w, "general.description", desc);
    }
    return EMBER_OK;
}

static ember_status add_matrix(gguf_writer *w, mat_src *src, const char *name, et_dtype type,
                               const ek_matrix *parts, int n)
{
    const ek_format *f = ek_format_of(type);
    int64_t rows = 0;
    for (int i = 0; i < n; i++) {
        src->part[i] = parts[i];
        rows += parts[i].rows;
    }
    src->n_parts = n;
    src->to = type;
    if (parts[0].cols % f->block)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "tensor '%s': %lld columns are not a multiple "
                          "of the %s block (%d)", name, (long long)parts[0].cols, f->name,
                          f->block);
    return gguf_add_matrix(w, name, type, rows, parts[0].cols, NULL, produce_matrix, src);
}

static int64_t vec_len(const spark_config *c, len_dim d)
{
    switch (d) {
    case L_HIDDEN: return c->hidden;
    case L_QKV: return (int64_t)(c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
    case L_HEADS: return c->n_heads;
    case L_INTER: return c->intermediate;
    case L_NONE: break;
    }
    return 0;
}

/* What the quantization mixes read of the model (llama.cpp's n_gqa() is
 * n_head / n_head_kv, 0 without KV heads). */
static qm_model mix_model(const spark_config *c)
{
    return (qm_model){c->n_layers, c->n_kv_heads ? c->n_heads / c->n_kv_heads : 0, c->tie_embeddings};
}

static ember_status add_layer(gguf_writer *w, const ember_model *m, int32_t i, const quant_mix *mix,
                              const qm_model *mm, mat_src **next)
{
    const spark_layer *L = &m->layers[i];
    char name[96];
    ember_status st = EMBER_OK;
    for (size_t k2 = 0; k2 < SPARK_GGUF_N_LAYER_NAMES && !st; k2++) {
        const layer_name *ln = &spark_gguf_layer_names[k2];
        const void *field = (const char *)L + ln->field;
        snprintf(name, sizeof name, "blk.%d.%s", i, ln->gguf);
        if (ln->k == K_QKV) {
            ek_matrix parts[3] = {L->wq, L->wk, L->wv};
            et_dtype type = quant_mix_type(mix, ln->role, i, parts[0].cols, mm);
            st = add_matrix(w, (*next)++, name, type, parts, 3);
        } else if (ln->k == K_MAT) {
            const ek_matrix *mat = field;
            et_dtype type = quant_mix_type(mix, ln->role, i, mat->cols, mm);
            if (mat->rows) st = add_matrix(w, (*next)++, name, type, mat, 1);
        } else {
            const float *v = *(const float *const *)field; /* QKV bias: bq, bk, bv are contiguous */
            if (v) st = gguf_add_vector(w, name, ET_F32, vec_len(&m->cfg, ln->len), v, NULL, NULL);
        }
    }
    return st;
}

size_t spark_gguf_tensor_count(const ember_model *m)
{
    size_t n = 2 + !m->cfg.tie_embeddings;
    for (int32_t i = 0; i < m->cfg.n_layers; i++) {
        const spark_layer *L = &m->layers[i];
        for (size_t j = 0; j < SPARK_GGUF_N_LAYER_NAMES; j++) {
            const void *field = (const char *)L + spark_gguf_layer_names[j].field;
            if (spark_gguf_layer_names[j].k == K_QKV) n++;
            else if (spark_gguf_layer_names[j].k == K_MAT) n += ((const ek_matrix *)field)->rows != 0;
            else n += *(const float *const *)field != NULL;
        }
    }
    return n;
}

ember_status spark_gguf_write(const ember_model *m, const char *path, const quant_mix *mix, int n_threads,
                              int (*progress)(void *ctx, size_t done, size_t total), void *ctx)
{
    if (!m || !path || !mix) return ember_fail(EMBER_ERR_INVALID_ARG, "spark_gguf_write: NULL argument");
    if (m->params.all_full_attention)
        return ember_fail(EMBER_ERR_INVALID_ARG, "spark_gguf_write: the model was loaded with "
                          "all_full_attention (a benchmarking mode that changes it); load it "
                          "plainly to write it");
    const spark_config *c = &m->cfg;
    gguf_writer *w = NULL;
    ember_pool *pool = NULL;
    /* one source per matrix: embedding, lm_head, 6 per layer */
    mat_src *srcs = calloc(2 + 6 * (size_t)c->n_layers, sizeof *srcs), *next = srcs;
    ember_status st = srcs ? pool_create(n_threads > 0 ? n_threads : pool_cpu_count(), &pool)
                           : ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
    if (!st) st = gguf_writer_create(&w);
    const bool tied = c->tie_embeddings;
    const qm_model mm = mix_model(c);
    if (!st) st = put_metadata(w, m, mix);
    if (!st)
        st = add_matrix(w, next++, "token_embd.weight", quant_mix_type(mix, QM_TOKEN_EMBD, 0, m->embed.cols, &mm),
                        &m->embed, 1);
    if (!st) st = gguf_add_vector(w, "output_norm.weight", ET_F32, c->hidden, m->final_norm, NULL, NULL);
    if (!st && !tied)
        st = add_matrix(w, next++, "output.weight",
                        quant_mix_type(mix, QM_OUTPUT, 0, m->lm_head.cols, &mm), &m->lm_head, 1);
    for (int32_t i = 0; i < c->n_layers && !st; i++) st = add_layer(w, m, i, mix, &mm, &next);
    for (mat_src *p = srcs; p && p < next; p++) p->pool = pool;
    if (!st) st = gguf_write(w, path, progress, ctx);
    if (st) ember_fail_prefix(st, "writing %s", path);
    gguf_writer_free(w);
    pool_free(pool);
    free(srcs);
    return st;
}
