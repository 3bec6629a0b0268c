/* The GGUF reader and writer (src/io/gguf*.c): writer -> reader round trips
 * of every metadata type and every tensor dtype, and malformed files built
 * byte by byte here (independently of the writer), each rejected with the
 * right status and a message naming what is wrong.
 *
 *   test_gguf --write-seeds DIR   also writes fuzz seeds (fuzz/corpus/gguf). */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "base/status.h"
#include "ember.h"
#include "io/gguf.h"
#include "kernels/formats.h"

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)n + 1);
    *len = fread(p, 1, (size_t)n, f);
    fclose(f);
    return p;
}

/* ---- a byte builder for hand-made files --------------------------------------- */

typedef struct buf {
    uint8_t p[4096];
    size_t len;
} buf;

static size_t put(buf *b, const void *d, size_t n)
{
    size_t at = b->len;
    memcpy(b->p + b->len, d, n);
    b->len += n;
    return at;
}
static size_t put_u32(buf *b, uint32_t v) { return put(b, &v, 4); }
static size_t put_u64(buf *b, uint64_t v) { return put(b, &v, 8); }
static size_t put_str(buf *b, const char *s)
{
    size_t at = put_u64(b, strlen(s));
    put(b, s, strlen(s));
    return at;
}
static void set_u32(buf *b, size_t at, uint32_t v) { memcpy(b->p + at, &v, 4); }
static void set_u64(buf *b, size_t at, uint64_t v) { memcpy(b->p + at, &v, 8); }

enum { RAW_DUP_KEY = 1, RAW_BOOL_KEY = 2 };

/* A valid file: 3 (or 4) keys, tensors "a" (f32, ne [8]) and "b" (q8_0,
 * ne [32, 2]), data right after them with no trailing padding. The offsets
 * of the fields the tests patch are recorded. */
typedef struct raw {
    buf b;
    size_t version, n_tensors, n_kv, key0_len, key0_type, arr_type, arr_len, str_len;
    size_t align_type, align_val, bool_val;
    size_t name_len[2], name[2], n_dims[2], ne0[2], type[2], offset[2], data;
} raw;

static void build_raw(raw *r, int flags)
{
    memset(r, 0, sizeof *r);
    buf *b = &r->b;
    put(b, "GGUF", 4);
    r->version = put_u32(b, 3);
    r->n_tensors = put_u64(b, 2);
    r->n_kv = put_u64(b, 3 + !!(flags & RAW_DUP_KEY) + !!(flags & RAW_BOOL_KEY));
    r->key0_len = put_str(b, "general.architecture");
    r->key0_type = put_u32(b, GGUF_TYPE_STRING);
    r->str_len = put_str(b, "test");
    put_str(b, "test.arr");
    put_u32(b, GGUF_TYPE_ARRAY);
    r->arr_type = put_u32(b, GGUF_TYPE_UINT32);
    r->arr_len = put_u64(b, 3);
    for (uint32_t i = 1; i <= 3; i++) put_u32(b, i);
    put_str(b, "general.alignment");
    r->align_type = put_u32(b, GGUF_TYPE_UINT32);
    r->align_val = put_u32(b, 32);
    if (flags & RAW_DUP_KEY) {
        put_str(b, "test.arr");
        put_u32(b, GGUF_TYPE_UINT8);
        uint8_t one = 1;
        put(b, &one, 1);
    }
    if (flags & RAW_BOOL_KEY) {
        put_str(b, "test.flag");
        put_u32(b, GGUF_TYPE_BOOL);
        uint8_t one = 1;
        r->bool_val = put(b, &one, 1);
    }
    static const char *const names[2] = {"a", "b"};
    for (int t = 0; t < 2; t++) {
        r->name_len[t] = put_str(b, names[t]);
        r->name[t] = r->name_len[t] + 8;
        r->n_dims[t] = put_u32(b, t == 0 ? 1 : 2);
        r->ne0[t] = put_u64(b, t == 0 ? 8 : 32);
        if (t == 1) put_u64(b, 2);
        r->type[t] = put_u32(b, t == 0 ? 0 : 8);
        r->offset[t] = put_u64(b, t == 0 ? 0 : 32);
    }
    while (b->len % 32) b->p[b->len++] = 0;
    r->data = b->len;
    for (int i = 0; i < 32 + 68; i++) b->p[b->len++] = (uint8_t)(i * 7);
}

/* gguf_parse on the builder's bytes; on failure the output stays NULL. */
static ember_status parse(const buf *b, size_t len)
{
    gguf_file *f = (gguf_file *)1;
    ember_status st = gguf_parse(b->p, len, "t.gguf", &f);
    if (st) CHECK(f == NULL);
    gguf_close(st ? NULL : f);
    return st;
}

/* ---- malformed files ------------------------------------------------------------------ */

static void test_raw_valid(void)
{
    raw r;
    build_raw(&r, 0);
    gguf_file *f = NULL;
    REQUIRE(gguf_parse(r.b.p, r.b.len, "t.gguf", &f) == EMBER_OK);
    CHECK(gguf_version(f) == 3 && gguf_n_kv(f) == 3 && gguf_n_tensors(f) == 2);
    CHECK(gguf_data_offset(f) == r.data && gguf_alignment(f) == 32);
    const gguf_tensor *b = gguf_find_tensor(f, "b");
    REQUIRE(b != NULL);
    CHECK(b->dtype == ET_Q8_0 && b->n_dims == 2 && b->ne[0] == 32 && b->ne[1] == 2);
    CHECK(b->nbytes == 68 && b->data == r.b.p + r.data + 32);
    const gguf_value *arr;
    REQUIRE(gguf_get_arr(f, "test.arr", GGUF_TYPE_UINT32, &arr) == EMBER_OK);
    CHECK(arr->n == 3 && gguf_arr_u(arr, 2) == 3);
    gguf_close(f);
    set_u32(&r.b, r.version, 2); /* version 2 has the same layout */
    CHECK(parse(&r.b, r.b.len) == EMBER_OK);
}

static void test_bad_magic_and_version(void)
{
    raw r;
    build_raw(&r, 0);
    r.b.p[0] = 'X';
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "bad magic 'XGUF'");
    build_raw(&r, 0);
    set_u32(&r.b, r.version, 1);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_UNSUPPORTED, "version 1");
    set_u32(&r.b, r.version, 4);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_UNSUPPORTED, "version 4");
    set_u32(&r.b, r.version, 0x03000000u);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_UNSUPPORTED, "big-endian");
    EXPECT_FAIL(parse(&r.b, 3), EMBER_ERR_FORMAT, "too short");
}

/* Every proper prefix of a file is rejected, with a message. */
static void test_truncated_everywhere(void)
{
    raw r;
    build_raw(&r, 0);
    int bad = 0, said_truncated = 0;
    for (size_t cut = 0; cut < r.b.len; cut++) {
        ember_clear_error();
        ember_status st = parse(&r.b, cut);
        if (st != EMBER_ERR_FORMAT || !check_error_has("t.gguf")) {
            if (bad++ < 3) CHECK_MSG(0, "cut at %zu: %s: %s", cut, ember_status_name(st), ember_last_error());
        }
        said_truncated += check_error_has("truncated") || check_error_has("more than");
    }
    CHECK_MSG(said_truncated >= (int)r.b.len - 4, "only %d of %zu cuts said 'truncated'",
              said_truncated, r.b.len);
}

static void test_counts_and_lengths_past_end(void)
{
    raw r;
    build_raw(&r, 0);
    set_u64(&r.b, r.n_kv, (uint64_t)1 << 40);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "more than the");
    build_raw(&r, 0);
    set_u64(&r.b, r.n_tensors, UINT64_MAX);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "more than the");
    build_raw(&r, 0);
    set_u64(&r.b, r.key0_len, (uint64_t)1 << 62);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "metadata key at byte 32");
    build_raw(&r, 0);
    set_u64(&r.b, r.str_len, 100000);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "truncated");
    build_raw(&r, 0);
    set_u64(&r.b, r.arr_len, (uint64_t)1 << 61);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "key 'test.arr': array of");
    build_raw(&r, 0);
    set_u32(&r.b, r.arr_type, GGUF_TYPE_STRING); /* 3 strings of length 1, 2, 3 ... */
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "t.gguf");
}

static void test_bad_values(void)
{
    raw r;
    build_raw(&r, 0);
    set_u32(&r.b, r.key0_type, 13);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "'general.architecture': unknown value type 13");
    build_raw(&r, 0);
    set_u32(&r.b, r.arr_type, GGUF_TYPE_ARRAY);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_UNSUPPORTED, "'test.arr': arrays of arrays");
    build_raw(&r, 0);
    set_u32(&r.b, r.arr_type, 77);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "unknown array element type 77");
    build_raw(&r, RAW_BOOL_KEY);
    CHECK(parse(&r.b, r.b.len) == EMBER_OK);
    r.b.p[r.bool_val] = 2;
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "'test.flag': bool value is 2");
    build_raw(&r, RAW_DUP_KEY);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "duplicate metadata key 'test.arr'");
}

static void test_bad_alignment(void)
{
    raw r;
    build_raw(&r, 0);
    set_u32(&r.b, r.align_val, 48);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "'general.alignment' is 48, not a power of two");
    set_u32(&r.b, r.align_val, 0);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "not a power of two");
    build_raw(&r, 0);
    set_u32(&r.b, r.align_type, GGUF_TYPE_INT32);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "'general.alignment' is int32, expected uint32");
    /* 64: the data section moves and tensor b's offset 32 is misaligned */
    build_raw(&r, 0);
    set_u32(&r.b, r.align_val, 64);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "not a multiple of the alignment 64");
}

static void test_bad_tensor_infos(void)
{
    raw r;
    build_raw(&r, 0);
    set_u64(&r.b, r.offset[1], 33);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "tensor 'b': data offset 33 is not a multiple of the alignment 32");
    set_u64(&r.b, r.offset[1], 0);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "tensors 'a' and 'b' overlap");
    set_u64(&r.b, r.offset[1], 64);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "tensor 'b': data [64, 132) runs past the end");
    set_u64(&r.b, r.offset[1], UINT64_MAX - 31);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "runs past the end");
    build_raw(&r, 0);
    set_u32(&r.b, r.type[0], 16);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_UNSUPPORTED, "tensor 'a' has ggml type 16 (iq2_xxs)");
    set_u32(&r.b, r.type[0], 99);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_UNSUPPORTED, "ggml type 99 (unknown)");
    build_raw(&r, 0);
    r.b.p[r.name[1]] = 'a';
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "duplicate tensor name 'a'");
    r.b.p[r.name[1]] = '\0';
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "tensor name #1 (at byte");
    build_raw(&r, 0);
    set_u32(&r.b, r.n_dims[0], 5);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "tensor 'a' has 5 dims");
    set_u32(&r.b, r.n_dims[0], 0);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "tensor 'a' has 0 dims");
    build_raw(&r, 0);
    set_u64(&r.b, r.ne0[1], 16);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "ne[0] = 16 is not a multiple of the q8_0 block");
    set_u64(&r.b, r.ne0[1], (uint64_t)1 << 62);
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "more bytes than the whole file");
    build_raw(&r, 0);
    set_u64(&r.b, r.ne0[0], 9); /* 36 bytes: runs into b */
    EXPECT_FAIL(parse(&r.b, r.b.len), EMBER_ERR_FORMAT, "overlap");
}

/* ---- writer -> reader ------------------------------------------------------------------ */

static ember_status write_all_types(const char *path)
{
    static const uint8_t u8s[] = {0, 1, 255};
    static const int8_t i8s[] = {-128, 0, 127};
    static const uint16_t u16s[] = {0, 65535};
    static const int16_t i16s[] = {-32768, 32767};
    static const uint32_t u32s[] = {0, 4000000000u};
    static const int32_t i32s[] = {INT32_MIN, -1, INT32_MAX};
    static const float f32s[] = {-1.5f, 3.25e-20f};
    static const uint8_t bools[] = {1, 0, 1};
    static const uint64_t u64s[] = {UINT64_MAX};
    static const int64_t i64s[] = {INT64_MIN, 7};
    static const double f64s[] = {0.1, -2.5e300};
    static const char *const strs[] = {"", "Ġhello", "a b"};
    gguf_writer *w;
    ember_status st = gguf_writer_create(&w);
    if (st) return st;
    if ((st = gguf_set_u8(w, "t.u8", 200)) || (st = gguf_set_i8(w, "t.i8", -100)) ||
        (st = gguf_set_u16(w, "t.u16", 60000)) || (st = gguf_set_i16(w, "t.i16", -30000)) ||
        (st = gguf_set_u32(w, "t.u32", 4000000000u)) || (st = gguf_set_i32(w, "t.i32", -2000000000)) ||
        (st = gguf_set_f32(w, "t.f32", 0.1f)) || (st = gguf_set_bool(w, "t.bool", true)) ||
        (st = gguf_set_str(w, "t.str", "spark2_5")) ||
        (st = gguf_set_strn(w, "t.nul", "a\0b", 3)) || (st = gguf_set_str(w, "t.empty", "")) ||
        (st = gguf_set_u64(w, "t.u64", UINT64_MAX - 1)) || (st = gguf_set_i64(w, "t.i64", INT64_MIN)) ||
        (st = gguf_set_f64(w, "t.f64", 1e-300)) ||
        (st = gguf_set_arr(w, "a.u8", GGUF_TYPE_UINT8, u8s, 3)) ||
        (st = gguf_set_arr(w, "a.i8", GGUF_TYPE_INT8, i8s, 3)) ||
        (st = gguf_set_arr(w, "a.u16", GGUF_TYPE_UINT16, u16s, 2)) ||
        (st = gguf_set_arr(w, "a.i16", GGUF_TYPE_INT16, i16s, 2)) ||
        (st = gguf_set_arr(w, "a.u32", GGUF_TYPE_UINT32, u32s, 2)) ||
        (st = gguf_set_arr(w, "a.i32", GGUF_TYPE_INT32, i32s, 3)) ||
        (st = gguf_set_arr(w, "a.f32", GGUF_TYPE_FLOAT32, f32s, 2)) ||
        (st = gguf_set_arr(w, "a.bool", GGUF_TYPE_BOOL, bools, 3)) ||
        (st = gguf_set_arr(w, "a.u64", GGUF_TYPE_UINT64, u64s, 1)) ||
        (st = gguf_set_arr(w, "a.i64", GGUF_TYPE_INT64, i64s, 2)) ||
        (st = gguf_set_arr(w, "a.f64", GGUF_TYPE_FLOAT64, f64s, 2)) ||
        (st = gguf_set_arr(w, "a.empty", GGUF_TYPE_INT32, NULL, 0)) ||
        (st = gguf_set_str_arr(w, "a.str", strs, NULL, 3)) ||
        (st = gguf_set_str_arr(w, "a.nostr", NULL, NULL, 0)))
        goto out;
    st = gguf_write(w, path, NULL, NULL);
out:
    gguf_writer_free(w);
    return st;
}

static void check_all_types(const gguf_file *f)
{
    const gguf_value *v;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    float f32;
    double f64;
    bool b;
    const char *s;
    size_t len;
    CHECK((v = gguf_find(f, "t.u8")) && v->type == GGUF_TYPE_UINT8 && v->u == 200);
    CHECK((v = gguf_find(f, "t.i8")) && v->type == GGUF_TYPE_INT8 && v->i == -100);
    CHECK((v = gguf_find(f, "t.u16")) && v->type == GGUF_TYPE_UINT16 && v->u == 60000);
    CHECK((v = gguf_find(f, "t.i16")) && v->type == GGUF_TYPE_INT16 && v->i == -30000);
    CHECK(gguf_get_u32(f, "t.u32", &u32) == EMBER_OK && u32 == 4000000000u);
    CHECK(gguf_get_i32(f, "t.i32", &i32) == EMBER_OK && i32 == -2000000000);
    CHECK(gguf_get_f32(f, "t.f32", &f32) == EMBER_OK && f32 == 0.1f);
    CHECK(gguf_get_bool(f, "t.bool", &b) == EMBER_OK && b);
    CHECK(gguf_get_str(f, "t.str", &s, &len) == EMBER_OK && !strcmp(s, "spark2_5") && len == 8);
    CHECK(gguf_get_str(f, "t.nul", &s, &len) == EMBER_OK && len == 3 && !memcmp(s, "a\0b", 4));
    CHECK(gguf_get_str(f, "t.empty", &s, &len) == EMBER_OK && len == 0 && s[0] == '\0');
    CHECK(gguf_get_u64(f, "t.u64", &u64) == EMBER_OK && u64 == UINT64_MAX - 1);
    CHECK((v = gguf_find(f, "t.i64")) && v->type == GGUF_TYPE_INT64 && v->i == INT64_MIN);
    CHECK(gguf_get_f64(f, "t.f64", &f64) == EMBER_OK && f64 == 1e-300);

    REQUIRE(gguf_get_arr(f, "a.u8", GGUF_TYPE_UINT8, &v) == EMBER_OK);
    CHECK(v->n == 3 && gguf_arr_u(v, 2) == 255);
    REQUIRE(gguf_get_arr(f, "a.i8", GGUF_TYPE_INT8, &v) == EMBER_OK);
    CHECK(gguf_arr_i(v, 0) == -128 && gguf_arr_i(v, 2) == 127);
    REQUIRE(gguf_get_arr(f, "a.u16", GGUF_TYPE_UINT16, &v) == EMBER_OK);
    CHECK(gguf_arr_u(v, 1) == 65535);
    REQUIRE(gguf_get_arr(f, "a.i16", GGUF_TYPE_INT16, &v) == EMBER_OK);
    CHECK(gguf_arr_i(v, 0) == -32768);
    REQUIRE(gguf_get_arr(f, "a.u32", GGUF_TYPE_UINT32, &v) == EMBER_OK);
    CHECK(gguf_arr_u(v, 1) == 4000000000u);
    REQUIRE(gguf_get_arr(f, "a.i32", GGUF_TYPE_INT32, &v) == EMBER_OK);
    CHECK(v->n == 3 && gguf_arr_i(v, 0) == INT32_MIN && gguf_arr_i(v, 1) == -1);
    REQUIRE(gguf_get_arr(f, "a.f32", GGUF_TYPE_FLOAT32, &v) == EMBER_OK);
    CHECK(gguf_arr_f(v, 0) == -1.5 && (float)gguf_arr_f(v, 1) == 3.25e-20f);
    REQUIRE(gguf_get_arr(f, "a.bool", GGUF_TYPE_BOOL, &v) == EMBER_OK);
    CHECK(gguf_arr_u(v, 0) == 1 && gguf_arr_u(v, 1) == 0 && gguf_arr_u(v, 2) == 1);
    REQUIRE(gguf_get_arr(f, "a.u64", GGUF_TYPE_UINT64, &v) == EMBER_OK);
    CHECK(gguf_arr_u(v, 0) == UINT64_MAX);
    REQUIRE(gguf_get_arr(f, "a.i64", GGUF_TYPE_INT64, &v) == EMBER_OK);
    CHECK(gguf_arr_i(v, 0) == INT64_MIN && gguf_arr_i(v, 1) == 7);
    REQUIRE(gguf_get_arr(f, "a.f64", GGUF_TYPE_FLOAT64, &v) == EMBER_OK);
    CHECK(gguf_arr_f(v, 0) == 0.1 && gguf_arr_f(v, 1) == -2.5e300);
    REQUIRE(gguf_get_arr(f, "a.empty", GGUF_TYPE_COUNT, &v) == EMBER_OK);
    CHECK(v->n == 0 && v->arr_type == GGUF_TYPE_INT32);
    REQUIRE(gguf_get_arr(f, "a.str", GGUF_TYPE_STRING, &v) == EMBER_OK);
    CHECK(v->n == 3 && v->arr_strs[0].len == 0 && !strcmp(v->arr_strs[1].s, "Ġhello") &&
          !strcmp(v->arr_strs[2].s, "a b"));
    REQUIRE(gguf_get_arr(f, "a.nostr", GGUF_TYPE_STRING, &v) == EMBER_OK);
    CHECK(v->n == 0);
}

static void test_metadata_roundtrip(void)
{
    const char *path = tmp_path("types.gguf");
    gguf_file *f = NULL;
    REQUIRE(write_all_types(path) == EMBER_OK);
    REQUIRE(gguf_open(path, &f) == EMBER_OK);
    CHECK(gguf_n_kv(f) == 28 && gguf_n_tensors(f) == 0 && gguf_version(f) == 3);
    CHECK(!strcmp(gguf_kv_at(f, 0)->key, "t.u8")); /* file order kept */
    check_all_types(f);

    /* typed getters name the key and both types */
    uint32_t u32;
    const char *s;
    const gguf_value *v;
    EXPECT_FAIL(gguf_get_u32(f, "t.str", &u32), EMBER_ERR_FORMAT,
                "types.gguf: key 't.str' is string, expected uint32");
    EXPECT_FAIL(gguf_get_str(f, "t.u32", &s, NULL), EMBER_ERR_FORMAT, "key 't.u32' is uint32, expected string");
    EXPECT_FAIL(gguf_get_u32(f, "a.u32", &u32), EMBER_ERR_FORMAT, "key 'a.u32' is an array of uint32, expected uint32");
    EXPECT_FAIL(gguf_get_arr(f, "a.u32", GGUF_TYPE_BOOL, &v), EMBER_ERR_FORMAT,
                "key 'a.u32' is an array of uint32, expected an array of bool");
    EXPECT_FAIL(gguf_get_arr(f, "t.u8", GGUF_TYPE_UINT8, &v), EMBER_ERR_FORMAT, "is uint8, expected an array");
    EXPECT_FAIL(gguf_get_u32(f, "no.such", &u32), EMBER_ERR_FORMAT, "missing key 'no.such' (expected uint32)");
    CHECK(gguf_find(f, "no.such") == NULL && gguf_find_tensor(f, "x") == NULL);

    /* gguf_set_value copies every value exactly */
    gguf_writer *w;
    REQUIRE(gguf_writer_create(&w) == EMBER_OK);
    for (size_t i = 0; i < gguf_n_kv(f); i++)
        CHECK(gguf_set_value(w, gguf_kv_at(f, i)->key, &gguf_kv_at(f, i)->v) == EMBER_OK);
    CHECK(gguf_write(w, tmp_path("copy.gguf"), NULL, NULL) == EMBER_OK);
    gguf_writer_free(w);
    gguf_close(f);
    size_t la, lb;
    uint8_t *a = read_all(path, &la), *b = read_all(tmp_path("copy.gguf"), &lb);
    CHECK(a && b && la == lb && !memcmp(a, b, la));
    free(a);
    free(b);
}

/* A producer that streams its tensor in pieces of 5 bytes. */
typedef struct piece_src {
    const uint8_t *data;
    size_t n, short_by;
    ember_status fail;
} piece_src;

static ember_status produce_pieces(void *ctx, gguf_sink *sink)
{
    piece_src *p = ctx;
    if (p->fail) return ember_fail(p->fail, "producer says no");
    for (size_t at = 0; at < p->n - p->short_by; at += 5) {
        size_t take = p->n - p->short_by - at < 5 ? p->n - p->short_by - at : 5;
        ember_status st = gguf_sink_write(sink, p->data + at, take);
        if (st) return st;
    }
    return EMBER_OK;
}

static uint8_t payload[5][4 * 64 * 3];

static ember_status write_dtypes(const char *path, uint32_t alignment, piece_src *src,
                                 int (*progress)(void *, size_t, size_t), void *pctx)
{
    gguf_writer *w;
    ember_status st = gguf_writer_create(&w);
    if (st) return st;
    for (size_t i = 0; i < sizeof payload; i++) payload[i / sizeof payload[0]][i % sizeof payload[0]] = (uint8_t)(i * 13 + 1);
    if (alignment != GGUF_DEFAULT_ALIGNMENT) st = gguf_set_u32(w, "general.alignment", alignment);
    uint64_t ne3[3] = {4, 2, 3};
    if (!st) st = gguf_add_vector(w, "v.f32", ET_F32, 7, payload[0], NULL, NULL);
    if (!st) st = gguf_add_matrix(w, "m.f16", ET_F16, 3, 5, payload[1], NULL, NULL);
    if (!st) st = gguf_add_tensor(w, "t.bf16", ET_BF16, 3, ne3, payload[2], NULL, NULL);
    if (!st) st = gguf_add_matrix(w, "m.q8_0", ET_Q8_0, 3, 64, NULL, produce_pieces, src);
    if (!st) st = gguf_add_matrix(w, "m.q4_0", ET_Q4_0, 2, 32, payload[4], NULL, NULL);
    if (!st) st = gguf_write(w, path, progress, pctx);
    gguf_writer_free(w);
    return st;
}

static void test_tensor_roundtrip(void)
{
    static const struct { const char *name; et_dtype dt; uint32_t n_dims; uint64_t ne[3]; size_t bytes; int src; } want[] = {
        {"v.f32", ET_F32, 1, {7, 1, 1}, 28, 0},      {"m.f16", ET_F16, 2, {5, 3, 1}, 30, 1},
        {"t.bf16", ET_BF16, 3, {4, 2, 3}, 48, 2},    {"m.q8_0", ET_Q8_0, 2, {64, 3, 1}, 6 * 34, 3},
        {"m.q4_0", ET_Q4_0, 2, {32, 2, 1}, 2 * 18, 4},
    };
    static const uint32_t aligns[] = {32, 1, 64, 4096};
    for (size_t a = 0; a < sizeof aligns / sizeof *aligns; a++) {
        const char *path = tmp_path("dtypes.gguf");
        piece_src src = {payload[3], 6 * 34, 0, EMBER_OK};
        gguf_file *f = NULL;
        REQUIRE(write_dtypes(path, aligns[a], &src, NULL, NULL) == EMBER_OK);
        REQUIRE(gguf_open(path, &f) == EMBER_OK);
        CHECK(gguf_alignment(f) == aligns[a] && gguf_data_offset(f) % aligns[a] == 0);
        CHECK(gguf_n_tensors(f) == 5);
        for (size_t i = 0; i < 5; i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            CHECK_MSG(t && !strcmp(t->name, want[i].name) && t->dtype == want[i].dt &&
                      t->n_dims == want[i].n_dims && t->nbytes == want[i].bytes,
                      "tensor %zu at alignment %u", i, aligns[a]);
            if (!t) continue;
            for (int d = 0; d < 3; d++) CHECK(t->ne[d] == want[i].ne[d]);
            CHECK(t->ggml_type == ek_format_of(want[i].dt)->ggml_type);
            CHECK(t->offset % aligns[a] == 0);
            CHECK(!memcmp(t->data, payload[want[i].src], t->nbytes));
        }
        gguf_close(f);
    }
}

typedef struct progress_log {
    size_t calls, last_done, total;
    int cancel_at;
} progress_log;

static int on_progress(void *ctx, size_t done, size_t total)
{
    progress_log *p = ctx;
    p->calls++;
    p->last_done = done;
    p->total = total;
    return p->cancel_at && (int)p->calls >= p->cancel_at;
}

static void test_writer_failures_leave_nothing(void)
{
    const char *path = tmp_path("fail.gguf");
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    piece_src src = {payload[3], 6 * 34, 10, EMBER_OK};
    EXPECT_FAIL(write_dtypes(path, 32, &src, NULL, NULL), EMBER_ERR_INVALID_ARG,
                "producer of tensor 'm.q8_0' wrote 194 of its 204 bytes");
    CHECK(!exists(path) && !exists(tmp));
    src.short_by = 0;
    src.fail = EMBER_ERR_IO;
    EXPECT_FAIL(write_dtypes(path, 32, &src, NULL, NULL), EMBER_ERR_IO, "producer says no");
    CHECK(!exists(path) && !exists(tmp));
    src.fail = EMBER_OK;
    progress_log log = {0, 0, 0, 2};
    EXPECT_FAIL(write_dtypes(path, 32, &src, on_progress, &log), EMBER_ERR_CANCELLED, "cancelled");
    CHECK(!exists(path) && !exists(tmp));
    /* a failed write leaves an existing file untouched */
    FILE *old = fopen(path, "wb");
    REQUIRE(old != NULL);
    fputs("old", old);
    fclose(old);
    src.fail = EMBER_ERR_IO;
    EXPECT_FAIL(write_dtypes(path, 32, &src, NULL, NULL), EMBER_ERR_IO, "producer says no");
    size_t n;
    uint8_t *kept = read_all(path, &n);
    CHECK(kept && n == 3 && !memcmp(kept, "old", 3) && !exists(tmp));
    free(kept);
    unlink(path);
    /* progress runs to the total */
    src.fail = EMBER_OK;
    log = (progress_log){0, 0, 0, 0};
    CHECK(write_dtypes(path, 32, &src, on_progress, &log) == EMBER_OK);
    CHECK(log.calls >= 5 && log.last_done == log.total && log.total == 28 + 30 + 48 + 204 + 36);
    /* a directory that does not exist */
    EXPECT_FAIL(write_dtypes(tmp_path("no/such/x.gguf"), 32, &src, NULL, NULL), EMBER_ERR_IO, "cannot create");
}

static void test_writer_rejects_bad_input(void)
{
    gguf_writer *w;
    REQUIRE(gguf_writer_create(&w) == EMBER_OK);
    CHECK(gguf_set_u32(w, "k", 1) == EMBER_OK);
    EXPECT_FAIL(gguf_set_str(w, "k", "again"), EMBER_ERR_INVALID_ARG, "key 'k' set twice");
    EXPECT_FAIL(gguf_set_u32(w, "", 1), EMBER_ERR_INVALID_ARG, "1 to 65535 bytes");
    EXPECT_FAIL(gguf_set_u32(w, "general.alignment", 48), EMBER_ERR_INVALID_ARG, "not a power of two");
    EXPECT_FAIL(gguf_set_i32(w, "general.alignment", 64), EMBER_ERR_INVALID_ARG, "must be uint32");
    uint8_t two = 2;
    EXPECT_FAIL(gguf_set_arr(w, "b", GGUF_TYPE_BOOL, &two, 1), EMBER_ERR_INVALID_ARG, "not 0 or 1");
    EXPECT_FAIL(gguf_set_arr(w, "s", GGUF_TYPE_STRING, &two, 1), EMBER_ERR_INVALID_ARG, "fixed-size");
    float x[64] = {0};
    CHECK(gguf_add_vector(w, "x", ET_F32, 4, x, NULL, NULL) == EMBER_OK);
    EXPECT_FAIL(gguf_add_vector(w, "x", ET_F32, 4, x, NULL, NULL), EMBER_ERR_INVALID_ARG, "tensor 'x' added twice");
    EXPECT_FAIL(gguf_add_matrix(w, "q", ET_Q8_0, 2, 33, x, NULL, NULL), EMBER_ERR_INVALID_ARG,
                "33 columns are not a multiple of the q8_0 block (32)");
    EXPECT_FAIL(gguf_add_vector(w, "y", ET_F32, 4, x, produce_pieces, NULL), EMBER_ERR_INVALID_ARG,
                "exactly one of data and a producer");
    EXPECT_FAIL(gguf_add_vector(w, "this_name_is_much_longer_than_the_sixty_three_bytes_llama_cpp_allows",
                                ET_F32, 4, x, NULL, NULL), EMBER_ERR_INVALID_ARG, "1 to 63 bytes");
    /* the failed calls changed nothing: the file holds k and x only */
    REQUIRE(gguf_write(w, tmp_path("partial.gguf"), NULL, NULL) == EMBER_OK);
    gguf_writer_free(w);
    gguf_file *f = NULL;
    REQUIRE(gguf_open(tmp_path("partial.gguf"), &f) == EMBER_OK);
    CHECK(gguf_n_kv(f) == 1 && gguf_n_tensors(f) == 1);
    gguf_close(f);
}

static void test_open_errors(void)
{
    gguf_file *f = (gguf_file *)1;
    EXPECT_FAIL(gguf_open(tmp_path("missing.gguf"), &f), EMBER_ERR_IO, "cannot open");
    CHECK(f == NULL);
    EXPECT_FAIL(gguf_open(tmpdir, &f), EMBER_ERR_IO, "not a regular file");
    FILE *e = fopen(tmp_path("empty.gguf"), "wb");
    REQUIRE(e != NULL);
    fclose(e);
    EXPECT_FAIL(gguf_open(tmp_path("empty.gguf"), &f), EMBER_ERR_FORMAT, "empty file");
    CHECK(!gguf_is_gguf_file(tmp_path("empty.gguf")) && !gguf_is_gguf_file(tmpdir));
    REQUIRE(write_all_types(tmp_path("types.gguf")) == EMBER_OK);
    CHECK(gguf_is_gguf_file(tmp_path("types.gguf")));
    EXPECT_FAIL(gguf_parse(NULL, 0, "nothing", &f), EMBER_ERR_FORMAT, "nothing: file is 0 bytes");
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];
    if (!d) return;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Seeds for fuzz/fuzz_gguf.c: every metadata type, every dtype, the raw file. */
static int write_seeds(const char *dir)
{
    char path[512];
    piece_src src = {payload[3], 6 * 34, 0, EMBER_OK};
    raw r;
    snprintf(path, sizeof path, "%s/all_types.gguf", dir);
    if (write_all_types(path)) return 1;
    snprintf(path, sizeof path, "%s/dtypes.gguf", dir);
    if (write_dtypes(path, 32, &src, NULL, NULL)) return 1;
    build_raw(&r, RAW_BOOL_KEY);
    snprintf(path, sizeof path, "%s/raw.gguf", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    fwrite(r.b.p, 1, r.b.len, f);
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write-seeds")) return write_seeds(argv[2]);
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/ember-gguf-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        printf("FAIL setup: cannot create a temporary directory\n");
        return 1;
    }
    RUN(test_raw_valid);
    RUN(test_bad_magic_and_version);
    RUN(test_truncated_everywhere);
    RUN(test_counts_and_lengths_past_end);
    RUN(test_bad_values);
    RUN(test_bad_alignment);
    RUN(test_bad_tensor_infos);
    RUN(test_metadata_roundtrip);
    RUN(test_tensor_roundtrip);
    RUN(test_writer_failures_leave_nothing);
    RUN(test_writer_rejects_bad_input);
    RUN(test_open_errors);
    rm_tree(tmpdir);
    return check_summary();
}
