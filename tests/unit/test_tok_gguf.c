/* A GGUF file's tokenizer, chat template, end-of-turn ids and sampling
 * defaults, read back (text/tok_gguf.c, text/gguf_text.c):
 *   - models/tiny written by ember's GGUF writer reads back as exactly its
 *     tokenizer.json (the whole document) and tokenizes the same; its chat
 *     template and generation defaults come back too, through the public API;
 *   - a small hand-made vocab: control, user-defined and unused tokens,
 *     merges, BOS/EOS by pre-tokenizer default and by key;
 *   - every broken key: a named error, nothing leaked (run under SAN=1).
 *   test_tok_gguf --write-seeds DIR   writes fuzz seeds (GGUFs with a vocab). */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ember.h"
#include "io/gguf.h"
#include "llm/spark_gguf.h"
#include "template/chat.h"
#include "tokenizer/gguf_text.h"
#include "generate/textgen.h"
#include "tokenizer/tokenizer.h"

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char path[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", tmpdir, name);
    return path[k];
}

static const char *tiny(void)
{
    const char *d = getenv("EMBER_TEST_MODEL");
    return d && *d ? d : "models/tiny";
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[len] = '\0';
    *n = buf ? (size_t)len : 0;
    return buf;
}

/* ---- a small hand-made vocab ---------------------------------------------------------- */

/* 0-6 normal (byte-level: "Ġ" is the space), 7 and 10 control, 8
 * user-defined, 9 and 11 unused (one inside the id range, one past it). */
static const char *const TOKENS[] = {"a", "b", "c", "\xc4\xa0", "ab", "abc", "\xc4\xa0" "a",
                                     "<|im_end|>", "<x>", "[PAD9]", "<|endoftext|>", "[PAD11]"};
static const int32_t TYPES[] = {1, 1, 1, 1, 1, 1, 1, 3, 4, 5, 3, 5};
static const char *const MERGES[] = {"a b", "ab c", "\xc4\xa0 a"};
#define N_TOK (sizeof TOKENS / sizeof TOKENS[0])

/* What to write; a NULL / negative field leaves its key out. */
typedef struct spec {
    const char *model, *pre;
    const char *const *tokens;
    size_t n_tokens;
    const int32_t *types;
    size_t n_types;
    gguf_type types_as; /* the element type token_type is written as */
    const char *const *merges;
    size_t n_merges;
    int64_t bos, eos, eot;
    int add_bos, add_eos; /* -1: absent */
    const char *chat_template, *tool_use;
    double temp, top_k, top_p, penalty; /* < -1e9: absent */
    gguf_type temp_as;
} spec;

#define ABSENT (-1e10)

static spec base_spec(void)
{
    spec s = {"gpt2", "spark2_5", TOKENS, N_TOK, TYPES, N_TOK, GGUF_TYPE_INT32, MERGES, 3,
              10, 7, -1, -1, -1, "{{ messages[0]['content'] }}", NULL,
              ABSENT, ABSENT, ABSENT, ABSENT, GGUF_TYPE_FLOAT32};
    return s;
}

static ember_status write_spec(const spec *s, const char *path)
{
    gguf_writer *w = NULL;
    ember_status st = gguf_writer_create(&w);
    if (!st) st = gguf_set_str(w, "general.architecture", "spark2_5");
    if (!st && s->model) st = gguf_set_str(w, "tokenizer.ggml.model", s->model);
    if (!st && s->pre) st = gguf_set_str(w, "tokenizer.ggml.pre", s->pre);
    if (!st && s->tokens) st = gguf_set_str_arr(w, "tokenizer.ggml.tokens", s->tokens, NULL, s->n_tokens);
    if (!st && s->types) {
        if (s->types_as == GGUF_TYPE_INT32) {
            st = gguf_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, s->types, s->n_types);
        } else {
            uint8_t small[64];
            for (size_t i = 0; i < s->n_types && i < 64; i++) small[i] = (uint8_t)s->types[i];
            st = gguf_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_UINT8, small, s->n_types);
        }
    }
    if (!st && s->merges) st = gguf_set_str_arr(w, "tokenizer.ggml.merges", s->merges, NULL, s->n_merges);
    if (!st && s->bos >= 0) st = gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)s->bos);
    if (!st && s->eos >= 0) st = gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)s->eos);
    if (!st && s->eot >= 0) st = gguf_set_u32(w, "tokenizer.ggml.eot_token_id", (uint32_t)s->eot);
    if (!st && s->add_bos >= 0) st = gguf_set_bool(w, "tokenizer.ggml.add_bos_token", s->add_bos);
    if (!st && s->add_eos >= 0) st = gguf_set_bool(w, "tokenizer.ggml.add_eos_token", s->add_eos);
    if (!st && s->chat_template) st = gguf_set_str(w, "tokenizer.chat_template", s->chat_template);
    if (!st && s->tool_use) st = gguf_set_str(w, "tokenizer.chat_template.tool_use", s->tool_use);
    if (!st && s->temp > ABSENT)
        st = s->temp_as == GGUF_TYPE_FLOAT32 ? gguf_set_f32(w, "general.sampling.temp", (float)s->temp)
                                             : gguf_set_str(w, "general.sampling.temp", "hot");
    if (!st && s->top_k > ABSENT) st = gguf_set_i32(w, "general.sampling.top_k", (int32_t)s->top_k);
    if (!st && s->top_p > ABSENT) st = gguf_set_f32(w, "general.sampling.top_p", (float)s->top_p);
    if (!st && s->penalty > ABSENT) st = gguf_set_f32(w, "general.sampling.penalty_repeat", (float)s->penalty);
    if (!st) st = gguf_write(w, path, NULL, NULL);
    gguf_writer_free(w);
    return st;
}

/* The tokenizer of spec s, or NULL (the status in *st). */
static et_tokenizer *load_spec(const spec *s, ember_status *st)
{
    et_tokenizer *t = NULL;
    const char *path = tmp_path("spec.gguf");
    *st = write_spec(s, path);
    if (*st) {
        printf("     cannot write %s: %s\n", path, ember_last_error());
        return NULL;
    }
    *st = et_tokenizer_load(path, &t); /* the path every command takes */
    return t;
}

static void check_encode(const et_tokenizer *t, const char *text, bool special, const int32_t *want,
                         size_t n, int line)
{
    int32_t *ids = NULL;
    size_t got = 0;
    ember_status st = et_tokenizer_encode(t, text, strlen(text), special, &ids, &got);
    if (st || got != n || (n && memcmp(ids, want, n * sizeof *ids))) {
        char buf[200];
        size_t k = 0;
        for (size_t i = 0; i < got && k < sizeof buf - 16; i++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%d ", (int)ids[i]);
        buf[k] = '\0';
        check_report(__FILE__, line, "encode('%s'): got [%s] (status %d: %s)", text, buf, (int)st,
                     st ? ember_last_error() : "");
    }
    free(ids);
}
#define CHECK_ENCODE(t, text, special, ...)                                               \
    do {                                                                                  \
        const int32_t want_[] = {__VA_ARGS__};                                            \
        check_encode(t, text, special, want_, sizeof want_ / sizeof want_[0], __LINE__);  \
    } while (0)

static void test_small_vocab(void)
{
    spec s = base_spec();
    ember_status st;
    et_tokenizer *t = load_spec(&s, &st);
    CHECK_MSG(t, "load: %s", ember_last_error());
    if (!t) return;
    /* "abc" by two merges, " ab" as Ġ + ab, the control and user-defined
     * tokens matched whole, " a" by the third merge */
    CHECK_ENCODE(t, "abc ab<|im_end|>a<x> a", true, 5, 3, 4, 7, 0, 8, 6);
    CHECK_ENCODE(t, "<|endoftext|>", true, 10); /* spark2_5 adds no BOS */
    CHECK(et_tokenizer_is_special(t, 7) && et_tokenizer_is_special(t, 10));
    CHECK(!et_tokenizer_is_special(t, 8));
    /* unused 9 keeps its place (ids without holes), unused 11 past the last
     * used id is left out */
    CHECK(et_tokenizer_vocab_size(t) == 11);
    CHECK(et_tokenizer_token(t, 9) && !strcmp(et_tokenizer_token(t, 9), "[PAD9]"));
    CHECK(et_tokenizer_token(t, 11) == NULL);
    CHECK(et_tokenizer_find(t, "<x>") == 8);
    const int32_t ids[] = {5, 3, 4, 7, 0, 8};
    char *text = NULL;
    size_t len = 0;
    CHECK(et_tokenizer_decode(t, ids, 6, true, &text, &len) == EMBER_OK && text &&
          !strcmp(text, "abc aba<x>"));
    free(text);
    CHECK(et_tokenizer_decode(t, ids, 6, false, &text, &len) == EMBER_OK && text &&
          !strcmp(text, "abc ab<|im_end|>a<x>"));
    free(text);
    et_tokenizer_free(t);
}

static void test_bos_eos(void)
{
    ember_status st;
    spec s = base_spec();
    s.pre = "llama-bpe"; /* llama.cpp adds BOS by default for Llama 3 */
    et_tokenizer *t = load_spec(&s, &st);
    CHECK_MSG(t, "load: %s", ember_last_error());
    if (t) {
        CHECK_ENCODE(t, "abc", true, 10, 5);
        CHECK_ENCODE(t, "abc", false, 5);
        et_tokenizer_free(t);
    }
    s.add_bos = 0; /* the key wins over the default */
    if ((t = load_spec(&s, &st))) {
        CHECK_ENCODE(t, "abc", true, 5);
        et_tokenizer_free(t);
    } else {
        CHECK_MSG(0, "load: %s", ember_last_error());
    }
    s = base_spec();
    s.add_bos = 1;
    s.add_eos = 1;
    if ((t = load_spec(&s, &st))) {
        CHECK_ENCODE(t, "ab", true, 10, 4, 7);
        et_tokenizer_free(t);
    } else {
        CHECK_MSG(0, "load: %s", ember_last_error());
    }
    /* gpt-2, qwen2 and llama.cpp's default (no tokenizer.ggml.pre) load too */
    const char *pres[] = {"gpt-2", "qwen2", NULL};
    for (int i = 0; i < 3; i++) {
        s = base_spec();
        s.pre = pres[i];
        t = load_spec(&s, &st);
        CHECK_MSG(t, "pre %s: %s", pres[i] ? pres[i] : "(absent)", ember_last_error());
        if (t) CHECK_ENCODE(t, "abc ab", true, 5, 3, 4);
        et_tokenizer_free(t);
    }
}

/* Each broken variant of the base spec fails to load with `status` and a
 * message naming the key. */
static void expect_broken(const spec *s, ember_status status, const char *needle, int line)
{
    ember_status st;
    et_tokenizer *t = load_spec(s, &st);
    if (t || st != status || !check_error_has(needle))
        check_report(__FILE__, line, "want %s '%s', got %s: %s", ember_status_name(status), needle,
                     ember_status_name(st), ember_last_error());
    et_tokenizer_free(t);
}
#define EXPECT_BROKEN(s, status, needle) expect_broken(&(s), status, needle, __LINE__)

static void test_broken_keys(void)
{
    static const char *const no_space[] = {"a b", "abc"};
    static const char *const trailing[] = {"a "};
    static const char *const unknown_part[] = {"a z"};
    static const char *const bad_utf8[] = {"a", "b\xff", "c"};
    static const int32_t bad_type[] = {1, 1, 9};
    spec s = base_spec();
    s.model = NULL;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "tokenizer.ggml.model is missing");
    s = base_spec();
    s.model = "llama";
    EXPECT_BROKEN(s, EMBER_ERR_UNSUPPORTED, "tokenizer.ggml.model 'llama' is not supported");
    s = base_spec();
    s.pre = "klingon";
    EXPECT_BROKEN(s, EMBER_ERR_UNSUPPORTED, "tokenizer.ggml.pre 'klingon'");
    s = base_spec();
    s.tokens = NULL;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "missing key 'tokenizer.ggml.tokens'");
    s = base_spec();
    s.types = NULL;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "missing key 'tokenizer.ggml.token_type'");
    s = base_spec();
    s.merges = NULL;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "missing key 'tokenizer.ggml.merges'");
    s = base_spec();
    s.n_types = N_TOK - 1;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "token_type has 11 entries but tokenizer.ggml.tokens has 12");
    s = base_spec();
    s.types_as = GGUF_TYPE_UINT8;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "'tokenizer.ggml.token_type' is an array of uint8");
    s = base_spec();
    s.tokens = bad_utf8;
    s.n_tokens = s.n_types = 3;
    s.bos = s.eos = -1;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "tokenizer.ggml.tokens[1] is not valid UTF-8");
    s.tokens = TOKENS;
    s.types = bad_type;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "tokenizer.ggml.token_type[2] is 9");
    s = base_spec();
    s.merges = no_space;
    s.n_merges = 2;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "tokenizer.ggml.merges[1] 'abc' is not two tokens");
    s.merges = trailing;
    s.n_merges = 1;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "tokenizer.ggml.merges[0]");
    s.merges = unknown_part; /* the loader's check, under the GGUF's name */
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "spec.gguf: its tokenizer (tokenizer.ggml.*");
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "model.merges[0]: 'z' is not in the vocabulary");
    s = base_spec();
    s.bos = 99;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "tokenizer.ggml.bos_token_id is 99, but there are only 12 tokens");
    s = base_spec();
    s.pre = "llama-bpe";
    s.bos = -1;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "tokenizer.ggml.bos_token_id is missing");
    s = base_spec();
    s.n_tokens = s.n_types = 0;
    s.bos = s.eos = -1;
    EXPECT_BROKEN(s, EMBER_ERR_FORMAT, "tokenizer.ggml.tokens has 0 tokens");
}

/* ---- chat template, end-of-turn ids, sampling defaults -------------------------------- */

static gguf_file *open_spec(const spec *s)
{
    gguf_file *f = NULL;
    const char *path = tmp_path("meta.gguf");
    if (write_spec(s, path) || gguf_open(path, &f)) printf("     %s: %s\n", path, ember_last_error());
    return f;
}

static void test_chat_source(void)
{
    spec s = base_spec();
    s.tool_use = "tools: {{ tools | length }}";
    et_chat_source src;
    gguf_file *f = open_spec(&s);
    REQUIRE(f);
    CHECK(et_gguf_chat_source(f, &src) == EMBER_OK);
    CHECK(src.main && !strcmp(src.main, s.chat_template));
    CHECK(src.tool_use && !strcmp(src.tool_use, s.tool_use));
    CHECK(src.special[0] && !strcmp(src.special[0], "<|endoftext|>")); /* bos_token */
    CHECK(src.special[1] && !strcmp(src.special[1], "<|im_end|>"));    /* eos_token */
    CHECK(strstr(src.main_label, "tokenizer.chat_template"));
    et_chat_source_free(&src);
    gguf_close(f);

    /* through the path every command takes */
    et_chat_template *t = NULL;
    cJSON *msgs = cJSON_Parse("[{\"role\": \"user\", \"content\": \"hi\"}]");
    char *out = NULL;
    CHECK(et_chat_template_load(tmp_path("meta.gguf"), &t) == EMBER_OK);
    et_chat_input in = {msgs, NULL, true, -1, NULL};
    CHECK(t && et_chat_render(t, &in, &out) == EMBER_OK && out && !strcmp(out, "hi"));
    free(out);
    et_chat_template_free(t);
    cJSON_Delete(msgs);

    s = base_spec();
    s.chat_template = NULL;
    REQUIRE((f = open_spec(&s)) != NULL);
    EXPECT_FAIL(et_gguf_chat_source(f, &src), EMBER_ERR_IO, "no chat template (tokenizer.chat_template)");
    gguf_close(f);
    s.chat_template = "{% if %}";
    REQUIRE(write_spec(&s, tmp_path("badtmpl.gguf")) == EMBER_OK);
    EXPECT_FAIL(et_chat_template_load(tmp_path("badtmpl.gguf"), &t), EMBER_ERR_FORMAT,
                "badtmpl.gguf: tokenizer.chat_template");
    CHECK(t == NULL);
}

static void test_stop_ids(void)
{
    spec s = base_spec();
    int32_t ids[8];
    size_t n = 0;
    gguf_file *f = open_spec(&s);
    REQUIRE(f);
    /* eos first, then the end-of-turn tokens by name in id order */
    CHECK(et_gguf_stop_ids(f, ids, 8, &n) == EMBER_OK && n == 2 && ids[0] == 7 && ids[1] == 10);
    gguf_close(f);
    s.eos = 2;
    s.eot = 4;
    REQUIRE((f = open_spec(&s)) != NULL);
    CHECK(et_gguf_stop_ids(f, ids, 8, &n) == EMBER_OK && n == 4 && ids[0] == 2 && ids[1] == 4 &&
          ids[2] == 7 && ids[3] == 10);
    CHECK(et_gguf_stop_ids(f, ids, 3, &n) == EMBER_OK && n == 3); /* at most cap */
    gguf_close(f);
    /* through et_model_stop_ids with a path */
    CHECK(et_model_stop_ids(tmp_path("meta.gguf"), NULL, ids, 8, &n) == EMBER_OK && n == 4);
}

static void test_sampling_defaults(void)
{
    spec s = base_spec();
    et_sampler_params p;
    gguf_file *f = open_spec(&s);
    REQUIRE(f);
    et_sampler_params_default(&p);
    CHECK(et_gguf_sampling_defaults(f, &p) == EMBER_OK && p.temperature == 0.0f); /* no keys: greedy */
    gguf_close(f);
    s.temp = 0.5;
    s.top_k = 20;
    s.top_p = 0.75;
    s.penalty = 1.25;
    REQUIRE((f = open_spec(&s)) != NULL);
    et_sampler_params_default(&p);
    CHECK(et_gguf_sampling_defaults(f, &p) == EMBER_OK && p.temperature == 0.5f && p.top_k == 20 &&
          p.top_p == 0.75f && p.repetition_penalty == 1.25f);
    gguf_close(f);
    s.temp = 0; /* greedy, but the penalty still holds */
    REQUIRE((f = open_spec(&s)) != NULL);
    et_sampler_params_default(&p);
    CHECK(et_gguf_sampling_defaults(f, &p) == EMBER_OK && p.temperature == 0.0f && p.top_k == 0 &&
          p.repetition_penalty == 1.25f);
    gguf_close(f);
    s.temp_as = GGUF_TYPE_STRING;
    REQUIRE((f = open_spec(&s)) != NULL);
    EXPECT_FAIL(et_gguf_sampling_defaults(f, &p), EMBER_ERR_FORMAT,
                "key 'general.sampling.temp' is string, expected a number");
    gguf_close(f);
}

/* ---- models/tiny through ember's writer ------------------------------------------------ */

/* A GGUF of models/tiny (or of dir) written by ember. */
static int write_model_gguf(const char *dir, const char *path)
{
    ember_model_params mp = ember_model_default_params();
    ember_model *m = NULL;
    ember_status st = ember_model_load(dir, &mp, &m);
    if (!st) st = spark_gguf_write(m, path, quant_mix_single(ET_Q8_0), 0, NULL, NULL);
    if (st) printf("     %s -> %s: %s\n", dir, path, ember_last_error());
    ember_model_free(m);
    return st != EMBER_OK;
}

static void test_tiny_reads_back_as_its_tokenizer_json(void)
{
    char src[PATH_MAX], *text = NULL, *json = NULL;
    size_t n = 0, len = 0;
    gguf_file *f = NULL;
    const char *path = tmp_path("tiny.gguf");
    REQUIRE(write_model_gguf(tiny(), path) == 0);
    REQUIRE(gguf_open(path, &f) == EMBER_OK);
    snprintf(src, sizeof src, "%s/tokenizer.json", tiny());
    REQUIRE((text = slurp(src, &n)) != NULL);
    CHECK(et_tokenizer_json_from_gguf(f, &json, &len) == EMBER_OK && json && strlen(json) == len);
    cJSON *want = cJSON_Parse(text), *got = json ? cJSON_Parse(json) : NULL;
    CHECK(want && got);
    /* the whole document, component by component (a failure names which) */
    const cJSON *e;
    cJSON_ArrayForEach(e, want)
        CHECK_MSG(cJSON_Compare(e, cJSON_GetObjectItemCaseSensitive(got, e->string), true),
                  "'%s' differs from %s", e->string, src);
    CHECK(cJSON_GetArraySize(want) == cJSON_GetArraySize(got));
    cJSON_Delete(want);
    cJSON_Delete(got);
    free(json);
    free(text);
    gguf_close(f);

    /* and it tokenizes the same */
    et_tokenizer *a = NULL, *b = NULL;
    REQUIRE(et_tokenizer_load(tiny(), &a) == EMBER_OK);
    CHECK(et_tokenizer_load(path, &b) == EMBER_OK);
    static const char *const texts[] = {
        "Once upon a time, there was a curious girl called Lily.",
        "<|im_start|>user\nWhat's 12345 + 678?<|im_end|>\n<|im_start|>assistant\n<think>\n</think>\n",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "caf\xc3\xa9 na\xc3\xafve \xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x98\x80 \xe3\x81\x82\xe3\x82\xa2",
        "tabs\t\tand   spaces  \n\n\n  trailing   ", "3.14159 1,000,000 2026-12-01", ""};
    for (size_t i = 0; a && b && i < sizeof texts / sizeof texts[0]; i++) {
        int32_t *x = NULL, *y = NULL;
        size_t nx = 0, ny = 0;
        CHECK(et_tokenizer_encode(a, texts[i], strlen(texts[i]), true, &x, &nx) == EMBER_OK);
        CHECK(et_tokenizer_encode(b, texts[i], strlen(texts[i]), true, &y, &ny) == EMBER_OK);
        CHECK_MSG(nx == ny && (!nx || !memcmp(x, y, nx * sizeof *x)), "text %zu: %zu vs %zu ids", i, nx, ny);
        free(x);
        free(y);
    }
    CHECK(a && b && et_tokenizer_vocab_size(a) == et_tokenizer_vocab_size(b));
    et_tokenizer_free(a);
    et_tokenizer_free(b);
}

/* A directory of symlinks to models/tiny's files plus a generation_config.json. */
static int make_dir(const char *dir, const char *generation_config)
{
    static const char *const files[] = {"config.json", "model-00001-of-00002.safetensors",
                                        "model-00002-of-00002.safetensors",
                                        "model.safetensors.index.json", "tokenizer.json",
                                        "tokenizer_config.json"};
    char from[PATH_MAX + 64], to[PATH_MAX + 64], abs_tiny[PATH_MAX];
    if (mkdir(dir, 0755) || !realpath(tiny(), abs_tiny)) return -1;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(from, sizeof from, "%s/%s", abs_tiny, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        if (symlink(from, to)) return -1;
    }
    snprintf(to, sizeof to, "%s/generation_config.json", dir);
    FILE *f = fopen(to, "wb");
    if (!f) return -1;
    fputs(generation_config, f);
    return fclose(f);
}

static void check_public_api(const char *dir, const char *gguf)
{
    /* template, end-of-turn ids and generation defaults through include/ */
    ember_chat_template *ta = NULL, *tb = NULL;
    ember_tokenizer *tok = NULL;
    char *ra = NULL, *rb = NULL;
    const char *msgs = "[{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", "
                       "\"content\": \"Weather in Paris?\"}]";
    const char *tools = "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
                        "\"parameters\": {\"type\": \"object\"}}}]";
    CHECK(ember_chat_template_load(dir, &ta) == EMBER_OK);
    CHECK(ember_chat_template_load(gguf, &tb) == EMBER_OK);
    CHECK(ta && tb && ember_chat_template_render(ta, msgs, tools, NULL, &ra) == EMBER_OK &&
          ember_chat_template_render(tb, msgs, tools, NULL, &rb) == EMBER_OK && !strcmp(ra, rb));
    ember_free(ra);
    ember_free(rb);
    ember_chat_template_free(ta);
    ember_chat_template_free(tb);

    int32_t ia[16], ib[16];
    size_t na = 0, nb = 0;
    CHECK(ember_tokenizer_load(gguf, &tok) == EMBER_OK);
    CHECK(tok && ember_tokenizer_end_of_turn_ids(tok, dir, ia, 16, &na) == EMBER_OK &&
          ember_tokenizer_end_of_turn_ids(tok, gguf, ib, 16, &nb) == EMBER_OK);
    /* every id the directory ends a turn at, the GGUF does too */
    for (size_t i = 0; i < na; i++) {
        int found = 0;
        for (size_t j = 0; j < nb; j++) found |= ia[i] == ib[j];
        CHECK_MSG(found, "end-of-turn id %d of %s is missing from the GGUF", ia[i], dir);
    }
    CHECK(na > 0);
    ember_tokenizer_free(tok);

    ember_generate_params ga = ember_generate_default_params(), gb = ga;
    CHECK(ember_generate_params_from_model(dir, &ga) == EMBER_OK);
    CHECK(ember_generate_params_from_model(gguf, &gb) == EMBER_OK);
    CHECK_MSG(ga.temperature == gb.temperature && ga.top_k == gb.top_k && ga.top_p == gb.top_p &&
              ga.min_p == gb.min_p && ga.repetition_penalty == gb.repetition_penalty,
              "%s: temp %g/%g top_k %d/%d top_p %g/%g penalty %g/%g", dir, ga.temperature,
              gb.temperature, ga.top_k, gb.top_k, ga.top_p, gb.top_p, ga.repetition_penalty,
              gb.repetition_penalty);
}

static void test_writer_keeps_template_and_sampling(void)
{
    const char *sampled = tmp_path("sampled"), *greedy = tmp_path("greedy");
    REQUIRE(make_dir(sampled, "{\"do_sample\": true, \"temperature\": 0.6, \"top_k\": 20, "
                              "\"top_p\": 0.95, \"repetition_penalty\": 1.1, \"eos_token_id\": [505, 503]}") == 0);
    REQUIRE(make_dir(greedy, "{\"do_sample\": false, \"temperature\": 0.7, \"top_p\": 0.9, "
                             "\"repetition_penalty\": 1.05}") == 0);
    char gs[PATH_MAX], gg[PATH_MAX];
    snprintf(gs, sizeof gs, "%s", tmp_path("sampled.gguf"));
    snprintf(gg, sizeof gg, "%s", tmp_path("greedy.gguf"));
    REQUIRE(write_model_gguf(sampled, gs) == 0 && write_model_gguf(greedy, gg) == 0);
    check_public_api(sampled, gs);
    check_public_api(greedy, gg);
    ember_generate_params g = ember_generate_default_params();
    CHECK(ember_generate_params_from_model(gg, &g) == EMBER_OK && g.temperature == 0.0f &&
          g.repetition_penalty == 1.05f);
    /* the template text itself is stored, as tokenizer_config.json has it */
    gguf_file *f = NULL;
    et_chat_source a, b;
    REQUIRE(gguf_open(gs, &f) == EMBER_OK);
    CHECK(et_chat_source_load(tiny(), &a) == EMBER_OK && et_gguf_chat_source(f, &b) == EMBER_OK &&
          a.main && b.main && !strcmp(a.main, b.main));
    et_chat_source_free(&a);
    et_chat_source_free(&b);
    gguf_close(f);
    /* re-quantizing the GGUF keeps them */
    char again[PATH_MAX];
    snprintf(again, sizeof again, "%s", tmp_path("again.gguf"));
    REQUIRE(write_model_gguf(gs, again) == 0);
    check_public_api(sampled, again);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write-seeds")) {
        char path[512];
        spec s = base_spec();
        s.tool_use = "{{ tools }}";
        s.eot = 7;
        s.temp = 0.7;
        s.top_k = 40;
        snprintf(path, sizeof path, "%s/vocab_spark2_5.gguf", argv[2]);
        if (write_spec(&s, path)) return 1;
        s = base_spec();
        s.pre = "llama-bpe";
        s.add_eos = 1;
        snprintf(path, sizeof path, "%s/vocab_llama_bpe.gguf", argv[2]);
        return write_spec(&s, path) != EMBER_OK;
    }
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/ember-tok-gguf-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        printf("FAIL setup: cannot create a temporary directory\n");
        return 1;
    }
    RUN(test_small_vocab);
    RUN(test_bos_eos);
    RUN(test_broken_keys);
    RUN(test_chat_source);
    RUN(test_stop_ids);
    RUN(test_sampling_defaults);
    RUN(test_tiny_reads_back_as_its_tokenizer_json);
    RUN(test_writer_keeps_template_and_sampling);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) printf("     could not remove %s\n", tmpdir);
    return check_summary();
}
