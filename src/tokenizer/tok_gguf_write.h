/* A byte-level BPE tokenizer written as llama.cpp's tokenizer.ggml.* keys
 * (the form tok_gguf.c reads back): tokenizer.ggml.model "gpt2", .pre,
 * .tokens (one per id, gaps filled with "[PADn]", unused), .token_type,
 * .merges ("a b") and the bos/eos/padding ids. Used by the GGUF writers. */
#ifndef EMBER_TOKENIZER_TOK_GGUF_WRITE_H
#define EMBER_TOKENIZER_TOK_GGUF_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "io/gguf.h"

struct cJSON;

/* llama.cpp's token types */
enum { TOK_NORMAL = 1, TOK_CONTROL = 3, TOK_USER_DEFINED = 4, TOK_UNUSED = 5 };

typedef struct tok_gguf_vocab {
    int32_t n;
    char **text;    /* n entries; malloc'd or borrowed, see owned */
    bool *owned;
    int32_t *type;
    const char **merges;
    char **merge_owned; /* joined array-form merges, freed with the vocab */
    size_t n_merges;
} tok_gguf_vocab;

ember_status tok_gguf_vocab_alloc(tok_gguf_vocab *v, int32_t n);
void tok_gguf_vocab_free(tok_gguf_vocab *v);
/* Token `id` gets a copy of text and `type`. */
ember_status tok_gguf_vocab_set(tok_gguf_vocab *v, int32_t id, const char *text, int32_t type);
/* Every id not yet given a token becomes "[PADn]", unused (as llama.cpp's
 * converter pads a vocab shorter than the embedding). */
ember_status tok_gguf_vocab_fill_gaps(tok_gguf_vocab *v);
/* n_vocab tokens from a parsed tokenizer.json (model.vocab, added_tokens,
 * model.merges); texts are borrowed from root, so free v before it. */
ember_status tok_gguf_vocab_from_json(tok_gguf_vocab *v, const struct cJSON *root, const char *label,
                                      int32_t n_vocab);
/* The keys; ids < 0 are left out. */
ember_status tok_gguf_vocab_emit(gguf_writer *w, const tok_gguf_vocab *v, const char *pre, int32_t bos,
                                 int32_t eos, int32_t pad);

/* tokenizer.json text (json, len bytes) -> the keys, with n_vocab tokens
 * and pre-tokenizer `pre`. `label` names the source in messages. */
ember_status tok_gguf_put_json(gguf_writer *w, const char *json, size_t len, const char *label,
                               int32_t n_vocab, const char *pre, int32_t bos, int32_t eos, int32_t pad);

#endif
