/* Session behaviour on the committed tiny checkpoint (models/tiny, or the
 * directory in $EMBER_TEST_MODEL): chunking and decode give the same logits
 * as a one-shot prefill, the hybrid cache has exactly the size the layer
 * types imply, and rejected calls leave the session untouched. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember.h"

static const char *model_dir(void)
{
    const char *d = getenv("EMBER_TEST_MODEL");
    return d && *d ? d : "models/tiny";
}

static ember_model *load(void)
{
    ember_model *m = NULL;
    if (ember_model_load(model_dir(), NULL, &m) != EMBER_OK)
        printf("     cannot load %s: %s\n", model_dir(), ember_last_error());
    return m;
}

/* A prompt of three windows plus a few tokens, so every ring wraps. */
#define PROMPT 80
static int32_t prompt[PROMPT];

static void make_prompt(int32_t vocab) { check_random_ids(prompt, PROMPT, vocab, 7); }

/* Logits after feeding the prompt in pieces of `piece` tokens (prefill
 * calls), with `chunk` as the session's internal prefill chunk. */
static float *logits_after(ember_model *m, int chunk, int piece)
{
    ember_session_params sp = ember_session_default_params();
    sp.max_context = 256;
    sp.prefill_chunk = chunk;
    ember_session *s = NULL;
    float *out = NULL;
    if (ember_session_create(m, &sp, &s) != EMBER_OK) return NULL;
    for (int done = 0; done < PROMPT;) {
        int n = PROMPT - done < piece ? PROMPT - done : piece;
        if (n == 1 ? ember_session_decode(s, prompt[done]) : ember_session_prefill(s, prompt + done, (size_t)n))
            goto out;
        done += n;
    }
    size_t bytes = (size_t)ember_model_vocab_size(m) * sizeof(float);
    out = malloc(bytes);
    memcpy(out, ember_session_logits(s), bytes);
out:
    ember_session_free(s);
    return out;
}

static double rel_diff(const float *a, const float *b, int32_t n)
{
    double num = 0, den = 0;
    for (int32_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / den);
}

static void prefill_then_decode_equals_one_shot(void)
{
    ember_model *m = load();
    REQUIRE(m);
    int32_t vocab = ember_model_vocab_size(m);
    make_prompt(vocab);
    float *one_shot = logits_after(m, 256, PROMPT);
    /* prefill part of the prompt, then decode the rest token by token */
    ember_session *s = NULL;
    ember_session_params sp = ember_session_default_params();
    sp.max_context = 256;
    REQUIRE(one_shot && ember_session_create(m, &sp, &s) == EMBER_OK);
    CHECK(ember_session_prefill(s, prompt, 21) == EMBER_OK);
    for (int i = 21; i < PROMPT; i++) CHECK(ember_session_decode(s, prompt[i]) == EMBER_OK);
    CHECK(ember_session_position(s) == PROMPT);
    double d = rel_diff(ember_session_logits(s), one_shot, vocab);
    CHECK_MSG(d < 1e-6, "decode vs one-shot relative difference %.3g", d);
    ember_session_free(s);
    free(one_shot);
    ember_model_free(m);
}

static void chunk_size_does_not_change_logits(void)
{
    static const int chunks[] = {1, 3, 15, 16, 17, 64};
    static const int pieces[] = {PROMPT, 7, 1};
    ember_model *m = load();
    REQUIRE(m);
    int32_t vocab = ember_model_vocab_size(m);
    make_prompt(vocab);
    float *ref = logits_after(m, 256, PROMPT);
    REQUIRE(ref);
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++)
        for (size_t p = 0; p < sizeof pieces / sizeof *pieces; p++) {
            float *got = logits_after(m, chunks[c], pieces[p]);
            REQUIRE(got);
            double d = rel_diff(got, ref, vocab);
            CHECK_MSG(d < 1e-6, "chunk %d piece %d: relative difference %.3g", chunks[c],
                      pieces[p], d);
            free(got);
        }
    free(ref);
    ember_model_free(m);
}

/* Reads the layer geometry straight from config.json, independently of the
 * library's parser. */
static int read_geometry(int *sliding, int *full, int *window, int *kv_heads, int *head_dim)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/config.json", model_dir());
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *root = cJSON_Parse(text);
    if (!root) return -1;
    const cJSON *e;
    *sliding = *full = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "layer_types")) {
        if (!strcmp(e->valuestring, "sliding_attention")) ++*sliding;
        else ++*full;
    }
    *window = cJSON_GetObjectItem(root, "sliding_window")->valueint;
    *kv_heads = cJSON_GetObjectItem(root, "num_key_value_heads")->valueint;
    *head_dim = cJSON_GetObjectItem(root, "head_dim")->valueint;
    cJSON_Delete(root);
    return 0;
}

static void hybrid_cache_bytes_match_layer_types(void)
{
    int sliding, full, window, kv_heads, head_dim;
    REQUIRE(read_geometry(&sliding, &full, &window, &kv_heads, &head_dim) == 0);
    REQUIRE(sliding > 0 && full > 0);
    ember_model *m = load();
    REQUIRE(m);
    static const int contexts[] = {64, 100, 1000, 4096};
    /* bytes per head_dim row: fp32, f16, and q8_0 (34-byte blocks of 32) */
    static const struct {
        ember_type type;
        size_t row_bytes_per_32;
    } formats[] = {{EMBER_TYPE_F32, 128}, {EMBER_TYPE_F16, 64}, {EMBER_TYPE_Q8_0, 34}};
    for (size_t f = 0; f < 3; f++)
        for (size_t i = 0; i < sizeof contexts / sizeof *contexts; i++) {
            int ctx = contexts[i];
            ember_session_params sp = ember_session_default_params();
            sp.max_context = ctx;
            sp.kv_type = formats[f].type;
            ember_session *s = NULL;
            REQUIRE(ember_session_create(m, &sp, &s) == EMBER_OK);
            /* (sliding x (window-1) + full x C) x kv_heads x head_dim x (K and V) x bytes */
            size_t want = ((size_t)sliding * (size_t)(window - 1) + (size_t)full * (size_t)ctx) *
                          (size_t)kv_heads * ((size_t)head_dim / 32 * formats[f].row_bytes_per_32) * 2;
            CHECK_MSG(ember_session_cache_bytes(s) == want,
                      "format %zu context %d: %zu bytes, expected %zu", f, ctx,
                      ember_session_cache_bytes(s), want);
            ember_session_free(s);
        }
    ember_session_params sp = ember_session_default_params();
    ember_session *s = NULL;
    sp.kv_type = EMBER_TYPE_Q4_0;
    CHECK(ember_session_create(m, &sp, &s) == EMBER_ERR_INVALID_ARG && s == NULL);
    ember_model_free(m);
}

static void rejected_calls_leave_the_session_unchanged(void)
{
    ember_model *m = load();
    REQUIRE(m);
    int32_t vocab = ember_model_vocab_size(m);
    make_prompt(vocab);
    ember_session_params sp = ember_session_default_params();
    sp.max_context = 40;
    ember_session *s = NULL;
    REQUIRE(ember_session_create(m, &sp, &s) == EMBER_OK);
    CHECK(ember_session_logits(s) == NULL);
    CHECK(ember_session_prefill(s, prompt, 30) == EMBER_OK);
    float before = ember_session_logits(s)[0];
    CHECK(ember_session_prefill(s, prompt, 11) == EMBER_ERR_CONTEXT_FULL);
    CHECK(strstr(ember_last_error(), "max_context") != NULL);
    int32_t bad[2] = {1, vocab};
    CHECK(ember_session_prefill(s, bad, 2) == EMBER_ERR_INVALID_ARG);
    CHECK(strstr(ember_last_error(), "outside") != NULL);
    CHECK(ember_session_decode(s, -1) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_session_position(s) == 30);
    CHECK(ember_session_logits(s)[0] == before);
    CHECK(ember_session_prefill(s, prompt, 10) == EMBER_OK);
    CHECK(ember_session_decode(s, 0) == EMBER_ERR_CONTEXT_FULL);
    ember_session_reset(s);
    CHECK(ember_session_position(s) == 0 && ember_session_logits(s) == NULL);
    ember_session_free(s);

    sp.max_context = ember_model_max_positions(m) + 1;
    CHECK(ember_session_create(m, &sp, &s) == EMBER_ERR_INVALID_ARG && s == NULL);
    sp = ember_session_default_params();
    sp.prefill_chunk = 0;
    CHECK(ember_session_create(m, &sp, &s) == EMBER_ERR_INVALID_ARG && s == NULL);
    ember_model_free(m);
}

/* Two sessions on one model do not disturb each other. */
static void sessions_share_a_model_independently(void)
{
    ember_model *m = load();
    REQUIRE(m);
    int32_t vocab = ember_model_vocab_size(m);
    make_prompt(vocab);
    float *ref = logits_after(m, 64, PROMPT);
    REQUIRE(ref);
    ember_session *a = NULL, *b = NULL;
    REQUIRE(ember_session_create(m, NULL, &a) == EMBER_OK);
    REQUIRE(ember_session_create(m, NULL, &b) == EMBER_OK);
    for (int i = 0; i < PROMPT; i++) {
        CHECK(ember_session_decode(a, prompt[i]) == EMBER_OK);
        CHECK(ember_session_decode(b, prompt[PROMPT - 1 - i]) == EMBER_OK);
    }
    CHECK(rel_diff(ember_session_logits(a), ref, vocab) < 1e-6);
    ember_session_free(a);
    ember_session_free(b);
    free(ref);
    ember_model_free(m);
}

int main(void)
{
    RUN(prefill_then_decode_equals_one_shot);
    RUN(chunk_size_does_not_change_logits);
    RUN(hybrid_cache_bytes_match_layer_types);
    RUN(rejected_calls_leave_the_session_unchanged);
    RUN(sessions_share_a_model_independently);
    return check_summary();
}
