/* Tokenizer metadata for the GGUF files spark_gguf_write produces: copied
 * from a source GGUF, converted from a byte-level BPE tokenizer.json, or
 * synthesized so that the file still loads where no tokenizer is at hand. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/status.h"
#include "io/json_text.h"
#include "llm/spark.h"
#include "llm/spark_gguf.h"

#define TOKENIZER_MAX ((size_t)256 << 20)

/* llama.cpp's token types */
enum { TOK_NORMAL = 1, TOK_CONTROL = 3, TOK_USER_DEFINED = 4, TOK_UNUSED = 5 };

typedef struct vocab {
    int32_t n;
    char **text;    /* n entries; malloc'd or borrowed, see owned */
    bool *owned;
    int32_t *type;
    const char **merges;
    char **merge_owned; /* joined array-form merges, freed with the vocab */
    size_t n_merges;
} vocab;

static void vocab_free(vocab *v)
{
    for (int32_t i = 0; i < v->n; i++)
        if (v->owned && v->owned[i]) free(v->text[i]);
    if (v->merge_owned)
        for (size_t i = 0; i < v->n_merges; i++) free(v->merge_owned[i]);
    free(v->text);
    free(v->owned);
    free(v->type);
    free(v->merges);
    free(v->merge_owned);
}

static ember_status vocab_alloc(vocab *v, int32_t n)
{
    memset(v, 0, sizeof *v);
    v->n = n;
    v->text = calloc((size_t)n, sizeof *v->text);
    v->owned = calloc((size_t)n, sizeof *v->owned);
    v->type = calloc((size_t)n, sizeof *v->type);
    if (!v->text || !v->owned || !v->type)
        return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory for a vocab of %d tokens", n);
    return EMBER_OK;
}

static ember_status set_owned(vocab *v, int32_t id, const char *text, int32_t type)
{
    v->text[id] = strdup(text);
    if (!v->text[id]) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    v->owned[id] = true;
    v->type[id] = type;
    return EMBER_OK;
}

/* Every id not yet given a token becomes "[PADn]", unused (as llama.cpp's
 * converter pads a vocab shorter than the embedding). */
static ember_status fill_gaps(vocab *v)
{
    char pad[32];
    for (int32_t i = 0; i < v->n; i++) {
        if (v->text[i]) continue;
        snprintf(pad, sizeof pad, "[PAD%d]", i);
        ember_status st = set_owned(v, i, pad, TOK_UNUSED);
        if (st) return st;
    }
    return EMBER_OK;
}

static ember_status emit(gguf_writer *w, const vocab *v, const spark_config *c)
{
    ember_status st;
    if ((st = gguf_set_str(w, "tokenizer.ggml.model", "gpt2")) ||
        (st = gguf_set_str(w, "tokenizer.ggml.pre", "spark2_5")) ||
        (st = gguf_set_str_arr(w, "tokenizer.ggml.tokens", (const char *const *)v->text, NULL,
                               (size_t)v->n)) ||
        (st = gguf_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v->type, (size_t)v->n)) ||
        (st = gguf_set_str_arr(w, "tokenizer.ggml.merges", v->merges, NULL, v->n_merges)))
        return st;
    if (c->bos_id >= 0 && (st = gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)c->bos_id)))
        return st;
    if (c->eos_id >= 0 && (st = gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)c->eos_id)))
        return st;
    if (c->pad_id >= 0 &&
        (st = gguf_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)c->pad_id)))
        return st;
    return EMBER_OK;
}

/* ---- synthesized -------------------------------------------------------------- */

/* GPT-2's byte-level alphabet: printable bytes stand for themselves, the
 * others for code points from 256 up, in byte order. */
static void byte_token(int b, char out[4])
{
    int cp = b;
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
        int k = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) k++;
        cp = 256 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = '\0';
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = '\0';
    }
}

static ember_status synthesize(vocab *v, const spark_config *c)
{
    static const char *const special_names[] = {"<|bos|>", "<|eos|>", "<|pad|>"};
    const int32_t special[] = {c->bos_id, c->eos_id, c->pad_id};
    ember_status st = vocab_alloc(v, c->vocab);
    if (st) return st;
    for (int s = 0; s < 3; s++) {
        if (special[s] < 0 || special[s] >= v->n || v->text[special[s]]) continue;
        if ((st = set_owned(v, special[s], special_names[s], TOK_CONTROL))) return st;
    }
    int next_byte = 0;
    char tok[4];
    for (int32_t i = 0; i < v->n && next_byte < 256; i++) {
        if (v->text[i]) continue;
        byte_token(next_byte++, tok);
        if ((st = set_owned(v, i, tok, TOK_NORMAL))) return st;
    }
    return fill_gaps(v);
}

/* ---- tokenizer.json -------------------------------------------------------------- */

static ember_status read_file(const char *path, char **out, size_t *len)
{
    struct stat sb;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ember_fail(EMBER_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (size_t)sb.st_size > TOKENIZER_MAX) {
        close(fd);
        return ember_fail(EMBER_ERR_IO, "%s: not a regular file of at most %zu bytes", path,
                          TOKENIZER_MAX);
    }
    char *buf = malloc((size_t)sb.st_size + 1);
    size_t got = 0;
    if (!buf) {
        close(fd);
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    while (got < (size_t)sb.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    *out = buf;
    *len = got;
    return EMBER_OK;
}

static ember_status put_token(vocab *v, const char *label, const char *text, double id_d,
                              int32_t type)
{
    if (!(id_d >= 0 && id_d < 9.0e15) || id_d != (double)(int64_t)id_d)
        return ember_fail(EMBER_ERR_FORMAT, "%s: token '%.60s' has an id that is not a "
                          "non-negative integer", label, text);
    if (id_d >= v->n)
        return ember_fail(EMBER_ERR_FORMAT, "%s: token '%.60s' has id %.0f, outside the model's "
                          "vocab of %d", label, text, id_d, v->n);
    int32_t id = (int32_t)id_d;
    if (v->text[id]) {
        if (strcmp(v->text[id], text))
            return ember_fail(EMBER_ERR_FORMAT, "%s: id %d is given to both '%.60s' and '%.60s'",
                              label, id, v->text[id], text);
        v->type[id] = type; /* an added token restating a vocab entry */
        return EMBER_OK;
    }
    v->text[id] = (char *)text; /* borrowed from the cJSON tree */
    v->type[id] = type;
    return EMBER_OK;
}

static ember_status merges_from(vocab *v, const cJSON *merges, const char *label)
{
    size_t n = (size_t)cJSON_GetArraySize(merges), i = 0;
    v->merges = calloc(n ? n : 1, sizeof *v->merges);
    v->merge_owned = calloc(n ? n : 1, sizeof *v->merge_owned);
    if (!v->merges || !v->merge_owned) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
    const cJSON *mg;
    cJSON_ArrayForEach(mg, merges) {
        if (cJSON_IsString(mg)) {
            v->merges[i] = mg->valuestring;
        } else if (cJSON_IsArray(mg) && cJSON_GetArraySize(mg) == 2 &&
                   cJSON_IsString(mg->child) && cJSON_IsString(mg->child->next)) {
            const char *a = mg->child->valuestring, *b = mg->child->next->valuestring;
            if (strchr(a, ' ') || strchr(b, ' '))
                return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: merge %zu has a part with a space, "
                                  "which GGUF's \"a b\" merge form cannot hold", label, i);
            size_t la = strlen(a), lb = strlen(b);
            char *j = malloc(la + lb + 2);
            if (!j) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
            memcpy(j, a, la);
            j[la] = ' ';
            memcpy(j + la + 1, b, lb + 1);
            v->merge_owned[i] = j;
            v->merges[i] = j;
        } else {
            return ember_fail(EMBER_ERR_FORMAT, "%s: model.merges entry %zu is neither \"a b\" "
                              "nor [\"a\", \"b\"]", label, i);
        }
        v->n_merges = ++i;
    }
    return EMBER_OK;
}

static ember_status from_tokenizer_json(vocab *v, const cJSON *root, const char *label,
                                        int32_t n_vocab)
{
    ember_status st = vocab_alloc(v, n_vocab);
    if (st) return st;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsObject(model))
        return ember_fail(EMBER_ERR_FORMAT, "%s: missing \"model\" object", label);
    if (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "BPE")))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s: model.type is not \"BPE\"; only byte-level "
                          "BPE tokenizers can be written as a gpt2 GGUF vocab", label);
    if (!cJSON_IsObject(map) || !cJSON_IsArray(merges))
        return ember_fail(EMBER_ERR_FORMAT, "%s: model.vocab must be an object and model.merges "
                          "a list", label);
    const cJSON *e;
    cJSON_ArrayForEach(e, map) {
        if (!cJSON_IsNumber(e))
            return ember_fail(EMBER_ERR_FORMAT, "%s: model.vocab['%.60s'] is not a number", label,
                              e->string);
        if ((st = put_token(v, label, e->string, e->valuedouble, TOK_NORMAL))) return st;
    }
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!cJSON_IsArray(added)) added = NULL;
    cJSON_ArrayForEach(e, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        const cJSON *special = cJSON_GetObjectItemCaseSensitive(e, "special");
        if (!cJSON_IsNumber(id) || !cJSON_IsString(content))
            return ember_fail(EMBER_ERR_FORMAT, "%s: an added_tokens entry lacks a numeric \"id\" "
                              "or a string \"content\"", label);
        if ((st = put_token(v, label, content->valuestring, id->valuedouble,
                            cJSON_IsTrue(special) ? TOK_CONTROL : TOK_USER_DEFINED)))
            return st;
    }
    if ((st = merges_from(v, merges, label))) return st;
    return fill_gaps(v);
}

/* ---- entry point ------------------------------------------------------------------ */

ember_status spark_gguf_vocab(gguf_writer *w, const ember_model *m, bool *synthesized)
{
    const gguf_file *src = ck_gguf(m->ck);
    vocab v;
    ember_status st;
    *synthesized = false;
    memset(&v, 0, sizeof v);
    if (src) {
        size_t copied;
        if ((st = gguf_copy_keys(w, src, "tokenizer.", &copied)) || copied) return st;
    } else {
        const char *dir = ck_path(m->ck);
        size_t n = strlen(dir);
        char *path = malloc(n + sizeof "/tokenizer.json");
        struct stat sb;
        if (!path) return ember_fail(EMBER_ERR_NO_MEMORY, "out of memory");
        snprintf(path, n + sizeof "/tokenizer.json", "%s%stokenizer.json", dir,
                 n && dir[n - 1] == '/' ? "" : "/");
        if (stat(path, &sb) == 0) {
            char *text = NULL;
            size_t len = 0;
            cJSON *root = NULL;
            st = read_file(path, &text, &len);
            if (!st) st = io_json_parse(text, len, path, "tokenizer", &root);
            free(text);
            if (!st) st = from_tokenizer_json(&v, root, path, m->cfg.vocab);
            if (!st) st = emit(w, &v, &m->cfg);
            vocab_free(&v); /* borrows from root: free it first */
            cJSON_Delete(root);
            free(path);
            return st;
        }
        free(path);
    }
    *synthesized = true;
    st = synthesize(&v, &m->cfg);
    if (!st) st = emit(w, &v, &m->cfg);
    vocab_free(&v);
    return st;
}
