/* Writing a tokenizer.json in memory, for the tokenizers that come without
 * one (vocab.json + merges.txt, tok_vocab_merges.c; a GGUF's embedded
 * tokenizer, tok_gguf.c): both are turned into the document Hugging Face
 * would have written and loaded through the one tokenizer.json path, so
 * there is one BPE and one set of checks.
 *
 * The pre-tokenizer styles are named as llama.cpp's tokenizer.ggml.pre
 * names them. Each is written the way the model family's own tokenizer.json
 * writes it (the Split regexes are Hugging Face's text; llama.cpp's
 * llama-vocab.cpp holds the same expressions, rewritten for its engine where
 * needed), so a GGUF made from a tokenizer.json reads back as that file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tok_internal.h"

void tok_text_put(tok_text *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (n + 1 > b->cap - b->n) {
        size_t cap = (b->n + n + 1) * 2;
        char *grown = cap > b->n ? realloc(b->s, cap) : NULL;
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->s = grown;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

void tok_text_puts(tok_text *b, const char *s) { tok_text_put(b, s, strlen(s)); }

void tok_text_string(tok_text *b, const char *s, size_t n)
{
    tok_text_put(b, "\"", 1);
    size_t run = 0; /* bytes copied as they are, in one go */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c != '"' && c != '\\' && c >= 0x20) continue;
        tok_text_put(b, s + run, i - run);
        run = i + 1;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            tok_text_put(b, esc, 2);
        } else {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            tok_text_put(b, esc, 6);
        }
    }
    tok_text_put(b, s + run, n - run);
    tok_text_put(b, "\"", 1);
}

ember_status tok_text_status(const tok_text *b)
{
    return b->failed ? ember_fail(EMBER_ERR_NO_MEMORY, "out of memory building a tokenizer.json")
                     : EMBER_OK;
}

/* ---- pre-tokenizer styles ---------------------------------------------------------- */

/* Spark-X2.5 (models/demo/tokenizer.json, llama.cpp's LLAMA_VOCAB_PRE_TYPE_SPARK2_5):
 * digits in threes, CJK runs, words with their leading punctuation, then
 * single digits. */
static const char *const SPARK2_5[] = {
    "\\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    "[!\\\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?"
    "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\\r\\n]|\\s+(?!\\S)|\\s+",
    "\\p{N}",
    NULL};
/* Qwen2's tokenizer.json (also what transformers converts Qwen2Tokenizer to). */
static const char *const QWEN2[] = {
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
/* Llama 3's tokenizer.json. */
static const char *const LLAMA3[] = {
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
/* llama.cpp's own fallback for a GGUF without tokenizer.ggml.pre (no
 * Hugging Face tokenizer has it). */
static const char *const LLAMA_DEFAULT[] = {
    "[\\p{P}\\$\\+<=>\\^~\\|]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "\\p{N}+",
    "[0-9][0-9][0-9]",
    NULL};

/* name, splits (NULL: GPT-2's ByteLevel regex), NFC, ignore_merges, add_bos */
static const tok_pre_style STYLES[] = {
    {"spark2_5", SPARK2_5, false, false, false},
    {"qwen2", QWEN2, true, false, false},
    {"llama-bpe", LLAMA3, false, true, true},
    {"llama3", LLAMA3, false, true, true},
    {"llama-v3", LLAMA3, false, true, true},
    {"gpt-2", NULL, false, false, false},
    {"default", LLAMA_DEFAULT, false, false, false},
};
#define N_STYLES (sizeof STYLES / sizeof STYLES[0])

const tok_pre_style *tok_pre_style_find(const char *name)
{
    for (size_t i = 0; name && i < N_STYLES; i++)
        if (!strcmp(STYLES[i].name, name)) return &STYLES[i];
    return NULL;
}

const char *tok_pre_style_names(void)
{
    return "spark2_5, qwen2, llama-bpe (llama3, llama-v3), gpt-2, default";
}

static const char BYTE_LEVEL[] =
    "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}";

void tok_text_pre_style(tok_text *b, const tok_pre_style *p)
{
    tok_text_puts(b, p->nfc ? "\"normalizer\":{\"type\":\"NFC\"}" : "\"normalizer\":null");
    if (!p->splits) {
        tok_text_puts(b, ",\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
                         "\"trim_offsets\":true,\"use_regex\":true}");
    } else {
        tok_text_puts(b, ",\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[");
        for (const char *const *s = p->splits; *s; s++) {
            tok_text_puts(b, "{\"type\":\"Split\",\"pattern\":{\"Regex\":");
            tok_text_string(b, *s, strlen(*s));
            tok_text_puts(b, "},\"behavior\":\"Isolated\",\"invert\":false},");
        }
        tok_text_puts(b, BYTE_LEVEL);
        tok_text_puts(b, "]}");
    }
    tok_text_puts(b, ",\"decoder\":");
    tok_text_puts(b, BYTE_LEVEL);
}

void tok_text_byte_level(tok_text *b) { tok_text_puts(b, BYTE_LEVEL); }

void tok_text_bpe_open(tok_text *b, bool ignore_merges)
{
    tok_text_puts(b, "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,"
                     "\"continuing_subword_prefix\":\"\",\"end_of_word_suffix\":\"\",\"fuse_unk\":false,"
                     "\"byte_fallback\":false,\"ignore_merges\":");
    tok_text_puts(b, ignore_merges ? "true" : "false");
    tok_text_puts(b, ",\"vocab\":");
}
