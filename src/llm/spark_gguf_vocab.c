/* Tokenizer metadata for the GGUF files spark_gguf_write produces: copied
 * from a source GGUF, converted from a byte-level BPE tokenizer.json, or
 * synthesized so that the file still loads where no tokenizer is at hand. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/status.h"
#include "llm/spark.h"
#include "llm/spark_gguf.h"
#include "tokenizer/tok_gguf_write.h"

#define TOKENIZER_MAX ((size_t)256 << 20)

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

static ember_status synthesize(tok_gguf_vocab *v, const spark_config *c)
{
    static const char *const special_names[] = {"<|bos|>", "<|eos|>", "<|pad|>"};
    const int32_t special[] = {c->bos_id, c->eos_id, c->pad_id};
    ember_status st = tok_gguf_vocab_alloc(v, c->vocab);
    if (st) return st;
    for (int s = 0; s < 3; s++) {
        if (special[s] < 0 || special[s] >= v->n || v->text[special[s]]) continue;
        if ((st = tok_gguf_vocab_set(v, special[s], special_names[s], TOK_CONTROL))) return st;
    }
    int next_byte = 0;
    char tok[4];
    for (int32_t i = 0; i < v->n && next_byte < 256; i++) {
        if (v->text[i]) continue;
        byte_token(next_byte++, tok);
        if ((st = tok_gguf_vocab_set(v, i, tok, TOK_NORMAL))) return st;
    }
    return tok_gguf_vocab_fill_gaps(v);
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

/* ---- entry point ------------------------------------------------------------------ */

ember_status spark_gguf_vocab(gguf_writer *w, const ember_model *m, bool *synthesized)
{
    const gguf_file *src = ck_gguf(m->ck);
    tok_gguf_vocab v;
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
            st = read_file(path, &text, &len);
            if (!st) st = tok_gguf_put_json(w, text, len, path, m->cfg.vocab, "spark2_5", m->cfg.bos_id,
                                            m->cfg.eos_id, m->cfg.pad_id);
            free(text);
            free(path);
            return st;
        }
        free(path);
    }
    *synthesized = true;
    st = synthesize(&v, &m->cfg);
    if (!st) st = tok_gguf_vocab_emit(w, &v, "spark2_5", m->cfg.bos_id, m->cfg.eos_id, m->cfg.pad_id);
    tok_gguf_vocab_free(&v);
    return st;
}
