#include "edge/model_info.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"
#include "io/json_text.h"
#include "io/read_file.h"
#include "io/gguf.h"
#include "llm/spark_config.h"
#include "llm/spark_gguf.h"
#include "nn/weights.h"
#include "tts/qwen3_tts_config.h"
#include "tts/tts_gguf.h"

#define CONFIG_CAP (1u << 20)
#define MAX_DEPTH 4 /* DIR, DIR/speech_tokenizer, ... */

/* torch_dtype (or dtype) of the checkpoint; `fallback` when absent. */
static ember_type stored_type(const cJSON *root, ember_type fallback)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
    if (!cJSON_IsString(v)) v = cJSON_GetObjectItemCaseSensitive(root, "dtype");
    if (!cJSON_IsString(v)) return fallback;
    if (!strcmp(v->valuestring, "bfloat16")) return EMBER_TYPE_BF16;
    if (!strcmp(v->valuestring, "float16")) return EMBER_TYPE_F16;
    if (!strcmp(v->valuestring, "float32")) return EMBER_TYPE_F32;
    return fallback;
}

static int64_t element_bytes(ember_type t) { return t == EMBER_TYPE_F32 ? 4 : 2; }

/* Spark-X2.5: the tensors of reference/make_checkpoint.py's inventory
 * (fused q/k/v rows, the head-wise gate g_proj, GeGLU). */
static void spark_info(const spark_config *c, edge_model_info *m)
{
    const int64_t h = c->hidden, d = c->head_dim, H = c->n_heads, KV = c->n_kv_heads;
    const int64_t inter = c->intermediate, V = c->vocab;
    int64_t layer = 2 * h + (H + 2 * KV) * d * h + H * h + h * H * d + 3 * inter * h;
    if (c->attention_bias) layer += (H + 2 * KV) * d + H + h;
    if (c->mlp_bias) layer += 2 * inter + h;
    const int64_t embed = V * h;
    m->n_weights = embed + h + (c->tie_embeddings ? 0 : V * h) + (int64_t)c->n_layers * layer;
    /* the embedding table gives one row per token; untied, it is not read */
    m->read_weights_per_step = m->n_weights - (c->tie_embeddings ? 0 : embed);
    m->n_sliding = spark_config_count_layers(c, SPARK_SLIDING);
    m->n_full = c->n_layers - m->n_sliding;
    m->window = c->sliding_window;
    m->kv_heads = c->n_kv_heads;
    m->head_dim = c->head_dim;
    m->max_positions = c->max_positions;
    m->hidden = c->hidden;
    m->intermediate = c->intermediate;
    m->n_heads = c->n_heads;
    m->vocab = c->vocab;
}

/* One Qwen3 decoder stack: attention with q/k norms, SwiGLU, the final norm. */
static int64_t stack_weights(const tts_stack_config *s)
{
    const int64_t h = s->hidden, q = (int64_t)s->n_heads * s->head_dim;
    const int64_t kv = (int64_t)s->n_kv_heads * s->head_dim;
    const int64_t layer = 2 * h + h * (q + 2 * kv) + q * h + 2 * (int64_t)s->head_dim +
                          3 * (int64_t)s->intermediate * h;
    return (int64_t)s->n_layers * layer + h;
}

static void tts_info(const tts_config *c, edge_model_info *m)
{
    const tts_stack_config *t = &c->talker, *p = &c->predictor;
    const int64_t groups = c->n_groups - 1; /* codebooks the predictor makes per frame */
    const int64_t text = (int64_t)c->text_vocab * c->text_hidden +
                         (int64_t)c->text_hidden * (c->text_hidden + 1) +
                         (int64_t)t->hidden * (c->text_hidden + 1);
    const int64_t codec = 2 * (int64_t)t->vocab * t->hidden; /* embedding + head */
    const int64_t pred_heads = groups * ((int64_t)p->vocab * t->hidden + (int64_t)p->vocab * p->hidden);
    const int64_t projection = (int64_t)p->hidden * (t->hidden + 1);
    m->n_weights = text + codec + stack_weights(t) + stack_weights(p) + pred_heads + projection;
    m->read_weights_per_step = stack_weights(t) + (int64_t)t->vocab * t->hidden +
                               groups * (stack_weights(p) + (int64_t)p->vocab * p->hidden) +
                               projection;
    m->n_full = t->n_layers;
    m->n_sliding = 0;
    m->window = 0;
    m->kv_heads = t->n_kv_heads;
    m->head_dim = t->head_dim;
    /* the predictor's cache: n_groups positions per frame, f32, K and V */
    m->kv_fixed_f32_bytes = (int64_t)p->n_layers * c->n_groups * p->n_kv_heads * p->head_dim * 4 * 2;
    m->kv_f32_only = true;
    m->max_positions = t->max_positions;
    m->hidden = t->hidden;
    m->intermediate = t->intermediate;
    m->n_heads = t->n_heads;
    m->vocab = t->vocab;
}

ember_status edge_model_info_from_config(const char *json, size_t len, const char *label,
                                         int64_t file_bytes, edge_model_info *out)
{
    memset(out, 0, sizeof *out);
    cJSON *root = NULL;
    ember_status st = io_json_parse(json, len, label, "config", &root);
    if (st) return st;
    const bool tts = cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "talker_config");
    /* Qwen3-TTS ships bf16; Hugging Face's default for a config without a dtype is float32 */
    out->stored_type = stored_type(root, tts ? EMBER_TYPE_BF16 : EMBER_TYPE_F32);
    cJSON_Delete(root);
    if (tts) {
        tts_config *c = malloc(sizeof *c);
        if (!c) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", label);
        st = tts_config_parse(json, len, label, c);
        if (!st) tts_info(c, out);
        free(c);
        out->kind = EDGE_MODEL_TTS;
    } else {
        spark_config *c = malloc(sizeof *c);
        if (!c) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", label);
        st = spark_config_parse(json, len, label, c);
        if (!st) spark_info(c, out);
        free(c);
        out->kind = EDGE_MODEL_LLM;
    }
    if (st) return st;
    out->weight_bytes = file_bytes > 0 ? file_bytes : out->n_weights * element_bytes(out->stored_type);
    return EMBER_OK;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* Total size of the *.safetensors files under dir, depth-limited. */
static int64_t safetensors_bytes(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int64_t total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[PATH_MAX];
        struct stat sb;
        if (e->d_name[0] == '.') continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        if (stat(path, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode) && depth < MAX_DEPTH) total += safetensors_bytes(path, depth + 1);
        else if (S_ISREG(sb.st_mode) && ends_with(e->d_name, ".safetensors")) total += sb.st_size;
    }
    closedir(d);
    return total;
}

/* The ember_type of a tensor's format (NONE when there is none). */
static ember_type type_of(et_dtype dt)
{
    for (int t = EMBER_TYPE_F32; t <= EMBER_TYPE_Q5_1; t++)
        if (wt_dtype_of_type((ember_type)t) == dt) return (ember_type)t;
    return EMBER_TYPE_NONE;
}

/* A GGUF model file: the config its metadata amounts to (Spark's
 * spark2_5 keys, or a qwen3_tts file's config.json), the file's size, and
 * the format of its first layer's MLP matrix as the stored one. */
static ember_status gguf_info(const char *path, edge_model_info *out)
{
    gguf_file *f = NULL;
    char *text = NULL;
    size_t len = 0;
    const char *arch = NULL, *probe;
    ember_status st = gguf_open(path, &f);
    if (!st) st = gguf_get_str(f, "general.architecture", &arch, NULL);
    if (!st && !strcmp(arch, TTS_GGUF_ARCH)) {
        const char *s;
        probe = "tk.layers.0.mlp.up_proj.weight";
        if (!(st = gguf_get_str(f, TTS_GGUF_KEY_CONFIG, &s, &len)) && !(text = strndup(s, len)))
            st = ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    } else if (!st) {
        probe = "blk.0.ffn_up.weight";
        st = spark_gguf_config_json(f, &text, &len);
    }
    struct stat sb;
    if (!st) st = edge_model_info_from_config(text, len, path, stat(path, &sb) ? 0 : (int64_t)sb.st_size, out);
    const gguf_tensor *t = st ? NULL : gguf_find_tensor(f, probe);
    if (t && type_of(t->dtype) != EMBER_TYPE_NONE) out->stored_type = type_of(t->dtype);
    free(text);
    gguf_close(f);
    return st;
}

ember_status edge_model_info_load(const char *dir, edge_model_info *out)
{
    char path[PATH_MAX];
    char *text = NULL;
    size_t len = 0;
    memset(out, 0, sizeof *out);
    if (gguf_is_gguf_file(dir)) return gguf_info(dir, out);
    if (snprintf(path, sizeof path, "%s/config.json", dir) >= (int)sizeof path)
        return ember_fail(EMBER_ERR_INVALID_ARG, "model path is too long");
    ember_status st = io_read_text_file(path, CONFIG_CAP, &text, &len);
    if (st) return st;
    st = edge_model_info_from_config(text, len, path, safetensors_bytes(dir, 0), out);
    free(text);
    return st;
}
