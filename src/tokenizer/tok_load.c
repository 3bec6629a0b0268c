/* Loading tokenizer.json: the big vocab/merges arrays through the focused
 * scanner (tok_json.c), everything else through cJSON, every value checked
 * and every failure naming its JSON path. Also the lookups and free. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/gguf.h"
#include "tokenizer/tok_internal.h"

#ifdef MAP_POPULATE
#define TOK_MAP_FLAGS MAP_POPULATE
#else
#define TOK_MAP_FLAGS 0
#endif

/* ---- JSON helpers for the component parsers ---- */

const char *tok_json_type(const cJSON *j, const char *path, ember_status *st)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!cJSON_IsObject(j) || !cJSON_IsString(type)) {
        *st = ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s: expected an object with a string \"type\"", path);
        return NULL;
    }
    *st = EMBER_OK;
    return type->valuestring;
}

ember_status tok_json_bool(const cJSON *obj, const char *key, bool dflt, const char *path, bool *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = dflt;
    if (!v || cJSON_IsNull(v)) return EMBER_OK;
    if (!cJSON_IsBool(v)) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.%s: expected true or false", path, key);
    *out = cJSON_IsTrue(v);
    return EMBER_OK;
}

ember_status tok_json_string(const cJSON *obj, const char *key, const char *path, const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!v || cJSON_IsNull(v)) return EMBER_OK;
    if (!cJSON_IsString(v)) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.%s: expected a string", path, key);
    *out = v->valuestring;
    return EMBER_OK;
}

ember_status tok_json_dup(const char *s, char **out, size_t *len)
{
    size_t n = strlen(s);
    *out = malloc(n + 1);
    if (!*out) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
    memcpy(*out, s, n + 1);
    *len = n;
    return EMBER_OK;
}

ember_status tok_json_char(const cJSON *obj, const char *key, const char *dflt, const char *path, char out[8],
                           size_t *out_len)
{
    const char *s;
    ember_status st = tok_json_string(obj, key, path, &s);
    if (st != EMBER_OK) return st;
    if (!s) s = dflt;
    size_t n = strlen(s);
    uint32_t cp;
    if (!n || tok_utf8_valid_prefix(s, n) != n || tok_utf8_decode(s, n, &cp) != n)
        return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: %s.%s: expected exactly one character", path, key);
    memcpy(out, s, n);
    out[n] = 0;
    *out_len = n;
    return EMBER_OK;
}

/* ---- loading ---- */

static ember_status parse_model_options(et_tokenizer *t, const cJSON *model, const char **unk)
{
    ember_status st;
    const char *type;
    if ((st = tok_json_string(model, "type", "model", &type)) != EMBER_OK) return st;
    if (type && strcmp(type, "BPE"))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer.json: model.type: unsupported model '%s' (only BPE)", type);
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (dropout && !cJSON_IsNull(dropout) && !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0))
        return ember_fail(EMBER_ERR_UNSUPPORTED, "tokenizer.json: model.dropout: BPE dropout is not supported");
    const char *prefix, *suffix;
    if ((st = tok_json_string(model, "unk_token", "model", unk)) != EMBER_OK ||
        (st = tok_json_bool(model, "fuse_unk", false, "model", &t->bpe.fuse_unk)) != EMBER_OK ||
        (st = tok_json_bool(model, "byte_fallback", false, "model", &t->bpe.byte_fallback)) != EMBER_OK ||
        (st = tok_json_bool(model, "ignore_merges", false, "model", &t->bpe.ignore_merges)) != EMBER_OK ||
        (st = tok_json_string(model, "continuing_subword_prefix", "model", &prefix)) != EMBER_OK ||
        (st = tok_json_string(model, "end_of_word_suffix", "model", &suffix)) != EMBER_OK)
        return st;
    if (prefix && prefix[0] && (st = tok_json_dup(prefix, &t->bpe.cont_prefix, &t->bpe.cont_prefix_len)) != EMBER_OK)
        return st;
    if (suffix && suffix[0] && (st = tok_json_dup(suffix, &t->bpe.eow_suffix, &t->bpe.eow_suffix_len)) != EMBER_OK)
        return st;
    return EMBER_OK;
}

/* Lays out the id space: vocabulary entries, then added tokens over them. */
static ember_status build_ids(et_tokenizer *t, const tok_vocab_entry *v, size_t nv)
{
    int64_t max_id = -1;
    for (size_t i = 0; i < nv; i++) max_id = v[i].id > max_id ? v[i].id : max_id;
    for (size_t i = 0; i < t->n_added; i++) max_id = t->added[i].id > max_id ? t->added[i].id : max_id;
    if (max_id < 0) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.vocab: no tokens");
    /* Ids must be (nearly) dense: an id far past the number of tokens would
     * only make us allocate for nothing. */
    if ((uint64_t)max_id >= nv + t->n_added)
        return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: id %lld is out of range: there are only %zu tokens",
                          (long long)max_id, nv + t->n_added);
    t->n_ids = (size_t)max_id + 1;
    t->tok_off = malloc(t->n_ids * sizeof *t->tok_off);
    t->tok_len = calloc(t->n_ids, sizeof *t->tok_len);
    t->special = calloc(t->n_ids, 1);
    if (!t->tok_off || !t->tok_len || !t->special) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
    memset(t->tok_off, 0xFF, t->n_ids * sizeof *t->tok_off);
    for (size_t i = 0; i < nv; i++) {
        int32_t id = v[i].id;
        if (t->tok_off[id] != UINT32_MAX)
            return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.vocab: id %d is used by both '%s' and '%s'",
                              (int)id, t->pool + t->tok_off[id], t->pool + v[i].off);
        t->tok_off[id] = v[i].off;
        t->tok_len[id] = v[i].len;
    }
    for (size_t i = 0; i < t->n_added; i++) {
        const tok_added *a = &t->added[i];
        t->tok_off[a->id] = a->off;
        t->tok_len[a->id] = (uint32_t)a->len;
        t->special[a->id] = a->special;
    }
    return EMBER_OK;
}

static void byte_tables(et_tokenizer *t)
{
    for (int b = 0; b < 256; b++) {
        char enc[8];
        size_t k = tok_utf8_encode(tok_byte_to_char((uint8_t)b), enc);
        t->byte_level_ids[b] = tok_map_find(t, enc, k);
        snprintf(enc, sizeof enc, "<0x%02X>", b);
        t->byte_fallback_ids[b] = tok_map_find(t, enc, 6);
    }
}

static ember_status build_tries(et_tokenizer *t)
{
    tok_buf norm = {0}, tmp = {0};
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    ember_status st = md ? EMBER_OK : ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
    memset(t->trie_raw.root, 0xFF, sizeof t->trie_raw.root);
    memset(t->trie_norm.root, 0xFF, sizeof t->trie_norm.root);
    for (size_t i = 0; i < t->n_added && st == EMBER_OK; i++) {
        const tok_added *a = &t->added[i];
        const char *s = t->pool + a->off;
        if (a->normalized && t->normalizer) {
            /* matched against normalized text, so normalize it the same way */
            if ((st = tok_normalize(t->normalizer, s, a->len, &norm, &tmp, md)) != EMBER_OK) break;
            if (norm.len) st = tok_trie_insert(&t->trie_norm, norm.p, norm.len, (int32_t)i);
        } else
            st = tok_trie_insert(&t->trie_raw, s, a->len, (int32_t)i);
    }
    tok_buf_free(&norm);
    tok_buf_free(&tmp);
    pcre2_match_data_free(md);
    return st;
}

static ember_status parse_components(et_tokenizer *t, const cJSON *root)
{
    ember_status st = EMBER_OK;
    const cJSON *j;
    if ((j = cJSON_GetObjectItemCaseSensitive(root, "normalizer")) && !cJSON_IsNull(j)) {
        if (!(t->normalizer = calloc(1, sizeof *t->normalizer))) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
        if ((st = tok_normalizer_parse(j, "normalizer", 0, t->normalizer)) != EMBER_OK) return st;
    }
    if ((j = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer")) && !cJSON_IsNull(j)) {
        if (!(t->pretok = calloc(1, sizeof *t->pretok))) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
        if ((st = tok_pretok_parse(j, "pre_tokenizer", 0, t->pretok)) != EMBER_OK) return st;
    }
    if ((j = cJSON_GetObjectItemCaseSensitive(root, "post_processor")) && !cJSON_IsNull(j)) {
        if (!(t->post = calloc(1, sizeof *t->post))) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
        if ((st = tok_post_parse(t, j, "post_processor", 0, t->post)) != EMBER_OK) return st;
    }
    if ((j = cJSON_GetObjectItemCaseSensitive(root, "decoder")) && !cJSON_IsNull(j)) {
        if (!(t->decoder = calloc(1, sizeof *t->decoder))) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
        if ((st = tok_decoder_parse(j, "decoder", 0, t->decoder)) != EMBER_OK) return st;
    }
    return st;
}

/* The encoder validates its input once and then lets PCRE2 skip the check
 * (PCRE2_NO_UTF_CHECK; checking per match would make splitting quadratic).
 * That holds only if every string the tokenizer.json splices into the text
 * (Prepend, Replace, added tokens, Metaspace) is UTF-8 too. cJSON takes any
 * bytes inside strings, so the part it reads is checked here; the vocab and
 * merges scanner checks its own strings. Hugging Face rejects such files too
 * (a JSON text is UTF-8). The span bounds sit on ASCII delimiters, so no
 * character is cut between the checked segments. */
static ember_status check_utf8_outside(const char *json, size_t len, tok_span_json a, tok_span_json b)
{
    if (b.end && (!a.end || b.start < a.start)) {
        tok_span_json swap = a;
        a = b;
        b = swap;
    }
    size_t seg_start[3] = {0, 0, 0}, seg_end[3] = {len, 0, 0};
    if (a.end) {
        seg_end[0] = a.start;
        seg_start[1] = a.end;
        seg_end[1] = len;
    }
    if (b.end) {
        seg_end[1] = b.start;
        seg_start[2] = b.end;
        seg_end[2] = len;
    }
    for (int k = 0; k < 3; k++) {
        size_t n = seg_end[k] - seg_start[k];
        size_t valid = tok_utf8_valid_prefix(json + seg_start[k], n);
        if (valid != n)
            return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: invalid UTF-8 at byte %zu", seg_start[k] + valid);
    }
    return EMBER_OK;
}

/* cJSON parses the document with the two big values cut out (they become
 * {} and []): a few kilobytes instead of a copy of the whole file. */
static ember_status parse_rest(const char *json, size_t len, tok_span_json vspan, tok_span_json mspan,
                               cJSON **root)
{
    tok_span_json first = vspan, second = mspan;
    const char *first_stub = "{}", *second_stub = "[]";
    if (mspan.end && mspan.start < vspan.start) {
        first = mspan;
        second = vspan;
        first_stub = "[]";
        second_stub = "{}";
    }
    tok_buf rest = {0};
    ember_status st = tok_buf_append(&rest, json, first.start);
    if (st == EMBER_OK) st = tok_buf_append(&rest, first_stub, 2);
    if (st == EMBER_OK && second.end) {
        st = tok_buf_append(&rest, json + first.end, second.start - first.end);
        if (st == EMBER_OK) st = tok_buf_append(&rest, second_stub, 2);
        if (st == EMBER_OK) st = tok_buf_append(&rest, json + second.end, len - second.end);
    } else if (st == EMBER_OK)
        st = tok_buf_append(&rest, json + first.end, len - first.end);
    if (st == EMBER_OK) {
        *root = cJSON_ParseWithLength(rest.p, rest.len);
        if (!*root) st = ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: invalid JSON");
    }
    tok_buf_free(&rest);
    return st;
}

static ember_status load(et_tokenizer *t, const char *json, size_t len)
{
    tok_span_json vspan, mspan;
    ember_status st = tok_json_locate_model(json, len, &vspan, &mspan);
    if (st != EMBER_OK) return st;
    if (!vspan.end) return ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.vocab: missing");
    if ((st = check_utf8_outside(json, len, vspan, mspan)) != EMBER_OK) return st;

    cJSON *root = NULL;
    if ((st = parse_rest(json, len, vspan, mspan, &root)) != EMBER_OK) return st;

    tok_buf pool = {0};
    tok_vocab_entry *entries = NULL;
    size_t n_entries = 0;
    const char *unk = NULL;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model)) st = ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model: expected an object");
    if (st == EMBER_OK) st = parse_model_options(t, model, &unk);
    if (st == EMBER_OK) st = tok_json_parse_vocab(json, vspan, &pool, &entries, &n_entries);
    if (st == EMBER_OK) st = tok_added_parse(t, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), &pool);
    t->pool = pool.p; /* from here on the pool no longer grows */
    t->pool_len = pool.len;
    if (st == EMBER_OK) st = build_ids(t, entries, n_entries);
    free(entries);
    if (st == EMBER_OK) st = tok_map_build(t);
    if (st == EMBER_OK) {
        for (size_t i = 0; i < t->n_added; i++) tok_map_set(t, t->added[i].id);
        t->bpe.unk_id = TOK_NO_ID;
        if (unk && (t->bpe.unk_id = tok_map_find(t, unk, strlen(unk))) < 0)
            st = ember_fail(EMBER_ERR_FORMAT, "tokenizer.json: model.unk_token: '%s' is not in the vocabulary", unk);
    }
    if (st == EMBER_OK && mspan.end) st = tok_json_parse_merges(t, json, mspan);
    if (st == EMBER_OK) {
        byte_tables(t);
        st = parse_components(t, root);
    }
    if (st == EMBER_OK) st = build_tries(t);
    cJSON_Delete(root);
    return st;
}

ember_status et_tokenizer_load_json(const char *json, size_t len, et_tokenizer **out)
{
    if (!json || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "et_tokenizer_load_json: NULL argument");
    *out = NULL;
    et_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return ember_fail(EMBER_ERR_NO_MEMORY, "tokenizer: out of memory");
    ember_status st = load(t, json, len);
    if (st != EMBER_OK) {
        et_tokenizer_free(t);
        return st;
    }
    *out = t;
    return EMBER_OK;
}

ember_status et_tokenizer_load(const char *path, et_tokenizer **out)
{
    if (!path || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "et_tokenizer_load: NULL argument");
    *out = NULL;
    struct stat sb;
    char file[4096];
    if (gguf_is_gguf_file(path)) { /* a .gguf model carries its tokenizer */
        gguf_file *f = NULL;
        ember_status st = gguf_open(path, &f);
        if (!st) st = et_tokenizer_load_gguf(f, out);
        gguf_close(f);
        return st;
    }
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if ((size_t)snprintf(file, sizeof file, "%s/tokenizer.json", path) >= sizeof file)
            return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", path);
        /* no tokenizer.json, but the slow tokenizer's files (Qwen3-TTS) */
        char vocab[4096];
        snprintf(vocab, sizeof vocab, "%s/vocab.json", path);
        if (stat(file, &sb) != 0 && stat(vocab, &sb) == 0) return et_tokenizer_load_vocab_merges(path, out);
    } else if ((size_t)snprintf(file, sizeof file, "%s", path) >= sizeof file)
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: path too long", path);
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ember_fail(EMBER_ERR_IO, "%s: cannot open: %s", file, strerror(errno));
    ember_status st = EMBER_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0 || (uint64_t)sb.st_size > ((uint64_t)1 << 31))
        st = ember_fail(EMBER_ERR_IO, "%s: not a regular file, or over 2 GiB", file);
    size_t len = st == EMBER_OK ? (size_t)sb.st_size : 0;
    /* Mapped, not read: the scanners go through the file once, so copying
     * it into fresh (zero-filled, page-faulted) heap memory would only add
     * to the load time. MAP_POPULATE maps the cached pages in one go. */
    void *map = MAP_FAILED;
    if (st == EMBER_OK && len) {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE | TOK_MAP_FLAGS, fd, 0);
        if (map == MAP_FAILED) st = ember_fail(EMBER_ERR_IO, "%s: cannot map: %s", file, strerror(errno));
    }
    close(fd);
    if (st == EMBER_OK) st = et_tokenizer_load_json(map == MAP_FAILED ? "" : map, len, out);
    if (map != MAP_FAILED) munmap(map, len);
    if (st != EMBER_OK) return ember_fail_prefix(st, "%s", file);
    return EMBER_OK;
}

void et_tokenizer_free(et_tokenizer *t)
{
    if (!t) return;
    free(t->pool);
    free(t->tok_off);
    free(t->tok_len);
    free(t->special);
    free(t->map);
    free(t->merges);
    free(t->bpe.cont_prefix);
    free(t->bpe.eow_suffix);
    free(t->added);
    tok_trie_free(&t->trie_raw);
    tok_trie_free(&t->trie_norm);
    if (t->normalizer) tok_normalizer_free(t->normalizer);
    if (t->pretok) tok_pretok_free(t->pretok);
    if (t->post) tok_post_free(t->post);
    if (t->decoder) tok_decoder_free(t->decoder);
    free(t->normalizer);
    free(t->pretok);
    free(t->post);
    free(t->decoder);
    free(t);
}

/* ---- lookups ---- */

size_t et_tokenizer_vocab_size(const et_tokenizer *t) { return t ? t->n_ids : 0; }

const char *et_tokenizer_token(const et_tokenizer *t, int32_t id)
{
    if (!t || id < 0 || (size_t)id >= t->n_ids || t->tok_off[id] == UINT32_MAX) return NULL;
    return t->pool + t->tok_off[id];
}

int32_t et_tokenizer_find(const et_tokenizer *t, const char *token)
{
    if (!t || !token) return -1;
    return tok_map_find(t, token, strlen(token));
}

bool et_tokenizer_is_special(const et_tokenizer *t, int32_t id)
{
    return t && id >= 0 && (size_t)id < t->n_ids && t->special[id];
}

ember_status et_tokenizer_decode(const et_tokenizer *tok, const int32_t *ids, size_t n,
                                 bool skip_special, char **text, size_t *len)
{
    if (!tok || (!ids && n) || !text || !len) return ember_fail(EMBER_ERR_INVALID_ARG, "et_tokenizer_decode: NULL argument");
    *text = NULL;
    *len = 0;
    tok_buf out = {0};
    ember_status st = tok_decode_into(tok, ids, n, skip_special, false, &out);
    if (st != EMBER_OK) {
        tok_buf_free(&out);
        return st;
    }
    *text = out.p;
    *len = out.len;
    return EMBER_OK;
}
