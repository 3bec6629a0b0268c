/* Priming the speech decoder with frames nobody hears (c2w_stream_prime,
 * what an in-context clone does with its reference) on the committed tiny
 * checkpoint, whose decoder has the real rates: the frames pushed after the
 * priming sound as they do after decoding every reference frame in full,
 * although the convolution stages saw only the last few; the comparison is
 * sensitive (the same frames from a fresh state are far off); the frame count
 * moves on; bad codes are refused. This binary also runs under ASan+UBSan. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tts/code2wav.h"

#define DIR "models/tts-tiny"
#define REF 60 /* reference frames: several passes, far beyond the tail */
#define NEW 10

static c2w_model *model;
static c2w_stream *stream;

static void random_codes(int32_t *codes, int32_t n, const c2w_config *c, unsigned seed)
{
    for (int32_t i = 0; i < n * c->n_quantizers; i++) {
        seed = seed * 1103515245u + 12345u;
        codes[i] = (int32_t)((seed >> 8) % (unsigned)c->codebook_size);
    }
}

static void primed_stream_continues_the_reference(void)
{
    REQUIRE(model && stream);
    const c2w_config *c = &model->cfg;
    const size_t spf = (size_t)c->samples_per_frame, q = (size_t)c->n_quantizers;
    int32_t *codes = malloc(sizeof *codes * (REF + NEW) * q);
    float *full = malloc(sizeof *full * (REF + NEW) * spf), *primed = malloc(sizeof *primed * NEW * spf),
          *fresh = malloc(sizeof *fresh * NEW * spf);
    REQUIRE(codes && full && primed && fresh);
    random_codes(codes, REF + NEW, c, 7);
    c2w_stream_reset(stream);
    REQUIRE(c2w_stream_push(stream, codes, REF + NEW, full) == EMBER_OK);

    c2w_stream_reset(stream);
    REQUIRE(c2w_stream_prime(stream, codes, REF) == EMBER_OK);
    CHECK(c2w_stream_frames(stream) == REF);
    REQUIRE(c2w_stream_push(stream, codes + REF * q, NEW, primed) == EMBER_OK);
    const double d = check_rel_l2(primed, full + REF * spf, (int32_t)(NEW * spf));
    /* the bound of any other chunking (test_api_codec.c) */
    CHECK_MSG(d < 1e-5, "primed audio differs from the full decode by %g", d);

    c2w_stream_reset(stream);
    REQUIRE(c2w_stream_push(stream, codes + REF * q, NEW, fresh) == EMBER_OK);
    const double f = check_rel_l2(fresh, full + REF * spf, (int32_t)(NEW * spf));
    CHECK_MSG(f > 1e-2, "without the reference the audio is only %g off: the check proves nothing", f);
    free(codes);
    free(full);
    free(primed);
    free(fresh);
}

/* A reference shorter than the tail runs every frame through the chain. */
static void short_reference(void)
{
    REQUIRE(model && stream);
    const c2w_config *c = &model->cfg;
    const size_t spf = (size_t)c->samples_per_frame, q = (size_t)c->n_quantizers;
    int32_t codes[(3 + 2) * C2W_MAX_QUANTIZERS];
    float *full = malloc(sizeof *full * 5 * spf), *primed = malloc(sizeof *primed * 2 * spf);
    REQUIRE(full && primed);
    random_codes(codes, 5, c, 3);
    c2w_stream_reset(stream);
    REQUIRE(c2w_stream_push(stream, codes, 5, full) == EMBER_OK);
    c2w_stream_reset(stream);
    REQUIRE(c2w_stream_prime(stream, codes, 3) == EMBER_OK);
    REQUIRE(c2w_stream_push(stream, codes + 3 * q, 2, primed) == EMBER_OK);
    const double d = check_rel_l2(primed, full + 3 * spf, (int32_t)(2 * spf));
    CHECK_MSG(d < 1e-5, "primed audio differs from the full decode by %g", d);
    CHECK(c2w_stream_prime(stream, codes, 0) == EMBER_OK);
    free(full);
    free(primed);
}

static void bad_codes_are_refused(void)
{
    REQUIRE(model && stream);
    const c2w_config *c = &model->cfg;
    int32_t codes[2 * C2W_MAX_QUANTIZERS];
    random_codes(codes, 2, c, 5);
    codes[c->n_quantizers + 3] = c->codebook_size;
    c2w_stream_reset(stream);
    EXPECT_FAIL(c2w_stream_prime(stream, codes, 2), EMBER_ERR_INVALID_ARG, "code 3 of frame 1");
    CHECK(c2w_stream_frames(stream) == 0);
    EXPECT_FAIL(c2w_stream_prime(stream, NULL, 2), EMBER_ERR_INVALID_ARG, "bad arguments");
}

int main(void)
{
    c2w_model_params mp = {EMBER_TYPE_F32, NULL, 1};
    c2w_stream_params sp = c2w_stream_default_params();
    sp.n_threads = 2;
    if (c2w_model_load(DIR, &mp, &model) || c2w_stream_create(model, &sp, &stream))
        printf("     %s: %s\n", DIR, ember_last_error());
    RUN(primed_stream_continues_the_reference);
    RUN(short_reference);
    RUN(bad_codes_are_refused);
    c2w_stream_free(stream);
    c2w_model_free(model);
    return check_summary();
}
