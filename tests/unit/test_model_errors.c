/* Every malformed checkpoint gets a clear error that names the file, tensor
 * or key at fault, returns no model, and leaks nothing (this binary also runs
 * under ASan+UBSan). The checkpoints are written here, in C, independently
 * of the Python generator: a small but complete Spark-X2.5 directory, then
 * one mutation per case. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ember.h"

enum { HIDDEN = 32, HEADS = 2, KV = 1, HD = 16, INTER = 64, VOCAB = 64, LAYERS = 2 };

static const char base_config[] =
    "{\"architectures\": [\"Spark2_5ForCausalLM\"], \"model_type\": \"spark2_5\",\n"
    " \"hidden_size\": 32, \"num_hidden_layers\": 2, \"num_attention_heads\": 2,\n"
    " \"num_key_value_heads\": 1, \"head_dim\": 16, \"intermediate_size\": 64,\n"
    " \"vocab_size\": 64, \"sliding_window\": 4, \"max_position_embeddings\": 256,\n"
    " \"layer_types\": [\"sliding_attention\", \"full_attention\"],\n"
    " \"rope_parameters\": {\"full_attention\": {\"rope_theta\": 5000000, \"partial_rotary_factor\": 0.25},\n"
    "                       \"sliding_attention\": {\"rope_theta\": 10000}},\n"
    " \"rms_norm_eps\": 1e-06, \"hidden_act\": \"gelu\", \"headwise_attn_output_gate\": true,\n"
    " \"gate_attn_act_mode\": \"sigmoid\", \"attention_bias\": false, \"mlp_bias\": false,\n"
    " \"tie_word_embeddings\": true, \"bos_token_id\": 0, \"eos_token_id\": 1, \"pad_token_id\": 2}\n";

typedef struct tensor_def {
    char name[96];
    const char *dtype;
    int n_dims;
    long long shape[2];
} tensor_def;

static tensor_def tensors[64];
static int n_tensors;

static void add(const char *dtype, long long rows, long long cols, const char *fmt, ...)
{
    tensor_def *t = &tensors[n_tensors++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->dtype = dtype;
    t->n_dims = cols ? 2 : 1;
    t->shape[0] = rows;
    t->shape[1] = cols;
}

static void model_tensors(void)
{
    n_tensors = 0;
    add("BF16", VOCAB, HIDDEN, "model.embedding.weight");
    add("BF16", HIDDEN, 0, "model.norm.weight");
    for (int i = 0; i < LAYERS; i++) {
        add("BF16", HIDDEN, 0, "model.layers.%d.input_layernorm.weight", i);
        add("BF16", (HEADS + 2 * KV) * HD, HIDDEN, "model.layers.%d.self_attn.q_k_v_proj.weight", i);
        add("BF16", HEADS, HIDDEN, "model.layers.%d.self_attn.g_proj.weight", i);
        add("BF16", HIDDEN, HEADS * HD, "model.layers.%d.self_attn.out_proj.weight", i);
        add("BF16", HIDDEN, 0, "model.layers.%d.post_attention_layernorm.weight", i);
        add("BF16", INTER, HIDDEN, "model.layers.%d.mlp.gate_proj.weight", i);
        add("BF16", INTER, HIDDEN, "model.layers.%d.mlp.up_proj.weight", i);
        add("BF16", HIDDEN, INTER, "model.layers.%d.mlp.down_proj.weight", i);
    }
}

static size_t dtype_bytes(const char *dt)
{
    return !strcmp(dt, "F32") ? 4 : !strcmp(dt, "F64") ? 8 : 2;
}

static char dir[256];

static void write_text(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

/* Writes model.safetensors from `tensors`. `end_delta` shifts the last
 * tensor's end offset (past the end of the file); `cut` drops that many bytes
 * from the end of the file. */
static void write_weights(long long end_delta, size_t cut)
{
    static char header[16384];
    size_t off = 0, used = 0;
    used += (size_t)snprintf(header + used, sizeof header - used, "{\"__metadata__\": {\"format\": \"pt\"}");
    for (int i = 0; i < n_tensors; i++) {
        tensor_def *t = &tensors[i];
        size_t bytes = dtype_bytes(t->dtype) * (size_t)t->shape[0] * (size_t)(t->n_dims == 2 ? t->shape[1] : 1);
        long long end = (long long)(off + bytes) + (i == n_tensors - 1 ? end_delta : 0);
        used += (size_t)snprintf(header + used, sizeof header - used,
                                 ", \"%s\": {\"dtype\": \"%s\", \"shape\": [%lld%s", t->name,
                                 t->dtype, t->shape[0], t->n_dims == 2 ? ", " : "");
        if (t->n_dims == 2)
            used += (size_t)snprintf(header + used, sizeof header - used, "%lld", t->shape[1]);
        used += (size_t)snprintf(header + used, sizeof header - used,
                                 "], \"data_offsets\": [%zu, %lld]}", off, end);
        off += bytes;
    }
    used += (size_t)snprintf(header + used, sizeof header - used, "}");
    while (used % 8) header[used++] = ' ';
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((unsigned long long)used >> (8 * i));
    fwrite(len8, 1, 8, f);
    fwrite(header, 1, used, f);
    /* bf16 0x3f80 = 1.0 in every element: any value works for loading. */
    size_t data = off > cut ? off - cut : 0;
    for (size_t i = 0; i < data; i++) fputc(i % 2 ? 0x3f : 0x80, f);
    fclose(f);
}

static void fresh_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/ember-model-errors-XXXXXX");
    if (!mkdtemp(dir)) dir[0] = '\0';
    model_tensors();
}

static void remove_dir(void)
{
    char path[512];
    const char *names[] = {"config.json", "model.safetensors"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* Loads the directory and checks the failure status and message. */
static void expect_error(ember_status want, const char *needle1, const char *needle2)
{
    ember_model *m = (ember_model *)&m; /* must be reset to NULL */
    ember_status st = ember_model_load(dir, NULL, &m);
    CHECK_MSG(st == want, "status %s, expected %s (%s)", ember_status_name(st),
              ember_status_name(want), ember_last_error());
    CHECK(m == NULL);
    CHECK_MSG(strstr(ember_last_error(), needle1), "message '%s' lacks '%s'", ember_last_error(), needle1);
    if (needle2)
        CHECK_MSG(strstr(ember_last_error(), needle2), "message '%s' lacks '%s'", ember_last_error(), needle2);
    if (st == EMBER_OK) ember_model_free(m);
}

/* Writes config (with `from` replaced by `to` when given) and weights. */
static void with_config(const char *from, const char *to)
{
    static char text[sizeof base_config + 256];
    const char *at = from ? strstr(base_config, from) : NULL;
    if (from && !at) {
        printf("     test bug: '%s' not in the base config\n", from);
        snprintf(text, sizeof text, "%s", base_config);
    } else if (at) {
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - base_config), base_config, to, at + strlen(from));
    } else {
        snprintf(text, sizeof text, "%s", base_config);
    }
    write_text("config.json", text);
}

static void valid_checkpoint_loads(void)
{
    fresh_dir();
    with_config(NULL, NULL);
    write_weights(0, 0);
    ember_model *m = NULL;
    CHECK_MSG(ember_model_load(dir, NULL, &m) == EMBER_OK, "%s", ember_last_error());
    CHECK(ember_model_vocab_size(m) == VOCAB && ember_model_n_layers(m) == LAYERS);
    ember_model_free(m);
    remove_dir();
}

static void missing_tensor(void)
{
    fresh_dir();
    with_config(NULL, NULL);
    tensors[4] = tensors[--n_tensors]; /* drop layer 0's g_proj */
    write_weights(0, 0);
    expect_error(EMBER_ERR_FORMAT, "missing tensor", "model.layers.0.self_attn.g_proj.weight");
    remove_dir();
}

static void extra_tensor(void)
{
    fresh_dir();
    with_config(NULL, NULL);
    add("BF16", 4, 0, "model.layers.0.self_attn.kv_sharpen.weight");
    write_weights(0, 0);
    expect_error(EMBER_ERR_FORMAT, "unexpected tensor", "kv_sharpen");
    remove_dir();
}

static void wrong_shape(void)
{
    fresh_dir();
    with_config(NULL, NULL);
    tensors[3].shape[0] -= HD; /* q_k_v_proj of layer 0 one head short */
    write_weights(0, 0);
    expect_error(EMBER_ERR_FORMAT, "q_k_v_proj.weight", "shape [48, 32]");
    remove_dir();
}

static void unsupported_dtype(void)
{
    fresh_dir();
    with_config(NULL, NULL);
    tensors[1].dtype = "F64";
    write_weights(0, 0);
    expect_error(EMBER_ERR_UNSUPPORTED, "F64", "model.norm.weight");
    remove_dir();
}

static void truncated_file(void)
{
    fresh_dir();
    with_config(NULL, NULL);
    write_weights(0, 100);
    expect_error(EMBER_ERR_FORMAT, "model.safetensors", NULL);
    remove_dir();
}

static void offsets_past_the_end(void)
{
    fresh_dir();
    with_config(NULL, NULL);
    write_weights(64, 0);
    expect_error(EMBER_ERR_FORMAT, "model.safetensors", NULL);
    remove_dir();
}

static void missing_weights(void)
{
    fresh_dir();
    with_config(NULL, NULL);
    expect_error(EMBER_ERR_IO, "model.safetensors", NULL);
    remove_dir();
}

static void missing_config(void)
{
    fresh_dir();
    write_weights(0, 0);
    expect_error(EMBER_ERR_IO, "config.json", NULL);
    remove_dir();
}

static void bad_json_config(void)
{
    fresh_dir();
    with_config("\"vocab_size\": 64,", "\"vocab_size\": 64,,");
    write_weights(0, 0);
    expect_error(EMBER_ERR_FORMAT, "config.json", "not valid JSON");
    remove_dir();
}

typedef struct config_case {
    const char *from, *to;
    ember_status status;
    const char *key;
} config_case;

static void unsupported_config_values(void)
{
    static const config_case cases[] = {
        {"\"hidden_act\": \"gelu\"", "\"hidden_act\": \"silu\"", EMBER_ERR_UNSUPPORTED, "hidden_act"},
        {"\"model_type\": \"spark2_5\"", "\"model_type\": \"llama\"", EMBER_ERR_UNSUPPORTED, "model_type"},
        {"\"gate_attn_act_mode\": \"sigmoid\"", "\"gate_attn_act_mode\": \"tanh\"", EMBER_ERR_UNSUPPORTED, "gate_attn_act_mode"},
        {"\"tie_word_embeddings\": true", "\"tie_word_embeddings\": true, \"key_value_binding_sharpening\": true", EMBER_ERR_UNSUPPORTED, "key_value_binding_sharpening"},
        {"\"tie_word_embeddings\": true", "\"tie_word_embeddings\": true, \"gsq_int4\": true", EMBER_ERR_UNSUPPORTED, "gsq_int4"},
        {"\"tie_word_embeddings\": true", "\"tie_word_embeddings\": true, \"quantization_config\": {}", EMBER_ERR_UNSUPPORTED, "quantization_config"},
        {"\"rope_theta\": 10000", "\"rope_theta\": 10000, \"rope_type\": \"yarn\"", EMBER_ERR_UNSUPPORTED, "rope_type"},
        {"\"partial_rotary_factor\": 0.25", "\"partial_rotary_factor\": 1.5", EMBER_ERR_FORMAT, "partial_rotary_factor"},
        {"[\"sliding_attention\", \"full_attention\"]", "[\"full_attention\"]", EMBER_ERR_FORMAT, "layer_types"},
        {"[\"sliding_attention\", \"full_attention\"]", "[\"sliding_attention\", \"linear_attention\"]", EMBER_ERR_UNSUPPORTED, "layer_types"},
        {"\"num_key_value_heads\": 1", "\"num_key_value_heads\": 3", EMBER_ERR_FORMAT, "num_key_value_heads"},
        {"\"hidden_size\": 32,", "", EMBER_ERR_FORMAT, "hidden_size"},
        {"\"hidden_size\": 32", "\"hidden_size\": 32.5", EMBER_ERR_FORMAT, "hidden_size"},
        {"\"hidden_size\": 32", "\"hidden_size\": -32", EMBER_ERR_UNSUPPORTED, "hidden_size"},
        {"\"sliding_window\": 4", "\"sliding_window\": 1", EMBER_ERR_UNSUPPORTED, "sliding_window"},
        {"\"rms_norm_eps\": 1e-06", "\"rms_norm_eps\": \"small\"", EMBER_ERR_FORMAT, "rms_norm_eps"},
        {"\"attention_bias\": false", "\"attention_bias\": \"no\"", EMBER_ERR_FORMAT, "attention_bias"},
        {"\"eos_token_id\": 1", "\"eos_token_id\": 640", EMBER_ERR_FORMAT, "eos_token_id"},
        {"\"rope_parameters\": {", "\"rope_parameters_old\": {", EMBER_ERR_FORMAT, "rope_parameters"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fresh_dir();
        with_config(cases[i].from, cases[i].to);
        write_weights(0, 0);
        expect_error(cases[i].status, cases[i].key, "config.json");
        remove_dir();
    }
}

/* A config that asks for biases needs the bias tensors, and then loads. */
static void biases_follow_the_config(void)
{
    fresh_dir();
    with_config("\"mlp_bias\": false", "\"mlp_bias\": true");
    write_weights(0, 0);
    expect_error(EMBER_ERR_FORMAT, "missing tensor", "mlp.gate_proj.bias");
    for (int i = 0; i < LAYERS; i++) {
        add("BF16", INTER, 0, "model.layers.%d.mlp.gate_proj.bias", i);
        add("BF16", INTER, 0, "model.layers.%d.mlp.up_proj.bias", i);
        add("BF16", HIDDEN, 0, "model.layers.%d.mlp.down_proj.bias", i);
    }
    write_weights(0, 0);
    ember_model *m = NULL;
    CHECK_MSG(ember_model_load(dir, NULL, &m) == EMBER_OK, "%s", ember_last_error());
    ember_model_free(m);
    remove_dir();
}

static void untied_needs_lm_head(void)
{
    fresh_dir();
    with_config("\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
    write_weights(0, 0);
    expect_error(EMBER_ERR_FORMAT, "missing tensor", "lm_head.weight");
    remove_dir();
}

static void bad_arguments(void)
{
    ember_model *m = NULL;
    CHECK(ember_model_load(NULL, NULL, &m) == EMBER_ERR_INVALID_ARG && m == NULL);
    CHECK(ember_model_load("/nonexistent/ember", NULL, NULL) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_model_load("/nonexistent/ember", NULL, &m) == EMBER_ERR_IO && m == NULL);
    CHECK(strstr(ember_last_error(), "/nonexistent/ember") != NULL);
    ember_session *s = NULL;
    CHECK(ember_session_create(NULL, NULL, &s) == EMBER_ERR_INVALID_ARG && s == NULL);
    ember_model_free(NULL);
    ember_session_free(NULL);
}

int main(void)
{
    RUN(valid_checkpoint_loads);
    RUN(missing_tensor);
    RUN(extra_tensor);
    RUN(wrong_shape);
    RUN(unsupported_dtype);
    RUN(truncated_file);
    RUN(offsets_past_the_end);
    RUN(missing_weights);
    RUN(missing_config);
    RUN(bad_json_config);
    RUN(unsupported_config_values);
    RUN(biases_follow_the_config);
    RUN(untied_needs_lm_head);
    RUN(bad_arguments);
    return check_summary();
}
