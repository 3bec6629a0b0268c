/* The tokenizer on small hand-written tokenizer.json strings: each
 * component with expected ids derived by hand, the error paths, the
 * streaming detokenizer on characters split over byte tokens, and two
 * threads encoding with one tokenizer at once. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tokenizer.h"

static et_tokenizer *load(const char *json)
{
    et_tokenizer *t = NULL;
    ember_status st = et_tokenizer_load_json(json, strlen(json), &t);
    CHECK_MSG(st == EMBER_OK, "load failed: %s", ember_last_error());
    return t;
}

/* encode(text) == want[0..n) */
static void check_ids(const et_tokenizer *t, const char *text, bool add_special, const int32_t *want, size_t n,
                      int line)
{
    int32_t *ids = NULL;
    size_t got = 0;
    ember_status st = et_tokenizer_encode(t, text, strlen(text), add_special, &ids, &got);
    bool same = st == EMBER_OK && got == n && (n == 0 || !memcmp(ids, want, n * sizeof *ids));
    if (!same) {
        char buf[256];
        size_t k = 0;
        for (size_t i = 0; i < got && k < sizeof buf - 16; i++) k += (size_t)snprintf(buf + k, sizeof buf - k, "%d ", (int)ids[i]);
        buf[k] = 0;
        check_report(__FILE__, line, "encode('%s'): got [%s] (%zu ids, status %d)", text, buf, got, (int)st);
    }
    free(ids);
}
#define CHECK_IDS(t, text, special, ...)                                                            \
    do {                                                                                            \
        const int32_t want_[] = {__VA_ARGS__};                                                      \
        check_ids(t, text, special, want_, sizeof want_ / sizeof want_[0], __LINE__);               \
    } while (0)

static void check_decode(const et_tokenizer *t, const int32_t *ids, size_t n, bool skip, const char *want, int line)
{
    char *text = NULL;
    size_t len = 0;
    ember_status st = et_tokenizer_decode(t, ids, n, skip, &text, &len);
    if (st != EMBER_OK || len != strlen(want) || memcmp(text, want, len))
        check_report(__FILE__, line, "decode: got '%s', want '%s' (status %d)", text ? text : "", want, (int)st);
    free(text);
}
#define CHECK_DECODE(t, skip, want, ...)                                                            \
    do {                                                                                            \
        const int32_t ids_[] = {__VA_ARGS__};                                                       \
        check_decode(t, ids_, sizeof ids_ / sizeof ids_[0], skip, want, __LINE__);                  \
    } while (0)

/* Loading must fail with `status` and a message containing `needle`. */
static void check_load_error(const char *json, ember_status status, const char *needle, int line)
{
    et_tokenizer *t = NULL;
    ember_status st = et_tokenizer_load_json(json, strlen(json), &t);
    if (st != status || t || !strstr(ember_last_error(), needle))
        check_report(__FILE__, line, "load: status %d (want %d), message '%s' (want '%s')", (int)st, (int)status,
                     ember_last_error(), needle);
    et_tokenizer_free(t);
}
#define CHECK_LOAD_ERROR(json, status, needle) check_load_error(json, status, needle, __LINE__)

static void bpe_merges_both_encodings(void)
{
    et_tokenizer *s = load("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"ab\":3,\"abc\":4},"
                           "\"merges\":[\"a b\",\"ab c\"]}}");
    et_tokenizer *p = load("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"ab\":3,\"abc\":4},"
                           "\"merges\":[[\"a\",\"b\"],[\"ab\",\"c\"]]}}");
    REQUIRE(s && p);
    /* a b c a b -> ab c ab (rank 0, left first) -> abc ab */
    CHECK_IDS(s, "abcab", true, 4, 3);
    CHECK_IDS(p, "abcab", true, 4, 3);
    CHECK(et_tokenizer_vocab_size(s) == 5);
    CHECK(et_tokenizer_find(s, "abc") == 4 && et_tokenizer_find(s, "zz") == -1);
    CHECK(!strcmp(et_tokenizer_token(s, 3), "ab") && et_tokenizer_token(s, 5) == NULL);
    et_tokenizer_free(s);
    et_tokenizer_free(p);
}

static void bpe_lowest_rank_first(void)
{
    et_tokenizer *t = load("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"ab\":3,\"bc\":4},"
                           "\"merges\":[\"b c\",\"a b\"]}}");
    REQUIRE(t);
    CHECK_IDS(t, "abc", false, 0, 4); /* (b,c) has rank 0: a bc */
    CHECK_IDS(t, "abab", false, 3, 3);
    et_tokenizer_free(t);
}

static void bpe_byte_fallback_and_unk(void)
{
    et_tokenizer *t = load("{\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"byte_fallback\":true,\"fuse_unk\":true,"
                           "\"vocab\":{\"<unk>\":0,\"<0xC3>\":1,\"<0xA9>\":2,\"a\":3},\"merges\":[]}}");
    et_tokenizer *nf = load("{\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"fuse_unk\":false,"
                            "\"vocab\":{\"<unk>\":0,\"a\":1},\"merges\":[]}}");
    REQUIRE(t && nf);
    CHECK_IDS(t, "a\xC3\xA9", false, 3, 1, 2); /* é = C3 A9 through byte tokens */
    CHECK_IDS(t, "bba", false, 0, 3);          /* no <0x62>: unk, fused */
    CHECK_IDS(nf, "bba", false, 0, 0, 1);
    et_tokenizer_free(t);
    et_tokenizer_free(nf);
}

static void bpe_ignore_merges(void)
{
#define IGNORE_MERGES_JSON(flag)                                                                    \
    "{\"model\":{\"type\":\"BPE\",\"ignore_merges\":" flag ",\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"ab\":3," \
    "\"abc\":4},\"merges\":[\"a b\"]}}"
    et_tokenizer *on = load(IGNORE_MERGES_JSON("true"));
    et_tokenizer *off = load(IGNORE_MERGES_JSON("false"));
    REQUIRE(on && off);
    CHECK_IDS(on, "abc", false, 4);
    CHECK_IDS(off, "abc", false, 3, 2);
    et_tokenizer_free(on);
    et_tokenizer_free(off);
}

static void normalizers(void)
{
    et_tokenizer *seq = load("{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Lowercase\"},"
                             "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xE2\x96\x81\"},"
                             "{\"type\":\"Prepend\",\"prepend\":\"\xE2\x96\x81\"}]},"
                             "\"model\":{\"type\":\"BPE\",\"vocab\":{\"\xE2\x96\x81\":0,\"a\":1,\"b\":2},\"merges\":[]}}");
    et_tokenizer *nfkc = load("{\"normalizer\":{\"type\":\"NFKC\"},\"model\":{\"type\":\"BPE\",\"vocab\":{\"f\":0,\"i\":1},\"merges\":[]}}");
    et_tokenizer *nfd = load("{\"normalizer\":{\"type\":\"NFD\"},\"model\":{\"type\":\"BPE\",\"vocab\":{\"e\":0,\"\xCC\x81\":1},\"merges\":[]}}");
    et_tokenizer *strip = load("{\"normalizer\":{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true},"
                               "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\" \":1},\"merges\":[]}}");
    et_tokenizer *re = load("{\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\d+\"},\"content\":\"a\"},"
                            "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[]}}");
    REQUIRE(seq && nfkc && nfd && strip && re);
    CHECK_IDS(seq, "A B", false, 0, 1, 0, 2); /* "a b" -> "a▁b" -> "▁a▁b" */
    CHECK_IDS(nfkc, "\xEF\xAC\x81", false, 0, 1); /* the ligature ﬁ -> f i */
    CHECK_IDS(nfd, "\xC3\xA9", false, 0, 1);      /* é -> e + U+0301 */
    CHECK_IDS(strip, "  a a \n", false, 0, 1, 0);
    CHECK_IDS(re, "b123b4", false, 1, 0, 1, 0);
    et_tokenizer_free(seq);
    et_tokenizer_free(nfkc);
    et_tokenizer_free(nfd);
    et_tokenizer_free(strip);
    et_tokenizer_free(re);
}

/* Pre-tokenizes text with the pre-tokenizer JSON and joins the pieces with '|'. */
static char *pieces(const char *pretok_json, const char *text)
{
    static char out[512];
    cJSON *j = cJSON_Parse(pretok_json);
    tok_pretok pt;
    tok_buf arena = {0};
    tok_pieces in = {0}, res = {0}, tmp = {0};
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    ember_status st = tok_pretok_parse(j, "pre_tokenizer", 0, &pt);
    if (st == EMBER_OK) st = tok_buf_append(&arena, text, strlen(text));
    if (st == EMBER_OK) st = tok_pieces_push(&in, 0, strlen(text), 0, 1);
    if (st == EMBER_OK) st = tok_pretokenize(&pt, &arena, &in, &res, &tmp, md);
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; st == EMBER_OK && i < res.n && k + res.v[i].len + 2 < sizeof out; i++) {
        if (i) out[k++] = '|';
        memcpy(out + k, arena.p + res.v[i].off, res.v[i].len);
        k += res.v[i].len;
        out[k] = 0;
    }
    if (st != EMBER_OK) snprintf(out, sizeof out, "error: %s", ember_last_error());
    tok_pretok_free(&pt);
    tok_buf_free(&arena);
    tok_pieces_free(&in);
    tok_pieces_free(&res);
    tok_pieces_free(&tmp);
    pcre2_match_data_free(md);
    cJSON_Delete(j);
    return out;
}
#define CHECK_PIECES(json, text, want)                                                              \
    do {                                                                                            \
        const char *got_ = pieces(json, text);                                                      \
        CHECK_MSG(!strcmp(got_, want), "pieces('%s') = '%s', want '%s'", text, got_, want);         \
    } while (0)

static void split_behaviors(void)
{
#define SPLIT_SPACE(behavior, invert)                                                               \
    "{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"" behavior "\",\"invert\":" invert "}"
    CHECK_PIECES(SPLIT_SPACE("Removed", "false"), "a  b c", "a|b|c");
    CHECK_PIECES(SPLIT_SPACE("Isolated", "false"), "a  b c", "a| | |b| |c");
    CHECK_PIECES(SPLIT_SPACE("MergedWithPrevious", "false"), "a  b c", "a | |b |c");
    CHECK_PIECES(SPLIT_SPACE("MergedWithNext", "false"), "a  b c", "a| | b| c");
    CHECK_PIECES(SPLIT_SPACE("Contiguous", "false"), "a  b c", "a|  |b| |c");
    CHECK_PIECES(SPLIT_SPACE("Removed", "true"), "a  b c", " | | ");
    CHECK_PIECES("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\d+\"},\"behavior\":\"Removed\",\"invert\":true}",
                 "ab12cd3", "12|3");
}

static void pre_tokenizers(void)
{
    CHECK_PIECES("{\"type\":\"Digits\",\"individual_digits\":true}", "ab123c", "ab|1|2|3|c");
    CHECK_PIECES("{\"type\":\"Digits\",\"individual_digits\":false}", "ab123c", "ab|123|c");
    CHECK_PIECES("{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":true}", "Hello world", " Hello| world");
    CHECK_PIECES("{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}", "it's  ok", "it|'s| | ok");
    CHECK_PIECES("{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\",\"prepend_scheme\":\"always\",\"split\":true}",
                 "Hey friend", "\xE2\x96\x81Hey|\xE2\x96\x81" "friend");
    CHECK_PIECES("{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\",\"prepend_scheme\":\"never\",\"split\":false}",
                 "Hey friend", "Hey\xE2\x96\x81" "friend");
    CHECK_PIECES("{\"type\":\"Whitespace\"}", "Hey, you!", "Hey|,|you|!");
    CHECK_PIECES("{\"type\":\"WhitespaceSplit\"}", " a\tb\n", "a|b");
    CHECK_PIECES("{\"type\":\"Punctuation\"}", "a,b", "a|,|b");
    CHECK_PIECES("{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},"
                 "\"behavior\":\"Removed\"},{\"type\":\"Digits\",\"individual_digits\":true}]}",
                 "a1 b22", "a|1|b|2|2");
    /* Spark's first split: numbers in groups of at most three */
    CHECK_PIECES("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\p{N}{1,3}\"},\"behavior\":\"Isolated\"}",
                 "x1234567", "x|123|456|7");
}

static const char added_json[] =
    "{\"added_tokens\":[{\"id\":3,\"content\":\"<x>\",\"special\":true,\"lstrip\":true,\"rstrip\":true},"
    "{\"id\":4,\"content\":\"ab\",\"single_word\":true,\"special\":false,\"normalized\":false},"
    "{\"id\":5,\"content\":\"<xy>\",\"special\":true}],"
    "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\" \":2},\"merges\":[]}}";

static void added_tokens(void)
{
    et_tokenizer *t = load(added_json);
    REQUIRE(t);
    CHECK_IDS(t, "a <x> b", false, 0, 3, 1); /* lstrip/rstrip eat the spaces */
    CHECK_IDS(t, "ab ab", false, 4, 2, 4);
    CHECK_IDS(t, "abab", false, 0, 1, 0, 1); /* single_word: not inside a word */
    CHECK_IDS(t, "<xy><x>", false, 5, 3);    /* longest first */
    CHECK(et_tokenizer_is_special(t, 3) && !et_tokenizer_is_special(t, 4) && !et_tokenizer_is_special(t, 99));
    /* no decoder: tokens are joined with spaces, as tokenizers does */
    CHECK_DECODE(t, false, "a <x> ab", 0, 3, 4);
    CHECK_DECODE(t, true, "a ab", 0, 3, 4);
    et_tokenizer_free(t);
}

/* Two long added tokens sharing a prefix: the trie's node array grows
 * (past 256 nodes) while the second is inserted below the first's nodes
 * (a fuzz find: the insert kept a pointer into the old array). */
static void added_tokens_grow_trie(void)
{
    char json[1024], a[201], b[201];
    memset(a, 'a', 200);
    a[200] = 0;
    memset(b, 'a', 100);
    memset(b + 100, 'b', 100);
    b[200] = 0;
    snprintf(json, sizeof json,
             "{\"added_tokens\":[{\"id\":2,\"content\":\"%s\"},{\"id\":3,\"content\":\"%s\"}],"
             "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[]}}", a, b);
    et_tokenizer *t = load(json);
    REQUIRE(t);
    char text[402];
    snprintf(text, sizeof text, "%s%s", b, a);
    CHECK_IDS(t, text, false, 3, 2);
    et_tokenizer_free(t);
}

static void template_post_processor(void)
{
    et_tokenizer *t = load(
        "{\"added_tokens\":[{\"id\":0,\"content\":\"<s>\",\"special\":true},{\"id\":1,\"content\":\"</s>\",\"special\":true}],"
        "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},"
        "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"</s>\",\"type_id\":0}}],"
        "\"special_tokens\":{\"<s>\":{\"id\":\"<s>\",\"ids\":[0],\"tokens\":[\"<s>\"]},"
        "\"</s>\":{\"id\":\"</s>\",\"ids\":[1],\"tokens\":[\"</s>\"]}}},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"<s>\":0,\"</s>\":1,\"a\":2},\"merges\":[]}}");
    REQUIRE(t);
    CHECK_IDS(t, "a", true, 0, 2, 1);
    CHECK_IDS(t, "a", false, 2);
    CHECK_IDS(t, "", true, 0, 1);
    et_tokenizer_free(t);
}

/* ▁Hello, bytes of €, ▁, x with a Llama-style decoder chain. */
static const char fallback_json[] =
    "{\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\xE2\x96\x81\"},"
    "\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \","
    "\"start\":1,\"stop\":0}]},\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"vocab\":{\"\xE2\x96\x81Hello\":0,"
    "\"<0xE2>\":1,\"<0x82>\":2,\"<0xAC>\":3,\"\xE2\x96\x81\":4,\"x\":5},\"merges\":[]}}";

static void decoders(void)
{
    et_tokenizer *t = load(fallback_json);
    et_tokenizer *m = load("{\"decoder\":{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\",\"prepend_scheme\":\"always\"},"
                           "\"model\":{\"type\":\"BPE\",\"vocab\":{\"\xE2\x96\x81Hi\":0,\"a\":1},\"merges\":[]}}");
    REQUIRE(t && m);
    CHECK_DECODE(t, false, "Hello\xE2\x82\xAC", 0, 1, 2, 3);
    CHECK_DECODE(t, false, "\xEF\xBF\xBD", 1);           /* a lone lead byte */
    CHECK_DECODE(t, false, " Hello", 4, 0);              /* Strip takes one space only */
    CHECK_DECODE(m, false, "Hi Hi", 0, 0);
    CHECK_DECODE(m, false, "a Hi", 1, 0); /* only the first token loses its space */
    et_tokenizer_free(t);
    et_tokenizer_free(m);
}

static void load_errors(void)
{
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a b\"]}}", EMBER_ERR_FORMAT, "model.merges[0]");
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[[\"a\",\"b\"]]}}", EMBER_ERR_FORMAT,
                     "model.merges[0]");
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":0},\"merges\":[]}}", EMBER_ERR_FORMAT, "id 0");
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1000},\"merges\":[]}}", EMBER_ERR_FORMAT, "out of range");
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}", EMBER_ERR_FORMAT, "model.vocab");
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0}}}", EMBER_ERR_UNSUPPORTED, "model.type");
    CHECK_LOAD_ERROR("{\"normalizer\":{\"type\":\"BertNormalizer\"},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                     EMBER_ERR_UNSUPPORTED, "normalizer.type");
    CHECK_LOAD_ERROR("{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\"},{\"type\":\"Nope\"}]},"
                     "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                     EMBER_ERR_UNSUPPORTED, "pre_tokenizer.pretokenizers[1].type");
    CHECK_LOAD_ERROR("{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"},"
                     "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                     EMBER_ERR_UNSUPPORTED, "pre_tokenizer.pattern");
    CHECK_LOAD_ERROR("{\"added_tokens\":[{\"id\":-1,\"content\":\"x\"}],\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                     EMBER_ERR_FORMAT, "added_tokens[0].id");
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"vocab\":{\"a\":0},\"merges\":[]}}", EMBER_ERR_FORMAT,
                     "model.unk_token");
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}} x", EMBER_ERR_FORMAT, "trailing");
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0", EMBER_ERR_FORMAT, "tokenizer.json");
    CHECK_LOAD_ERROR("[]", EMBER_ERR_FORMAT, "object");
    /* an empty first merge string (a fuzz find: UB on an unallocated buffer) */
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"\"]}}", EMBER_ERR_FORMAT,
                     "model.merges[0]");
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"\\ud800\":0},\"merges\":[]}}", EMBER_ERR_FORMAT, "surrogate");

    et_tokenizer *t = NULL;
    CHECK(et_tokenizer_load("/nonexistent/dir/tokenizer.json", &t) == EMBER_ERR_IO && !t);
}

/* The fuzz crash: a Prepend normalizer whose content holds raw bytes that
 * are not UTF-8 put them into the text, and the Split regex (run with
 * PCRE2_NO_UTF_CHECK, the text having been checked once) then read past the
 * subject in PCRE2's JIT code. Such a file must be refused at load, naming
 * the byte; the same file with UTF-8 content must load and split. */
#define CRASH_SPLIT                                                                                 \
    "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":"                                 \
    "\"\x16\x16\x16\x16[\\r\\n]|\\\\s+(?!\\\\S)|\\\\s+\"},\"behavior\":\"Contiguous\",\"invert\":true},"     \
    "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\" \":2,\"0\":3},\"merges\":[]}}"

static void invalid_utf8_in_json_strings(void)
{
    static const char bad_prepend[] = "{\"normalizer\":{\"type\":\"Prepend\",\"prepend\":\"0\xC8" "0\xF2\xF2\"}," CRASH_SPLIT;
    CHECK_LOAD_ERROR(bad_prepend, EMBER_ERR_FORMAT, "invalid UTF-8 at byte 44");
    /* the same in a Replace content, an added token, a decoder string */
    CHECK_LOAD_ERROR("{\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\"a\"},\"content\":\"\xF2\"},"
                     "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                     EMBER_ERR_FORMAT, "invalid UTF-8");
    CHECK_LOAD_ERROR("{\"added_tokens\":[{\"id\":1,\"content\":\"\xA9\"}],\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                     EMBER_ERR_FORMAT, "invalid UTF-8");
    /* after the vocab (the checked segments skip it and merges) */
    CHECK_LOAD_ERROR("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[],\"x\":\"\xC0\"}}", EMBER_ERR_FORMAT,
                     "invalid UTF-8");

    et_tokenizer *t = load("{\"normalizer\":{\"type\":\"Prepend\",\"prepend\":\"0\"}," CRASH_SPLIT);
    REQUIRE(t);
    /* "0a b": the regex only matches the space; inverted and Contiguous, the
     * text runs around it stay whole: "0a" is not in the vocab, so by chars. */
    CHECK_IDS(t, "a b", false, 3, 0, 2, 1);
    CHECK_IDS(t, "\xC8\x80 ", false, 3, 2); /* U+0200: no vocab entry and no unk, dropped */
    et_tokenizer_free(t);
}

static void call_errors(void)
{
    et_tokenizer *t = load(added_json);
    REQUIRE(t);
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK(et_tokenizer_encode(t, "a\xFF", 2, false, &ids, &n) == EMBER_ERR_INVALID_ARG && !ids);
    CHECK(strstr(ember_last_error(), "UTF-8"));
    const int32_t bad[] = {0, 77};
    char *text = NULL;
    size_t len;
    CHECK(et_tokenizer_decode(t, bad, 2, false, &text, &len) == EMBER_ERR_INVALID_ARG && !text);
    CHECK(strstr(ember_last_error(), "out of range"));
    et_tokenizer_free(t);
}

/* A byte-level tokenizer: id b is the ByteLevel character of byte b. */
static char *byte_level_json(void)
{
    tok_buf b = {0};
    static const char head[] = "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\","
                               "\"add_prefix_space\":false,\"use_regex\":false},\"model\":{\"type\":\"BPE\",\"vocab\":{";
    tok_buf_append(&b, head, sizeof head - 1);
    for (int i = 0; i < 256; i++) {
        char enc[4], num[32];
        size_t k = tok_utf8_encode(tok_byte_to_char((uint8_t)i), enc);
        tok_buf_append(&b, i ? ",\"" : "\"", i ? 2 : 1);
        if (enc[0] == '"' || enc[0] == '\\') tok_buf_append(&b, "\\", 1);
        tok_buf_append(&b, enc, k);
        snprintf(num, sizeof num, "\":%d", i);
        tok_buf_append(&b, num, strlen(num));
    }
    tok_buf_append(&b, "},\"merges\":[]}}", 15);
    return b.p;
}

static void detok_byte_level_split_emoji(void)
{
    char *json = byte_level_json();
    et_tokenizer *t = load(json);
    free(json);
    REQUIRE(t);
    CHECK_IDS(t, "a\xF0\x9F\x98\x80" "b", false, 0x61, 0xF0, 0x9F, 0x98, 0x80, 0x62);
    et_detok *d;
    REQUIRE(et_detok_create(t, false, &d) == EMBER_OK);
    const int32_t ids[] = {0x61, 0xF0, 0x9F, 0x98, 0x80, 0x62};
    const char *want[] = {"a", "", "", "", "\xF0\x9F\x98\x80", "b"};
    for (int i = 0; i < 6; i++) {
        const char *text;
        size_t len;
        REQUIRE(et_detok_push(d, ids[i], &text, &len) == EMBER_OK);
        CHECK_MSG(len == strlen(want[i]) && !memcmp(text, want[i], len), "push %d: got '%.*s'", i, (int)len, text);
    }
    const char *text;
    size_t len;
    CHECK(et_detok_push(d, 0xF0, &text, &len) == EMBER_OK && len == 0);
    CHECK(et_detok_push(d, 0x9F, &text, &len) == EMBER_OK && len == 0);
    CHECK(et_detok_flush(d, &text, &len) == EMBER_OK && len == 3 && !memcmp(text, "\xEF\xBF\xBD", 3));
    CHECK(et_detok_push(d, 99999, &text, &len) == EMBER_ERR_INVALID_ARG);
    et_detok_free(d);
    et_tokenizer_free(t);
}

static void detok_byte_fallback_with_strip(void)
{
    et_tokenizer *t = load(fallback_json);
    REQUIRE(t);
    et_detok *d;
    REQUIRE(et_detok_create(t, false, &d) == EMBER_OK);
    const int32_t ids[] = {0, 4, 1, 2, 3, 5};
    const char *want[] = {"Hello", " ", "", "", "\xE2\x82\xAC", "x"};
    char all[64] = "";
    for (int i = 0; i < 6; i++) {
        const char *text;
        size_t len;
        REQUIRE(et_detok_push(d, ids[i], &text, &len) == EMBER_OK);
        CHECK_MSG(len == strlen(want[i]) && !memcmp(text, want[i], len), "push %d: got '%.*s'", i, (int)len, text);
        strncat(all, text, len);
    }
    check_decode(t, ids, 6, false, all, __LINE__); /* the stream adds up to decode() */
    et_detok_free(d);
    et_tokenizer_free(t);
}

typedef struct {
    const et_tokenizer *tok;
    const char *text;
    const int32_t *want;
    size_t n_want;
    int bad;
} thread_job;

static void *encode_many(void *p)
{
    thread_job *j = p;
    for (int r = 0; r < 200; r++) {
        int32_t *ids;
        size_t n;
        if (et_tokenizer_encode(j->tok, j->text, strlen(j->text), true, &ids, &n) != EMBER_OK ||
            n != j->n_want || memcmp(ids, j->want, n * sizeof *ids))
            j->bad++;
        if (n) free(ids);
    }
    return NULL;
}

static void two_threads_encode(void)
{
    et_tokenizer *t = NULL;
    ember_status st = et_tokenizer_load("models/tiny", &t);
    REQUIRE(st == EMBER_OK);
    const char *texts[2] = {"The model reads the prompt, thinks, and answers: 12345 <|im_end|>\n",
                            "def tokenize(text):\n    return [encode(w) for w in text.split()]  # 你好"};
    int32_t *want[2];
    size_t n_want[2];
    for (int i = 0; i < 2; i++) REQUIRE(et_tokenizer_encode(t, texts[i], strlen(texts[i]), true, &want[i], &n_want[i]) == EMBER_OK);
    thread_job jobs[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        jobs[i] = (thread_job){t, texts[i], want[i], n_want[i], 0};
        pthread_create(&th[i], NULL, encode_many, &jobs[i]);
    }
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECK(jobs[0].bad == 0 && jobs[1].bad == 0);
    free(want[0]);
    free(want[1]);
    et_tokenizer_free(t);
}

int main(void)
{
    RUN(bpe_merges_both_encodings);
    RUN(bpe_lowest_rank_first);
    RUN(bpe_byte_fallback_and_unk);
    RUN(bpe_ignore_merges);
    RUN(normalizers);
    RUN(split_behaviors);
    RUN(pre_tokenizers);
    RUN(added_tokens);
    RUN(added_tokens_grow_trie);
    RUN(template_post_processor);
    RUN(decoders);
    RUN(load_errors);
    RUN(invalid_utf8_in_json_strings);
    RUN(call_errors);
    RUN(detok_byte_level_split_emoji);
    RUN(detok_byte_fallback_with_strip);
    RUN(two_threads_encode);
    return check_summary();
}
