/* The streaming TTS pipeline with a chunk controller (tts_pipeline.h), on
 * the committed tiny checkpoint (models/tts-tiny, or $EMBER_TTS_TEST_MODEL):
 *   - a scripted controller decides every chunk: each chunk has the size it
 *     answered (clamped to [1, max_frames]), the last the frames left; it is
 *     asked once before the first frame and once per chunk, with that
 *     chunk's ready time and the frames delivered so far;
 *   - the adaptive controller of src/edge (edge_chunk_ctl) run by the
 *     pipeline: the sizes are its decisions, which a fresh controller fed the
 *     same arrivals repeats, and its first decision is the one the
 *     calibration alone fixes;
 *   - the audio is the same as a one-chunk run's whatever decides the chunks.
 * Every chunk decodes alone here (alone_chunks -1): the generator stops at
 * each chunk's end, so no chunk ever finds more frames than it asked for and
 * the sizes are exactly the controller's. This binary also runs under
 * ASan+UBSan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edge/calibrate.h"
#include "tts/qwen3_tts_load.h"
#include "tts/tts_pipeline.h"

#define FRAMES 20
#define MAX_CALLS 64

typedef struct engine {
    tts_model *m;
    c2w_model *dm;
    tts_session *gen;
    c2w_stream *dec;
} engine;

static int engine_open(engine *e)
{
    const char *dir = getenv("EMBER_TTS_TEST_MODEL");
    if (!dir || !*dir) dir = "models/tts-tiny";
    memset(e, 0, sizeof *e);
    tts_model_params mp = {EMBER_TYPE_NONE, NULL};
    c2w_model_params dp = {EMBER_TYPE_F32, NULL, 1};
    tts_session_params sp = tts_session_default_params();
    sp.n_threads = 2;
    sp.max_context = 128;
    c2w_stream_params cp = c2w_stream_default_params();
    cp.n_threads = 2;
    if (tts_model_load(dir, &mp, &e->m) || c2w_model_load(dir, &dp, &e->dm) ||
        tts_session_create(e->m, &sp, &e->gen) || c2w_stream_create(e->dm, &cp, &e->dec)) {
        printf("     %s: %s\n", dir, ember_last_error());
        return -1;
    }
    return 0;
}

static void engine_close(engine *e)
{
    c2w_stream_free(e->dec);
    tts_session_free(e->gen);
    c2w_model_free(e->dm);
    tts_model_free(e->m);
}

/* What one run delivered: each chunk's info and the whole PCM. */
typedef struct run {
    tts_chunk_info chunks[FRAMES + 1];
    int32_t n_chunks;
    float *pcm;
    size_t n_pcm, cap_pcm;
} run;

static int on_pcm(void *user, const float *pcm, size_t n, const tts_chunk_info *info)
{
    run *r = user;
    if (r->n_chunks <= FRAMES) r->chunks[r->n_chunks++] = *info;
    if (r->n_pcm + n <= r->cap_pcm) memcpy(r->pcm + r->n_pcm, pcm, n * sizeof *pcm);
    r->n_pcm += n;
    return 0;
}

static ember_status synthesize(engine *e, const tts_pipeline_params *p, run *r)
{
    const tts_config *c = &e->m->cfg;
    const int32_t ids[] = {c->im_start, c->assistant, 198, 9707, c->im_end, 198, c->im_start, c->assistant, 198};
    tts_request rq;
    memset(&rq, 0, sizeof rq);
    rq.text_ids = ids;
    rq.n_text_ids = sizeof ids / sizeof *ids;
    rq.speaker = "ryan";
    rq.language = "english";
    rq.greedy = 1;
    rq.max_frames = rq.min_frames = FRAMES; /* exactly FRAMES: EOS held off */
    memset(r, 0, sizeof *r);
    r->cap_pcm = (size_t)FRAMES * (size_t)e->dm->cfg.samples_per_frame;
    r->pcm = malloc(r->cap_pcm * sizeof *r->pcm);
    if (!r->pcm) return EMBER_ERR_NO_MEMORY;
    return tts_synthesize(e->gen, e->dec, &rq, p, on_pcm, r, NULL);
}

/* Each call the controller got. */
typedef struct call {
    double now_ms;
    int32_t emitted, answer;
} call;

/* A controller that records every call: a script of sizes (the last
 * repeating), or the adaptive controller of src/edge when ctl is set. */
typedef struct recorder {
    const int32_t *sizes;
    int32_t n_sizes;
    edge_chunk_ctl *ctl;
    call calls[MAX_CALLS];
    int32_t n_calls;
} recorder;

static int32_t recorded_next(void *user, double now_ms, int32_t emitted)
{
    recorder *r = user;
    int32_t answer = r->ctl ? edge_chunk_ctl_callback(r->ctl, now_ms, emitted)
                            : r->sizes[r->n_calls < r->n_sizes ? r->n_calls : r->n_sizes - 1];
    if (r->n_calls < MAX_CALLS) r->calls[r->n_calls++] = (call){now_ms, emitted, answer};
    return answer;
}

/* Largest |a - b| over the two runs' PCM; INFINITY when the lengths differ. */
static double pcm_diff(const run *a, const run *b)
{
    if (a->n_pcm != b->n_pcm || a->n_pcm > a->cap_pcm) return INFINITY;
    double worst = 0;
    for (size_t i = 0; i < a->n_pcm; i++) worst = fmax(worst, fabs((double)a->pcm[i] - b->pcm[i]));
    return worst;
}

/* The one-chunk reference run: FRAMES frames decoded at once. */
static int one_chunk(engine *e, run *out)
{
    tts_pipeline_params p = tts_pipeline_default_params();
    p.schedule.sizes[0] = FRAMES;
    p.schedule.n = 1;
    return synthesize(e, &p, out) == EMBER_OK && out->n_chunks == 1 ? 0 : -1;
}

/* The run's audio against the one-chunk run's (within the ~1e-6 that
 * where the chunks fall makes in the Winograd convs); frees both runs and
 * the engine. */
static void same_audio_then_close(engine *e, run *r)
{
    run ref;
    memset(&ref, 0, sizeof ref);
    CHECK(one_chunk(e, &ref) == 0);
    double d = pcm_diff(r, &ref);
    CHECK_MSG(d <= 1e-5, "audio differs from the one-chunk run by %g", d);
    free(r->pcm);
    free(ref.pcm);
    engine_close(e);
}

/* Sizes 3, 0 (-> 1), 5, 1000 (-> max_frames 6), 2, then 4 repeating: 3 +
 * 1 + 5 + 6 + 2 = 17, the last chunk asks 4 and gets the 3 left. */
static void scripted_controller_decides_every_chunk(void)
{
    engine e;
    REQUIRE(engine_open(&e) == 0);
    static const int32_t script[] = {3, 0, 5, 1000, 2, 4};
    static const int32_t want[] = {3, 1, 5, 6, 2, 3};
    recorder s = {.sizes = script, .n_sizes = 6};
    tts_pipeline_params p = tts_pipeline_default_params();
    p.alone_chunks = -1;
    p.controller = (tts_chunk_controller){recorded_next, &s, 6};
    run r;
    ember_status st = synthesize(&e, &p, &r);
    CHECK_MSG(st == EMBER_OK, "%s", ember_last_error());
    CHECK_MSG(r.n_chunks == 6, "%d chunks", r.n_chunks);
    int32_t emitted = 0;
    for (int32_t i = 0; i < r.n_chunks && i < 6; i++) {
        CHECK_MSG(r.chunks[i].n_frames == want[i], "chunk %d: %d frames, want %d", i, r.chunks[i].n_frames,
                  want[i]);
        CHECK(r.chunks[i].first_frame == emitted);
        emitted += r.chunks[i].n_frames;
    }
    CHECK(emitted == FRAMES);
    /* asked before the first frame, then once as each chunk's audio is ready */
    CHECK_MSG(s.n_calls == r.n_chunks + 1, "%d calls for %d chunks", s.n_calls, r.n_chunks);
    CHECK(s.calls[0].now_ms == 0.0 && s.calls[0].emitted == 0);
    emitted = 0;
    for (int32_t i = 0; i < r.n_chunks && i + 1 < s.n_calls; i++) {
        emitted += r.chunks[i].n_frames;
        CHECK_MSG(s.calls[i + 1].now_ms == r.chunks[i].ready_ms && s.calls[i + 1].emitted == emitted,
                  "call %d: %.3f ms, %d frames; chunk %d ready %.3f ms, %d frames out", i + 1,
                  s.calls[i + 1].now_ms, s.calls[i + 1].emitted, i, r.chunks[i].ready_ms, emitted);
    }
    same_audio_then_close(&e, &r);
}

/* A calibration that says adaptive: first chunk 2, margin 50 ms, 10 ms per
 * frame to start. The decision after chunk 0 depends on the calibration
 * alone: the first arrival starts the clock with 2 x 80 = 160 ms of audio
 * out, (160 - 50) / 10 = 11 frames. Later ones depend on the measured
 * arrivals; a fresh controller fed the same arrivals decides the same. */
static void adaptive_controller_runs_the_pipeline(void)
{
    engine e;
    REQUIRE(engine_open(&e) == 0);
    edge_calibration cal;
    edge_calibration_default(&cal);
    cal.adaptive = true;
    cal.ramp[0] = 2;
    cal.n_ramp = 1;
    cal.margin_ms = 50.0;
    cal.slope_ms_per_frame = 10.0;
    edge_chunk_ctl ctl;
    edge_chunk_ctl_init(&ctl, &cal);
    recorder rec = {.ctl = &ctl};
    tts_pipeline_params p = tts_pipeline_default_params();
    p.alone_chunks = -1;
    p.controller = (tts_chunk_controller){recorded_next, &rec, EDGE_CAL_STEADY};
    run r;
    ember_status st = synthesize(&e, &p, &r);
    CHECK_MSG(st == EMBER_OK, "%s", ember_last_error());
    REQUIRE(r.n_chunks >= 2 && rec.n_calls == r.n_chunks + 1);
    CHECK_MSG(r.chunks[0].n_frames == 2 && r.chunks[1].n_frames == 11, "chunks %d, %d", r.chunks[0].n_frames,
              r.chunks[1].n_frames);
    edge_chunk_ctl replay;
    edge_chunk_ctl_init(&replay, &cal);
    int32_t emitted = 0;
    for (int32_t i = 0; i < rec.n_calls; i++) {
        int32_t again = edge_chunk_ctl_next(&replay, rec.calls[i].now_ms, rec.calls[i].emitted);
        CHECK_MSG(again == rec.calls[i].answer, "call %d: replayed %d, ran %d", i, again, rec.calls[i].answer);
        if (i < r.n_chunks) {
            int32_t left = FRAMES - emitted;
            int32_t expect = rec.calls[i].answer < left ? rec.calls[i].answer : left;
            CHECK_MSG(r.chunks[i].n_frames == expect, "chunk %d: %d frames, controller said %d", i,
                      r.chunks[i].n_frames, rec.calls[i].answer);
            emitted += r.chunks[i].n_frames;
        }
    }
    CHECK(emitted == FRAMES);
    same_audio_then_close(&e, &r);
}

/* The default placement (the first chunk alone, the rest beside the
 * generator, which may run ahead and leave the decoder more than it asks
 * for) with the controller: the frames all arrive, in order, with the
 * one-chunk run's samples. */
static void controller_beside_the_generator_keeps_the_audio(void)
{
    engine e;
    REQUIRE(engine_open(&e) == 0);
    static const int32_t script[] = {1, 2};
    recorder s = {.sizes = script, .n_sizes = 2};
    tts_pipeline_params p = tts_pipeline_default_params();
    p.controller = (tts_chunk_controller){recorded_next, &s, 0};
    run r;
    CHECK(synthesize(&e, &p, &r) == EMBER_OK);
    int32_t emitted = 0;
    for (int32_t i = 0; i < r.n_chunks; i++) {
        CHECK(r.chunks[i].first_frame == emitted && r.chunks[i].n_frames >= 1);
        emitted += r.chunks[i].n_frames;
    }
    CHECK(emitted == FRAMES && r.chunks[0].n_frames == 1);
    same_audio_then_close(&e, &r);
}

int main(void)
{
    RUN(scripted_controller_decides_every_chunk);
    RUN(adaptive_controller_runs_the_pipeline);
    RUN(controller_beside_the_generator_keeps_the_audio);
    return check_summary();
}
