/* Prompt-cache files (include/ember_text.h, src/llm/state_file.c) on the
 * committed tiny checkpoint (EMBER_TEST_MODEL to override):
 * - a session restored from a file continues with logits identical, bit for
 *   bit, to a session that ran the same tokens in the same chunks: the file
 *   keeps every byte of the caches and every position's slot, also after
 *   the sliding rings wrapped, into a session of another capacity, and in
 *   each KV format;
 * - a prompt that agrees with the file only up to a mark resumes there
 *   (the rings come from the mark), again bit for bit;
 * - files for another model, weight format, weights or KV format, and
 *   truncated, corrupt, foreign or future-version files are refused with
 *   the session as it was;
 * - a conversation saved and loaded answers as the original does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "ember.h"

static ember_session *session(const ember_model *m, int32_t ctx, ember_type kv)
{
    ember_session_params sp = ember_session_default_params();
    sp.max_context = ctx;
    sp.n_threads = 1;
    sp.prefill_chunk = 16;
    sp.kv_type = kv;
    ember_session *s = NULL;
    return ember_session_create(m, &sp, &s) == EMBER_OK ? s : NULL;
}

static char path_buf[256];
static const char *tmp_path(const char *name)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path_buf, sizeof path_buf, "%s/ember_pc_%d_%s", dir && *dir ? dir : "/tmp", (int)getpid(), name);
    return path_buf;
}

#define TOTAL 100
static int32_t ids[TOTAL];

static void fill_ids(int32_t vocab) { check_random_ids(ids, TOTAL, vocab, 7); }

static int same_logits(const ember_session *a, const ember_session *b, int32_t vocab)
{
    const float *x = ember_session_logits(a), *y = ember_session_logits(b);
    return x && y && !memcmp(x, y, (size_t)vocab * sizeof *x);
}

/* Saves after n tokens, restores into a session of context ctx, runs the
 * rest; the reference runs the same two chunks from scratch. */
static void round_trip(const ember_model *m, int n, int32_t ctx, ember_type kv)
{
    const int32_t vocab = ember_model_vocab_size(m);
    const char *path = tmp_path("round_trip");
    ember_session *src = session(m, n + 1, kv), *dst = session(m, ctx, kv), *ref = session(m, TOTAL, kv);
    REQUIRE(src && dst && ref);
    REQUIRE(ember_session_prefill(src, ids, (size_t)n) == EMBER_OK);
    REQUIRE(ember_session_save(src, ids, (size_t)n, path) == EMBER_OK);
    size_t restored = 0;
    REQUIRE(ember_session_load(dst, path, ids, TOTAL, &restored) == EMBER_OK);
    CHECK_MSG(restored == (size_t)n, "restored %zu of %d", restored, n);
    CHECK(ember_session_position(dst) == n && ember_session_logits(dst) == NULL);
    CHECK(ember_session_prefill(dst, ids + n, (size_t)(TOTAL - n)) == EMBER_OK);
    CHECK(ember_session_prefill(ref, ids, (size_t)n) == EMBER_OK);
    CHECK(ember_session_prefill(ref, ids + n, (size_t)(TOTAL - n)) == EMBER_OK);
    CHECK_MSG(same_logits(dst, ref, vocab), "n %d ctx %d kv %d: logits differ", n, ctx, (int)kv);
    unlink(path);
    ember_session_free(src);
    ember_session_free(dst);
    ember_session_free(ref);
}

static void restored_logits_are_identical(void)
{
    ember_model *m = check_load_model(check_model_dir(), EMBER_TYPE_NONE);
    REQUIRE(m);
    fill_ids(ember_model_vocab_size(m));
    /* the tiny model's window is 16: 5 fits the rings, 70 wrapped them */
    const ember_type kvs[] = {EMBER_TYPE_F32, EMBER_TYPE_F16, EMBER_TYPE_Q8_0};
    for (size_t k = 0; k < sizeof kvs / sizeof *kvs; k++) {
        round_trip(m, 5, TOTAL, kvs[k]);
        round_trip(m, 70, TOTAL, kvs[k]);
        round_trip(m, 70, 1024, kvs[k]); /* other full-layer capacity */
    }
    ember_model_free(m);
}

/* Marks at 40 and 60 of 90 saved tokens: a prompt that leaves the saved
 * tokens at 65 resumes at 60 from the mark; one that leaves them at 50,
 * at 40; one that differs at token 3, nowhere. */
static void resumes_at_marks(void)
{
    ember_model *m = check_load_model(check_model_dir(), EMBER_TYPE_NONE);
    REQUIRE(m);
    const int32_t vocab = ember_model_vocab_size(m);
    fill_ids(vocab);
    const char *path = tmp_path("marks");
    ember_session *src = session(m, TOTAL, EMBER_TYPE_F32);
    REQUIRE(src);
    REQUIRE(ember_session_prefill(src, ids, 40) == EMBER_OK && ember_session_mark(src) == EMBER_OK);
    REQUIRE(ember_session_prefill(src, ids + 40, 20) == EMBER_OK && ember_session_mark(src) == EMBER_OK);
    REQUIRE(ember_session_prefill(src, ids + 60, 30) == EMBER_OK);
    REQUIRE(ember_session_save(src, ids, 90, path) == EMBER_OK);
    const int diverge[] = {65, 50, 3}, want[] = {60, 40, 0};
    for (int c = 0; c < 3; c++) {
        int32_t prompt[TOTAL];
        memcpy(prompt, ids, sizeof prompt);
        for (int i = diverge[c]; i < TOTAL; i++) prompt[i] = (ids[i] + 1 + i) % vocab;
        ember_session *dst = session(m, TOTAL, EMBER_TYPE_F32), *ref = session(m, TOTAL, EMBER_TYPE_F32);
        REQUIRE(dst && ref);
        size_t at = 99;
        CHECK(ember_session_load(dst, path, prompt, TOTAL, &at) == EMBER_OK);
        CHECK_MSG(at == (size_t)want[c], "diverging at %d: resumed %zu, want %d", diverge[c], at, want[c]);
        CHECK(ember_session_position(dst) == (int32_t)at);
        CHECK(ember_session_prefill(dst, prompt + at, TOTAL - at) == EMBER_OK);
        if (at) CHECK(ember_session_prefill(ref, prompt, at) == EMBER_OK);
        CHECK(ember_session_prefill(ref, prompt + at, TOTAL - at) == EMBER_OK);
        CHECK_MSG(same_logits(dst, ref, vocab), "diverging at %d: logits differ", diverge[c]);
        ember_session_free(dst);
        ember_session_free(ref);
    }
    unlink(path);
    ember_session_free(src);
    ember_model_free(m);
}

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len ? *len : 1);
    if (b && fread(b, 1, *len, f) != *len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

static int write_all(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* A load that must fail leaves dst holding its 10 tokens and logits. */
static void expect_refused(ember_session *dst, const char *path, ember_status want, const char *what,
                           const float *logits_before, int32_t vocab)
{
    size_t at = 99;
    EXPECT_FAIL(ember_session_load(dst, path, ids, TOTAL, &at), want, what);
    CHECK(at == 0 && ember_session_position(dst) == 10);
    const float *l = ember_session_logits(dst);
    CHECK_MSG(l && !memcmp(l, logits_before, (size_t)vocab * sizeof *l), "%s: the session changed", what);
}

/* Copies a checkpoint directory with one float of model.norm.weight
 * changed (the same configuration, other weights). */
static int perturbed_copy(const char *from, const char *to)
{
    static const char *const files[] = {"config.json", "model-00001-of-00002.safetensors",
                                        "model-00002-of-00002.safetensors", "model.safetensors.index.json"};
    char src[512], dst[512];
    if (mkdir(to, 0755) && access(to, F_OK)) return -1;
    int changed = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        size_t len = 0;
        snprintf(src, sizeof src, "%s/%s", from, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", to, files[i]);
        unsigned char *b = read_all(src, &len);
        if (!b) return -1;
        if (strstr(files[i], ".safetensors") && len > 8) {
            uint64_t hlen = 0;
            memcpy(&hlen, b, 8);
            cJSON *h = hlen < len ? cJSON_ParseWithLength((const char *)b + 8, (size_t)hlen) : NULL;
            cJSON *off = cJSON_GetObjectItem(cJSON_GetObjectItem(h, "model.norm.weight"), "data_offsets");
            if (cJSON_IsArray(off)) {
                float *v = (float *)(b + 8 + hlen + (size_t)cJSON_GetArrayItem(off, 0)->valuedouble);
                *v += 0.5f;
                changed = 1;
            }
            cJSON_Delete(h);
        }
        int bad = write_all(dst, b, len);
        free(b);
        if (bad) return -1;
    }
    return changed ? 0 : -1;
}

static void refuses_what_is_not_its_own(void)
{
    ember_model *m = check_load_model(check_model_dir(), EMBER_TYPE_NONE), *q8 = check_load_model(check_model_dir(), EMBER_TYPE_Q8_0);
    ember_model *demo = check_load_model("models/demo", EMBER_TYPE_NONE);
    REQUIRE(m && q8 && demo);
    const int32_t vocab = ember_model_vocab_size(m);
    fill_ids(vocab);
    char good[256], bad[256];
    snprintf(good, sizeof good, "%s", tmp_path("good"));
    snprintf(bad, sizeof bad, "%s", tmp_path("bad"));
    ember_session *src = session(m, TOTAL, EMBER_TYPE_F32), *dst = session(m, TOTAL, EMBER_TYPE_F32);
    REQUIRE(src && dst);
    REQUIRE(ember_session_prefill(src, ids, 60) == EMBER_OK && ember_session_save(src, ids, 60, good) == EMBER_OK);
    REQUIRE(ember_session_prefill(dst, ids + 20, 10) == EMBER_OK);
    float *before = malloc((size_t)vocab * sizeof *before);
    REQUIRE(before);
    memcpy(before, ember_session_logits(dst), (size_t)vocab * sizeof *before);

    size_t len = 0;
    unsigned char *file = read_all(good, &len);
    REQUIRE(file && len > 200);
    expect_refused(dst, "no/such/file", EMBER_ERR_IO, "cannot open", before, vocab);
    REQUIRE(write_all(bad, file, len - 100) == 0);
    expect_refused(dst, bad, EMBER_ERR_FORMAT, "truncated or corrupt", before, vocab);
    REQUIRE(write_all(bad, file, 20) == 0);
    expect_refused(dst, bad, EMBER_ERR_FORMAT, "too short", before, vocab);
    file[len / 2] ^= 0x10;
    REQUIRE(write_all(bad, file, len) == 0);
    expect_refused(dst, bad, EMBER_ERR_FORMAT, "checksum mismatch", before, vocab);
    file[len / 2] ^= 0x10;
    file[8] = 9; /* version 9 */
    REQUIRE(write_all(bad, file, len) == 0);
    expect_refused(dst, bad, EMBER_ERR_UNSUPPORTED, "version 9", before, vocab);
    file[0] = '{';
    REQUIRE(write_all(bad, file, len) == 0);
    expect_refused(dst, bad, EMBER_ERR_FORMAT, "not an ember prompt-cache file", before, vocab);

    /* a small session: more tokens than its context */
    ember_session *small = session(m, 30, EMBER_TYPE_F32);
    REQUIRE(small);
    EXPECT_FAIL(ember_session_load(small, good, NULL, 0, NULL), EMBER_ERR_CONTEXT_FULL, "max_context is 30");
    ember_session_free(small);
    /* another KV format, another weight format, another model, other weights */
    ember_session *other = session(m, TOTAL, EMBER_TYPE_Q8_0);
    REQUIRE(other);
    EXPECT_FAIL(ember_session_load(other, good, NULL, 0, NULL), EMBER_ERR_UNSUPPORTED, "KV cache format F32");
    ember_session_free(other);
    REQUIRE((other = session(q8, TOTAL, EMBER_TYPE_F32)));
    EXPECT_FAIL(ember_session_load(other, good, NULL, 0, NULL), EMBER_ERR_UNSUPPORTED, "this model's are Q8_0");
    ember_session_free(other);
    REQUIRE((other = session(demo, TOTAL, EMBER_TYPE_F32)));
    EXPECT_FAIL(ember_session_load(other, good, NULL, 0, NULL), EMBER_ERR_UNSUPPORTED, "configuration differs");
    ember_session_free(other);
    if (!getenv("EMBER_TEST_MODEL")) { /* the copy knows the tiny model's file names */
        char dir[256];
        snprintf(dir, sizeof dir, "%s", tmp_path("perturbed"));
        REQUIRE(perturbed_copy(check_model_dir(), dir) == 0);
        ember_model *p = check_load_model(dir, EMBER_TYPE_NONE);
        REQUIRE(p && (other = session(p, TOTAL, EMBER_TYPE_F32)));
        EXPECT_FAIL(ember_session_load(other, good, NULL, 0, NULL), EMBER_ERR_UNSUPPORTED, "other weights");
        ember_session_free(other);
        ember_model_free(p);
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    /* the good file still loads; a save that cannot be written leaves nothing */
    size_t at = 0;
    CHECK(ember_session_load(dst, good, NULL, 0, &at) == EMBER_OK && at == 60);
    EXPECT_FAIL(ember_session_save(src, ids, 59, bad), EMBER_ERR_INVALID_ARG, "session holds 60");
    EXPECT_FAIL(ember_session_save(src, ids, 60, "no/such/dir/file"), EMBER_ERR_IO, "no/such/dir/file");
    free(file);
    free(before);
    unlink(good);
    unlink(bad);
    ember_session_free(src);
    ember_session_free(dst);
    ember_model_free(m);
    ember_model_free(q8);
    ember_model_free(demo);
}

/* A conversation saved after one reply and loaded into a new one: the same
 * messages and cache, and the next reply is the original's. */
static void conversation_round_trip(void)
{
    ember_model *m = check_load_model(check_model_dir(), EMBER_TYPE_NONE);
    ember_tokenizer *tok = NULL;
    ember_chat_template *t = NULL;
    REQUIRE(m && ember_tokenizer_load(check_model_dir(), &tok) == EMBER_OK);
    REQUIRE(ember_chat_template_load(check_model_dir(), &t) == EMBER_OK);
    ember_conversation_params cp = ember_conversation_default_params();
    cp.session.max_context = 512;
    cp.session.n_threads = 1;
    cp.system = "You are a careful assistant who answers every question in full sentences.";
    cp.model_dir = check_model_dir();
    ember_conversation *a = NULL, *b = NULL;
    REQUIRE(ember_conversation_create(m, tok, t, &cp, &a) == EMBER_OK);
    cp.system = NULL; /* the file brings the messages */
    REQUIRE(ember_conversation_create(m, tok, t, &cp, &b) == EMBER_OK);
    ember_generate_params gp = ember_generate_default_params();
    gp.temperature = 0;
    gp.max_tokens = 8;
    ember_generate_result ra, rb;
    const char *path = tmp_path("conversation");
    REQUIRE(ember_conversation_add(a, "user", "Hello there") == EMBER_OK);
    REQUIRE(ember_conversation_respond(a, &gp, &ra) == EMBER_OK);
    REQUIRE(ember_conversation_save(a, path) == EMBER_OK);
    REQUIRE(ember_conversation_load(b, path) == EMBER_OK);
    char *ja = NULL, *jb = NULL;
    REQUIRE(ember_conversation_messages(a, &ja) == EMBER_OK && ember_conversation_messages(b, &jb) == EMBER_OK);
    CHECK_MSG(!strcmp(ja, jb), "messages differ: %s vs %s", ja, jb);
    ember_free(ja);
    ember_free(jb);
    CHECK(ember_conversation_cached_tokens(b) == ember_conversation_cached_tokens(a));
    CHECK(ember_conversation_cached_tokens(b) > 0);
    REQUIRE(ember_conversation_add(a, "user", "And again, please") == EMBER_OK);
    REQUIRE(ember_conversation_add(b, "user", "And again, please") == EMBER_OK);
    REQUIRE(ember_conversation_respond(a, &gp, &ra) == EMBER_OK);
    REQUIRE(ember_conversation_respond(b, &gp, &rb) == EMBER_OK);
    CHECK_MSG(rb.cached_tokens == ra.cached_tokens && rb.cached_tokens > 0, "cached %d vs %d", rb.cached_tokens,
              ra.cached_tokens);
    REQUIRE(ember_conversation_messages(a, &ja) == EMBER_OK && ember_conversation_messages(b, &jb) == EMBER_OK);
    CHECK_MSG(!strcmp(ja, jb), "replies differ: %s vs %s", ja, jb);
    ember_free(ja);
    ember_free(jb);
    /* cleared after loading: the new question resumes at the end of the
     * system part (the file's first resume point), and answers as a new
     * conversation does */
    ember_conversation *fresh = NULL;
    cp.system = "You are a careful assistant who answers every question in full sentences.";
    REQUIRE(ember_conversation_create(m, tok, t, &cp, &fresh) == EMBER_OK);
    REQUIRE(ember_conversation_save(a, path) == EMBER_OK);
    REQUIRE(ember_conversation_load(b, path) == EMBER_OK);
    ember_conversation_clear(b);
    REQUIRE(ember_conversation_add(b, "user", "Something else entirely") == EMBER_OK);
    REQUIRE(ember_conversation_add(fresh, "user", "Something else entirely") == EMBER_OK);
    REQUIRE(ember_conversation_respond(b, &gp, &rb) == EMBER_OK);
    REQUIRE(ember_conversation_respond(fresh, &gp, &ra) == EMBER_OK);
    CHECK_MSG(rb.cached_tokens > 0 && rb.cached_tokens < rb.prompt_tokens - 4 && ra.cached_tokens == 0,
              "cached %d of %d", rb.cached_tokens, rb.prompt_tokens);
    REQUIRE(ember_conversation_messages(fresh, &ja) == EMBER_OK && ember_conversation_messages(b, &jb) == EMBER_OK);
    CHECK_MSG(!strcmp(ja, jb), "replies differ: %s vs %s", ja, jb);
    ember_free(ja);
    ember_free(jb);
    ember_conversation_free(fresh);
    /* a session's file holds no conversation */
    ember_session *s = session(m, 64, EMBER_TYPE_F32);
    REQUIRE(s && ember_session_prefill(s, (const int32_t[]){1, 2, 3}, 3) == EMBER_OK);
    REQUIRE(ember_session_save(s, (const int32_t[]){1, 2, 3}, 3, path) == EMBER_OK);
    EXPECT_FAIL(ember_conversation_load(b, path), EMBER_ERR_FORMAT, "holds no conversation");
    ember_session_free(s);
    unlink(path);
    ember_conversation_free(a);
    ember_conversation_free(b);
    ember_chat_template_free(t);
    ember_tokenizer_free(tok);
    ember_model_free(m);
}

int main(void)
{
    RUN(restored_logits_are_identical);
    RUN(resumes_at_marks);
    RUN(refuses_what_is_not_its_own);
    RUN(conversation_round_trip);
    return check_summary();
}
