/* A Qwen3-TTS model as one GGUF (src/tts/tts_gguf*.c): the name prefixes
 * both ways, files with bad metadata refused by key, and models/tts-tiny
 * written at q8_0 and loaded back: every matrix the talker, predictor and
 * speech decoder bind holds the bytes the directory load gives at q8_0, and
 * the profile's model info reads the file.
 *
 *   test_tts_gguf --write-seeds DIR   writes a qwen3_tts seed (fuzz/corpus/gguf). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "edge/model_info.h"
#include "io/gguf.h"
#include "io/read_file.h"
#include "kernels/formats.h"
#include "tts/code2wav.h"
#include "tts/qwen3_tts_load.h"
#include "tts/tts_gguf.h"

#define TINY "models/tts-tiny"

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

static void names_round_trip(void)
{
    static const char *const names[] = {
        "talker.code_predictor.model.layers.4.post_attention_layernorm.weight",
        "talker.code_predictor.lm_head.14.weight",
        "talker.model.layers.27.self_attn.q_proj.weight",
        "talker.text_projection.linear_fc1.bias",
        "speaker_encoder.blocks.3.res2net_block.blocks.6.conv.weight",
        "decoder.pre_transformer.layers.7.post_attention_layernorm.weight",
        "encoder.quantizer.acoustic_residual_vector_quantizer.layers.30.codebook.cluster_usage",
        "encoder.encoder_transformer.layers.7.mlp.fc1.weight",
    };
    char g[128], back[256];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        REQUIRE(tts_gguf_name(names[i], g, sizeof g));
        CHECK_MSG(strlen(g) < 64, "'%s' -> '%s' is too long for GGUF", names[i], g);
        CHECK_MSG(tts_gguf_hf_name(g, back, sizeof back) && !strcmp(back, names[i]), "'%s' -> '%s' -> '%s'",
                  names[i], g, back);
    }
    CHECK(!tts_gguf_name("model.layers.0.mlp.up_proj.weight", g, sizeof g));
    CHECK(!tts_gguf_name("talker.", g, sizeof g));
    CHECK(!tts_gguf_hf_name("blk.0.ffn_up.weight", back, sizeof back));
    CHECK(!tts_gguf_hf_name("tk.", back, sizeof back));
    CHECK(!tts_gguf_name("talker.model.norm.weight", g, 8)); /* does not fit */
}

/* A GGUF with architecture `arch`, the config key set (as a string, or as
 * a number when as_number), and one vector named `tensor`. */
static const char *write_meta(const char *file, const char *arch, const char *config, int as_number,
                              const char *tensor)
{
    static const float v[4] = {1, 2, 3, 4};
    gguf_writer *w;
    const char *path = tmp_path(file);
    if (gguf_writer_create(&w)) return NULL;
    ember_status st = gguf_set_str(w, "general.architecture", arch);
    if (!st && config) st = as_number ? gguf_set_u32(w, TTS_GGUF_KEY_CONFIG, 7)
                                      : gguf_set_strn(w, TTS_GGUF_KEY_CONFIG, config, strlen(config) + as_number);
    if (!st) st = gguf_add_vector(w, tensor, ET_F32, 4, v, NULL, NULL);
    if (!st) st = gguf_write(w, path, NULL, NULL);
    gguf_writer_free(w);
    return st ? NULL : path;
}

static void bad_metadata(void)
{
    char *config = NULL;
    size_t len = 0;
    char label[1200];
    ck_dir *ck = NULL;
    tts_model *m = NULL;
    REQUIRE(io_read_text_file(TINY "/config.json", 1 << 20, &config, &len) == EMBER_OK);
    const char *p;

    REQUIRE((p = write_meta("arch.gguf", "spark2_5", config, 0, "tk.norm.weight")));
    EXPECT_FAIL(tts_ck_open(p, TTS_PART_TALKER, &ck, label, sizeof label), EMBER_ERR_UNSUPPORTED,
                "general.architecture is 'spark2_5', but a speech model is a 'qwen3_tts' file");
    REQUIRE((p = write_meta("nokey.gguf", TTS_GGUF_ARCH, NULL, 0, "tk.norm.weight")));
    EXPECT_FAIL(tts_ck_open(p, TTS_PART_TALKER, &ck, label, sizeof label), EMBER_ERR_FORMAT,
                TTS_GGUF_KEY_CONFIG);
    REQUIRE((p = write_meta("number.gguf", TTS_GGUF_ARCH, config, 1, "tk.norm.weight")));
    EXPECT_FAIL(tts_ck_open(p, TTS_PART_TALKER, &ck, label, sizeof label), EMBER_ERR_FORMAT,
                TTS_GGUF_KEY_CONFIG);
    REQUIRE((p = write_meta("unknown.gguf", TTS_GGUF_ARCH, config, 0, "blk.0.attn_norm.weight")));
    EXPECT_FAIL(tts_ck_open(p, TTS_PART_TALKER, &ck, label, sizeof label), EMBER_ERR_FORMAT,
                "unknown tensor 'blk.0.attn_norm.weight'");
    /* the speech part's config is its own key */
    REQUIRE((p = write_meta("talker-only.gguf", TTS_GGUF_ARCH, config, 0, "tk.norm.weight")));
    EXPECT_FAIL(tts_ck_open(p, TTS_PART_SPEECH, &ck, label, sizeof label), EMBER_ERR_FORMAT,
                TTS_GGUF_KEY_DECODER);
    /* a well-formed file without the weights: the first one missing, by name */
    tts_model_params mp = {EMBER_TYPE_NONE, NULL};
    EXPECT_FAIL(tts_model_load(p, &mp, &m), EMBER_ERR_FORMAT, "talker.model.text_embedding.weight");
    CHECK(m == NULL);
    CHECK(ck == NULL);
    free(config);
}

static int same_matrix(const ek_matrix *a, const ek_matrix *b)
{
    return a->dtype == b->dtype && a->rows == b->rows && a->cols == b->cols && a->layout == b->layout &&
           !memcmp(a->data, b->data, (size_t)a->rows * ek_row_bytes(a->dtype, a->cols));
}

static int same_stack(const tts_stack *a, const tts_stack *b)
{
    for (int32_t i = 0; i < a->cfg->n_layers; i++) {
        const tts_layer *x = &a->layers[i], *y = &b->layers[i];
        if (!same_matrix(&x->wq, &y->wq) || !same_matrix(&x->wk, &y->wk) || !same_matrix(&x->wv, &y->wv) ||
            !same_matrix(&x->wo, &y->wo) || !same_matrix(&x->w_gate, &y->w_gate) ||
            !same_matrix(&x->w_up, &y->w_up) || !same_matrix(&x->w_down, &y->w_down) ||
            memcmp(x->attn_norm, y->attn_norm, sizeof(float) * (size_t)a->cfg->hidden))
            return 0;
    }
    return !memcmp(a->final_norm, b->final_norm, sizeof(float) * (size_t)a->cfg->hidden);
}

static void tiny_round_trip(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s", tmp_path("tiny.gguf"));
    size_t n = 0;
    REQUIRE(tts_gguf_write(TINY, path, ET_Q8_0, ET_F32, NULL, NULL, &n) == EMBER_OK);
    CHECK(n > 100);
    tts_model *a = NULL, *b = NULL;
    tts_model_params q8 = {EMBER_TYPE_Q8_0, NULL}, stored = {EMBER_TYPE_NONE, NULL};
    REQUIRE(tts_model_load(TINY, &q8, &a) == EMBER_OK);
    REQUIRE(tts_model_load(path, &stored, &b) == EMBER_OK);
    CHECK(same_matrix(&a->text_embed, &b->text_embed));
    CHECK(same_matrix(&a->text_fc1, &b->text_fc1));
    CHECK(same_matrix(&a->codec_head, &b->codec_head));
    CHECK(same_matrix(&a->codec_embed, &b->codec_embed));
    CHECK(same_matrix(&a->cp_head[3], &b->cp_head[3]));
    CHECK(same_stack(&a->talker, &b->talker));
    CHECK(same_stack(&a->predictor, &b->predictor));
    CHECK(!memcmp(&a->gen, &b->gen, sizeof a->gen));
    tts_model_free(a);
    tts_model_free(b);

    /* what the derived profile reads: a speech model, stored in q8_0 */
    edge_model_info info;
    REQUIRE(edge_model_info_load(path, &info) == EMBER_OK);
    CHECK(info.kind == EDGE_MODEL_TTS && info.stored_type == EMBER_TYPE_Q8_0 && info.weight_bytes > 0);

    c2w_model *da = NULL, *db = NULL;
    c2w_model_params dp = {EMBER_TYPE_F32, NULL, 1};
    REQUIRE(c2w_model_load(TINY, &dp, &da) == EMBER_OK);
    REQUIRE(c2w_model_load(path, &dp, &db) == EMBER_OK);
    CHECK(same_matrix(&da->in_proj, &db->in_proj));
    CHECK(same_stack(&da->transformer, &db->transformer));
    CHECK(da->cfg.sample_rate == db->cfg.sample_rate);
    const size_t book = (size_t)da->cfg.codebook_size * (size_t)da->cfg.vq_dim * sizeof(float);
    CHECK(!memcmp(da->codebooks[1], db->codebooks[1], book));
    c2w_model_free(da);
    c2w_model_free(db);

    /* half the file: refused by the reader, nothing left loaded */
    const char *half = tmp_path("half.gguf");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "head -c 3000000 '%s' > '%s'", path, half);
    REQUIRE(system(cmd) == 0);
    EXPECT_FAIL(tts_model_load(half, &stored, &a), EMBER_ERR_FORMAT, "half.gguf");
    CHECK(a == NULL);
}

/* A small qwen3_tts GGUF for the fuzzer's corpus: models/tts-tiny's
 * configs as the keys, one vector. */
static int write_seed(const char *dir)
{
    char *talker = NULL, *speech = NULL, path[1024];
    size_t n1 = 0, n2 = 0;
    static const float v[4] = {1, 2, 3, 4};
    gguf_writer *w = NULL;
    snprintf(path, sizeof path, "%s/qwen3_tts_configs.gguf", dir);
    ember_status st = io_read_text_file(TINY "/config.json", 1 << 20, &talker, &n1);
    if (!st) st = io_read_text_file(TINY "/speech_tokenizer/config.json", 1 << 20, &speech, &n2);
    if (!st) st = gguf_writer_create(&w);
    if (!st) st = gguf_set_str(w, "general.architecture", TTS_GGUF_ARCH);
    if (!st) st = gguf_set_strn(w, TTS_GGUF_KEY_CONFIG, talker, n1);
    if (!st) st = gguf_set_strn(w, TTS_GGUF_KEY_DECODER, speech, n2);
    if (!st) st = gguf_add_vector(w, "tk.norm.weight", ET_F32, 4, v, NULL, NULL);
    if (!st) st = gguf_write(w, path, NULL, NULL);
    gguf_writer_free(w);
    free(talker);
    free(speech);
    if (st) fprintf(stderr, "%s\n", ember_last_error());
    return st ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write-seeds")) return write_seed(argv[2]);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ember-test-tts-gguf-XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    RUN(names_round_trip);
    RUN(bad_metadata);
    RUN(tiny_round_trip);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_summary();
}
