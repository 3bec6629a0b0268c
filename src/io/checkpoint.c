/* A Hugging Face checkpoint directory: config.json plus model.safetensors, or
 * shards listed in model.safetensors.index.json. All tensors of all files go
 * into one table sorted by name, so lookups are binary searches and each
 * carries a "used" flag for ck_check_all_used. */
#include "io/checkpoint.h"
#include "io/read_file.h"

#include "base/status.h"
#include "io/json_text.h"
#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CK_CONFIG_MAX ((size_t)16 << 20)
#define CK_INDEX_MAX ((size_t)64 << 20)

static const char CONFIG_NAME[] = "config.json";
static const char SINGLE_NAME[] = "model.safetensors";
static const char INDEX_NAME[] = "model.safetensors.index.json";

typedef struct ck_entry {
    const et_tensor *t;   /* name is t->name, owned by the file */
    size_t file;          /* index into files / file_names */
    bool used;
} ck_entry;

struct ck_dir {
    char *path;
    char *config;         /* NUL-terminated */
    size_t config_len;
    st_file **files;
    char **file_names;    /* plain names, for messages */
    size_t n_files;
    ck_entry *entries;    /* sorted by name, unique */
    size_t n_entries;
    gguf_file *gguf;      /* ck_open_gguf: the file (files[0] stays NULL) */
    et_tensor *owned;     /* ck_open_gguf: the tensors under their HF names */
    size_t n_owned;
};


static char *join_path(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    bool slash = dl > 0 && dir[dl - 1] != '/';
    char *p = malloc(dl + slash + nl + 1);
    if (!p)
        return NULL;
    memcpy(p, dir, dl);
    if (slash)
        p[dl] = '/';
    memcpy(p + dl + slash, name, nl + 1);
    return p;
}

/* true if `path` does not exist (ENOENT); other stat failures are left for
 * the open that follows to report. */
static bool path_missing(const char *path)
{
    struct stat sb;
    return stat(path, &sb) != 0 && errno == ENOENT;
}


/* ---- the index -------------------------------------------------------- */

typedef struct map_item {
    const char *tensor;   /* owned by the cJSON tree */
    const char *shard;
    size_t shard_idx;
} map_item;

static int cmp_item_shard(const void *a, const void *b)
{
    return strcmp(((const map_item *)a)->shard, ((const map_item *)b)->shard);
}

static int cmp_item_tensor(const void *a, const void *b)
{
    return strcmp(((const map_item *)a)->tensor, ((const map_item *)b)->tensor);
}

/* A shard must be a plain file name inside the checkpoint directory. */
static bool plain_file_name(const char *s)
{
    return s[0] != '\0' && !strchr(s, '/') && !strchr(s, '\\') && !strstr(s, "..");
}

void ck_index_free(ck_index *idx)
{
    if (!idx)
        return;
    for (size_t i = 0; i < idx->n_shards; i++)
        free(idx->shards[i]);
    free(idx->shards);
    for (size_t i = 0; i < idx->n_entries; i++)
        free(idx->entries[i].tensor);
    free(idx->entries);
    memset(idx, 0, sizeof *idx);
}


ember_status ck_parse_index(const char *json, size_t len, const char *label, ck_index *out)
{
    cJSON *root = NULL;
    const cJSON *map = NULL;
    map_item *items = NULL;
    size_t n = 0, k = 0;
    ember_status st;

    if (!out)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ck_parse_index: NULL output");
    memset(out, 0, sizeof *out);
    if (!label)
        label = INDEX_NAME;
    if (!json && len)
        return ember_fail(EMBER_ERR_INVALID_ARG, "%s: NULL buffer", label);

    st = io_json_parse(json, len, label, "index", &root);
    if (st != EMBER_OK)
        return st;
    if (!cJSON_IsObject(root)) {
        st = ember_fail(EMBER_ERR_FORMAT, "%s: not a JSON object", label);
        goto done;
    }
    for (const cJSON *kv = root->child; kv; kv = kv->next) {
        if (strcmp(kv->string, "weight_map") != 0)
            continue; /* "metadata" and anything else: not needed */
        if (map) {
            st = ember_fail(EMBER_ERR_FORMAT, "%s: \"weight_map\" appears twice", label);
            goto done;
        }
        map = kv;
    }
    if (!map) {
        st = ember_fail(EMBER_ERR_FORMAT, "%s: missing \"weight_map\"", label);
        goto done;
    }
    if (!cJSON_IsObject(map)) {
        st = ember_fail(EMBER_ERR_FORMAT, "%s: \"weight_map\" is not an object", label);
        goto done;
    }
    for (const cJSON *kv = map->child; kv; kv = kv->next)
        n++;
    if (n == 0) {
        st = ember_fail(EMBER_ERR_FORMAT, "%s: \"weight_map\" is empty", label);
        goto done;
    }
    items = malloc(n * sizeof *items);
    if (!items) {
        st = ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory for %zu entries", label, n);
        goto done;
    }
    for (const cJSON *kv = map->child; kv; kv = kv->next, k++) {
        if (kv->string[0] == '\0') {
            st = ember_fail(EMBER_ERR_FORMAT, "%s: \"weight_map\" has an empty tensor name",
                            label);
            goto done;
        }
        if (!cJSON_IsString(kv)) {
            st = ember_fail(EMBER_ERR_FORMAT,
                            "%s: \"weight_map\": tensor '%s': shard is not a file name string",
                            label, kv->string);
            goto done;
        }
        if (!plain_file_name(kv->valuestring)) {
            st = ember_fail(EMBER_ERR_FORMAT,
                            "%s: \"weight_map\": tensor '%s': shard '%s' is not a plain file "
                            "name (no '/', '\\' or '..' allowed)", label, kv->string,
                            kv->valuestring);
            goto done;
        }
        items[k].tensor = kv->string;
        items[k].shard = kv->valuestring;
    }

    /* distinct shards, sorted */
    qsort(items, n, sizeof *items, cmp_item_shard);
    {
        size_t distinct = 0;
        for (size_t i = 0; i < n; i++)
            if (i == 0 || strcmp(items[i - 1].shard, items[i].shard) != 0)
                distinct++;
        out->shards = calloc(distinct, sizeof *out->shards);
        if (!out->shards) {
            st = ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", label);
            goto done;
        }
        for (size_t i = 0; i < n; i++) {
            if (i == 0 || strcmp(items[i - 1].shard, items[i].shard) != 0) {
                out->shards[out->n_shards] = strdup(items[i].shard);
                if (!out->shards[out->n_shards]) {
                    st = ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", label);
                    goto done;
                }
                out->n_shards++;
            }
            items[i].shard_idx = out->n_shards - 1;
        }
    }

    /* tensors: unique, sorted */
    qsort(items, n, sizeof *items, cmp_item_tensor);
    for (size_t i = 1; i < n; i++) {
        if (strcmp(items[i - 1].tensor, items[i].tensor) != 0)
            continue;
        if (items[i - 1].shard_idx == items[i].shard_idx)
            st = ember_fail(EMBER_ERR_FORMAT,
                            "%s: \"weight_map\": tensor '%s' is listed twice", label,
                            items[i].tensor);
        else
            st = ember_fail(EMBER_ERR_FORMAT,
                            "%s: \"weight_map\": tensor '%s' is listed in two shards, '%s' and "
                            "'%s'", label, items[i].tensor, items[i - 1].shard, items[i].shard);
        goto done;
    }
    out->entries = calloc(n, sizeof *out->entries);
    if (!out->entries) {
        st = ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", label);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        out->entries[i].tensor = strdup(items[i].tensor);
        if (!out->entries[i].tensor) {
            st = ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", label);
            goto done;
        }
        out->entries[i].shard = items[i].shard_idx;
        out->n_entries++;
    }
    st = EMBER_OK;

done:
    free(items);
    cJSON_Delete(root);
    if (st != EMBER_OK)
        ck_index_free(out);
    return st;
}

/* ---- the directory ---------------------------------------------------- */

static int cmp_entry_name(const void *a, const void *b)
{
    return strcmp(((const ck_entry *)a)->t->name, ((const ck_entry *)b)->t->name);
}

static int cmp_key_entry(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const ck_entry *)elem)->t->name);
}

void ck_close(ck_dir *ck)
{
    if (!ck)
        return;
    for (size_t i = 0; i < ck->n_files; i++) {
        st_close(ck->files[i]);
        free(ck->file_names[i]);
    }
    free(ck->files);
    free(ck->file_names);
    free(ck->entries);
    for (size_t i = 0; i < ck->n_owned; i++)
        free((char *)ck->owned[i].name);
    free(ck->owned);
    gguf_close(ck->gguf);
    free(ck->config);
    free(ck->path);
    free(ck);
}

/* Opens `name` inside the directory as file number ck->n_files. The
 * arrays have room for it. */
static ember_status add_file(ck_dir *ck, const char *name)
{
    char *path = join_path(ck->path, name);
    ember_status st;
    size_t i = ck->n_files;

    if (!path)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", ck->path);
    ck->file_names[i] = strdup(name);
    if (!ck->file_names[i]) {
        free(path);
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", ck->path);
    }
    st = st_open(path, &ck->files[i]);
    free(path);
    if (st != EMBER_OK) {
        free(ck->file_names[i]);
        ck->file_names[i] = NULL;
        return st;
    }
    ck->n_files++;
    return EMBER_OK;
}

static ember_status alloc_files(ck_dir *ck, size_t n)
{
    ck->files = calloc(n, sizeof *ck->files);
    ck->file_names = calloc(n, sizeof *ck->file_names);
    if (!ck->files || !ck->file_names)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", ck->path);
    return EMBER_OK;
}

/* One sorted table of every tensor of every file; a name in two files is an
 * error. */
static ember_status build_table(ck_dir *ck)
{
    size_t total = 0, k = 0;
    for (size_t f = 0; f < ck->n_files; f++)
        total += st_count(ck->files[f]);
    if (total == 0)
        return EMBER_OK;
    ck->entries = calloc(total, sizeof *ck->entries);
    if (!ck->entries)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory for %zu tensors", ck->path,
                          total);
    for (size_t f = 0; f < ck->n_files; f++) {
        for (size_t i = 0; i < st_count(ck->files[f]); i++, k++) {
            ck->entries[k].t = st_tensor_at(ck->files[f], i);
            ck->entries[k].file = f;
        }
    }
    ck->n_entries = total;
    qsort(ck->entries, total, sizeof *ck->entries, cmp_entry_name);
    for (size_t i = 1; i < total; i++) {
        const ck_entry *a = &ck->entries[i - 1], *b = &ck->entries[i];
        if (strcmp(a->t->name, b->t->name) == 0) {
            /* report in file order */
            if (a->file > b->file) {
                const ck_entry *tmp = a;
                a = b;
                b = tmp;
            }
            return ember_fail(EMBER_ERR_FORMAT, "%s: tensor '%s' is in two shards, '%s' and '%s'",
                              ck->path, a->t->name, ck->file_names[a->file],
                              ck->file_names[b->file]);
        }
    }
    return EMBER_OK;
}

/* Both the table and the index are sorted by name: walk them together. */
static ember_status check_against_index(const ck_dir *ck, const ck_index *idx,
                                        const char *label)
{
    size_t i = 0, j = 0;
    while (i < ck->n_entries || j < idx->n_entries) {
        int c;
        if (i == ck->n_entries)
            c = 1;
        else if (j == idx->n_entries)
            c = -1;
        else
            c = strcmp(ck->entries[i].t->name, idx->entries[j].tensor);
        if (c < 0) {
            const ck_entry *e = &ck->entries[i];
            return ember_fail(EMBER_ERR_FORMAT,
                              "%s: tensor '%s' in shard '%s' is missing from \"weight_map\"",
                              label, e->t->name, ck->file_names[e->file]);
        }
        if (c > 0) {
            const ck_index_entry *x = &idx->entries[j];
            return ember_fail(EMBER_ERR_FORMAT,
                              "%s: \"weight_map\" puts tensor '%s' in shard '%s', which has no "
                              "such tensor", label, x->tensor, idx->shards[x->shard]);
        }
        /* files were opened in idx->shards order */
        if (ck->entries[i].file != idx->entries[j].shard)
            return ember_fail(EMBER_ERR_FORMAT,
                              "%s: \"weight_map\" puts tensor '%s' in shard '%s', but it is in "
                              "shard '%s'", label, idx->entries[j].tensor,
                              idx->shards[idx->entries[j].shard],
                              ck->file_names[ck->entries[i].file]);
        i++;
        j++;
    }
    return EMBER_OK;
}

static ember_status open_sharded(ck_dir *ck, const char *index_path)
{
    char *text = NULL;
    size_t len;
    ck_index idx;
    ember_status st;

    memset(&idx, 0, sizeof idx);
    st = io_read_text_file(index_path, CK_INDEX_MAX, &text, &len);
    if (st != EMBER_OK)
        return st;
    st = ck_parse_index(text, len, index_path, &idx);
    free(text);
    if (st != EMBER_OK)
        return st;
    st = alloc_files(ck, idx.n_shards);
    for (size_t s = 0; st == EMBER_OK && s < idx.n_shards; s++) {
        st = add_file(ck, idx.shards[s]);
        if (st != EMBER_OK)
            ember_fail_prefix(st, "%s: \"weight_map\" names shard '%s'", index_path,
                              idx.shards[s]);
    }
    if (st == EMBER_OK)
        st = build_table(ck);
    if (st == EMBER_OK)
        st = check_against_index(ck, &idx, index_path);
    ck_index_free(&idx);
    return st;
}

ember_status ck_open(const char *dir, ck_dir **out)
{
    ck_dir *ck;
    char *config_path = NULL, *index_path = NULL, *single_path = NULL;
    ember_status st;

    if (!out)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ck_open: NULL output");
    *out = NULL;
    if (!dir || !dir[0])
        return ember_fail(EMBER_ERR_INVALID_ARG, "ck_open: empty checkpoint directory path");

    {
        struct stat sb;
        if (stat(dir, &sb) != 0)
            return ember_fail(EMBER_ERR_IO, "%s: cannot open checkpoint directory: %s", dir,
                              strerror(errno));
        if (!S_ISDIR(sb.st_mode))
            return ember_fail(EMBER_ERR_IO, "%s: not a directory (expected a checkpoint "
                              "directory with config.json, or a GGUF file)", dir);
    }
    ck = calloc(1, sizeof *ck);
    if (!ck)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", dir);
    ck->path = strdup(dir);
    config_path = join_path(dir, CONFIG_NAME);
    index_path = join_path(dir, INDEX_NAME);
    single_path = join_path(dir, SINGLE_NAME);
    if (!ck->path || !config_path || !index_path || !single_path) {
        st = ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", dir);
        goto done;
    }

    st = io_read_text_file(config_path, CK_CONFIG_MAX, &ck->config, &ck->config_len);
    if (st != EMBER_OK)
        goto done;

    /* Same precedence as transformers: a single model.safetensors wins over
     * an index that may sit beside it. */
    if (!path_missing(single_path)) {
        st = alloc_files(ck, 1);
        if (st == EMBER_OK)
            st = add_file(ck, SINGLE_NAME);
        if (st == EMBER_OK)
            st = build_table(ck);
    } else if (!path_missing(index_path)) {
        st = open_sharded(ck, index_path);
    } else {
        st = ember_fail(EMBER_ERR_IO, "%s: neither %s nor %s was found in the directory", dir,
                        SINGLE_NAME, INDEX_NAME);
    }

done:
    free(config_path);
    free(index_path);
    free(single_path);
    if (st != EMBER_OK) {
        ck_close(ck);
        return st;
    }
    *out = ck;
    return EMBER_OK;
}

/* ---- a GGUF file --------------------------------------------------------- */

/* Maps every GGUF tensor to its Hugging Face name and shape. */
static ember_status gguf_table(ck_dir *ck, const ck_gguf_map *map)
{
    const gguf_file *g = ck->gguf;
    size_t n = gguf_n_tensors(g);
    char name[256];

    if (n == 0)
        return EMBER_OK;
    ck->owned = calloc(n, sizeof *ck->owned);
    ck->entries = calloc(n, sizeof *ck->entries);
    if (!ck->owned || !ck->entries)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory for %zu tensors", ck->path, n);
    for (size_t i = 0; i < n; i++) {
        const gguf_tensor *gt = gguf_tensor_at(g, i);
        const char *hf = map->hf_name(gt->name, name, sizeof name);
        et_tensor *t = &ck->owned[i];
        if (!hf)
            return ember_fail(EMBER_ERR_FORMAT, "%s: unknown tensor '%s' (not part of a %s model)",
                              ck->path, gt->name, map->model ? map->model : "known");
        t->name = strdup(hf);
        if (!t->name)
            return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", ck->path);
        ck->n_owned++;
        t->dtype = gt->dtype;
        t->n_dims = (int)gt->n_dims;
        for (int d = 0; d < ET_MAX_DIMS; d++)
            t->shape[d] = 1;
        /* GGUF's ne[0] is the innermost dimension: PyTorch's shape reversed */
        for (uint32_t d = 0; d < gt->n_dims; d++)
            t->shape[d] = (int64_t)gt->ne[gt->n_dims - 1 - d];
        t->data = gt->data;
        t->nbytes = gt->nbytes;
        ck->entries[i].t = t;
        ck->entries[i].file = 0;
    }
    ck->n_entries = n;
    qsort(ck->entries, n, sizeof *ck->entries, cmp_entry_name);
    for (size_t i = 1; i < n; i++)
        if (strcmp(ck->entries[i - 1].t->name, ck->entries[i].t->name) == 0)
            return ember_fail(EMBER_ERR_FORMAT, "%s: two tensors map to the name '%s'", ck->path,
                              ck->entries[i].t->name);
    return EMBER_OK;
}

ember_status ck_open_gguf(const char *path, const ck_gguf_map *map, ck_dir **out)
{
    ck_dir *ck;
    ember_status st;

    if (!out)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ck_open_gguf: NULL output");
    *out = NULL;
    if (!path || !path[0] || !map || !map->config_json || !map->hf_name)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ck_open_gguf: empty path or incomplete map");
    ck = calloc(1, sizeof *ck);
    if (!ck)
        return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
    ck->path = strdup(path);
    if (!ck->path) {
        st = ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
        goto done;
    }
    if ((st = gguf_open(path, &ck->gguf)))
        goto done;
    if ((st = map->config_json(ck->gguf, &ck->config, &ck->config_len)))
        goto done;
    if ((st = alloc_files(ck, 1)))
        goto done;
    ck->file_names[0] = strdup(path);
    if (!ck->file_names[0]) {
        st = ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory", path);
        goto done;
    }
    ck->n_files = 1; /* files[0] is NULL: the tensors live in ck->gguf */
    st = gguf_table(ck, map);

done:
    if (st != EMBER_OK) {
        ck_close(ck);
        return st;
    }
    *out = ck;
    return EMBER_OK;
}

const gguf_file *ck_gguf(const ck_dir *ck) { return ck ? ck->gguf : NULL; }

void ck_drop_resident(ck_dir *ck)
{
    for (size_t i = 0; i < ck->n_files; i++) st_drop_resident(ck->files[i]);
    gguf_drop_resident(ck->gguf);
}

const char *ck_path(const ck_dir *ck) { return ck->path; }

const char *ck_config_json(const ck_dir *ck) { return ck->config; }

size_t ck_config_len(const ck_dir *ck) { return ck->config_len; }

size_t ck_count(const ck_dir *ck) { return ck ? ck->n_entries : 0; }

const et_tensor *ck_tensor_at(const ck_dir *ck, size_t i)
{
    return ck && i < ck->n_entries ? ck->entries[i].t : NULL;
}

const et_tensor *ck_get(ck_dir *ck, const char *name, const char **file)
{
    ck_entry *e = NULL;
    if (ck && name && ck->n_entries)
        e = bsearch(name, ck->entries, ck->n_entries, sizeof *ck->entries, cmp_key_entry);
    if (!e) {
        if (file)
            *file = NULL;
        return NULL;
    }
    e->used = true;
    if (file)
        *file = ck->file_names[e->file];
    return e->t;
}

void ck_skip_prefix(ck_dir *ck, const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t i = 0; ck && i < ck->n_entries; i++)
        if (!strncmp(ck->entries[i].t->name, prefix, n)) ck->entries[i].used = true;
}

ember_status ck_check_all_used(const ck_dir *ck)
{
    const ck_entry *first = NULL;
    size_t unused = 0;
    if (!ck)
        return ember_fail(EMBER_ERR_INVALID_ARG, "ck_check_all_used: NULL checkpoint");
    for (size_t i = 0; i < ck->n_entries; i++) {
        if (!ck->entries[i].used) {
            if (!first)
                first = &ck->entries[i];
            unused++;
        }
    }
    if (!first)
        return EMBER_OK;
    if (unused == 1)
        return ember_fail(EMBER_ERR_FORMAT, "%s: unexpected tensor '%s' (not part of the model)",
                          ck->file_names[first->file], first->t->name);
    return ember_fail(EMBER_ERR_FORMAT,
                      "%s: unexpected tensor '%s' (not part of the model; %zu unused in all)",
                      ck->file_names[first->file], first->t->name, unused);
}
