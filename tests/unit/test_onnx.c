/* The ONNX writer (src/onnx/onnx_graph.c) read back through protobuf-c, the
 * op audit on graphs with each fault it must catch, and the exporter's
 * error paths. Parity through ONNX Runtime is tests/e2e/onnx.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ember_export.h"
#include "io/read_file.h"
#include "llm/spark.h"
#include "onnx.pb-c.h"
#include "onnx/onnx_audit.h"
#include "onnx/onnx_graph.h"
#include "onnx/spark_decode_graph.h"

static char dir[64];

static const char *path_in(const char *name)
{
    static char p[2][256];
    static int which;
    which ^= 1;
    snprintf(p[which], sizeof p[which], "%s/%s", dir, name);
    return p[which];
}

static const char *model_dir(void)
{
    const char *d = getenv("EMBER_TEST_MODEL");
    return d ? d : "models/tiny";
}

/* x [1, 32] @ W [32, 32] -> y; W (1024 floats) goes to the data file. */
static og_graph *small_graph(void)
{
    og_graph *g;
    if (og_create("small", path_in("small.data"), "small.data", &g)) return NULL;
    static float w[32 * 32];
    for (int i = 0; i < 32 * 32; i++) w[i] = (float)i * 0.25f;
    const int64_t xd[2] = {1, 32}, wd[2] = {32, 32};
    const char *in[2] = {og_input(g, "x", OG_FLOAT, 2, xd), og_init_f32(g, "w", 2, wd, w)};
    og_node_named(g, "MatMul", "y", 2, in, 0, NULL);
    og_output(g, "y", OG_FLOAT, 2, xd);
    return g;
}

/* What the last audit reported, line after line. */
static char report[8192];

static void collect(void *user, const char *line)
{
    size_t used = strlen(report);
    (void)user;
    snprintf(report + used, sizeof report - used, "%s\n", line);
}

static ember_status audit_file(const char *name)
{
    report[0] = '\0';
    char *bytes;
    size_t len;
    ember_status st = io_read_text_file(path_in(name), (size_t)1 << 24, &bytes, &len);
    if (st) return st;
    st = onnx_audit((const uint8_t *)bytes, len, name, collect, NULL);
    free(bytes);
    return st;
}

static void writer_round_trips(void)
{
    og_graph *g = small_graph();
    REQUIRE(g);
    REQUIRE(og_write(g, path_in("small.onnx"), 8, 17, "test") == EMBER_OK);
    og_free(g);
    char *bytes, *data;
    size_t len, data_len;
    REQUIRE(io_read_text_file(path_in("small.onnx"), 1 << 20, &bytes, &len) == EMBER_OK);
    REQUIRE(io_read_text_file(path_in("small.data"), 1 << 20, &data, &data_len) == EMBER_OK);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, (const uint8_t *)bytes);
    REQUIRE(m && m->graph);
    CHECK(m->ir_version == 8);
    CHECK(m->n_opset_import == 1 && m->opset_import[0]->version == 17);
    CHECK(m->graph->n_node == 1 && !strcmp(m->graph->node[0]->op_type, "MatMul"));
    CHECK(m->graph->n_input == 1 && m->graph->input[0]->type->tensor_type->shape->n_dim == 2);
    REQUIRE(m->graph->n_initializer == 1);
    const Onnx__TensorProto *w = m->graph->initializer[0];
    CHECK(w->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL);
    REQUIRE(w->n_external_data == 3);
    CHECK(!strcmp(w->external_data[0]->value, "small.data"));
    long offset = atol(w->external_data[1]->value), length = atol(w->external_data[2]->value);
    CHECK(offset % 4096 == 0);
    CHECK(length == 32 * 32 * 4);
    REQUIRE((size_t)(offset + length) <= data_len);
    float v;
    memcpy(&v, data + offset + 4 * 100, sizeof v);
    CHECK(v == 25.0f);
    onnx__model_proto__free_unpacked(m, NULL);
    free(bytes);
    free(data);
    CHECK(audit_file("small.onnx") == EMBER_OK);
}

static void writer_error_is_sticky(void)
{
    og_graph *g = small_graph();
    REQUIRE(g);
    const int64_t a[2] = {1, 2}, b[2] = {2, 1};
    og_init_i64(g, "shape", 2, a);
    CHECK(og_init_i64(g, "shape", 2, a)[0] != '\0'); /* same values: shared */
    CHECK(og_init_i64(g, "shape", 2, b)[0] == '\0');
    EXPECT_FAIL(og_write(g, path_in("bad.onnx"), 8, 17, "test"), EMBER_ERR_INVALID_ARG, "redefined");
    og_free(g);
    CHECK(access(path_in("bad.onnx"), F_OK) != 0);
    CHECK(access(path_in("small.data"), F_OK) != 0); /* the data file of a graph never written */
}

/* One node of `op` between a [1, 4] input and output, plus an int64
 * initializer "p" (values pv) for ops that take parameters. */
static ember_status audit_one(const char *op, int n_in, const char *const *in, int in_type,
                              int n_attr, const og_attr *attrs)
{
    og_graph *g;
    if (og_create("one", path_in("one.data"), "one.data", &g)) return EMBER_ERR_IO;
    const int64_t d[2] = {1, 4}, pv[2] = {1, 4};
    og_input(g, "x", in_type, 2, d);
    og_init_i64(g, "p", 2, pv);
    og_node_named(g, op, "y", n_in, in, n_attr, attrs);
    og_output(g, "y", OG_FLOAT, 2, d);
    ember_status st = og_write(g, path_in("one.onnx"), 8, 17, "test");
    og_free(g);
    return st ? st : audit_file("one.onnx");
}

/* The audit failed and reported `needle` as a finding. */
#define EXPECT_FINDING(call, needle)                                                          \
    do {                                                                                      \
        CHECK((call) == EMBER_ERR_UNSUPPORTED);                                               \
        CHECK_MSG(strstr(report, "FAIL: ") && strstr(report, needle), "no '%s' in:\n%s",      \
                  needle, report);                                                            \
    } while (0)

static void audit_catches_each_fault(void)
{
    const char *x[1] = {"x"}, *xp[2] = {"x", "p"}, *xx[3] = {"x", "x", "x"};
    const og_attr zero = {"allowzero", OG_ATTR_INT, 1, 0, NULL, 0};
    CHECK(audit_one("Sigmoid", 1, x, OG_FLOAT, 0, NULL) == EMBER_OK);
    CHECK(audit_one("Reshape", 2, xp, OG_FLOAT, 0, NULL) == EMBER_OK);
    EXPECT_FINDING(audit_one("Reshape", 2, xp, OG_FLOAT, 1, &zero), "allowzero=1");
    EXPECT_FINDING(audit_one("Where", 3, xx, OG_FLOAT, 0, NULL), "Where guard");
    EXPECT_FINDING(audit_one("IsNaN", 1, x, OG_FLOAT, 0, NULL), "IsNaN guard");
    EXPECT_FINDING(audit_one("Relu", 1, x, OG_FLOAT, 0, NULL), "allow-list");
    EXPECT_FINDING(audit_one("Erf", 1, x, OG_FLOAT, 0, NULL), "GELU pattern");
    EXPECT_FINDING(audit_one("Sigmoid", 1, x, OG_INT64, 0, NULL), "int64");
    const char *gx[2] = {"p", "x"}; /* a Gather whose indices are an int64 input */
    EXPECT_FINDING(audit_one("Gather", 2, gx, OG_INT64, 0, NULL), "int64 indices");
    const char *rx[2] = {"x", "x"}; /* a Reshape whose shape is not a constant */
    EXPECT_FINDING(audit_one("Reshape", 2, rx, OG_FLOAT, 0, NULL), "not an initializer");
}

static void audit_rejects_bytes_that_are_not_onnx(void)
{
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x80};
    EXPECT_FAIL(onnx_audit(junk, sizeof junk, "junk", NULL, NULL), EMBER_ERR_FORMAT, "junk");
    EXPECT_FAIL(onnx_audit(junk, 0, "empty", NULL, NULL), EMBER_ERR_FORMAT, "no graph");
}

static void layout_sizes_caches_by_type(void)
{
    spark_config c;
    memset(&c, 0, sizeof c);
    c.sliding_window = 512;
    c.max_positions = 4096;
    c.n_layers = 2;
    c.layer_type[1] = SPARK_FULL;
    c.rope[SPARK_SLIDING].rot_dims = 256;
    c.rope[SPARK_FULL].rot_dims = 64;
    spark_decode_layout lay;
    REQUIRE(spark_decode_layout_of(&c, 4096, &lay) == EMBER_OK);
    CHECK(lay.slots[SPARK_SLIDING] == 511 && lay.slots[SPARK_FULL] == 4095);
    CHECK(lay.half[SPARK_SLIDING] == 128 && lay.half[SPARK_FULL] == 32);
    REQUIRE(spark_decode_layout_of(&c, 100, &lay) == EMBER_OK);
    CHECK(lay.slots[SPARK_SLIDING] == 99); /* a bucket smaller than the window */
    EXPECT_FAIL(spark_decode_layout_of(&c, 4097, &lay), EMBER_ERR_INVALID_ARG, "context 4097");
    EXPECT_FAIL(spark_decode_layout_of(&c, 1, &lay), EMBER_ERR_INVALID_ARG, "context 1");
}

static void export_writes_and_refuses(void)
{
    ember_model *m;
    REQUIRE(ember_model_load(model_dir(), NULL, &m) == EMBER_OK);
    ember_export_params p = ember_export_default_params();
    CHECK(p.context == 1024);
    p.context = 64;
    p.prefill_chunk = 16;
    const char *out = path_in("x");
    REQUIRE(ember_export_onnx(m, out, &p) == EMBER_OK);
    CHECK(ember_export_onnx_check(out, NULL, NULL) == EMBER_OK);
    report[0] = '\0';
    CHECK(ember_export_onnx_check(out, collect, NULL) == EMBER_OK);
    CHECK(strstr(report, "input past_key_3 float32 [2,32,63]") || strcmp(model_dir(), "models/tiny"));
    CHECK(strstr(report, "findings: none") != NULL);
    p.context = 1;
    const char *out2 = path_in("y");
    EXPECT_FAIL(ember_export_onnx(m, out2, &p), EMBER_ERR_INVALID_ARG, "context 1");
    CHECK(access(out2, F_OK) != 0);
    EXPECT_FAIL(ember_export_onnx(NULL, out2, NULL), EMBER_ERR_INVALID_ARG, "NULL");
    EXPECT_FAIL(ember_export_onnx_check(out2, NULL, NULL), EMBER_ERR_IO, "manifest.json");
    ember_model_free(m);

    /* the model's backend option: refused clearly, nothing leaked */
    ember_model_params mp = ember_model_default_params();
    char backend[300];
    mp.backend = "gpu";
    EXPECT_FAIL(ember_model_load(model_dir(), &mp, &m), EMBER_ERR_INVALID_ARG, "expected cpu or onnx:DIR");
    mp.backend = "onnx:";
    EXPECT_FAIL(ember_model_load(model_dir(), &mp, &m), EMBER_ERR_INVALID_ARG, "expected cpu or onnx:DIR");
    snprintf(backend, sizeof backend, "onnx:%s", out2);
    mp.backend = backend;
    EXPECT_FAIL(ember_model_load(model_dir(), &mp, &m), EMBER_ERR_IO, "manifest.json");
    snprintf(backend, sizeof backend, "onnx:%s", out);
    mp.onnx_runtime = path_in("no-such-libonnxruntime.so");
    REQUIRE(ember_model_load(model_dir(), &mp, &m) == EMBER_OK);
    ember_session *s = NULL;
    EXPECT_FAIL(ember_session_create(m, NULL, &s), EMBER_ERR_IO, "cannot load");
    CHECK(s == NULL);
    ember_model_free(m);
    /* tidy the folder for the next case */
    remove(path_in("x/decode.onnx"));
    remove(path_in("x/weights.onnx.data"));
    remove(path_in("x/prefill.onnx"));
    remove(path_in("x/manifest.json"));
    rmdir(out);
}

static void export_refuses_tanh_gelu(void)
{
    ember_model_params mp = ember_model_default_params();
    mp.gelu = EMBER_GELU_TANH;
    ember_model *m;
    REQUIRE(ember_model_load(model_dir(), &mp, &m) == EMBER_OK);
    const char *out = path_in("t");
    EXPECT_FAIL(ember_export_onnx(m, out, NULL), EMBER_ERR_UNSUPPORTED, "erf GELU");
    CHECK(access(out, F_OK) != 0); /* refused before anything was created */
    ember_model_free(m);
}

/* The Qwen3-TTS steps: both graphs audited clean with the I/O the host
 * loop binds; bad contexts, forms the widths cannot take and bad backends
 * refused with nothing left behind. */
static void tts_export_writes_and_refuses(void)
{
    ember_tts_params tp = ember_tts_default_params();
    tp.codes_only = 1;
    ember_tts *t;
    REQUIRE(ember_tts_load("models/tts-tiny", &tp, &t) == EMBER_OK);
    ember_export_params p = ember_export_default_params();
    p.context = 64;
    p.prefill_chunk = 8;
    const char *out = path_in("tts");
    REQUIRE(ember_export_onnx_tts(t, out, &p) == EMBER_OK);
    report[0] = '\0';
    CHECK(ember_export_onnx_check(out, collect, NULL) == EMBER_OK);
    CHECK(strstr(report, "input past_key_2 float32 [2,16,63]") != NULL);      /* talker: 3 layers */
    CHECK(strstr(report, "input past_value_1 float32 [2,15,16]") != NULL);    /* predictor: 15 slots */
    CHECK(strstr(report, "input head int32 [1]") != NULL);
    CHECK(strstr(report, "output hidden float32 [1,32]") != NULL);
    CHECK(strstr(report, "input chunk_mask float32 [8,1,8]") != NULL);       /* the talker chunk */
    CHECK(strstr(report, "output new_value_0 float32 [2,8,16]") != NULL);
    const char *out2 = path_in("tts2");
    p.context = 1;
    EXPECT_FAIL(ember_export_onnx_tts(t, out2, &p), EMBER_ERR_INVALID_ARG, "context 1");
    p.context = 64;
    p.prefill_chunk = 65;
    EXPECT_FAIL(ember_export_onnx_tts(t, out2, &p), EMBER_ERR_INVALID_ARG, "chunk 65");
    p.prefill_chunk = 8;
    p.form = EMBER_EXPORT_QDQ4; /* tiny widths are not multiples of 64 */
    EXPECT_FAIL(ember_export_onnx_tts(t, out2, &p), EMBER_ERR_UNSUPPORTED, "multiples of 64");
    p.form = (ember_export_form)7;
    EXPECT_FAIL(ember_export_onnx_tts(t, out2, &p), EMBER_ERR_INVALID_ARG, "unknown form");
    EXPECT_FAIL(ember_export_onnx_tts(NULL, out2, &p), EMBER_ERR_INVALID_ARG, "NULL");
    CHECK(access(out2, F_OK) != 0);
    ember_tts_free(t);

    /* the speech model's backend option */
    char backend[300];
    tp.backend = "gpu";
    EXPECT_FAIL(ember_tts_load("models/tts-tiny", &tp, &t), EMBER_ERR_INVALID_ARG, "expected cpu or onnx:DIR");
    snprintf(backend, sizeof backend, "onnx:%s", out2);
    tp.backend = backend;
    EXPECT_FAIL(ember_tts_load("models/tts-tiny", &tp, &t), EMBER_ERR_IO, "manifest.json");
    snprintf(backend, sizeof backend, "onnx:%s", out);
    tp.onnx_runtime = path_in("no-such-libonnxruntime.so");
    EXPECT_FAIL(ember_tts_load("models/tts-tiny", &tp, &t), EMBER_ERR_IO, "cannot load");
    CHECK(t == NULL);
    const char *files[] = {"tts/talker.onnx", "tts/predictor.onnx", "tts/talker_prefill.onnx",
                           "tts/weights.onnx.data", "tts/manifest.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) remove(path_in(files[i]));
    rmdir(out);
}

/* The speech decoder's streaming graphs beside the talker's: one per
 * default chunk size, audited clean, every state tensor an input with a
 * next_ output of the same shape, the chunk's codes int32. */
static char dec_report[1 << 18];

static void collect_dec(void *user, const char *line)
{
    size_t used = strlen(dec_report);
    (void)user;
    snprintf(dec_report + used, sizeof dec_report - used, "%s\n", line);
}

static void tts_export_writes_decoder_graphs(void)
{
    ember_tts_params tp = ember_tts_default_params();
    tp.warm_up = 0;
    ember_tts *t;
    REQUIRE(ember_tts_load("models/tts-tiny", &tp, &t) == EMBER_OK);
    ember_export_params p = ember_export_default_params();
    p.context = 64;
    p.prefill_chunk = 0;
    const char *out = path_in("ttsdec");
    REQUIRE(ember_export_onnx_tts(t, out, &p) == EMBER_OK);
    ember_tts_free(t);
    dec_report[0] = '\0';
    CHECK(ember_export_onnx_check(out, collect_dec, NULL) == EMBER_OK);
    /* tiny decoder: 2 layers of 4 x 16, window 72, blocks 64 -> 4 channels */
    static const char *const want[] = {
        "graph ", "code2wav_25.onnx", "input codes int32 [25,16]", "input mask float32 [25,1,96]",
        "input cos float32 [1,1,8]", "input ring_key_1 float32 [4,16,71]",
        "output next_ring_value_1 float32 [4,71,16]", "input hist_pre_conv float32 [1,16,2]",
        "input carry_block_0 float32 [1,64,1]", "output next_carry_block_0 float32 [1,64,1]",
        "output next_hist_block_3_unit_2 float32 [1,4,54]", "output pcm float32 [48000]",
        "output pcm float32 [1920]"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(dec_report, want[i])) {
            fprintf(stderr, "  missing in the audit report: %s\n", want[i]);
            CHECK(0);
        }
    const char *files[] = {"ttsdec/talker.onnx", "ttsdec/predictor.onnx", "ttsdec/weights.onnx.data",
                           "ttsdec/manifest.json", "ttsdec/code2wav_1.onnx", "ttsdec/code2wav_2.onnx",
                           "ttsdec/code2wav_4.onnx", "ttsdec/code2wav_8.onnx", "ttsdec/code2wav_16.onnx",
                           "ttsdec/code2wav_25.onnx"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) CHECK(remove(path_in(files[i])) == 0);
    rmdir(out);
}

/* A data file shared by graphs stores a tensor once per name and bytes. */
static void data_file_stores_shared_tensors_once(void)
{
    og_data *d;
    REQUIRE(og_data_open(path_in("shared.data"), "shared.data", &d) == EMBER_OK);
    static float a[1500], b[1500];
    for (int i = 0; i < 1500; i++) a[i] = b[i] = (float)i;
    b[1499] = -1;
    uint64_t oa = 1, oa2 = 2, ob = 3, oc = 4;
    CHECK(og_data_put(d, "w", a, sizeof a, &oa) == EMBER_OK);
    CHECK(og_data_put(d, "w", a, sizeof a, &oa2) == EMBER_OK);
    CHECK(og_data_put(d, "w", b, sizeof b, &ob) == EMBER_OK); /* same name, other bytes */
    CHECK(og_data_put(d, "v", a, sizeof a, &oc) == EMBER_OK); /* same bytes, other name */
    CHECK(oa == 0 && oa2 == 0);
    CHECK(ob == 8192 && oc == 16384); /* each new tensor at the next 4096 boundary */
    CHECK(og_data_close(d) == EMBER_OK);
    struct stat st;
    CHECK(stat(path_in("shared.data"), &st) == 0 && st.st_size == 16384 + (off_t)sizeof a);
    remove(path_in("shared.data"));
}

/* The prefill graph adds no weight bytes: it refers to the decode step's. */
static void prefill_graph_shares_the_weights(void)
{
    ember_model *m;
    REQUIRE(ember_model_load(model_dir(), NULL, &m) == EMBER_OK);
    ember_export_params p = ember_export_default_params();
    p.context = 64;
    p.prefill_chunk = 0;
    struct stat alone, both;
    REQUIRE(ember_export_onnx(m, path_in("a"), &p) == EMBER_OK);
    CHECK(stat(path_in("a/weights.onnx.data"), &alone) == 0);
    CHECK(access(path_in("a/prefill.onnx"), F_OK) != 0);
    p.prefill_chunk = 8;
    REQUIRE(ember_export_onnx(m, path_in("a"), &p) == EMBER_OK);
    CHECK(stat(path_in("a/weights.onnx.data"), &both) == 0);
    CHECK(access(path_in("a/prefill.onnx"), F_OK) == 0);
    CHECK(alone.st_size > 0 && both.st_size == alone.st_size);
    CHECK(ember_export_onnx_check(path_in("a"), NULL, NULL) == EMBER_OK);
    ember_model_free(m);
    const char *files[] = {"a/decode.onnx", "a/prefill.onnx", "a/weights.onnx.data", "a/manifest.json"};
    for (int i = 0; i < 4; i++) remove(path_in(files[i]));
    rmdir(path_in("a"));
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/ember-onnx-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    RUN(writer_round_trips);
    RUN(writer_error_is_sticky);
    RUN(audit_catches_each_fault);
    RUN(audit_rejects_bytes_that_are_not_onnx);
    RUN(layout_sizes_caches_by_type);
    RUN(export_writes_and_refuses);
    RUN(export_refuses_tanh_gelu);
    RUN(tts_export_writes_and_refuses);
    RUN(tts_export_writes_decoder_graphs);
    RUN(data_file_stores_shared_tensors_once);
    RUN(prefill_graph_shares_the_weights);
    remove(path_in("small.onnx"));
    remove(path_in("small.data"));
    remove(path_in("one.onnx"));
    remove(path_in("one.data"));
    rmdir(dir);
    return check_summary();
}
