/* Spark-X2.5 through GGUF: a model written with spark_gguf_write and loaded
 * back gives bit-identical logits to converting models/tiny at load; the
 * metadata <-> config.json mapping (incl. defaults) on a GGUF built here by
 * hand; tokenizer metadata from tokenizer.json or synthesized; and broken
 * files (wrong architecture, missing or mistyped keys, unknown or missing
 * tensors), each failing with a message that names the key or tensor.
 *
 *   test_gguf_spark --write-seeds DIR   writes a small spark2_5 GGUF seed. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "kernels/formats.h"
#include "ember.h"
#include "io/gguf.h"
#include "llm/spark.h"
#include "llm/spark_config.h"
#include "llm/spark_gguf.h"

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char path[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", tmpdir, name);
    return path[k];
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static const char *tiny(void)
{
    const char *d = getenv("EMBER_TEST_MODEL");
    return d && *d ? d : "models/tiny";
}


/* Logits after a prompt and after each of 3 decodes, concatenated. */
static float *run(const ember_model *m, int *n_out)
{
    enum { PROMPT = 40, STEPS = 4 };
    int32_t vocab = ember_model_vocab_size(m), ids[PROMPT];
    unsigned s = 11;
    for (int i = 0; i < PROMPT; i++) ids[i] = (int32_t)((s = s * 1103515245u + 12345u) >> 8) % vocab;
    ember_session_params sp = ember_session_default_params();
    sp.max_context = 128;
    sp.n_threads = 1;
    ember_session *ses = NULL;
    float *out = malloc((size_t)vocab * STEPS * sizeof *out);
    if (!out || ember_session_create(m, &sp, &ses) != EMBER_OK ||
        ember_session_prefill(ses, ids, PROMPT) != EMBER_OK) {
        free(out);
        ember_session_free(ses);
        return NULL;
    }
    for (int k = 0; k < STEPS; k++) {
        memcpy(out + (size_t)k * vocab, ember_session_logits(ses), (size_t)vocab * sizeof *out);
        if (k + 1 < STEPS && ember_session_decode(ses, ids[k]) != EMBER_OK) {
            free(out);
            out = NULL;
            break;
        }
    }
    ember_session_free(ses);
    *n_out = vocab * STEPS;
    return out;
}

/* ---- bit-identical to converting at load ------------------------------------------- */

static void check_same_logits(et_dtype dt, ember_type load_as, const char *name)
{
    ember_model *src = check_load_model(tiny(), EMBER_TYPE_NONE), *ref = check_load_model(tiny(), load_as), *got = NULL;
    const char *path = tmp_path(name);
    REQUIRE(src && ref);
    REQUIRE(spark_gguf_write(src, path, quant_mix_single(dt), 0, NULL, NULL) == EMBER_OK);
    got = check_load_model(path, EMBER_TYPE_NONE);
    if (got) {
        int na = 0, nb = 0;
        float *a = run(ref, &na), *b = run(got, &nb);
        CHECK(a && b && na == nb);
        if (a && b) CHECK_MSG(!memcmp(a, b, (size_t)na * sizeof *a), "%s: logits differ", name);
        CHECK(ember_model_weight_bytes(got) == ember_model_weight_bytes(ref));
        free(a);
        free(b);
    }
    CHECK(got != NULL);
    ember_model_free(got);
    ember_model_free(ref);
    ember_model_free(src);
}

static void test_q8_0_matches_convert_at_load(void) { check_same_logits(ET_Q8_0, EMBER_TYPE_Q8_0, "q8.gguf"); }
static void test_q4_0_matches_convert_at_load(void) { check_same_logits(ET_Q4_0, EMBER_TYPE_Q4_0, "q4.gguf"); }
static void test_bf16_matches_source(void) { check_same_logits(ET_BF16, EMBER_TYPE_NONE, "bf16.gguf"); }
static void test_f16_matches_convert_at_load(void) { check_same_logits(ET_F16, EMBER_TYPE_F16, "f16.gguf"); }
static void test_f32_matches_convert_at_load(void) { check_same_logits(ET_F32, EMBER_TYPE_F32, "f32.gguf"); }

/* The loader interleaves Q8_0/Q4_0 matrices (kernels/rows8.h) for a kernel
 * set with gemms for that layout and keeps rows for one without; both give
 * the same logits up to the fp32 order of the block sums. */
static void test_interleaved_layout_same_logits(void)
{
    static const ember_type types[] = {EMBER_TYPE_Q8_0, EMBER_TYPE_Q4_0};
    ember_model_params mp = ember_model_default_params();
    int compared = 0;
    for (size_t i = 0; i < 2; i++) {
        ember_model *rows8 = NULL, *rows = NULL;
        mp.weight_type = types[i];
        mp.kernels = "avx512";
        if (ember_model_load(tiny(), &mp, &rows8) != EMBER_OK) continue; /* not this CPU */
        mp.kernels = "avx2";
        REQUIRE(ember_model_load(tiny(), &mp, &rows) == EMBER_OK);
        CHECK(rows8->layers[0].w_up.layout == EK_LAYOUT_ROWS8 &&
              rows8->layers[0].wk.layout == EK_LAYOUT_ROWS8 &&
              rows8->lm_head.layout == EK_LAYOUT_ROWS8);
        CHECK(rows->layers[0].w_up.layout == EK_LAYOUT_ROWS && rows->lm_head.layout == EK_LAYOUT_ROWS);
        int na = 0, nb = 0;
        float *a = run(rows8, &na), *b = run(rows, &nb);
        REQUIRE(a && b && na == nb);
        double sig = 0, err = 0;
        for (int k = 0; k < na; k++) {
            sig += (double)b[k] * b[k];
            err += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);
        }
        double snr = 10 * log10(sig / (err + 1e-300));
        CHECK_MSG(snr > 90, "type %d: interleaved vs row layout logits SNR %.1f dB", (int)types[i], snr);
        compared++;
        free(a);
        free(b);
        ember_model_free(rows8);
        ember_model_free(rows);
    }
    if (!compared) printf("     (no avx512 on this CPU: nothing to compare)\n");
}

/* A GGUF converts at load like a Hugging Face directory does. */
static void test_gguf_converts_at_load(void)
{
    ember_model *src = check_load_model(tiny(), EMBER_TYPE_NONE), *ref = check_load_model(tiny(), EMBER_TYPE_Q8_0), *got = NULL;
    REQUIRE(src && ref);
    CHECK(spark_gguf_write(src, tmp_path("conv.gguf"), quant_mix_single(ET_F32), 0, NULL, NULL) == EMBER_OK);
    got = check_load_model(tmp_path("conv.gguf"), EMBER_TYPE_Q8_0);
    if (got) {
        int na = 0, nb = 0;
        float *a = run(ref, &na), *b = run(got, &nb);
        CHECK(a && b && na == nb && !memcmp(a, b, (size_t)na * sizeof *a));
        free(a);
        free(b);
    }
    CHECK(got != NULL);
    ember_model_free(got);
    ember_model_free(ref);
    ember_model_free(src);
    /* a model changed for benchmarking is not written */
    ember_model_params mp = ember_model_default_params();
    mp.all_full_attention = 1;
    REQUIRE(ember_model_load(tiny(), &mp, &src) == EMBER_OK);
    EXPECT_FAIL(spark_gguf_write(src, tmp_path("full.gguf"), quant_mix_single(ET_F32), 0, NULL, NULL),
                EMBER_ERR_INVALID_ARG, "all_full_attention");
    ember_model_free(src);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)len + 1);
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

/* The rows are converted by a pool: 1 and 3 threads write the same bytes
 * (from a model whose matrices were converted at load into the rows8
 * layout, so the unpacking runs in parallel too). */
static void test_threads_write_the_same_bytes(void)
{
    ember_model *m = check_load_model(tiny(), EMBER_TYPE_Q8_0);
    REQUIRE(m);
    CHECK(spark_gguf_write(m, tmp_path("t1.gguf"), quant_mix_single(ET_Q4_0), 1, NULL, NULL) == EMBER_OK);
    CHECK(spark_gguf_write(m, tmp_path("t3.gguf"), quant_mix_single(ET_Q4_0), 3, NULL, NULL) == EMBER_OK);
    ember_model_free(m);
    size_t na = 0, nb = 0;
    unsigned char *a = slurp(tmp_path("t1.gguf"), &na), *b = slurp(tmp_path("t3.gguf"), &nb);
    CHECK(a && b && na == nb && na > 0 && !memcmp(a, b, na));
    free(a);
    free(b);
}

/* GGUF -> model -> GGUF at the same type reproduces the file byte for byte. */
static void test_requantize_same_type_is_identity(void)
{
    ember_model *src = check_load_model(tiny(), EMBER_TYPE_NONE), *g = NULL;
    REQUIRE(src);
    CHECK(spark_gguf_write(src, tmp_path("a.gguf"), quant_mix_single(ET_Q4_0), 0, NULL, NULL) == EMBER_OK);
    ember_model_free(src);
    REQUIRE((g = check_load_model(tmp_path("a.gguf"), EMBER_TYPE_NONE)) != NULL);
    CHECK(spark_gguf_write(g, tmp_path("b.gguf"), quant_mix_single(ET_Q4_0), 0, NULL, NULL) == EMBER_OK);
    ember_model_free(g);
    size_t na = 0, nb = 0;
    unsigned char *a = slurp(tmp_path("a.gguf"), &na), *b = slurp(tmp_path("b.gguf"), &nb);
    CHECK(a && b && na == nb && !memcmp(a, b, na));
    free(a);
    free(b);
}

static int cancel_second(void *ctx, size_t done, size_t total)
{
    (void)done;
    (void)total;
    return ++*(int *)ctx >= 2;
}

static void test_cancel_leaves_no_file(void)
{
    ember_model *m = check_load_model(tiny(), EMBER_TYPE_NONE);
    REQUIRE(m);
    int calls = 0;
    EXPECT_FAIL(spark_gguf_write(m, tmp_path("c.gguf"), quant_mix_single(ET_Q8_0), 0, cancel_second, &calls),
                EMBER_ERR_CANCELLED, "cancelled");
    CHECK(calls == 2 && !exists(tmp_path("c.gguf")) && !exists(tmp_path("c.gguf.tmp")));
    EXPECT_FAIL(spark_gguf_write(m, tmp_path("none/c.gguf"), quant_mix_single(ET_Q8_0), 0, NULL, NULL), EMBER_ERR_IO,
                "cannot create");
    ember_model_free(m);
}

/* ---- tokenizer metadata --------------------------------------------------------------- */

static const gguf_value *arr(const gguf_file *f, const char *key, gguf_type t)
{
    const gguf_value *v = NULL;
    CHECK_MSG(gguf_get_arr(f, key, t, &v) == EMBER_OK, "%s", ember_last_error());
    return v;
}

static int make_tok_dir(const char *dir, const char *tokenizer_json);

/* models/tiny's weights without its tokenizer.json, and a config.json whose
 * special ids are pad 0, bos 1, eos 2. */
static int make_notok_dir(const char *dir)
{
    char path[PATH_MAX];
    size_t n;
    if (make_tok_dir(dir, NULL)) return -1;
    snprintf(path, sizeof path, "%s/config.json", tiny());
    char *text = (char *)slurp(path, &n);
    cJSON *cfg = text ? cJSON_ParseWithLength(text, n) : NULL;
    free(text);
    if (!cfg) return -1;
    cJSON_ReplaceItemInObject(cfg, "pad_token_id", cJSON_CreateNumber(0));
    cJSON_ReplaceItemInObject(cfg, "bos_token_id", cJSON_CreateNumber(1));
    cJSON_ReplaceItemInObject(cfg, "eos_token_id", cJSON_CreateNumber(2));
    char *out = cJSON_Print(cfg);
    cJSON_Delete(cfg);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    FILE *f = out ? fopen(path, "wb") : NULL;
    int rc = f && fputs(out, f) >= 0 ? 0 : -1;
    if (f && fclose(f)) rc = -1;
    free(out);
    return rc;
}

static void test_synthesized_vocab(void)
{
    REQUIRE(make_notok_dir(tmp_path("notok")) == 0);
    ember_model *m = check_load_model(tmp_path("notok"), EMBER_TYPE_NONE);
    gguf_file *f = NULL;
    REQUIRE(m);
    REQUIRE(spark_gguf_write(m, tmp_path("syn.gguf"), quant_mix_single(ET_F32), 0, NULL, NULL) == EMBER_OK);
    ember_model_free(m);
    REQUIRE(gguf_open(tmp_path("syn.gguf"), &f) == EMBER_OK);
    const gguf_value *tok = arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING);
    const gguf_value *type = arr(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32);
    const gguf_value *merges = arr(f, "tokenizer.ggml.merges", GGUF_TYPE_STRING);
    const char *s = NULL, *desc = NULL;
    uint32_t id;
    if (tok && type && merges) {
        CHECK(tok->n == 512 && type->n == 512 && merges->n == 0);
        /* tiny: pad 0, bos 1, eos 2; then the 256 byte tokens from id 3 */
        CHECK(!strcmp(tok->arr_strs[0].s, "<|pad|>") && gguf_arr_i(type, 0) == 3);
        CHECK(!strcmp(tok->arr_strs[1].s, "<|bos|>") && !strcmp(tok->arr_strs[2].s, "<|eos|>"));
        CHECK(!strcmp(tok->arr_strs[3].s, "\xc4\x80"));       /* byte 0 -> U+0100 */
        CHECK(!strcmp(tok->arr_strs[3 + 32].s, "\xc4\xa0"));  /* ' ' -> 'Ġ' */
        CHECK(!strcmp(tok->arr_strs[3 + 'A'].s, "A") && gguf_arr_i(type, 3 + 'A') == 1);
        CHECK(!strcmp(tok->arr_strs[3 + 255].s, "\xc3\xbf")); /* byte 255 -> U+00FF */
        CHECK(!strcmp(tok->arr_strs[300].s, "[PAD300]") && gguf_arr_i(type, 300) == 5);
        int distinct = 1;
        for (uint64_t i = 0; i < tok->n; i++)
            for (uint64_t j = i + 1; j < tok->n; j++)
                distinct &= strcmp(tok->arr_strs[i].s, tok->arr_strs[j].s) != 0;
        CHECK(distinct);
    }
    CHECK(gguf_get_str(f, "tokenizer.ggml.model", &s, NULL) == EMBER_OK && !strcmp(s, "gpt2"));
    CHECK(gguf_get_str(f, "tokenizer.ggml.pre", &s, NULL) == EMBER_OK && !strcmp(s, "spark2_5"));
    CHECK(gguf_get_u32(f, "tokenizer.ggml.bos_token_id", &id) == EMBER_OK && id == 1);
    CHECK(gguf_get_u32(f, "tokenizer.ggml.eos_token_id", &id) == EMBER_OK && id == 2);
    CHECK(gguf_get_u32(f, "tokenizer.ggml.padding_token_id", &id) == EMBER_OK && id == 0);
    CHECK(gguf_get_str(f, "general.description", &desc, NULL) == EMBER_OK && strstr(desc, "synthesized"));
    CHECK(gguf_get_str(f, "general.architecture", &s, NULL) == EMBER_OK && !strcmp(s, "spark2_5"));
    /* general.name is the checkpoint directory's name */
    CHECK(gguf_get_str(f, "general.name", &s, NULL) == EMBER_OK && !strcmp(s, "notok"));
    CHECK(gguf_get_u32(f, "general.file_type", &id) == EMBER_OK && id == 0);
    gguf_close(f);
}

/* A directory of symlinks to the weights of models/tiny plus the given
 * tokenizer.json (none if NULL). */
static int make_tok_dir(const char *dir, const char *tokenizer_json)
{
    static const char *const files[] = {"config.json", "model-00001-of-00002.safetensors",
                                        "model-00002-of-00002.safetensors",
                                        "model.safetensors.index.json"};
    char src[PATH_MAX], rel[PATH_MAX], dst[PATH_MAX];
    mkdir(dir, 0755);
    for (size_t i = 0; i < 4; i++) {
        snprintf(rel, sizeof rel, "%s/%s", tiny(), files[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        if (!realpath(rel, src) || (symlink(src, dst) && !exists(dst))) return -1;
    }
    if (!tokenizer_json) return 0;
    snprintf(dst, sizeof dst, "%s/tokenizer.json", dir);
    FILE *f = fopen(dst, "wb");
    if (!f) return -1;
    fputs(tokenizer_json, f);
    return fclose(f);
}

static char *tokenizer_text(int n_vocab, const char *model_type, int extra_id)
{
    size_t cap = 64 * 1024, at = 0;
    char *t = malloc(cap);
    at += (size_t)snprintf(t + at, cap - at, "{\"version\": \"1.0\", \"added_tokens\": ["
                           "{\"id\": 510, \"content\": \"<|im_start|>\", \"special\": true},"
                           "{\"id\": 511, \"content\": \"<think>\", \"special\": false},"
                           "{\"id\": 5, \"content\": \"tok5\", \"special\": true}],"
                           "\"model\": {\"type\": \"%s\", \"vocab\": {", model_type);
    for (int i = 0; i < n_vocab; i++)
        at += (size_t)snprintf(t + at, cap - at, "%s\"tok%d\": %d", i ? ", " : "", i, i);
    if (extra_id >= 0) at += (size_t)snprintf(t + at, cap - at, ", \"far\": %d", extra_id);
    snprintf(t + at, cap - at, "}, \"merges\": [\"t o\", [\"to\", \"k\"]]}}");
    return t;
}

static void test_vocab_from_tokenizer_json(void)
{
    const char *dir = tmp_path("withtok");
    char *text = tokenizer_text(300, "BPE", -1);
    ember_model *m = NULL;
    gguf_file *f = NULL;
    REQUIRE(make_tok_dir(dir, text) == 0);
    free(text);
    REQUIRE((m = check_load_model(dir, EMBER_TYPE_NONE)) != NULL);
    REQUIRE(spark_gguf_write(m, tmp_path("tok.gguf"), quant_mix_single(ET_Q8_0), 0, NULL, NULL) == EMBER_OK);
    ember_model_free(m);
    REQUIRE(gguf_open(tmp_path("tok.gguf"), &f) == EMBER_OK);
    const gguf_value *tok = arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING);
    const gguf_value *type = arr(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32);
    const gguf_value *merges = arr(f, "tokenizer.ggml.merges", GGUF_TYPE_STRING);
    if (tok && type && merges) {
        CHECK(tok->n == 512 && type->n == 512);
        CHECK(!strcmp(tok->arr_strs[0].s, "tok0") && gguf_arr_i(type, 0) == 1);
        CHECK(!strcmp(tok->arr_strs[5].s, "tok5") && gguf_arr_i(type, 5) == 3);
        CHECK(!strcmp(tok->arr_strs[299].s, "tok299") && gguf_arr_i(type, 299) == 1);
        CHECK(!strcmp(tok->arr_strs[300].s, "[PAD300]") && gguf_arr_i(type, 300) == 5);
        CHECK(!strcmp(tok->arr_strs[510].s, "<|im_start|>") && gguf_arr_i(type, 510) == 3);
        CHECK(!strcmp(tok->arr_strs[511].s, "<think>") && gguf_arr_i(type, 511) == 4);
        CHECK(merges->n == 2 && !strcmp(merges->arr_strs[0].s, "t o") &&
              !strcmp(merges->arr_strs[1].s, "to k"));
    }
    CHECK(gguf_find(f, "general.description") == NULL);
    CHECK(gguf_get_u32(f, "general.file_type", &(uint32_t){0}) == EMBER_OK);
    gguf_close(f);

    /* the GGUF's tokenizer is carried over when re-quantizing it */
    REQUIRE((m = check_load_model(tmp_path("tok.gguf"), EMBER_TYPE_NONE)) != NULL);
    REQUIRE(spark_gguf_write(m, tmp_path("tok2.gguf"), quant_mix_single(ET_F16), 0, NULL, NULL) == EMBER_OK);
    ember_model_free(m);
    REQUIRE(gguf_open(tmp_path("tok2.gguf"), &f) == EMBER_OK);
    tok = arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING);
    CHECK(tok && tok->n == 512 && !strcmp(tok->arr_strs[511].s, "<think>"));
    gguf_close(f);
}

static void test_bad_tokenizer_json(void)
{
    const char *dir = tmp_path("badtok"), *out = tmp_path("badtok.gguf");
    char *text = tokenizer_text(10, "BPE", 600);
    ember_model *m = NULL;
    REQUIRE(make_tok_dir(dir, text) == 0);
    free(text);
    REQUIRE((m = check_load_model(dir, EMBER_TYPE_NONE)) != NULL);
    EXPECT_FAIL(spark_gguf_write(m, out, quant_mix_single(ET_Q8_0), 0, NULL, NULL), EMBER_ERR_FORMAT,
                "tokenizer.json: token 'far' has id 600, outside the model's vocab of 512");
    CHECK(!exists(out));
    ember_model_free(m);
    const char *dir2 = tmp_path("unigram");
    text = tokenizer_text(10, "Unigram", -1);
    REQUIRE(make_tok_dir(dir2, text) == 0);
    free(text);
    REQUIRE((m = check_load_model(dir2, EMBER_TYPE_NONE)) != NULL);
    EXPECT_FAIL(spark_gguf_write(m, out, quant_mix_single(ET_Q8_0), 0, NULL, NULL), EMBER_ERR_UNSUPPORTED, "not \"BPE\"");
    CHECK(!exists(out));
    ember_model_free(m);
}

/* ---- a GGUF built by hand: defaults and broken variants --------------------------- */

enum { H = 32, LAYERS = 2, HEADS = 2, KV = 1, HD = 16, INTER = 32, VOCAB = 32 };

/* A matrix made up on the fly, converted to `dt` row by row. */
typedef struct gen {
    et_dtype dt;
    int64_t rows, cols;
    unsigned seed;
} gen;

static ember_status produce_gen(void *ctx, gguf_sink *sink)
{
    const gen *g = ctx;
    float row[256];
    unsigned char out[1024];
    unsigned s = g->seed;
    for (int64_t r = 0; r < g->rows; r++) {
        for (int64_t c = 0; c < g->cols; c++) {
            s = s * 1103515245u + 12345u;
            row[c] = (float)((int)(s >> 16) % 2001 - 1000) / 4000.0f;
        }
        ek_format_of(g->dt)->from_f32(row, out, g->cols);
        ember_status st = gguf_sink_write(sink, out, ek_row_bytes(g->dt, g->cols));
        if (st) return st;
    }
    return EMBER_OK;
}

static float ones[64];

/* What to change in the file small_spark writes. */
typedef struct edit {
    const char *drop_key;    /* leave this key out */
    const char *drop_tensor; /* leave this tensor out */
    void (*more)(gguf_writer *w); /* add keys or tensors */
} edit;

static gen gens[32];

static ember_status small_spark(const char *path, et_dtype mat, const edit *e)
{
    static const uint8_t pattern[LAYERS] = {1, 0};
    static const char *const toks[VOCAB] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k",
                                            "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v",
                                            "w", "x", "y", "z", "0", "1", "2", "3", "4", "5"};
    gguf_writer *w;
    ember_status st = gguf_writer_create(&w);
    int n_gen = 0;
    for (int i = 0; i < 64; i++) ones[i] = 1.0f + (float)(i % 7) / 50.0f;
#define KEY(key, call) if (!st && !(e && e->drop_key && !strcmp(e->drop_key, key))) st = call
    KEY("general.architecture", gguf_set_str(w, "general.architecture", "spark2_5"));
    KEY("spark2_5.block_count", gguf_set_u32(w, "spark2_5.block_count", LAYERS));
    KEY("spark2_5.context_length", gguf_set_u32(w, "spark2_5.context_length", 256));
    KEY("spark2_5.embedding_length", gguf_set_u32(w, "spark2_5.embedding_length", H));
    KEY("spark2_5.feed_forward_length", gguf_set_u32(w, "spark2_5.feed_forward_length", INTER));
    KEY("spark2_5.attention.head_count", gguf_set_u32(w, "spark2_5.attention.head_count", HEADS));
    KEY("spark2_5.attention.head_count_kv", gguf_set_u32(w, "spark2_5.attention.head_count_kv", KV));
    KEY("spark2_5.attention.key_length", gguf_set_u32(w, "spark2_5.attention.key_length", HD));
    KEY("spark2_5.attention.layer_norm_rms_epsilon",
        gguf_set_f32(w, "spark2_5.attention.layer_norm_rms_epsilon", 1e-5f));
    KEY("spark2_5.attention.sliding_window", gguf_set_u32(w, "spark2_5.attention.sliding_window", 4));
    KEY("spark2_5.attention.sliding_window_pattern",
        gguf_set_arr(w, "spark2_5.attention.sliding_window_pattern", GGUF_TYPE_BOOL, pattern, LAYERS));
    KEY("spark2_5.rope.dimension_count", gguf_set_u32(w, "spark2_5.rope.dimension_count", 4));
    KEY("spark2_5.rope.freq_base", gguf_set_f32(w, "spark2_5.rope.freq_base", 5e6f));
    KEY("tokenizer.ggml.tokens", gguf_set_str_arr(w, "tokenizer.ggml.tokens", toks, NULL, VOCAB));
    KEY("tokenizer.ggml.eos_token_id", gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 3));
#undef KEY
    char name[64];
#define MAT(nm, r, c)                                                                       \
    if (!st && !(e && e->drop_tensor && !strcmp(e->drop_tensor, nm))) {                    \
        gens[n_gen] = (gen){mat, r, c, 7u + (unsigned)n_gen};                              \
        st = gguf_add_matrix(w, nm, mat, r, c, NULL, produce_gen, &gens[n_gen++]);         \
    }
#define VEC(nm, n)                                                                          \
    if (!st && !(e && e->drop_tensor && !strcmp(e->drop_tensor, nm)))                      \
        st = gguf_add_vector(w, nm, ET_F32, n, ones, NULL, NULL);
    MAT("token_embd.weight", VOCAB, H);
    VEC("output_norm.weight", H);
    for (int i = 0; i < LAYERS; i++) {
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", i); VEC(name, H);
        snprintf(name, sizeof name, "blk.%d.attn_qkv.weight", i); MAT(name, (HEADS + 2 * KV) * HD, H);
        snprintf(name, sizeof name, "blk.%d.attn_gate.weight", i); MAT(name, HEADS, H);
        snprintf(name, sizeof name, "blk.%d.attn_output.weight", i); MAT(name, H, HEADS * HD);
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", i); VEC(name, H);
        snprintf(name, sizeof name, "blk.%d.ffn_gate.weight", i); MAT(name, INTER, H);
        snprintf(name, sizeof name, "blk.%d.ffn_up.weight", i); MAT(name, INTER, H);
        snprintf(name, sizeof name, "blk.%d.ffn_down.weight", i); MAT(name, H, INTER);
    }
#undef MAT
#undef VEC
    if (!st && e && e->more) e->more(w);
    if (!st) st = gguf_write(w, path, NULL, NULL);
    gguf_writer_free(w);
    return st;
}

/* The metadata becomes the config the HF parser would have produced. */
static void test_hand_built_gguf_config(void)
{
    const char *path = tmp_path("small.gguf");
    gguf_file *f = NULL;
    char *json = NULL;
    size_t len = 0;
    spark_config c;
    REQUIRE(small_spark(path, ET_Q4_0, NULL) == EMBER_OK);
    REQUIRE(gguf_open(path, &f) == EMBER_OK);
    REQUIRE(spark_gguf_config_json(f, &json, &len) == EMBER_OK);
    gguf_close(f);
    REQUIRE(spark_config_parse(json, len, "synth", &c) == EMBER_OK);
    CHECK(c.n_layers == LAYERS && c.hidden == H && c.intermediate == INTER && c.vocab == VOCAB);
    CHECK(c.n_heads == HEADS && c.n_kv_heads == KV && c.head_dim == HD && c.max_positions == 256);
    CHECK(c.layer_type[0] == SPARK_SLIDING && c.layer_type[1] == SPARK_FULL && c.sliding_window == 4);
    CHECK(c.rope[SPARK_FULL].rot_dims == 4 && c.rope[SPARK_FULL].theta == 5e6f);
    /* defaults: the sliding layers rotate every dim, with the full layers' base */
    CHECK(c.rope[SPARK_SLIDING].rot_dims == HD && c.rope[SPARK_SLIDING].theta == 5e6f);
    CHECK(c.rms_eps == 1e-5f && c.gate == SPARK_GATE_SIGMOID && c.tie_embeddings);
    CHECK(!c.attention_bias && !c.mlp_bias && c.eos_id == 3 && c.bos_id == -1 && c.pad_id == -1);
    free(json);

    ember_model *m = check_load_model(path, EMBER_TYPE_NONE);
    REQUIRE(m);
    int n = 0;
    float *logits = run(m, &n);
    CHECK(logits && n == 4 * VOCAB);
    for (int i = 0; logits && i < n; i++) CHECK_MSG(logits[i] == logits[i], "NaN at %d", i);
    free(logits);
    ember_model_free(m);
}

/* rope.dimension_count / key_length becomes a partial_rotary_factor that the
 * config parser turns back into exactly that many rotated dims, for head
 * sizes that are not powers of two too. */
static ember_status rope_file(const char *path, uint32_t hd, uint32_t rot)
{
    static float embd[32 * 32];
    gguf_writer *w;
    ember_status st = gguf_writer_create(&w);
    if (!st) st = gguf_set_str(w, "general.architecture", "spark2_5");
    if (!st) st = gguf_set_u32(w, "spark2_5.block_count", 1);
    if (!st) st = gguf_set_u32(w, "spark2_5.context_length", 64);
    if (!st) st = gguf_set_u32(w, "spark2_5.embedding_length", 32);
    if (!st) st = gguf_set_u32(w, "spark2_5.feed_forward_length", 32);
    if (!st) st = gguf_set_u32(w, "spark2_5.attention.head_count", 1);
    if (!st) st = gguf_set_u32(w, "spark2_5.attention.key_length", hd);
    if (!st) st = gguf_set_f32(w, "spark2_5.attention.layer_norm_rms_epsilon", 1e-6f);
    if (!st) st = gguf_set_u32(w, "spark2_5.rope.dimension_count", rot);
    if (!st) st = gguf_add_matrix(w, "token_embd.weight", ET_F32, 32, 32, embd, NULL, NULL);
    if (!st) st = gguf_write(w, path, NULL, NULL);
    gguf_writer_free(w);
    return st;
}

static void test_rope_factor_exact(void)
{
    static const uint32_t hds[] = {6, 24, 80, 96, 112, 120, 144, 160, 192, 200, 250, 256, 320, 384};
    const char *path = tmp_path("rope.gguf");
    int bad = 0;
    for (size_t i = 0; i < sizeof hds / sizeof *hds; i++)
        for (uint32_t rot = 2; rot <= hds[i]; rot += 2 + 4 * (rot > 40)) {
            gguf_file *f = NULL;
            char *json = NULL;
            size_t len;
            spark_config c;
            REQUIRE(rope_file(path, hds[i], rot) == EMBER_OK && gguf_open(path, &f) == EMBER_OK);
            if (spark_gguf_config_json(f, &json, &len) || spark_config_parse(json, len, "r", &c) ||
                c.rope[SPARK_FULL].rot_dims != (int32_t)rot || c.rope[SPARK_SLIDING].rot_dims != (int32_t)hds[i])
                if (bad++ < 3) CHECK_MSG(0, "head_dim %u rot %u: %s", hds[i], rot, ember_last_error());
            free(json);
            gguf_close(f);
        }
}

static void add_llama_arch(gguf_writer *w) { gguf_set_str(w, "general.architecture", "llama"); }
static void add_string_block_count(gguf_writer *w) { gguf_set_str(w, "spark2_5.block_count", "2"); }
static void add_bad_kv_heads(gguf_writer *w) { gguf_set_u32(w, "spark2_5.attention.head_count_kv", 3); }
static void add_value_length(gguf_writer *w) { gguf_set_u32(w, "spark2_5.attention.value_length", 8); }
static void add_short_pattern(gguf_writer *w)
{
    static const uint8_t p[3] = {1, 1, 0};
    gguf_set_arr(w, "spark2_5.attention.sliding_window_pattern", GGUF_TYPE_BOOL, p, 3);
}
static void add_zero_rope(gguf_writer *w) { gguf_set_u32(w, "spark2_5.rope.dimension_count", 0); }
static void add_unknown_tensor(gguf_writer *w) { gguf_add_vector(w, "blk.0.attn_foo.weight", ET_F32, H, ones, NULL, NULL); }
static void add_far_layer(gguf_writer *w) { gguf_add_vector(w, "blk.7.attn_norm.weight", ET_F32, H, ones, NULL, NULL); }
static void add_short_vocab(gguf_writer *w)
{
    static const char *const t[3] = {"x", "y", "z"};
    gguf_set_str_arr(w, "tokenizer.ggml.tokens", t, NULL, 3);
}
static void add_bad_eos(gguf_writer *w) { gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 99); }

static void test_broken_files(void)
{
    static const struct {
        edit e;
        ember_status want;
        const char *msg;
    } cases[] = {
        {{"general.architecture", NULL, add_llama_arch}, EMBER_ERR_UNSUPPORTED,
         "general.architecture is 'llama', but ember reads only 'spark2_5'"},
        {{"general.architecture", NULL, NULL}, EMBER_ERR_FORMAT, "missing key 'general.architecture'"},
        {{"spark2_5.block_count", NULL, NULL}, EMBER_ERR_FORMAT,
         "missing key 'spark2_5.block_count' (expected uint32)"},
        {{"spark2_5.block_count", NULL, add_string_block_count}, EMBER_ERR_FORMAT,
         "key 'spark2_5.block_count' is string, expected uint32"},
        {{"spark2_5.attention.layer_norm_rms_epsilon", NULL, NULL}, EMBER_ERR_FORMAT,
         "missing key 'spark2_5.attention.layer_norm_rms_epsilon'"},
        {{"spark2_5.attention.head_count_kv", NULL, add_bad_kv_heads}, EMBER_ERR_FORMAT,
         "(spark2_5 metadata as config.json): key 'num_key_value_heads': must divide"},
        {{NULL, NULL, add_value_length}, EMBER_ERR_UNSUPPORTED, "value_length 8 differs from key_length 16"},
        {{"spark2_5.attention.sliding_window_pattern", NULL, add_short_pattern}, EMBER_ERR_FORMAT,
         "sliding_window_pattern' has 3 entries but block_count is 2"},
        {{"spark2_5.attention.sliding_window", NULL, NULL}, EMBER_ERR_FORMAT,
         "missing key 'spark2_5.attention.sliding_window'"},
        {{"spark2_5.rope.dimension_count", NULL, add_zero_rope}, EMBER_ERR_FORMAT, "rope.dimension_count"},
        {{NULL, NULL, add_unknown_tensor}, EMBER_ERR_FORMAT,
         "unknown tensor 'blk.0.attn_foo.weight' (not part of a spark2_5 model)"},
        {{NULL, NULL, add_far_layer}, EMBER_ERR_FORMAT,
         "unexpected tensor 'model.layers.7.input_layernorm.weight'"},
        {{NULL, "blk.1.ffn_up.weight", NULL}, EMBER_ERR_FORMAT,
         "missing tensor 'model.layers.1.mlp.up_proj.weight'"},
        {{NULL, "token_embd.weight", NULL}, EMBER_ERR_FORMAT, "missing tensor 'token_embd.weight'"},
        {{"tokenizer.ggml.tokens", NULL, add_short_vocab}, EMBER_ERR_FORMAT,
         "tokenizer.ggml.tokens has 3 tokens but token_embd.weight has 32 rows"},
        {{"tokenizer.ggml.eos_token_id", NULL, add_bad_eos}, EMBER_ERR_FORMAT, "eos_token_id"},
    };
    const char *path = tmp_path("broken.gguf");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ember_model *m = (ember_model *)1;
        REQUIRE(small_spark(path, ET_F32, &cases[i].e) == EMBER_OK);
        ember_status st = ember_model_load(path, NULL, &m);
        CHECK_MSG(st == cases[i].want && check_error_has(cases[i].msg) && check_error_has("broken.gguf") && m == NULL,
                  "case %zu: got '%s': %s (want '%s')", i, ember_status_name(st),
                  ember_last_error(), cases[i].msg);
        if (st == EMBER_OK) ember_model_free(m);
    }
    /* and the unedited file loads, keeping the file's dtype */
    ember_model *m = NULL;
    REQUIRE(small_spark(path, ET_F16, NULL) == EMBER_OK);
    REQUIRE((m = check_load_model(path, EMBER_TYPE_NONE)) != NULL);
    CHECK(m->cfg.tie_embeddings && m->embed.dtype == ET_F16);
    ember_model_free(m);
}

static void add_output(gguf_writer *w)
{
    static gen g = {ET_Q8_0, VOCAB, H, 99};
    gguf_add_matrix(w, "output.weight", ET_Q8_0, VOCAB, H, NULL, produce_gen, &g);
}

static void test_untied_output(void)
{
    const edit e = {NULL, NULL, add_output};
    const char *path = tmp_path("untied.gguf");
    REQUIRE(small_spark(path, ET_Q8_0, &e) == EMBER_OK);
    ember_model *m = check_load_model(path, EMBER_TYPE_NONE);
    REQUIRE(m);
    CHECK(!m->cfg.tie_embeddings && m->lm_head.data != m->embed.data && m->lm_head.dtype == ET_Q8_0);
    /* written back, the output tensor is kept */
    CHECK(spark_gguf_write(m, tmp_path("untied2.gguf"), quant_mix_single(ET_Q8_0), 0, NULL, NULL) == EMBER_OK);
    ember_model_free(m);
    gguf_file *f = NULL;
    REQUIRE(gguf_open(tmp_path("untied2.gguf"), &f) == EMBER_OK);
    CHECK(gguf_find_tensor(f, "output.weight") != NULL);
    gguf_close(f);
}

static void test_hf_names(void)
{
    char buf[128];
    CHECK(!strcmp(spark_gguf_hf_name("blk.12.attn_qkv.weight", buf, sizeof buf),
                  "model.layers.12.self_attn.q_k_v_proj.weight"));
    CHECK(!strcmp(spark_gguf_hf_name("blk.0.attn_gate.bias", buf, sizeof buf),
                  "model.layers.0.self_attn.g_proj.bias"));
    CHECK(!strcmp(spark_gguf_hf_name("output.weight", buf, sizeof buf), "lm_head.weight"));
    CHECK(spark_gguf_hf_name("blk.01.attn_norm.weight", buf, sizeof buf) == NULL);
    CHECK(spark_gguf_hf_name("blk.-1.attn_norm.weight", buf, sizeof buf) == NULL);
    CHECK(spark_gguf_hf_name("blk.1234567.attn_norm.weight", buf, sizeof buf) == NULL);
    CHECK(spark_gguf_hf_name("blk.1.attn_norm", buf, sizeof buf) == NULL);
    CHECK(spark_gguf_hf_name("token_embd.weight", buf, 8) == NULL); /* does not fit */
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];
    if (!d) return;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) rm_tree(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write-seeds")) {
        char path[512];
        snprintf(path, sizeof path, "%s/spark_small_q4_0.gguf", argv[2]);
        return small_spark(path, ET_Q4_0, NULL) != EMBER_OK;
    }
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/ember-gguf-spark-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        printf("FAIL setup: cannot create a temporary directory\n");
        return 1;
    }
    RUN(test_q8_0_matches_convert_at_load);
    RUN(test_q4_0_matches_convert_at_load);
    RUN(test_bf16_matches_source);
    RUN(test_f16_matches_convert_at_load);
    RUN(test_f32_matches_convert_at_load);
    RUN(test_interleaved_layout_same_logits);
    RUN(test_gguf_converts_at_load);
    RUN(test_requantize_same_type_is_identity);
    RUN(test_threads_write_the_same_bytes);
    RUN(test_cancel_leaves_no_file);
    RUN(test_synthesized_vocab);
    RUN(test_vocab_from_tokenizer_json);
    RUN(test_bad_tokenizer_json);
    RUN(test_hand_built_gguf_config);
    RUN(test_rope_factor_exact);
    RUN(test_broken_files);
    RUN(test_untied_output);
    RUN(test_hf_names);
    rm_tree(tmpdir);
    return check_summary();
}
