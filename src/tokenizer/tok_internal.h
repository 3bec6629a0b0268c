/* Internals of the tokenizer shared by the src/tokenizer/tok_*.c files: the loaded
 * (immutable) tokenizer, its components, and the per-call scratch space. */
#ifndef EMBER_TOKENIZER_TOK_INTERNAL_H
#define EMBER_TOKENIZER_TOK_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <cjson/cJSON.h>
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

#define TOK_NO_ID (-1)
#define TOK_PATH_MAX 192   /* room for a JSON path in error messages */
#define TOK_MAX_DEPTH 32   /* nesting of Sequence components */

/* ---- growable byte buffer and piece lists (tok_util.c) ---- */
typedef struct {
    char *p;
    size_t len, cap;
} tok_buf;
ember_status tok_buf_reserve(tok_buf *b, size_t extra);
ember_status tok_buf_append(tok_buf *b, const void *data, size_t n);
void tok_buf_free(tok_buf *b);

/* A piece of text being pre-tokenized: bytes [off, off+len) of an arena.
 * raw_bytes: the ByteLevel mapping is still pending (the BPE maps each byte
 * straight to its id); first: the piece starts the whole input text. */
typedef struct {
    size_t off, len;
    uint8_t raw_bytes, first;
} tok_piece;
typedef struct {
    tok_piece *v;
    size_t n, cap;
} tok_pieces;
ember_status tok_pieces_push(tok_pieces *l, size_t off, size_t len, uint8_t raw_bytes,
                             uint8_t first);
void tok_pieces_free(tok_pieces *l);

/* ---- UTF-8 and byte-level tables (tok_unicode.c) ---- */
/* Length of the valid UTF-8 prefix of s (== n when all of it is valid). */
size_t tok_utf8_valid_prefix(const char *s, size_t n);
/* Decodes one code point at s (valid UTF-8 assumed); returns its length. */
size_t tok_utf8_decode(const char *s, size_t n, uint32_t *cp);
size_t tok_utf8_encode(uint32_t cp, char out[4]);
/* The GPT-2 byte <-> printable character bijection used by ByteLevel. */
uint32_t tok_byte_to_char(uint8_t b);
int tok_char_to_byte(uint32_t cp); /* -1 when cp is not one of the 256 */
/* Appends `n` bytes with invalid UTF-8 replaced by U+FFFD (Rust's
 * from_utf8_lossy rules: one U+FFFD per maximal invalid subpart). */
ember_status tok_append_lossy(tok_buf *out, const char *s, size_t n);
bool tok_is_whitespace(uint32_t cp); /* Unicode White_Space */

/* ---- string -> id map and merge table (tok_maps.c) ---- */
typedef struct {
    uint32_t left, right, rank;
    int32_t merged;
} tok_merge;

/* ---- patterns (String or Regex) shared by several components (tok_pattern.c) ---- */
typedef struct {
    char *literal; /* String pattern (NULL for a regex) */
    size_t literal_len;
    pcre2_code *re;
} tok_pattern;
ember_status tok_pattern_parse(const cJSON *j, const char *path, tok_pattern *out);
ember_status tok_regex_compile(const char *source, size_t len, const char *path,
                               pcre2_code **out);
void tok_pattern_free(tok_pattern *p);
/* Finds the first match at or after `from` in s[0, n). *found false when none.
 * Empty matches are reported (callers skip them). md: per call match data. */
ember_status tok_pattern_find(const tok_pattern *p, const char *s, size_t n, size_t from,
                              pcre2_match_data *md, bool *found, size_t *mstart, size_t *mend);
ember_status tok_regex_find(const pcre2_code *re, const char *s, size_t n, size_t from,
                            pcre2_match_data *md, bool *found, size_t *mstart, size_t *mend);

/* ---- normalizers (tok_normalize.c) ---- */
typedef enum {
    NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_LOWERCASE, NORM_REPLACE, NORM_PREPEND,
    NORM_STRIP, NORM_STRIP_ACCENTS, NORM_SEQUENCE
} tok_norm_type;
typedef struct tok_normalizer {
    tok_norm_type type;
    tok_pattern pattern;   /* Replace */
    char *content;         /* Replace, Prepend */
    size_t content_len;
    bool left, right;      /* Strip */
    struct tok_normalizer *items; /* Sequence */
    size_t n_items;
} tok_normalizer;
ember_status tok_normalizer_parse(const cJSON *j, const char *path, int depth,
                                  tok_normalizer *out);
void tok_normalizer_free(tok_normalizer *n);
/* Normalizes in[0, n) into *out (replacing its contents). */
ember_status tok_normalize(const tok_normalizer *nz, const char *in, size_t n, tok_buf *out,
                           tok_buf *tmp, pcre2_match_data *md);

/* ---- pre-tokenizers (tok_pretok.c, tok_split.c) ---- */
typedef enum {
    SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_MERGED_WITH_PREVIOUS, SPLIT_MERGED_WITH_NEXT,
    SPLIT_CONTIGUOUS
} tok_split_behavior;
typedef enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER } tok_prepend_scheme;
typedef enum {
    PRE_SPLIT, PRE_BYTE_LEVEL, PRE_METASPACE, PRE_DIGITS, PRE_WHITESPACE,
    PRE_WHITESPACE_SPLIT, PRE_PUNCTUATION, PRE_BERT, PRE_SEQUENCE
} tok_pretok_type;
typedef struct tok_pretok {
    tok_pretok_type type;
    tok_pattern pattern;          /* Split; ByteLevel (GPT-2 regex); Whitespace */
    tok_split_behavior behavior;  /* Split, Punctuation */
    bool invert;                  /* Split */
    bool add_prefix_space, use_regex; /* ByteLevel */
    char replacement[8];          /* Metaspace: UTF-8 of the replacement char */
    size_t replacement_len;
    tok_prepend_scheme prepend_scheme;
    bool split;                   /* Metaspace */
    bool individual_digits;       /* Digits */
    struct tok_pretok *items;     /* Sequence */
    size_t n_items;
} tok_pretok;
ember_status tok_pretok_parse(const cJSON *j, const char *path, int depth, tok_pretok *out);
void tok_pretok_free(tok_pretok *p);
/* Pre-tokenizes the pieces in *in (over arena) into *out; both lists are
 * scratch owned by the caller. */
ember_status tok_pretokenize(const tok_pretok *pt, tok_buf *arena, tok_pieces *in,
                             tok_pieces *out, tok_pieces *tmp, pcre2_match_data *md);

/* A span of a piece marked as a delimiter match or not. */
typedef struct {
    size_t start, end;
    bool match;
} tok_span;
typedef struct {
    tok_span *v;
    size_t n, cap;
} tok_spans;
ember_status tok_spans_push(tok_spans *s, size_t start, size_t end, bool match);
/* Splits piece p (whose delimiter matches, in order, are in *m as absolute
 * arena offsets) by behavior, appending the resulting pieces to *out. */
ember_status tok_split_by(const tok_piece *p, const tok_spans *m, tok_split_behavior behavior,
                          bool invert, tok_pieces *out);

/* ---- BPE model options (tok_bpe.c) ---- */
typedef struct {
    int32_t unk_id;
    bool fuse_unk, byte_fallback, ignore_merges;
    char *cont_prefix, *eow_suffix;
    size_t cont_prefix_len, eow_suffix_len;
} tok_bpe_opts;

/* ---- added tokens (tok_added.c) ---- */
typedef struct {
    int32_t id;
    uint32_t off; /* content: pool + off */
    size_t len;
    bool special, lstrip, rstrip, normalized, single_word;
} tok_added;
typedef struct {
    int32_t first_child, next_sibling, added; /* added: index into added[] or -1 */
    uint8_t byte;
} tok_trie_node;
typedef struct {
    int32_t root[256];
    tok_trie_node *nodes;
    size_t n, cap;
} tok_trie;
ember_status tok_trie_insert(tok_trie *t, const char *s, size_t n, int32_t added_index);
void tok_trie_free(tok_trie *t);
/* Next acceptable added-token match in s[from, n): [*a, *b) is the span it
 * takes, including the whitespace its lstrip/rstrip eat. */
bool tok_added_find(const et_tokenizer *t, const tok_trie *trie, const char *s, size_t n,
                    size_t from, size_t *a, size_t *b, int32_t *added);

/* ---- post-processor (tok_post.c) ---- */
typedef enum { POST_TEMPLATE, POST_BYTE_LEVEL, POST_SEQUENCE } tok_post_type;
typedef struct tok_post {
    tok_post_type type;
    int32_t *before, *after; /* ids around $A (TemplateProcessing, Bert, Roberta) */
    size_t n_before, n_after;
    struct tok_post *items;
    size_t n_items;
} tok_post;

/* ---- decoders (tok_decode.c) ---- */
typedef enum {
    DEC_BYTE_LEVEL, DEC_BYTE_FALLBACK, DEC_FUSE, DEC_STRIP, DEC_REPLACE, DEC_METASPACE,
    DEC_BPE, DEC_SEQUENCE
} tok_decoder_type;
typedef struct tok_decoder {
    tok_decoder_type type;
    tok_pattern pattern;   /* Replace */
    char *content;         /* Replace: replacement; Strip: the char; BPE: suffix */
    size_t content_len;
    size_t start, stop;    /* Strip */
    char replacement[8];   /* Metaspace */
    size_t replacement_len;
    tok_prepend_scheme prepend_scheme;
    struct tok_decoder *items;
    size_t n_items;
} tok_decoder;

/* One slot of the string -> id table (tok_maps.c); id1 == 0: empty. */
typedef struct {
    uint32_t tag, id1; /* high half of the hash; id + 1 */
    uint32_t off, len; /* the string in the pool */
} tok_map_slot;

/* ---- the tokenizer ---- */
struct et_tokenizer {
    char *pool;          /* every token string, NUL-terminated */
    size_t pool_len;
    uint32_t *tok_off;   /* per id: offset into pool, UINT32_MAX for a hole */
    uint32_t *tok_len;
    uint8_t *special;    /* per id: 1 for special added tokens */
    size_t n_ids;

    tok_map_slot *map;   /* open addressing: token string -> id */
    size_t map_mask;
    tok_merge *merges;   /* open addressing on (left, right) */
    size_t merge_mask;

    int32_t byte_level_ids[256];    /* id of the ByteLevel char of each byte */
    int32_t byte_fallback_ids[256]; /* id of <0xXX> */
    tok_bpe_opts bpe;
    bool byte_level_pretok;         /* a ByteLevel pre-tokenizer is present */

    tok_added *added;
    size_t n_added;
    tok_trie trie_raw, trie_norm;   /* added tokens matched before / after normalizing */

    tok_normalizer *normalizer;
    tok_pretok *pretok;
    tok_post *post;
    tok_decoder *decoder;
};

/* Maps (tok_maps.c) */
uint64_t tok_hash_bytes(const char *s, size_t n);
int32_t tok_map_find(const et_tokenizer *t, const char *s, size_t n);
/* Split in two so that a batch of lookups can overlap its cache misses:
 * prefetch every slot first, then find (h = tok_hash_bytes(s, n)). */
void tok_map_prefetch(const et_tokenizer *t, uint64_t h);
int32_t tok_map_find_hashed(const et_tokenizer *t, const char *s, size_t n, uint64_t h);
ember_status tok_map_build(et_tokenizer *t);
void tok_map_set(et_tokenizer *t, int32_t id); /* (re)maps id's string to id */
const tok_merge *tok_merge_find(const et_tokenizer *t, int32_t left, int32_t right);
ember_status tok_merges_alloc(et_tokenizer *t, size_t n_merges);
void tok_merge_prefetch(const et_tokenizer *t, int32_t left, int32_t right);
void tok_merge_put(et_tokenizer *t, int32_t left, int32_t right, uint32_t rank, int32_t merged);

/* Loading (tok_json.c scans vocab/merges fast; tok_load.c the rest) */
typedef struct {
    size_t start, end; /* byte span of a JSON value; end == 0 when absent */
} tok_span_json;
ember_status tok_json_locate_model(const char *json, size_t len, tok_span_json *vocab,
                                   tok_span_json *merges);
typedef struct {
    uint32_t off, len; /* in the pool being built */
    int32_t id;
} tok_vocab_entry;
ember_status tok_json_parse_vocab(const char *json, tok_span_json span, tok_buf *pool,
                                  tok_vocab_entry **entries, size_t *n);
ember_status tok_json_parse_merges(et_tokenizer *t, const char *json, tok_span_json span);
ember_status tok_post_parse(const et_tokenizer *t, const cJSON *j, const char *path, int depth,
                            tok_post *out);
void tok_post_free(tok_post *p);
ember_status tok_decoder_parse(const cJSON *j, const char *path, int depth, tok_decoder *out);
void tok_decoder_free(tok_decoder *d);
ember_status tok_added_parse(et_tokenizer *t, const cJSON *arr, tok_buf *pool);

/* Writing a tokenizer.json in memory (tok_build.c). A failed allocation
 * latches `failed`; tok_text_status reports it once at the end. */
typedef struct {
    char *s; /* NUL-terminated */
    size_t n, cap;
    int failed;
} tok_text;
void tok_text_put(tok_text *b, const char *s, size_t n);
void tok_text_puts(tok_text *b, const char *s);
void tok_text_string(tok_text *b, const char *s, size_t n); /* as a JSON string literal */
ember_status tok_text_status(const tok_text *b);
/* A byte-level BPE family's normalizer and pre-tokenizer, by the name
 * llama.cpp's GGUF key tokenizer.ggml.pre gives it. */
typedef struct {
    const char *name;
    const char *const *splits; /* Split regexes applied in turn (Isolated), then ByteLevel;
                                  NULL: ByteLevel with GPT-2's own regex */
    bool nfc;                  /* an NFC normalizer first */
    bool ignore_merges;        /* BPE looks a whole word up before merging (Llama 3) */
    bool add_bos;              /* llama.cpp's default when the GGUF does not say */
} tok_pre_style;
const tok_pre_style *tok_pre_style_find(const char *name); /* NULL: unknown */
const char *tok_pre_style_names(void);                     /* the known names, for messages */
/* "normalizer":...,"pre_tokenizer":...,"decoder":... (members, no comma around). */
void tok_text_pre_style(tok_text *b, const tok_pre_style *p);
void tok_text_byte_level(tok_text *b); /* a ByteLevel component object */
/* "model":{"type":"BPE",...,"vocab": (the vocab object and the rest follow). */
void tok_text_bpe_open(tok_text *b, bool ignore_merges);

/* JSON helpers for the component parsers (tok_load.c) */
const char *tok_json_type(const cJSON *j, const char *path, ember_status *st);
ember_status tok_json_bool(const cJSON *obj, const char *key, bool dflt, const char *path,
                           bool *out);
ember_status tok_json_string(const cJSON *obj, const char *key, const char *path,
                             const char **out); /* *out NULL when absent or null */
ember_status tok_json_dup(const char *s, char **out, size_t *len);
ember_status tok_json_char(const cJSON *obj, const char *key, const char *dflt,
                           const char *path, char out[8], size_t *out_len);

/* ---- per-call scratch (tok_encode.c) ---- */
typedef struct {
    int32_t id;
    int32_t prev, next;
    uint32_t len; /* bytes of the word this symbol covers */
} tok_sym;
typedef struct {
    uint32_t rank;
    int32_t pos;
    int32_t left_id, right_id;
} tok_heap_item;
typedef struct {
    tok_buf arena, norm, tmp, word;
    tok_pieces p0, p1, p2;
    tok_spans spans;
    pcre2_match_data *md;
    tok_sym *syms;
    size_t syms_cap;
    tok_heap_item *heap;
    size_t heap_n, heap_cap;
    int32_t *ids;
    size_t n_ids, cap_ids;
} tok_scratch;
ember_status tok_scratch_init(tok_scratch *s);
void tok_scratch_free(tok_scratch *s);
ember_status tok_ids_push(tok_scratch *s, int32_t id);

/* BPE on one piece, appending ids to s->ids (tok_bpe.c). */
ember_status tok_bpe_piece(const et_tokenizer *t, tok_scratch *s, const char *text, size_t n,
                           bool raw_bytes);
/* Post-processing: wraps s->ids[from..] (tok_post.c). */
ember_status tok_post_apply(const tok_post *p, tok_scratch *s, size_t from);

/* Decoding to a buffer (tok_decode.c). raw: ByteFallback bytes are kept as
 * they are (the streaming detokenizer completes characters itself). */
ember_status tok_decode_into(const et_tokenizer *t, const int32_t *ids, size_t n,
                             bool skip_special, bool raw, tok_buf *out);

#endif
