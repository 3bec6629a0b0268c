/* `ember tokenize` and `ember detokenize`: text <-> token ids with a model's
 * tokenizer (a model directory, a tokenizer.json, or a GGUF model file).
 *   tokenize:   stdin text -> ids separated by spaces (--json: ids and
 *               pieces; --jsonl: one JSON string per input line -> one JSON
 *               id array per output line, for batch comparisons)
 *   detokenize: ids on stdin (space, comma or newline separated) -> text
 *               (--jsonl: one JSON id array per line -> one JSON string per line) */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_public.h"
#include "ember.h"

static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    for (;;) {
        if (n == cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                return NULL;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    *len = n;
    return buf;
}

static void print_ids(const int32_t *ids, size_t n, const char *sep)
{
    for (size_t i = 0; i < n; i++) printf(i ? "%s%d" : "%.0s%d", sep, (int)ids[i]);
}

static int load_tokenizer(const char *model, ember_tokenizer **tok)
{
    if (!model) {
        fprintf(stderr, "error: -m MODEL_OR_TOKENIZER is required\n");
        return 1;
    }
    if (ember_tokenizer_load(model, tok) != EMBER_OK) {
        fprintf(stderr, "error: %s\n", ember_last_error());
        return 1;
    }
    return 0;
}

static int print_json(const ember_tokenizer *tok, const int32_t *ids, size_t n)
{
    cJSON *root = cJSON_CreateObject(), *jids = cJSON_AddArrayToObject(root, "ids"),
          *pieces = cJSON_AddArrayToObject(root, "pieces");
    if (!root || !jids || !pieces) {
        cJSON_Delete(root);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        const char *piece = ember_tokenizer_piece(tok, ids[i]);
        cJSON_AddItemToArray(jids, cJSON_CreateNumber(ids[i]));
        cJSON_AddItemToArray(pieces, cJSON_CreateString(piece ? piece : ""));
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) return 1;
    printf("%s\n", text);
    free(text);
    return 0;
}

/* One JSON string per line in, one JSON array of ids per line out. */
static int run_jsonl(const ember_tokenizer *tok, bool add_special)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    size_t lineno = 0;
    int rc = 0;
    while ((got = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        cJSON *j = cJSON_ParseWithLength(line, (size_t)got);
        if (!cJSON_IsString(j)) {
            fprintf(stderr, "error: stdin line %zu: expected a JSON string\n", lineno);
            cJSON_Delete(j);
            rc = 1;
            break;
        }
        int32_t *ids;
        size_t n;
        if (ember_tokenizer_encode(tok, j->valuestring, strlen(j->valuestring), add_special, &ids, &n) != EMBER_OK) {
            fprintf(stderr, "error: stdin line %zu: %s\n", lineno, ember_last_error());
            cJSON_Delete(j);
            rc = 1;
            break;
        }
        putchar('[');
        print_ids(ids, n, ",");
        puts("]");
        ember_free(ids);
        cJSON_Delete(j);
    }
    free(line);
    return rc;
}

int cmd_tokenize(int argc, char **argv)
{
    static const struct option opts[] = {{"model", required_argument, 0, 'm'}, {"json", no_argument, 0, 'j'},
                                         {"jsonl", no_argument, 0, 'l'},      {"no-special", no_argument, 0, 'n'},
                                         {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
    const char *model = NULL;
    bool json = false, jsonl = false, add_special = true;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'j': json = true; break;
        case 'l': jsonl = true; break;
        case 'n': add_special = false; break;
        case 'h':
            printf("usage: ember tokenize -m MODEL_OR_TOKENIZER [--json] [--jsonl] [--no-special] < text\n");
            return 0;
        default: return 1;
        }
    }
    ember_tokenizer *tok;
    if (load_tokenizer(model, &tok)) return 1;
    int rc = 0;
    if (jsonl) {
        rc = run_jsonl(tok, add_special);
    } else {
        size_t len;
        char *text = read_all(stdin, &len);
        int32_t *ids = NULL;
        size_t n = 0;
        if (!text) {
            fprintf(stderr, "error: out of memory reading stdin\n");
            rc = 1;
        } else if (ember_tokenizer_encode(tok, text, len, add_special, &ids, &n) != EMBER_OK) {
            fprintf(stderr, "error: %s\n", ember_last_error());
            rc = 1;
        } else if (json) {
            rc = print_json(tok, ids, n);
        } else {
            print_ids(ids, n, " ");
            putchar('\n');
        }
        ember_free(ids);
        free(text);
    }
    ember_tokenizer_free(tok);
    return rc;
}

/* One JSON array of ids per line in, one JSON string per line out. */
static int run_detok_jsonl(const ember_tokenizer *tok, bool skip_special)
{
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t got;
    int rc = 0;
    while (!rc && (got = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        cJSON *j = cJSON_ParseWithLength(line, (size_t)got);
        size_t n = cJSON_IsArray(j) ? (size_t)cJSON_GetArraySize(j) : 0;
        int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
        const cJSON *it;
        size_t k = 0;
        rc = cJSON_IsArray(j) && ids ? 0 : 1;
        cJSON_ArrayForEach(it, j) {
            if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > INT32_MAX) rc = 1;
            else ids[k++] = (int32_t)it->valuedouble;
        }
        char *text = NULL;
        size_t tlen;
        if (rc) fprintf(stderr, "error: stdin line %zu: expected a JSON array of token ids\n", lineno);
        else if (ember_tokenizer_decode(tok, ids, k, skip_special, &text, &tlen) != EMBER_OK) {
            fprintf(stderr, "error: stdin line %zu: %s\n", lineno, ember_last_error());
            rc = 1;
        } else {
            cJSON *str = cJSON_CreateString(text);
            char *out = str ? cJSON_PrintUnformatted(str) : NULL;
            if (out) puts(out);
            else rc = 1;
            free(out);
            cJSON_Delete(str);
        }
        ember_free(text);
        free(ids);
        cJSON_Delete(j);
    }
    free(line);
    return rc;
}

int cmd_detokenize(int argc, char **argv)
{
    static const struct option opts[] = {{"model", required_argument, 0, 'm'},
                                         {"skip-special", no_argument, 0, 's'},
                                         {"jsonl", no_argument, 0, 'l'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *model = NULL;
    bool skip_special = false, jsonl = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 's': skip_special = true; break;
        case 'l': jsonl = true; break;
        case 'h':
            printf("usage: ember detokenize -m MODEL_OR_TOKENIZER [--skip-special] [--jsonl] < ids\n");
            return 0;
        default: return 1;
        }
    }
    if (jsonl) {
        ember_tokenizer *jtok;
        if (load_tokenizer(model, &jtok)) return 1;
        int jrc = run_detok_jsonl(jtok, skip_special);
        ember_tokenizer_free(jtok);
        return jrc;
    }
    size_t len;
    char *input = read_all(stdin, &len);
    if (!input) {
        fprintf(stderr, "error: out of memory reading stdin\n");
        return 1;
    }
    /* ids separated by any mix of spaces, commas and newlines */
    int32_t *ids = malloc((len / 2 + 1) * sizeof *ids);
    size_t n = 0;
    int rc = ids ? 0 : 1;
    for (size_t i = 0; i < len && !rc;) {
        if (strchr(" ,\t\r\n", input[i])) { i++; continue; }
        long v = 0;
        size_t start = i;
        while (i < len && input[i] >= '0' && input[i] <= '9' && v <= INT32_MAX) v = v * 10 + (input[i++] - '0');
        if (i == start || v > INT32_MAX || (i < len && !strchr(" ,\t\r\n", input[i]))) {
            fprintf(stderr, "error: stdin: expected token ids separated by spaces or commas (at byte %zu)\n", start);
            rc = 1;
        } else
            ids[n++] = (int32_t)v;
    }
    free(input);
    ember_tokenizer *tok = NULL;
    if (!rc) rc = load_tokenizer(model, &tok);
    if (!rc) {
        char *text;
        size_t tlen;
        if (ember_tokenizer_decode(tok, ids, n, skip_special, &text, &tlen) != EMBER_OK) {
            fprintf(stderr, "error: %s\n", ember_last_error());
            rc = 1;
        } else {
            fwrite(text, 1, tlen, stdout);
            ember_free(text);
        }
    }
    ember_tokenizer_free(tok);
    free(ids);
    return rc;
}
