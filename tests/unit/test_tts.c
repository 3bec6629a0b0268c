/* Qwen3-TTS: config.json / generation_config.json errors, the prompt layout
 * of spec §6, the M-RoPE reduction, and loader errors on checkpoints written
 * here in C (a complete tiny talker + predictor with small made-up ids, then
 * one mutation per case). This binary also runs under ASan+UBSan. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "kernels/ops.h"
#include "tts/qwen3_tts_config.h"
#include "tts/qwen3_tts_load.h"
#include "tts/tts_prompt.h"
#include "tts/tts_session.h"

/* Text ids 10..15, codec specials 70..76, languages 80..82, speakers 90..91. */
static const char base_config[] =
    "{\"model_type\": \"qwen3_tts\", \"im_start_token_id\": 10, \"im_end_token_id\": 11,\n"
    " \"assistant_token_id\": 12, \"tts_pad_token_id\": 13, \"tts_bos_token_id\": 14,\n"
    " \"tts_eos_token_id\": 15,\n"
    " \"talker_config\": {\"model_type\": \"qwen3_tts_talker\", \"hidden_size\": 32,\n"
    "  \"num_hidden_layers\": 1, \"intermediate_size\": 64, \"num_attention_heads\": 2,\n"
    "  \"num_key_value_heads\": 1, \"head_dim\": 16, \"vocab_size\": 96, \"rms_norm_eps\": 1e-06,\n"
    "  \"rope_theta\": 1000000, \"hidden_act\": \"silu\", \"attention_bias\": false,\n"
    "  \"rope_scaling\": {\"interleaved\": true, \"mrope_section\": [4, 2, 2], \"rope_type\": \"default\"},\n"
    "  \"text_hidden_size\": 8, \"text_vocab_size\": 64, \"num_code_groups\": 4,\n"
    "  \"codec_pad_id\": 70, \"codec_bos_id\": 71, \"codec_eos_token_id\": 72, \"codec_think_id\": 73,\n"
    "  \"codec_nothink_id\": 74, \"codec_think_bos_id\": 75, \"codec_think_eos_id\": 76,\n"
    "  \"codec_language_id\": {\"english\": 80, \"chinese\": 81, \"beijing_dialect\": 82},\n"
    "  \"spk_id\": {\"ryan\": 90, \"dylan\": 91},\n"
    "  \"spk_is_dialect\": {\"ryan\": false, \"dylan\": \"beijing_dialect\"},\n"
    "  \"code_predictor_config\": {\"model_type\": \"qwen3_tts_talker_code_predictor\",\n"
    "   \"hidden_size\": 32, \"num_hidden_layers\": 1, \"intermediate_size\": 32,\n"
    "   \"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": 16,\n"
    "   \"vocab_size\": 64, \"num_code_groups\": 4, \"rope_theta\": 1000000}}}\n";

static char *mutated(const char *from, const char *to)
{
    static char text[sizeof base_config + 512];
    const char *at = strstr(base_config, from);
    if (!at) {
        printf("     test bug: '%s' not in the base config\n", from);
        return NULL;
    }
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - base_config), base_config, to, at + strlen(from));
    return text;
}

static void parse_ok(tts_config *c)
{
    ember_status st = tts_config_parse(base_config, strlen(base_config), "config.json", c);
    CHECK_MSG(st == EMBER_OK, "%s", ember_last_error());
}

static void config_valid(void)
{
    tts_config c;
    parse_ok(&c);
    CHECK(c.talker.n_layers == 1 && c.talker.hidden == 32 && c.text_hidden == 8);
    CHECK(c.predictor.vocab == 64 && c.n_groups == 4 && c.codec_eos == 72);
    CHECK(c.n_languages == 3 && c.n_speakers == 2);
    int32_t dylan = tts_config_speaker(&c, "dylan");
    REQUIRE(dylan >= 0);
    CHECK(c.speakers[dylan].dialect == tts_config_language(&c, "beijing_dialect"));
    CHECK(c.speakers[tts_config_speaker(&c, "ryan")].dialect == -1);
    CHECK(tts_config_language(&c, "klingon") == -1);
}

static void expect_config_error(const char *from, const char *to, const char *needle)
{
    tts_config c;
    const char *text = mutated(from, to);
    REQUIRE(text);
    ember_status st = tts_config_parse(text, strlen(text), "config.json", &c);
    CHECK_MSG(st != EMBER_OK, "accepted %s -> %s", from, to);
    CHECK_MSG(strstr(ember_last_error(), needle), "message '%s' lacks '%s'", ember_last_error(), needle);
}

static void config_errors_name_the_key(void)
{
    expect_config_error("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", "talker_config.hidden_act");
    expect_config_error("\"num_code_groups\": 4, \"rope_theta\"", "\"num_code_groups\": 5, \"rope_theta\"",
                        "talker_config.code_predictor_config.num_code_groups");
    expect_config_error("\"num_key_value_heads\": 1, \"head_dim\": 16,\n   \"vocab_size\": 64",
                        "\"num_key_value_heads\": 3, \"head_dim\": 16,\n   \"vocab_size\": 64",
                        "code_predictor_config.num_key_value_heads");
    expect_config_error("\"mrope_section\": [4, 2, 2]", "\"mrope_section\": [4, 2, 1]", "mrope_section");
    expect_config_error("\"codec_bos_id\": 71", "\"codec_bos_id\": 960", "talker_config.codec_bos_id");
    expect_config_error("\"tts_pad_token_id\": 13", "\"tts_pad_token_id\": 64", "tts_pad_token_id");
    expect_config_error("\"im_end_token_id\": 11,", "", "im_end_token_id");
    expect_config_error("\"dylan\": \"beijing_dialect\"", "\"dylan\": \"martian\"", "spk_is_dialect");
    expect_config_error("\"spk_id\": {\"ryan\": 90", "\"spk_id\": {\"ryan\": \"x\"", "spk_id");
    expect_config_error("\"attention_bias\": false", "\"attention_bias\": true", "attention_bias");
    expect_config_error("\"model_type\": \"qwen3_tts\"", "\"model_type\": \"llama\"", "model_type");
    expect_config_error("\"code_predictor_config\": {", "\"code_predictor\": {", "code_predictor_config");
    tts_config c;
    CHECK(tts_config_parse("{\"talker_config\": ", 18, "config.json", &c) != EMBER_OK);
    CHECK(tts_config_parse("[1]", 3, "config.json", &c) != EMBER_OK);
}

static void generation_config(void)
{
    tts_gen_config g;
    tts_gen_config_default(&g);
    CHECK(g.min_new_tokens == 2 && g.talker.top_k == 50 && g.subtalker.do_sample);
    const char *real = "{\"do_sample\": true, \"repetition_penalty\": 1.05, \"temperature\": 0.9,"
                       " \"top_p\": 1.0, \"top_k\": 50, \"subtalker_dosample\": false,"
                       " \"subtalker_temperature\": 0.7, \"subtalker_top_p\": 0.8,"
                       " \"subtalker_top_k\": 20, \"max_new_tokens\": 8192}";
    REQUIRE(tts_gen_config_parse(real, strlen(real), "generation_config.json", &g) == EMBER_OK);
    CHECK(g.max_new_tokens == 8192 && !g.subtalker.do_sample && g.subtalker.top_k == 20);
    CHECK(fabsf(g.subtalker.temperature - 0.7f) < 1e-6f && fabsf(g.repetition_penalty - 1.05f) < 1e-6f);
    const char *bad = "{\"subtalker_top_k\": \"many\"}";
    CHECK(tts_gen_config_parse(bad, strlen(bad), "generation_config.json", &g) != EMBER_OK);
    CHECK(strstr(ember_last_error(), "subtalker_top_k") != NULL);
    const char *order = "{\"min_new_tokens\": 9, \"max_new_tokens\": 4}";
    CHECK(tts_gen_config_parse(order, strlen(order), "generation_config.json", &g) != EMBER_OK);
    CHECK(strstr(ember_last_error(), "min_new_tokens") != NULL);
}

/* <|im_start|>assistant\n t0 t1 t2 <|im_end|>\n<|im_start|>assistant\n, with 5 as "\n" */
static const int32_t ids3[] = {10, 12, 5, 20, 21, 22, 11, 5, 10, 12, 5};

static int row_is(const tts_prompt *p, size_t i, int32_t text, int32_t codec)
{
    return i < p->n_rows && p->rows[i].text == text && p->rows[i].codec == codec;
}

static void prompt_language_non_streaming(void)
{
    tts_config c;
    tts_prompt p;
    parse_ok(&c);
    REQUIRE(tts_prompt_build(&c, ids3, 11, tts_config_speaker(&c, "ryan"),
                             tts_config_language(&c, "english"), 0, &p) == EMBER_OK);
    CHECK(p.n_rows == 3 + 11); /* N + 11 */
    CHECK(row_is(&p, 0, 10, -1) && row_is(&p, 1, 12, -1) && row_is(&p, 2, 5, -1));
    /* think, think_bos, lang, think_eos, spk against tts_pad; pad against tts_bos */
    CHECK(row_is(&p, 3, 13, 73) && row_is(&p, 4, 13, 75) && row_is(&p, 5, 13, 80));
    CHECK(row_is(&p, 6, 13, 76) && row_is(&p, 7, 13, 90) && row_is(&p, 8, 14, 70));
    CHECK(row_is(&p, 9, 20, 70) && row_is(&p, 10, 21, 70) && row_is(&p, 11, 22, 70));
    CHECK(row_is(&p, 12, 15, 70) && row_is(&p, 13, 13, 71));
    CHECK(p.n_trailing == 0);
    tts_prompt_free(&p);
}

static void prompt_auto_and_dialect(void)
{
    tts_config c;
    tts_prompt p;
    parse_ok(&c);
    /* auto, no speaker: nothink, think_bos, think_eos, pad, bos */
    REQUIRE(tts_prompt_build(&c, ids3, 11, -1, -1, 0, &p) == EMBER_OK);
    CHECK(p.n_rows == 3 + 4 + 3 + 2);
    CHECK(row_is(&p, 3, 13, 74) && row_is(&p, 4, 13, 75) && row_is(&p, 5, 13, 76) && row_is(&p, 6, 14, 70));
    tts_prompt_free(&p);
    /* a dialect speaker under auto or chinese takes the dialect id; under english not */
    int32_t dylan = tts_config_speaker(&c, "dylan");
    REQUIRE(tts_prompt_build(&c, ids3, 11, dylan, -1, 0, &p) == EMBER_OK);
    CHECK(row_is(&p, 3, 13, 73) && row_is(&p, 5, 13, 82) && row_is(&p, 7, 13, 91));
    tts_prompt_free(&p);
    REQUIRE(tts_prompt_build(&c, ids3, 11, dylan, tts_config_language(&c, "chinese"), 0, &p) == EMBER_OK);
    CHECK(row_is(&p, 5, 13, 82));
    tts_prompt_free(&p);
    REQUIRE(tts_prompt_build(&c, ids3, 11, dylan, tts_config_language(&c, "english"), 0, &p) == EMBER_OK);
    CHECK(row_is(&p, 5, 13, 80));
    tts_prompt_free(&p);
}

static void prompt_streaming(void)
{
    tts_config c;
    tts_prompt p;
    parse_ok(&c);
    REQUIRE(tts_prompt_build(&c, ids3, 11, 0, 0, 1, &p) == EMBER_OK);
    CHECK(p.n_rows == 3 + 6 + 1);
    CHECK(row_is(&p, 9, 20, 71)); /* P(text_0) + E(bos) */
    CHECK(p.n_trailing == 3 && p.trailing[0] == 21 && p.trailing[1] == 22 && p.trailing[2] == 15);
    tts_prompt_free(&p);
}

/* The voice parts (spec qwen3-tts-voices.md section 4): the instruction's
 * rows, text alone, before everything (CustomVoice with an M-token
 * instruction: M+N+16 rows); a clone's x-vector in the speaker slot of the
 * streaming layout (10 rows with a language). */
static void prompt_voices(void)
{
    tts_config c;
    tts_prompt p;
    parse_ok(&c);
    const int32_t instruct[] = {10, 30, 5, 40, 41, 11, 5}; /* <|im_start|>user\n i1 i2 <|im_end|>\n */
    const tts_prompt_voice with_instruct = {instruct, 7, 0, NULL, 0, 0};
    REQUIRE(tts_prompt_build_voice(&c, ids3, 11, tts_config_speaker(&c, "ryan"), tts_config_language(&c, "english"),
                                   0, &with_instruct, &p) == EMBER_OK);
    CHECK(p.n_rows == 2 + 3 + 16);
    for (size_t i = 0; i < 7; i++) CHECK(row_is(&p, i, instruct[i], -1));
    CHECK(row_is(&p, 7, 10, -1) && row_is(&p, 14, 13, 90) && row_is(&p, 20, 13, 71));
    tts_prompt_free(&p);
    const tts_prompt_voice clone = {NULL, 0, 1, NULL, 0, 0};
    REQUIRE(tts_prompt_build_voice(&c, ids3, 11, -1, tts_config_language(&c, "english"), 1, &clone, &p) ==
            EMBER_OK);
    CHECK(p.n_rows == 10);
    CHECK(row_is(&p, 7, 13, TTS_CODEC_XVECTOR) && row_is(&p, 8, 14, 70) && row_is(&p, 9, 20, 71));
    tts_prompt_free(&p);
    CHECK(tts_prompt_build_voice(&c, ids3, 11, 0, 0, 1, &clone, &p) == EMBER_ERR_INVALID_ARG); /* both */
    const int32_t outside[] = {10, 64, 5};
    const tts_prompt_voice bad = {outside, 3, 0, NULL, 0, 0};
    CHECK(tts_prompt_build_voice(&c, ids3, 11, 0, 0, 0, &bad, &p) == EMBER_ERR_INVALID_ARG);
}

static void prompt_errors(void)
{
    tts_config c;
    tts_prompt p;
    parse_ok(&c);
    CHECK(tts_prompt_build(&c, ids3, 7, 0, 0, 0, &p) == EMBER_ERR_INVALID_ARG);
    int32_t wrong[11];
    memcpy(wrong, ids3, sizeof wrong);
    wrong[6] = 5; /* no <|im_end|> */
    CHECK(tts_prompt_build(&c, wrong, 11, 0, 0, 0, &p) == EMBER_ERR_INVALID_ARG);
    memcpy(wrong, ids3, sizeof wrong);
    wrong[4] = 64; /* outside the text vocabulary */
    CHECK(tts_prompt_build(&c, wrong, 11, 0, 0, 0, &p) == EMBER_ERR_INVALID_ARG);
    const int32_t empty[] = {10, 12, 5, 11, 5, 10, 12, 5};
    CHECK(tts_prompt_build(&c, empty, 8, 0, 0, 1, &p) == EMBER_ERR_INVALID_ARG);
    REQUIRE(tts_prompt_build(&c, empty, 8, 0, 0, 0, &p) == EMBER_OK);
    CHECK(p.n_rows == 3 + 6 + 2);
    tts_prompt_free(&p);
}

/* Interleaved M-RoPE (sections [24, 20, 20]) takes frequency j from the
 * height stream when j % 3 == 1 and j < 3 * 20, from the width stream when
 * j % 3 == 2 and j < 3 * 20, else from the temporal stream. The talker's
 * three streams are all the sequence index, so every pair rotates by
 * pos * inv_freq[j] whichever stream is picked: ek_rope_apply's 1-D NeoX
 * rotation. Written out in the general form and compared; with distinct
 * streams the two differ, so the comparison is not vacuous. */
static void mrope_general(float *z, const float *x, const float *inv, const int64_t streams[3])
{
    enum { D = 128, HALF = 64 };
    const int sections[3] = {24, 20, 20};
    for (int j = 0; j < HALF; j++) {
        int s = 0;
        if (j % 3 == 1 && j < 3 * sections[1]) s = 1;
        if (j % 3 == 2 && j < 3 * sections[2]) s = 2;
        float angle = (float)streams[s] * inv[j];
        float cj = cosf(angle), sj = sinf(angle), a = x[j], b = x[j + HALF];
        z[j] = a * cj - b * sj;
        z[j + HALF] = b * cj + a * sj;
    }
}

static void mrope_reduces_to_rope(void)
{
    enum { D = 128, HALF = 64 };
    float inv[HALF], cs[HALF], sn[HALF], x[D], y[D], z[D];
    ek_rope_inv_freq(inv, D, 1e6f);
    for (int i = 0; i < D; i++) x[i] = sinf(0.37f * (float)i) + 0.1f * (float)(i % 7);
    for (int64_t pos = 0; pos < 300; pos += 37) {
        const int64_t same_streams[3] = {pos, pos, pos};
        memcpy(y, x, sizeof x);
        ek_rope_cos_sin(cs, sn, inv, D, pos);
        ek_rope_apply(y, cs, sn, D);
        mrope_general(z, x, inv, same_streams);
        int same = 1;
        for (int i = 0; i < D; i++) same &= fabsf(y[i] - z[i]) <= 1e-6f * (1.0f + fabsf(z[i]));
        CHECK_MSG(same, "position %lld", (long long)pos);
    }
    const int64_t distinct[3] = {40, 3, 7};
    mrope_general(z, x, inv, distinct);
    memcpy(y, x, sizeof x);
    ek_rope_cos_sin(cs, sn, inv, D, 40);
    ek_rope_apply(y, cs, sn, D);
    float diff = 0.0f;
    for (int i = 0; i < D; i++) diff += fabsf(y[i] - z[i]);
    CHECK(diff > 1e-3f);
}

/* ---- loader errors on a checkpoint written here ------------------------ */

typedef struct tdef {
    char name[96];
    long long rows, cols;
} tdef;

static tdef tensors[160];
static int n_tensors;
static char dir[256];

static void add(long long rows, long long cols, const char *fmt, ...)
{
    tdef *t = &tensors[n_tensors++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->rows = rows;
    t->cols = cols;
}

static void stack_tensors(const char *prefix, long long hid, long long inter)
{
    const char *p = prefix;
    add(hid, 0, "%s.layers.0.input_layernorm.weight", p);
    add(hid, 0, "%s.layers.0.post_attention_layernorm.weight", p);
    add(32, hid, "%s.layers.0.self_attn.q_proj.weight", p);
    add(16, hid, "%s.layers.0.self_attn.k_proj.weight", p);
    add(16, hid, "%s.layers.0.self_attn.v_proj.weight", p);
    add(hid, 32, "%s.layers.0.self_attn.o_proj.weight", p);
    add(16, 0, "%s.layers.0.self_attn.q_norm.weight", p);
    add(16, 0, "%s.layers.0.self_attn.k_norm.weight", p);
    add(inter, hid, "%s.layers.0.mlp.gate_proj.weight", p);
    add(inter, hid, "%s.layers.0.mlp.up_proj.weight", p);
    add(hid, inter, "%s.layers.0.mlp.down_proj.weight", p);
    add(hid, 0, "%s.norm.weight", p);
}

static void model_tensors(void)
{
    n_tensors = 0;
    add(64, 8, "talker.model.text_embedding.weight");
    add(8, 8, "talker.text_projection.linear_fc1.weight");
    add(8, 0, "talker.text_projection.linear_fc1.bias");
    add(32, 8, "talker.text_projection.linear_fc2.weight");
    add(32, 0, "talker.text_projection.linear_fc2.bias");
    add(96, 32, "talker.model.codec_embedding.weight");
    add(96, 32, "talker.codec_head.weight");
    stack_tensors("talker.model", 32, 64);
    stack_tensors("talker.code_predictor.model", 32, 32);
    for (int g = 0; g < 3; g++) {
        add(64, 32, "talker.code_predictor.model.codec_embedding.%d.weight", g);
        add(64, 32, "talker.code_predictor.lm_head.%d.weight", g);
    }
}

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* F32 tensors of small pseudo-random values, so a session runs for real. */
static void write_weights(void)
{
    static char header[32768];
    size_t off = 0, used = (size_t)snprintf(header, sizeof header, "{\"__metadata__\": {\"format\": \"pt\"}");
    for (int i = 0; i < n_tensors; i++) {
        const tdef *t = &tensors[i];
        size_t bytes = 4 * (size_t)t->rows * (size_t)(t->cols ? t->cols : 1);
        if (t->cols)
            used += (size_t)snprintf(header + used, sizeof header - used,
                                     ", \"%s\": {\"dtype\": \"F32\", \"shape\": [%lld, %lld], "
                                     "\"data_offsets\": [%zu, %zu]}", t->name, t->rows, t->cols, off, off + bytes);
        else
            used += (size_t)snprintf(header + used, sizeof header - used,
                                     ", \"%s\": {\"dtype\": \"F32\", \"shape\": [%lld], "
                                     "\"data_offsets\": [%zu, %zu]}", t->name, t->rows, off, off + bytes);
        off += bytes;
    }
    used += (size_t)snprintf(header + used, sizeof header - used, "}");
    while (used % 8) header[used++] = ' ';
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((unsigned long long)used >> (8 * i));
    fwrite(len8, 1, 8, f);
    fwrite(header, 1, used, f);
    uint32_t state = 12345u;
    for (size_t i = 0; i < off / 4; i++) {
        state = state * 1664525u + 1013904223u;
        float v = ((float)(state >> 8) / 16777216.0f - 0.5f) * 0.5f;
        fwrite(&v, 4, 1, f);
    }
    fclose(f);
}

static void fresh_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/ember-tts-test-XXXXXX");
    if (!mkdtemp(dir)) dir[0] = '\0';
    model_tensors();
    write_file("config.json", base_config);
}

static void remove_dir(void)
{
    char path[512];
    const char *names[] = {"config.json", "model.safetensors", "generation_config.json"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void expect_load_error(const char *needle1, const char *needle2)
{
    tts_model *m = (tts_model *)&m;
    ember_status st = tts_model_load(dir, NULL, &m);
    CHECK_MSG(st != EMBER_OK, "loaded a broken checkpoint");
    CHECK(m == NULL);
    CHECK_MSG(strstr(ember_last_error(), needle1), "message '%s' lacks '%s'", ember_last_error(), needle1);
    if (needle2)
        CHECK_MSG(strstr(ember_last_error(), needle2), "message '%s' lacks '%s'", ember_last_error(), needle2);
    if (st == EMBER_OK) tts_model_free(m);
}

/* Loads, then runs a few frames in two sessions on one model: the same
 * seed gives the same frames, and every code is inside its codebook. */
static void valid_checkpoint_runs(void)
{
    fresh_dir();
    write_weights();
    tts_model *m = NULL;
    tts_model_params mp = {EMBER_TYPE_NONE, NULL};
    ember_status st = tts_model_load(dir, &mp, &m);
    CHECK_MSG(st == EMBER_OK, "%s", ember_last_error());
    if (m) {
        CHECK(!m->has_mtp && m->gen.min_new_tokens == 2);
        tts_session_params sp = tts_session_default_params();
        sp.n_threads = 2;
        sp.max_context = 64;
        tts_session *a = NULL, *b = NULL;
        REQUIRE(tts_session_create(m, &sp, &a) == EMBER_OK);
        if (tts_session_create(m, &sp, &b) != EMBER_OK) {
            tts_session_free(a);
            tts_model_free(m);
            REQUIRE(0);
        }
        tts_request rq = {ids3, 11, "ryan", "english", 0, 0, 7, 5, 0, NULL, NULL, 0, NULL, NULL, 0, NULL, 0};
        int32_t ca[5][4], cb[5][4];
        int done_a = 0, done_b = 0, na = 0, nb = 0;
        CHECK(tts_session_start(a, &rq) == EMBER_OK && tts_session_start(b, &rq) == EMBER_OK);
        while (na < 5 && tts_session_step(a, NULL, ca[na], &done_a) == EMBER_OK && !done_a) na++;
        while (nb < 5 && tts_session_step(b, NULL, cb[nb], &done_b) == EMBER_OK && !done_b) nb++;
        CHECK(na >= 2 && na == nb); /* EOS is banned for the first 2 frames */
        CHECK(!memcmp(ca, cb, (size_t)na * sizeof ca[0]));
        for (int f = 0; f < na; f++)
            for (int g = 0; g < 4; g++) CHECK(ca[f][g] >= 0 && ca[f][g] < 64);
        const float *lg = tts_session_talker_logits(a);
        CHECK(lg && isfinite(lg[0]) && tts_session_predictor_logits(a, 2) != NULL);
        CHECK(tts_session_predictor_logits(a, 3) == NULL);
        /* bad requests are refused with the name at fault */
        tts_request bad = rq;
        bad.speaker = "nobody";
        CHECK(tts_session_start(a, &bad) == EMBER_ERR_INVALID_ARG);
        CHECK(strstr(ember_last_error(), "nobody") != NULL);
        bad = rq;
        bad.language = "elvish";
        CHECK(tts_session_start(a, &bad) == EMBER_ERR_INVALID_ARG);
        int32_t force[4] = {1, 2, 3, 64};
        CHECK(tts_session_start(a, &rq) == EMBER_OK);
        CHECK(tts_session_step(a, force, ca[0], &done_a) == EMBER_ERR_INVALID_ARG);
        tts_session_free(a);
        tts_session_free(b);
        tts_model_free(m);
    }
    remove_dir();
}

static void missing_tensor(void)
{
    fresh_dir();
    for (int i = 0; i < n_tensors; i++)
        if (strstr(tensors[i].name, "lm_head.2.")) tensors[i] = tensors[--n_tensors];
    write_weights();
    expect_load_error("missing tensor", "talker.code_predictor.lm_head.2.weight");
    remove_dir();
}

static void misshaped_tensor(void)
{
    fresh_dir();
    for (int i = 0; i < n_tensors; i++)
        if (!strcmp(tensors[i].name, "talker.model.layers.0.self_attn.k_norm.weight")) tensors[i].rows = 8;
    write_weights();
    expect_load_error("talker.model.layers.0.self_attn.k_norm.weight", "has shape [8]");
    remove_dir();
}

static void unexpected_tensor(void)
{
    fresh_dir();
    add(32, 32, "talker.code_predictor.small_to_mtp_projection.weight");
    write_weights();
    expect_load_error("small_to_mtp_projection", NULL);
    remove_dir();
}

static void bad_generation_config(void)
{
    fresh_dir();
    write_weights();
    write_file("generation_config.json", "{\"top_k\": -3}");
    expect_load_error("generation_config.json", "top_k");
    remove_dir();
}

static void missing_config(void)
{
    fresh_dir();
    write_weights();
    write_file("config.json", "{\"model_type\": \"qwen3_tts\"}");
    expect_load_error("talker_config", NULL);
    remove_dir();
}

int main(void)
{
    RUN(config_valid);
    RUN(config_errors_name_the_key);
    RUN(generation_config);
    RUN(prompt_language_non_streaming);
    RUN(prompt_auto_and_dialect);
    RUN(prompt_streaming);
    RUN(prompt_voices);
    RUN(prompt_errors);
    RUN(mrope_reduces_to_rope);
    RUN(valid_checkpoint_runs);
    RUN(missing_tensor);
    RUN(misshaped_tensor);
    RUN(unexpected_tensor);
    RUN(bad_generation_config);
    RUN(missing_config);
    return check_summary();
}
