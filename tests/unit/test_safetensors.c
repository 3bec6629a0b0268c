/* Unit tests for src/io/tensor.c, safetensors.c and checkpoint.c: a valid
 * file round-trips, and every kind of malformed file or checkpoint directory
 * fails with the right status and a message that says what is wrong. */
#include "check.h"

#include "base/status.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "io/tensor.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint8_t zeros[4096];

/* ---- helpers ---------------------------------------------------------- */

typedef struct blob {
    uint8_t *buf;
    size_t len;
} blob;

/* An in-memory safetensors image: the 8-byte length `hlen_field`, then
 * `header` (hlen bytes), then `data`. */
static blob build_raw(uint64_t hlen_field, const char *header, size_t hlen, const void *data,
                      size_t data_len)
{
    blob b;
    b.len = 8 + hlen + data_len;
    b.buf = malloc(b.len ? b.len : 1);
    if (!b.buf) {
        b.len = 0;
        return b;
    }
    for (int i = 0; i < 8; i++)
        b.buf[i] = (uint8_t)(hlen_field >> (8 * i));
    if (hlen)
        memcpy(b.buf + 8, header, hlen);
    if (data_len)
        memcpy(b.buf + 8 + hlen, data, data_len);
    return b;
}

/* The usual writer: header JSON padded with spaces to a multiple of 8. */
static blob build_st(const char *header, const void *data, size_t data_len)
{
    size_t n = strlen(header), padded = (n + 7) & ~(size_t)7;
    char *h = malloc(padded + 1);
    blob b = {NULL, 0};
    if (!h)
        return b;
    memcpy(h, header, n);
    memset(h + n, ' ', padded - n);
    b = build_raw(padded, h, padded, data, data_len);
    free(h);
    return b;
}

static uint64_t header_len_of(const blob *b)
{
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | b->buf[i];
    return n;
}

static int write_file(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f)
        return 0;
    ok = fwrite(buf, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

static int write_in(const char *dir, const char *name, const void *buf, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return write_file(path, buf, len);
}

static int write_text_in(const char *dir, const char *name, const char *text)
{
    return write_in(dir, name, text, strlen(text));
}

static int write_st_in(const char *dir, const char *name, const char *header, const void *data,
                       size_t data_len)
{
    blob b = build_st(header, data, data_len);
    int ok = b.buf && write_in(dir, name, b.buf, b.len);
    free(b.buf);
    return ok;
}

static int make_tmpdir(char *out, size_t cap)
{
    const char *base = getenv("TMPDIR");
    if (!base || !base[0])
        base = "/tmp";
    snprintf(out, cap, "%s/ember_st_test_XXXXXX", base);
    return mkdtemp(out) != NULL;
}

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        char sub[1024];
        struct stat sb;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        if (lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
            rm_tree(sub);
        else
            unlink(sub);
    }
    closedir(d);
    rmdir(path);
}

/* st_parse on a padded header + `data_len` zero bytes. On failure the outputs
 * must be empty. */
static ember_status parse_hdr(const char *header, size_t data_len)
{
    blob b = build_st(header, zeros, data_len);
    et_tensor *t = (et_tensor *)1;
    size_t n = 99;
    ember_status s;
    if (!b.buf)
        return EMBER_ERR_NO_MEMORY;
    s = st_parse(b.buf, b.len, "test.safetensors", &t, &n);
    if (s == EMBER_OK)
        st_tensors_free(t, n);
    else
        CHECK_MSG(t == NULL && n == 0, "outputs not cleared on failure (%s)", header);
    free(b.buf);
    return s;
}

#define EXPECT_HDR(header, data_len, want, substr) \
    EXPECT_FAIL(parse_hdr(header, data_len), want, substr)

/* ---- tensor.c --------------------------------------------------------- */

static void test_dtype_helpers(void)
{
    et_tensor t;
    memset(&t, 0, sizeof t);
    CHECK(strcmp(et_dtype_name(ET_F32), "F32") == 0);
    CHECK(strcmp(et_dtype_name(ET_F16), "F16") == 0);
    CHECK(strcmp(et_dtype_name(ET_BF16), "BF16") == 0);
    CHECK(et_dtype_size(ET_F32) == 4);
    CHECK(et_dtype_size(ET_F16) == 2);
    CHECK(et_dtype_size(ET_BF16) == 2);
    CHECK(et_tensor_numel(&t) == 1); /* scalar */
    t.n_dims = 3;
    t.shape[0] = 2;
    t.shape[1] = 3;
    t.shape[2] = 5;
    CHECK(et_tensor_numel(&t) == 30);
    t.shape[1] = 0;
    CHECK(et_tensor_numel(&t) == 0);
}

/* ---- st_parse: valid files -------------------------------------------- */

static const char VALID_HEADER[] =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"model.embed.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"model.norm.weight\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[24,32]},"
    "\"scale\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[32,34]},"
    "\"empty\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[34,34]}}";

static void fill_pattern(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 7 + 1);
}

static void check_valid_tensors(const et_tensor *t, size_t n, const uint8_t *data,
                                const uint8_t *pattern)
{
    REQUIRE(n == 4);
    CHECK(strcmp(t[0].name, "model.embed.weight") == 0);
    CHECK(t[0].dtype == ET_F32 && t[0].n_dims == 2 && t[0].shape[0] == 2 && t[0].shape[1] == 3);
    CHECK(t[0].nbytes == 24 && t[0].data == data);
    CHECK(memcmp(t[0].data, pattern, 24) == 0);
    CHECK(strcmp(t[1].name, "model.norm.weight") == 0);
    CHECK(t[1].dtype == ET_F16 && t[1].n_dims == 1 && t[1].shape[0] == 4);
    CHECK(t[1].nbytes == 8 && t[1].data == data + 24);
    CHECK(memcmp(t[1].data, pattern + 24, 8) == 0);
    CHECK(strcmp(t[2].name, "scale") == 0);
    CHECK(t[2].dtype == ET_BF16 && t[2].n_dims == 0 && et_tensor_numel(&t[2]) == 1);
    CHECK(t[2].nbytes == 2 && memcmp(t[2].data, pattern + 32, 2) == 0);
    CHECK(strcmp(t[3].name, "empty") == 0);
    CHECK(t[3].n_dims == 2 && t[3].shape[0] == 0 && t[3].shape[1] == 5 && t[3].nbytes == 0);
    CHECK(et_tensor_numel(&t[3]) == 0);
}

static void test_valid_roundtrip(void)
{
    uint8_t pattern[34];
    et_tensor *t = NULL;
    size_t n = 0;
    blob b;
    fill_pattern(pattern, sizeof pattern);
    b = build_st(VALID_HEADER, pattern, sizeof pattern);
    REQUIRE(b.buf);
    ember_status s = st_parse(b.buf, b.len, "test.safetensors", &t, &n);
    CHECK_MSG(s == EMBER_OK, "st_parse: %s", ember_last_error());
    if (s == EMBER_OK) {
        check_valid_tensors(t, n, b.buf + 8 + header_len_of(&b), pattern);
        st_tensors_free(t, n);
    }
    free(b.buf);
}

static void test_empty_header_ok(void)
{
    CHECK(parse_hdr("{}", 0) == EMBER_OK);
    CHECK(parse_hdr("{\"__metadata__\":{}}", 0) == EMBER_OK);
    /* whitespace after the object (the usual padding) is fine */
    CHECK(parse_hdr("{}  \n ", 0) == EMBER_OK);
}

/* Unaligned starts and unused gaps are accepted (see safetensors.c). */
static void test_unaligned_and_gaps_accepted(void)
{
    et_tensor *t = NULL;
    size_t n = 0;
    blob b = build_st("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1,5]},"
                      "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[9,13]}}",
                      zeros, 16);
    REQUIRE(b.buf);
    ember_status s = st_parse(b.buf, b.len, "test.safetensors", &t, &n);
    CHECK_MSG(s == EMBER_OK, "%s", ember_last_error());
    if (s == EMBER_OK) {
        CHECK(n == 2);
        CHECK(t[0].data == b.buf + 8 + header_len_of(&b) + 1);
        st_tensors_free(t, n);
    }
    free(b.buf);
}

/* ---- st_parse: malformed files ---------------------------------------- */

static void test_file_shorter_than_8(void)
{
    uint8_t five[5] = {1, 0, 0, 0, 0};
    et_tensor *t = NULL;
    size_t n = 0;
    EXPECT_FAIL(st_parse(five, sizeof five, "short.safetensors", &t, &n), EMBER_ERR_FORMAT,
                "short.safetensors: file is 5 bytes, shorter than the 8-byte header length");
    EXPECT_FAIL(st_parse(NULL, 0, "nothing.safetensors", &t, &n), EMBER_ERR_FORMAT,
                "shorter than the 8-byte");
}

static void test_header_len_past_end(void)
{
    et_tensor *t = NULL;
    size_t n = 0;
    blob b = build_raw(100, "{}      ", 8, NULL, 0);
    REQUIRE(b.buf);
    EXPECT_FAIL(st_parse(b.buf, b.len, "x.safetensors", &t, &n), EMBER_ERR_FORMAT,
                "header length 100 runs past the end of the file (16 bytes)");
    free(b.buf);
}

static void test_header_len_insane(void)
{
    et_tensor *t = NULL;
    size_t n = 0;
    blob b = build_raw(UINT64_MAX, "{}      ", 8, NULL, 0);
    REQUIRE(b.buf);
    EXPECT_FAIL(st_parse(b.buf, b.len, "x.safetensors", &t, &n), EMBER_ERR_FORMAT,
                "is not sane");
    free(b.buf);
}

static void test_header_not_json(void)
{
    EXPECT_HDR("{\"a\": ", 0, EMBER_ERR_FORMAT, "test.safetensors: header is not valid JSON");
    EXPECT_HDR("hello", 0, EMBER_ERR_FORMAT, "header is not valid JSON");
    /* a NUL inside the declared header length */
    {
        et_tensor *t = NULL;
        size_t n = 0;
        blob b = build_raw(8, "{}\0     ", 8, NULL, 0);
        REQUIRE(b.buf);
        EXPECT_FAIL(st_parse(b.buf, b.len, "x.safetensors", &t, &n), EMBER_ERR_FORMAT,
                    "trailing bytes");
        free(b.buf);
    }
}

static void test_header_trailing_garbage(void)
{
    EXPECT_HDR("{} x", 0, EMBER_ERR_FORMAT, "trailing bytes after the JSON value");
}

static void test_header_not_object(void)
{
    EXPECT_HDR("[1, 2, 3]", 0, EMBER_ERR_FORMAT, "header is not a JSON object");
    EXPECT_HDR("\"w\"", 0, EMBER_ERR_FORMAT, "header is not a JSON object");
}

static void test_entry_not_object(void)
{
    EXPECT_HDR("{\"w\": 5}", 0, EMBER_ERR_FORMAT, "tensor 'w': entry is not a JSON object");
}

static void test_metadata_malformed(void)
{
    EXPECT_HDR("{\"__metadata__\": 3}", 0, EMBER_ERR_FORMAT,
               "\"__metadata__\" is not an object of strings");
    EXPECT_HDR("{\"__metadata__\": {\"a\": 1}}", 0, EMBER_ERR_FORMAT,
               "\"__metadata__\" key 'a' is not a string");
}

static void test_missing_dtype(void)
{
    EXPECT_HDR("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, EMBER_ERR_FORMAT,
               "tensor 'w': missing \"dtype\"");
    EXPECT_HDR("{\"w\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, EMBER_ERR_FORMAT,
               "tensor 'w': \"dtype\" is not a string");
}

static void test_unknown_dtype(void)
{
    EXPECT_HDR("{\"w\":{\"dtype\":\"Q9\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
               EMBER_ERR_FORMAT, "tensor 'w': unknown dtype 'Q9'");
    EXPECT_HDR("{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
               EMBER_ERR_FORMAT, "unknown dtype 'f32'");
}

static void test_unsupported_dtype(void)
{
    EXPECT_HDR("{\"w\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
               EMBER_ERR_UNSUPPORTED, "tensor 'w': unsupported dtype F64");
    EXPECT_HDR("{\"ids\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
               EMBER_ERR_UNSUPPORTED, "tensor 'ids': unsupported dtype I64");
    EXPECT_HDR("{\"m\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
               EMBER_ERR_UNSUPPORTED, "tensor 'm': unsupported dtype U8");
}

static void test_shape_malformed(void)
{
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, EMBER_ERR_FORMAT,
               "tensor 'w': missing \"shape\"");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,16]}}", 16,
               EMBER_ERR_FORMAT, "tensor 'w': \"shape\" is not an array");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,4]}}", 4,
               EMBER_ERR_FORMAT, "tensor 'w': shape dim 1 is not a non-negative integer");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
               EMBER_ERR_FORMAT, "tensor 'w': shape dim 0 is not a non-negative integer");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8,
               EMBER_ERR_FORMAT, "shape dim 0 is not a non-negative integer");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1099511627776],\"data_offsets\":[0,4]}}",
               4, EMBER_ERR_FORMAT, "below 2^40");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1000000000000,1000000000000],"
               "\"data_offsets\":[0,4]}}", 4, EMBER_ERR_FORMAT,
               "tensor 'w': shape element count overflows");
}

static void test_shape_too_many_dims(void)
{
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
               EMBER_ERR_UNSUPPORTED, "tensor 'w': shape has 5 dims, at most 4 supported");
}

static void test_offsets_malformed(void)
{
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, EMBER_ERR_FORMAT,
               "tensor 'w': missing \"data_offsets\"");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
               EMBER_ERR_FORMAT, "tensor 'w': \"data_offsets\" is not an array [begin, end]");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8,
               EMBER_ERR_FORMAT, "\"data_offsets\" is not an array [begin, end]");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":\"0-4\"}}", 4,
               EMBER_ERR_FORMAT, "\"data_offsets\" is not an array [begin, end]");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.5]}}", 8,
               EMBER_ERR_FORMAT, "tensor 'w': data_offsets are not non-negative integers");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 8,
               EMBER_ERR_FORMAT, "data_offsets are not non-negative integers");
}

static void test_offsets_begin_after_end(void)
{
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8,
               EMBER_ERR_FORMAT, "tensor 'w': data_offsets [8, 4] begin after end");
}

static void test_offsets_past_end(void)
{
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8,
               EMBER_ERR_FORMAT,
               "tensor 'w': data_offsets [0, 16] run past the end of the data (8 bytes");
}

static void test_offsets_size_mismatch(void)
{
    EXPECT_HDR("{\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[128],"
               "\"data_offsets\":[10,20]}}", 20, EMBER_ERR_FORMAT,
               "test.safetensors: tensor 'model.norm.weight': data_offsets [10, 20] do not "
               "match shape [128] x F32 (512 bytes)");
    EXPECT_HDR("{\"w\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", 24,
               EMBER_ERR_FORMAT, "do not match shape [2, 3] x BF16 (12 bytes)");
}

static void test_overlapping_tensors(void)
{
    EXPECT_HDR("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}", 24,
               EMBER_ERR_FORMAT, "tensors 'a' and 'b' overlap");
    /* one range inside another, listed first */
    EXPECT_HDR("{\"inner\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
               "\"outer\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,32]}}", 32,
               EMBER_ERR_FORMAT, "tensors 'outer' and 'inner' overlap");
    /* identical ranges */
    EXPECT_HDR("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
               EMBER_ERR_FORMAT, "overlap");
    /* empty tensors overlap nothing */
    CHECK(parse_hdr("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}", 8) ==
          EMBER_OK);
}

static void test_duplicate_name(void)
{
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"v\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
               "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12,
               EMBER_ERR_FORMAT, "duplicate tensor name 'w'");
    EXPECT_HDR("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],"
               "\"data_offsets\":[0,4]}}", 4, EMBER_ERR_FORMAT,
               "tensor 'w': key \"dtype\" appears twice");
}

static void test_bad_names(void)
{
    EXPECT_HDR("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
               EMBER_ERR_FORMAT, "a tensor has an empty name");
    EXPECT_HDR("{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
               EMBER_ERR_FORMAT, "tensor name #1 is not valid UTF-8");
}

/* ---- st_open ---------------------------------------------------------- */

static void test_st_open_roundtrip(void)
{
    char dir[256], path[512];
    uint8_t pattern[34];
    st_file *f = NULL;
    REQUIRE(make_tmpdir(dir, sizeof dir));
    fill_pattern(pattern, sizeof pattern);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (write_st_in(dir, "model.safetensors", VALID_HEADER, pattern, sizeof pattern)) {
        ember_status s = st_open(path, &f);
        CHECK_MSG(s == EMBER_OK, "st_open: %s", ember_last_error());
        if (s == EMBER_OK) {
            const et_tensor *t0 = st_tensor_at(f, 0);
            CHECK(strcmp(st_path(f), path) == 0);
            CHECK(st_count(f) == 4);
            CHECK(t0 != NULL);
            if (t0)
                check_valid_tensors(t0, st_count(f), t0->data, pattern);
            CHECK(st_tensor_at(f, 4) == NULL);
            CHECK(st_find(f, "model.norm.weight") == st_tensor_at(f, 1));
            CHECK(st_find(f, "scale") == st_tensor_at(f, 2));
            CHECK(st_find(f, "empty") == st_tensor_at(f, 3));
            CHECK(st_find(f, "model.embed.weight") == t0);
            CHECK(st_find(f, "model.norm") == NULL);
            CHECK(st_find(f, "") == NULL);
            st_close(f);
        }
    } else {
        CHECK_MSG(0, "could not write %s", path);
    }
    rm_tree(dir);
}

static void test_truncated_file(void)
{
    char dir[256], path[512];
    st_file *f = (st_file *)1;
    blob b;
    REQUIRE(make_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/trunc.safetensors", dir);
    b = build_st("{\"w\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[0,64]}}", zeros,
                 64);
    if (b.buf && write_file(path, b.buf, b.len - 54)) { /* keep 10 data bytes */
        EXPECT_FAIL(st_open(path, &f), EMBER_ERR_FORMAT,
                    "tensor 'w': data_offsets [0, 64] run past the end of the data (10 bytes; "
                    "file truncated?)");
        CHECK(f == NULL);
        CHECK(check_error_has(path));
    } else {
        CHECK_MSG(0, "could not write %s", path);
    }
    /* cut inside the header */
    if (b.buf && write_file(path, b.buf, 20)) {
        EXPECT_FAIL(st_open(path, &f), EMBER_ERR_FORMAT, "runs past the end of the file");
        CHECK(f == NULL);
    }
    free(b.buf);
    rm_tree(dir);
}

static void test_empty_file(void)
{
    char dir[256], path[512];
    st_file *f = NULL;
    REQUIRE(make_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/empty.safetensors", dir);
    if (write_file(path, "", 0))
        EXPECT_FAIL(st_open(path, &f), EMBER_ERR_FORMAT, "empty.safetensors: empty file");
    else
        CHECK_MSG(0, "could not write %s", path);
    CHECK(f == NULL);
    rm_tree(dir);
}

static void test_path_is_directory(void)
{
    char dir[256];
    st_file *f = NULL;
    REQUIRE(make_tmpdir(dir, sizeof dir));
    EXPECT_FAIL(st_open(dir, &f), EMBER_ERR_IO, "is a directory");
    CHECK(check_error_has(dir));
    CHECK(f == NULL);
    rm_tree(dir);
}

static void test_nonexistent_file(void)
{
    st_file *f = NULL;
    EXPECT_FAIL(st_open("/nonexistent/dir/model.safetensors", &f), EMBER_ERR_IO,
                "/nonexistent/dir/model.safetensors: cannot open: No such file");
    CHECK(f == NULL);
}

/* ---- checkpoint directories ------------------------------------------- */

static const char CONFIG[] = "{\"hidden_size\": 4, \"num_hidden_layers\": 1}\n";
static const char SHARD1[] = "model-00001-of-00002.safetensors";
static const char SHARD2[] = "model-00002-of-00002.safetensors";

/* a: F32 [2] at 0..8, b: F32 [1] at 8..12 */
static const char HDR_AB[] =
    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
    "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}";
/* c: F16 [2] at 0..4 */
static const char HDR_C[] =
    "{\"c\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}";
/* c, d */
static const char HDR_CD[] =
    "{\"c\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
    "\"d\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[4,8]}}";
/* b, c */
static const char HDR_BC[] =
    "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
    "\"c\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[4,8]}}";

static const char INDEX_OK[] =
    "{\"metadata\": {\"total_size\": 16},\n \"weight_map\": {\n"
    "  \"a\": \"model-00001-of-00002.safetensors\",\n"
    "  \"b\": \"model-00001-of-00002.safetensors\",\n"
    "  \"c\": \"model-00002-of-00002.safetensors\"\n }}\n";

/* A temp dir with config.json and two shards (a, b | c) plus `index`
 * (NULL: no index). */
static int make_sharded(char *dir, size_t cap, const char *hdr1, const char *hdr2,
                        const char *index)
{
    uint8_t pattern[16];
    fill_pattern(pattern, sizeof pattern);
    if (!make_tmpdir(dir, cap))
        return 0;
    return write_text_in(dir, "config.json", CONFIG) &&
           write_st_in(dir, SHARD1, hdr1, pattern, 12) &&
           write_st_in(dir, SHARD2, hdr2, pattern, 8) &&
           (!index || write_text_in(dir, "model.safetensors.index.json", index));
}

static void test_ck_single_ok(void)
{
    char dir[256];
    uint8_t pattern[16];
    ck_dir *ck = NULL;
    const char *file = "x";
    fill_pattern(pattern, sizeof pattern);
    REQUIRE(make_tmpdir(dir, sizeof dir));
    if (write_text_in(dir, "config.json", CONFIG) &&
        write_st_in(dir, "model.safetensors", HDR_AB, pattern, 12)) {
        ember_status s = ck_open(dir, &ck);
        CHECK_MSG(s == EMBER_OK, "ck_open: %s", ember_last_error());
        if (s == EMBER_OK) {
            const et_tensor *a, *b;
            CHECK(strcmp(ck_path(ck), dir) == 0);
            CHECK(strcmp(ck_config_json(ck), CONFIG) == 0);
            CHECK(ck_config_len(ck) == strlen(CONFIG));
            CHECK(ck_get(ck, "nope", &file) == NULL && file == NULL);
            a = ck_get(ck, "a", &file);
            CHECK(a && strcmp(a->name, "a") == 0 && a->nbytes == 8);
            CHECK(file && strcmp(file, "model.safetensors") == 0);
            CHECK(a && memcmp(a->data, pattern, 8) == 0);
            EXPECT_FAIL(ck_check_all_used(ck), EMBER_ERR_FORMAT,
                        "model.safetensors: unexpected tensor 'b' (not part of the model)");
            b = ck_get(ck, "b", NULL);
            CHECK(b && memcmp(b->data, pattern + 8, 4) == 0);
            CHECK(ck_check_all_used(ck) == EMBER_OK);
            ck_close(ck);
        }
    } else {
        CHECK_MSG(0, "could not write files in %s", dir);
    }
    rm_tree(dir);
}

static void test_ck_trailing_slash(void)
{
    char dir[256], slashed[300];
    ck_dir *ck = NULL;
    REQUIRE(make_tmpdir(dir, sizeof dir));
    snprintf(slashed, sizeof slashed, "%s/", dir);
    if (write_text_in(dir, "config.json", CONFIG) &&
        write_st_in(dir, "model.safetensors", HDR_AB, zeros, 12)) {
        ember_status s = ck_open(slashed, &ck);
        CHECK_MSG(s == EMBER_OK, "ck_open: %s", ember_last_error());
        if (s == EMBER_OK) {
            CHECK(ck_get(ck, "b", NULL) != NULL);
            ck_close(ck);
        }
    }
    rm_tree(dir);
}

static void test_ck_missing_config(void)
{
    char dir[256];
    ck_dir *ck = (ck_dir *)1;
    REQUIRE(make_tmpdir(dir, sizeof dir));
    if (write_st_in(dir, "model.safetensors", HDR_AB, zeros, 12)) {
        EXPECT_FAIL(ck_open(dir, &ck), EMBER_ERR_IO, "/config.json: cannot open: No such file");
        CHECK(check_error_has(dir));
        CHECK(ck == NULL);
    }
    rm_tree(dir);
}

static void test_ck_not_a_directory(void)
{
    char dir[256], path[512];
    ck_dir *ck = NULL;
    EXPECT_FAIL(ck_open("/nonexistent/ckpt", &ck), EMBER_ERR_IO,
                "/nonexistent/ckpt: cannot open checkpoint directory: No such file");
    CHECK(ck == NULL);
    REQUIRE(make_tmpdir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (write_text_in(dir, "config.json", CONFIG)) {
        EXPECT_FAIL(ck_open(path, &ck), EMBER_ERR_IO, "config.json: not a directory");
        CHECK(ck == NULL);
    }
    rm_tree(dir);
}

static void test_ck_no_weights(void)
{
    char dir[256];
    ck_dir *ck = NULL;
    REQUIRE(make_tmpdir(dir, sizeof dir));
    if (write_text_in(dir, "config.json", CONFIG)) {
        EXPECT_FAIL(ck_open(dir, &ck), EMBER_ERR_IO,
                    "neither model.safetensors nor model.safetensors.index.json was found");
        CHECK(check_error_has(dir));
        CHECK(ck == NULL);
    }
    rm_tree(dir);
}

static void test_ck_bad_single_file(void)
{
    char dir[256];
    ck_dir *ck = NULL;
    REQUIRE(make_tmpdir(dir, sizeof dir));
    if (write_text_in(dir, "config.json", CONFIG) &&
        write_st_in(dir, "model.safetensors", HDR_AB, zeros, 10)) {
        EXPECT_FAIL(ck_open(dir, &ck), EMBER_ERR_FORMAT,
                    "model.safetensors: tensor 'b': data_offsets [8, 12] run past the end");
        CHECK(ck == NULL);
    }
    rm_tree(dir);
}

static void test_ck_sharded_ok(void)
{
    char dir[256];
    uint8_t pattern[16];
    ck_dir *ck = NULL;
    fill_pattern(pattern, sizeof pattern);
    if (!make_sharded(dir, sizeof dir, HDR_AB, HDR_C, INDEX_OK)) {
        CHECK_MSG(0, "could not set up %s", dir);
        rm_tree(dir);
        return;
    }
    ember_status s = ck_open(dir, &ck);
    CHECK_MSG(s == EMBER_OK, "ck_open: %s", ember_last_error());
    if (s == EMBER_OK) {
        const char *file = NULL;
        const et_tensor *t;
        t = ck_get(ck, "c", &file);
        CHECK(t && t->dtype == ET_F16 && t->shape[0] == 2);
        CHECK(t && memcmp(t->data, pattern, 4) == 0);
        CHECK(file && strcmp(file, SHARD2) == 0);
        t = ck_get(ck, "b", &file);
        CHECK(t && t->dtype == ET_F32 && memcmp(t->data, pattern + 8, 4) == 0);
        CHECK(file && strcmp(file, SHARD1) == 0);
        EXPECT_FAIL(ck_check_all_used(ck), EMBER_ERR_FORMAT,
                    "model-00001-of-00002.safetensors: unexpected tensor 'a' (not part of the "
                    "model)");
        CHECK(ck_get(ck, "a", NULL) != NULL);
        CHECK(ck_check_all_used(ck) == EMBER_OK);
        ck_close(ck);
    }
    rm_tree(dir);
}

static void test_ck_unused_tensor(void)
{
    char dir[256];
    ck_dir *ck = NULL;
    if (make_sharded(dir, sizeof dir, HDR_AB, HDR_C, INDEX_OK) && ck_open(dir, &ck) == EMBER_OK) {
        CHECK(ck_get(ck, "a", NULL) && ck_get(ck, "b", NULL));
        EXPECT_FAIL(ck_check_all_used(ck), EMBER_ERR_FORMAT,
                    "model-00002-of-00002.safetensors: unexpected tensor 'c' (not part of the "
                    "model)");
        ck_close(ck);
    } else {
        CHECK_MSG(0, "setup failed: %s", ember_last_error());
    }
    /* several unused: the first is named, the count given */
    if (ck_open(dir, &ck) == EMBER_OK) {
        EXPECT_FAIL(ck_check_all_used(ck), EMBER_ERR_FORMAT,
                    "unexpected tensor 'a' (not part of the model; 3 unused in all)");
        ck_close(ck);
    }
    rm_tree(dir);
}

static void test_ck_index_missing_shard(void)
{
    char dir[256];
    ck_dir *ck = NULL;
    const char *index =
        "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\","
        " \"b\": \"model-00001-of-00002.safetensors\","
        " \"c\": \"model-00002-of-00002.safetensors\","
        " \"e\": \"model-00003-of-00003.safetensors\"}}";
    if (make_sharded(dir, sizeof dir, HDR_AB, HDR_C, index)) {
        EXPECT_FAIL(ck_open(dir, &ck), EMBER_ERR_IO,
                    "model.safetensors.index.json: \"weight_map\" names shard "
                    "'model-00003-of-00003.safetensors'");
        CHECK(check_error_has("No such file"));
        CHECK(ck == NULL);
    }
    rm_tree(dir);
}

static void test_ck_index_wrong_shard(void)
{
    char dir[256];
    ck_dir *ck = NULL;
    /* b is in shard 1 but the index says shard 2 */
    const char *index =
        "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\","
        " \"b\": \"model-00002-of-00002.safetensors\","
        " \"c\": \"model-00002-of-00002.safetensors\"}}";
    if (make_sharded(dir, sizeof dir, HDR_AB, HDR_C, index)) {
        EXPECT_FAIL(ck_open(dir, &ck), EMBER_ERR_FORMAT,
                    "\"weight_map\" puts tensor 'b' in shard 'model-00002-of-00002.safetensors'"
                    ", but it is in shard 'model-00001-of-00002.safetensors'");
        CHECK(ck == NULL);
    }
    rm_tree(dir);
    /* the index names a tensor that no shard has */
    index = "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\","
            " \"b\": \"model-00001-of-00002.safetensors\","
            " \"c\": \"model-00002-of-00002.safetensors\","
            " \"ghost\": \"model-00002-of-00002.safetensors\"}}";
    if (make_sharded(dir, sizeof dir, HDR_AB, HDR_C, index)) {
        EXPECT_FAIL(ck_open(dir, &ck), EMBER_ERR_FORMAT,
                    "puts tensor 'ghost' in shard 'model-00002-of-00002.safetensors', which has "
                    "no such tensor");
        CHECK(ck == NULL);
    }
    rm_tree(dir);
}

static void test_ck_shard_tensor_missing_from_index(void)
{
    char dir[256];
    ck_dir *ck = NULL;
    /* shard 2 holds c and d; the index lists only c */
    if (make_sharded(dir, sizeof dir, HDR_AB, HDR_CD, INDEX_OK)) {
        EXPECT_FAIL(ck_open(dir, &ck), EMBER_ERR_FORMAT,
                    "tensor 'd' in shard 'model-00002-of-00002.safetensors' is missing from "
                    "\"weight_map\"");
        CHECK(check_error_has("model.safetensors.index.json"));
        CHECK(ck == NULL);
    }
    rm_tree(dir);
}

static void test_ck_tensor_in_two_shards(void)
{
    char dir[256];
    ck_dir *ck = NULL;
    /* b is in both shards */
    if (make_sharded(dir, sizeof dir, HDR_AB, HDR_BC, INDEX_OK)) {
        EXPECT_FAIL(ck_open(dir, &ck), EMBER_ERR_FORMAT,
                    "tensor 'b' is in two shards, 'model-00001-of-00002.safetensors' and "
                    "'model-00002-of-00002.safetensors'");
        CHECK(ck == NULL);
    }
    rm_tree(dir);
}

static void test_ck_bad_index_json(void)
{
    char dir[256];
    ck_dir *ck = NULL;
    if (make_sharded(dir, sizeof dir, HDR_AB, HDR_C, "{\"weight_map\": {\"a\": ")) {
        EXPECT_FAIL(ck_open(dir, &ck), EMBER_ERR_FORMAT,
                    "model.safetensors.index.json: index is not valid JSON");
        CHECK(ck == NULL);
    }
    rm_tree(dir);
}

static void test_ck_index_shard_dotdot(void)
{
    char dir[256];
    ck_dir *ck = NULL;
    const char *index = "{\"weight_map\": {\"a\": \"../model-00001-of-00002.safetensors\"}}";
    if (make_sharded(dir, sizeof dir, HDR_AB, HDR_C, index)) {
        EXPECT_FAIL(ck_open(dir, &ck), EMBER_ERR_FORMAT,
                    "tensor 'a': shard '../model-00001-of-00002.safetensors' is not a plain "
                    "file name");
        CHECK(ck == NULL);
    }
    rm_tree(dir);
}

/* ck_parse_index directly: structure errors and the parsed form. */
static ember_status parse_index_str(const char *json)
{
    ck_index idx;
    ember_status s = ck_parse_index(json, strlen(json), "idx.json", &idx);
    if (s == EMBER_OK)
        ck_index_free(&idx);
    else
        CHECK(idx.n_shards == 0 && idx.n_entries == 0 && !idx.shards && !idx.entries);
    return s;
}

static void test_ck_parse_index_errors(void)
{
    EXPECT_FAIL(parse_index_str(""), EMBER_ERR_FORMAT, "idx.json: index is empty");
    EXPECT_FAIL(parse_index_str("[]"), EMBER_ERR_FORMAT, "idx.json: not a JSON object");
    EXPECT_FAIL(parse_index_str("{\"metadata\": {}}"), EMBER_ERR_FORMAT,
                "idx.json: missing \"weight_map\"");
    EXPECT_FAIL(parse_index_str("{\"weight_map\": []}"), EMBER_ERR_FORMAT,
                "\"weight_map\" is not an object");
    EXPECT_FAIL(parse_index_str("{\"weight_map\": {}}"), EMBER_ERR_FORMAT,
                "\"weight_map\" is empty");
    EXPECT_FAIL(parse_index_str("{\"weight_map\": {\"a\": \"x\"}, \"weight_map\": {}}"),
                EMBER_ERR_FORMAT, "\"weight_map\" appears twice");
    EXPECT_FAIL(parse_index_str("{\"weight_map\": {\"a\": 3}}"), EMBER_ERR_FORMAT,
                "tensor 'a': shard is not a file name string");
    EXPECT_FAIL(parse_index_str("{\"weight_map\": {\"\": \"x\"}}"), EMBER_ERR_FORMAT,
                "empty tensor name");
    EXPECT_FAIL(parse_index_str("{\"weight_map\": {\"a\": \"\"}}"), EMBER_ERR_FORMAT,
                "not a plain file name");
    EXPECT_FAIL(parse_index_str("{\"weight_map\": {\"a\": \"sub/x.safetensors\"}}"),
                EMBER_ERR_FORMAT, "shard 'sub/x.safetensors' is not a plain file name");
    EXPECT_FAIL(parse_index_str("{\"weight_map\": {\"a\": \"..\"}}"), EMBER_ERR_FORMAT,
                "not a plain file name");
    EXPECT_FAIL(parse_index_str("{\"weight_map\": {\"a\": \"x\", \"a\": \"x\"}}"),
                EMBER_ERR_FORMAT, "tensor 'a' is listed twice");
    EXPECT_FAIL(parse_index_str("{\"weight_map\": {\"a\": \"x\", \"a\": \"y\"}}"),
                EMBER_ERR_FORMAT, "tensor 'a' is listed in two shards, 'x' and 'y'");
    EXPECT_FAIL(parse_index_str("{\"weight_map\": {\"a\": \"x\"}} junk"), EMBER_ERR_FORMAT,
                "trailing bytes");
}

static void test_ck_parse_index_ok(void)
{
    ck_index idx;
    const char json[] = "{\"weight_map\": {\"z\": \"s2\", \"a\": \"s1\", \"m\": \"s2\"}}XXXX";
    /* the length excludes the XXXX: parsing must stop at len */
    ember_status s = ck_parse_index(json, strlen(json) - 4, "idx.json", &idx);
    CHECK_MSG(s == EMBER_OK, "%s", ember_last_error());
    if (s != EMBER_OK)
        return;
    CHECK(idx.n_shards == 2 && strcmp(idx.shards[0], "s1") == 0 &&
          strcmp(idx.shards[1], "s2") == 0);
    CHECK(idx.n_entries == 3);
    CHECK(strcmp(idx.entries[0].tensor, "a") == 0 && idx.entries[0].shard == 0);
    CHECK(strcmp(idx.entries[1].tensor, "m") == 0 && idx.entries[1].shard == 1);
    CHECK(strcmp(idx.entries[2].tensor, "z") == 0 && idx.entries[2].shard == 1);
    ck_index_free(&idx);
}

int main(void)
{
    RUN(test_dtype_helpers);
    RUN(test_valid_roundtrip);
    RUN(test_empty_header_ok);
    RUN(test_unaligned_and_gaps_accepted);
    RUN(test_file_shorter_than_8);
    RUN(test_header_len_past_end);
    RUN(test_header_len_insane);
    RUN(test_header_not_json);
    RUN(test_header_trailing_garbage);
    RUN(test_header_not_object);
    RUN(test_entry_not_object);
    RUN(test_metadata_malformed);
    RUN(test_missing_dtype);
    RUN(test_unknown_dtype);
    RUN(test_unsupported_dtype);
    RUN(test_shape_malformed);
    RUN(test_shape_too_many_dims);
    RUN(test_offsets_malformed);
    RUN(test_offsets_begin_after_end);
    RUN(test_offsets_past_end);
    RUN(test_offsets_size_mismatch);
    RUN(test_overlapping_tensors);
    RUN(test_duplicate_name);
    RUN(test_bad_names);
    RUN(test_st_open_roundtrip);
    RUN(test_truncated_file);
    RUN(test_empty_file);
    RUN(test_path_is_directory);
    RUN(test_nonexistent_file);
    RUN(test_ck_single_ok);
    RUN(test_ck_trailing_slash);
    RUN(test_ck_missing_config);
    RUN(test_ck_not_a_directory);
    RUN(test_ck_no_weights);
    RUN(test_ck_bad_single_file);
    RUN(test_ck_sharded_ok);
    RUN(test_ck_unused_tensor);
    RUN(test_ck_index_missing_shard);
    RUN(test_ck_index_wrong_shard);
    RUN(test_ck_shard_tensor_missing_from_index);
    RUN(test_ck_tensor_in_two_shards);
    RUN(test_ck_bad_index_json);
    RUN(test_ck_index_shard_dotdot);
    RUN(test_ck_parse_index_errors);
    RUN(test_ck_parse_index_ok);
    return check_summary();
}
