/* The Hugging Face tokenizer.json tokenizer: BPE (byte-level or with byte
 * fallback), normalizers, pre-tokenizers, added tokens, post-processors and
 * decoders, plus a streaming detokenizer.
 *
 * A loaded tokenizer is immutable: encode, decode and the lookups may run on
 * one `const et_tokenizer *` from several threads at once (all scratch space
 * is per call). Text in and out is UTF-8; invalid UTF-8 input is rejected. */
#ifndef EMBER_TOKENIZER_TOKENIZER_H
#define EMBER_TOKENIZER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"

typedef struct et_tokenizer et_tokenizer;
typedef struct gguf_file gguf_file; /* io/gguf.h */

/* path: a tokenizer.json file, a directory holding tokenizer.json, or a GGUF
 * model file (its embedded tokenizer, et_tokenizer_load_gguf). */
ember_status et_tokenizer_load(const char *path, et_tokenizer **out);
/* json need not be NUL-terminated. */
ember_status et_tokenizer_load_json(const char *json, size_t len, et_tokenizer **out);
void et_tokenizer_free(et_tokenizer *tok);
/* A checkpoint without tokenizer.json: vocab.json + merges.txt +
 * tokenizer_config.json (GPT2Tokenizer or Qwen2Tokenizer), converted to the
 * equivalent tokenizer.json (tok_vocab_merges.c). et_tokenizer_load falls
 * back to it for a directory without tokenizer.json. */
ember_status et_tokenizer_load_vocab_merges(const char *dir, et_tokenizer **out);
/* The tokenizer.json text those files amount to (malloc'd, *len bytes) and
 * its pre-tokenizer's GGUF name (*pre: "qwen2" or "gpt-2", static). */
ember_status et_tokenizer_json_from_vocab_merges(const char *dir, char **json, size_t *len, const char **pre);
/* A GGUF file's embedded tokenizer (tokenizer.ggml.*, a "gpt2" byte-level
 * BPE) as the equivalent tokenizer.json (tok_gguf.c says how each key maps):
 * *json is malloc'd and NUL-terminated. Pure, no I/O (fuzzed). Errors name
 * the GGUF key: UNSUPPORTED for a tokenizer model or pre-tokenizer ember does
 * not know, FORMAT for missing or inconsistent keys. */
ember_status et_tokenizer_json_from_gguf(const gguf_file *f, char **json, size_t *len);
/* That document, loaded. */
ember_status et_tokenizer_load_gguf(const gguf_file *f, et_tokenizer **out);

/* ids: malloc'd, caller frees (NULL when n_ids is 0 is allowed to be either).
 * add_special: what Hugging Face calls add_special_tokens (the post-processor). */
ember_status et_tokenizer_encode(const et_tokenizer *tok, const char *text, size_t len,
                                 bool add_special, int32_t **ids, size_t *n_ids);
/* text: malloc'd and NUL-terminated, caller frees; invalid byte sequences the
 * ids spell come back as U+FFFD. */
ember_status et_tokenizer_decode(const et_tokenizer *tok, const int32_t *ids, size_t n,
                                 bool skip_special, char **text, size_t *len);

size_t et_tokenizer_vocab_size(const et_tokenizer *tok); /* max id + 1, added tokens included */
const char *et_tokenizer_token(const et_tokenizer *tok, int32_t id); /* NULL if no such id */
int32_t et_tokenizer_find(const et_tokenizer *tok, const char *token); /* -1 if absent */
bool et_tokenizer_is_special(const et_tokenizer *tok, int32_t id);

/* Streaming detokenizer: push ids one by one and get back only complete
 * UTF-8 text (never part of a character); flush at the end returns what is
 * still held (incomplete bytes as U+FFFD). The text pointers stay valid until
 * the next call on the same et_detok. One et_detok per stream; the tokenizer
 * must outlive it. */
typedef struct et_detok et_detok;
ember_status et_detok_create(const et_tokenizer *tok, bool skip_special, et_detok **out);
ember_status et_detok_push(et_detok *d, int32_t id, const char **text, size_t *len);
ember_status et_detok_flush(et_detok *d, const char **text, size_t *len);
void et_detok_free(et_detok *d);

#endif
