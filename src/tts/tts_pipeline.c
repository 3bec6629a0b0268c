#include "tts/tts_pipeline.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "base/status.h"
#include "tts/tts_internal.h"

static const int32_t default_ramp[] = {2, 4, 8, 16, 25};

ember_status tts_schedule_parse(const char *text, tts_schedule *out)
{
    memset(out, 0, sizeof *out);
    const char *p = text;
    while (p && *p) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 100000 || (*end && *end != ','))
            return ember_fail(EMBER_ERR_INVALID_ARG,
                              "chunk schedule '%s': expected positive frame counts like 2,4,8,16,25",
                              text);
        if (out->n == TTS_MAX_SCHEDULE)
            return ember_fail(EMBER_ERR_INVALID_ARG, "chunk schedule '%s': more than %d sizes",
                              text, TTS_MAX_SCHEDULE);
        out->sizes[out->n++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (!out->n) return ember_fail(EMBER_ERR_INVALID_ARG, "chunk schedule: empty");
    return EMBER_OK;
}

int32_t tts_schedule_size(const tts_schedule *s, int32_t i)
{
    if (!s || !s->n) {
        const int32_t n = (int32_t)(sizeof default_ramp / sizeof *default_ramp);
        return default_ramp[i < n ? i : n - 1];
    }
    return s->sizes[i < s->n ? i : s->n - 1];
}

/* What the two threads share. The generator appends frames; the decoder
 * takes them a chunk at a time. */
typedef struct handoff {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const int32_t *prime; /* reference frames decoded first, unheard (n_prime x groups) */
    int32_t n_prime;
    int32_t *codes;  /* max_frames x groups */
    double *t_frame; /* when each frame was produced (ms) */
    ember_stats *gen_stats, *dec_stats;
    int32_t groups;
    int32_t produced, consumed;
    int gen_done, cancelled;

    c2w_stream *dec;
    tts_session *gen;
    const tts_schedule *schedule;
    tts_chunk_controller ctl;    /* ctl.next set: it decides the sizes, not the schedule */
    int32_t first_size;          /* chunk 0's, decided before the threads start */
    int32_t gen_all, gen_busy;   /* generator threads: decoder idle / decoding */
    int32_t dec_all, dec_busy;   /* decoder threads: alone / beside the generator */
    int32_t alone_chunks;        /* chunks decoded alone (-1: all) */
    const int32_t *cpus;         /* the decoder thread's CPUs (n_cpus 0: anywhere) */
    int32_t n_cpus;
    int hold_gen;                /* the generator waits while set */
    int32_t hold_at;             /* the frame count that ends the next alone chunk (0: none) */
    tts_pcm_fn cb;
    void *user;
    float *pcm;      /* the largest chunk's samples */
    int32_t flush_cap; /* frames pcm holds */
    double t0;
    int32_t chunks;
    double decoder_ms, first_audio_ms;
    ember_status dec_status;
    char dec_error[512];
} handoff;

/* Frames in chunk i: the controller's answer (clamped) given the audio out
 * so far, or the schedule's. */
static int32_t chunk_size(const handoff *h, int32_t i, double now_ms, int32_t emitted)
{
    if (!h->ctl.next) return tts_schedule_size(h->schedule, i);
    const int32_t n = h->ctl.next(h->ctl.user, now_ms, emitted);
    return n < 1 ? 1 : n > h->ctl.max_frames ? h->ctl.max_frames : n;
}

static int is_alone(const handoff *h, int32_t i) { return h->alone_chunks < 0 || i < h->alone_chunks; }

/* The decoder's error ends the request: the generator sees it cancelled. */
static void decoder_failed(handoff *h, ember_status st)
{
    pthread_mutex_lock(&h->mu);
    h->dec_status = st;
    snprintf(h->dec_error, sizeof h->dec_error, "%s", ember_last_error());
    h->cancelled = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* The decoder thread: waits for each chunk's frames (or the end), decodes
 * them and hands the PCM to the callback. Each chunk's size is decided when
 * the previous one's audio is ready, so a controller sees every arrival. */
static void *decoder_main(void *arg)
{
    handoff *h = arg;
    const int32_t spf = c2w_stream_model(h->dec)->cfg.samples_per_frame;
    if (h->n_cpus) pool_pin_self(h->cpus, h->n_cpus); /* a placement hint: failing is harmless */
    int32_t want = h->first_size;
    /* in-context cloning: the reference frames lead the stream (its state
     * then continues the recording), their audio is not heard; decoded on
     * every core while the generator prefills, the convolutions only over the
     * last few frames that fix their state (c2w_stream_prime) */
    c2w_stream_use_threads(h->dec, h->dec_all);
    if (h->n_prime) {
        ember_status st = c2w_stream_prime(h->dec, h->prime, h->n_prime);
        if (st) {
            decoder_failed(h, st);
            return NULL;
        }
    }
    for (int32_t i = 0;; i++) {
        pthread_mutex_lock(&h->mu);
        while (!h->cancelled && !h->gen_done && h->produced - h->consumed < want)
            pthread_cond_wait(&h->cv, &h->mu);
        int32_t avail = h->produced - h->consumed, first = h->consumed;
        int done = h->gen_done, stop = h->cancelled || (done && avail == 0);
        pthread_mutex_unlock(&h->mu);
        if (stop) break;
        /* at the end, what is left goes out in chunks as large as the buffer */
        int32_t n = done ? (avail < h->flush_cap ? avail : h->flush_cap) : want;
        /* the generator stopped itself at the end of an alone chunk */
        const int alone = is_alone(h, i) && !done;
        c2w_stream_use_threads(h->dec, alone || done ? h->dec_all : h->dec_busy);
        tts_session_use_threads(h->gen, h->gen_busy);
        double t = tts_now_ms();
        ember_stats_record(h->dec_stats, EMBER_STAT_HANDOFF, t - h->t_frame[first + n - 1]);
        ember_status st = c2w_stream_push(h->dec, h->codes + (size_t)first * h->groups, n, h->pcm);
        double now = tts_now_ms();
        ember_stats_record(h->dec_stats, EMBER_STAT_CODEC_DECODE, now - t);
        tts_session_use_threads(h->gen, h->gen_all);
        /* the next chunk's size, as this one's audio is ready: an alone
         * chunk's generator resumes only once it knows where to stop again */
        const int32_t next = st ? want : chunk_size(h, i + 1, now - h->t0, first + n);
        if (alone) {
            pthread_mutex_lock(&h->mu);
            if (is_alone(h, i + 1)) h->hold_at = first + n + next;
            h->hold_gen = 0;
            pthread_cond_broadcast(&h->cv);
            pthread_mutex_unlock(&h->mu);
        }
        if (st) {
            decoder_failed(h, st);
            break;
        }
        h->decoder_ms += now - t;
        if (!h->chunks) h->first_audio_ms = now - h->t0;
        tts_chunk_info info = {h->chunks, first, n, now - h->t0, now - t};
        h->chunks++;
        int cancel = h->cb ? h->cb(h->user, h->pcm, (size_t)n * spf, &info) : 0;
        pthread_mutex_lock(&h->mu);
        h->consumed += n;
        if (cancel) h->cancelled = 1;
        pthread_mutex_unlock(&h->mu);
        if (cancel) break;
        want = next;
    }
    return NULL;
}

/* The generator side, on the calling thread. */
static ember_status generate(tts_session *gen, const tts_request *rq, handoff *h, double *prefill_ms)
{
    double t = tts_now_ms();
    ember_status st = tts_session_start(gen, rq);
    *prefill_ms = tts_now_ms() - t;
    int32_t *frame = malloc(sizeof(int32_t) * (size_t)h->groups);
    if (!st && !frame) st = ember_fail(EMBER_ERR_NO_MEMORY, "tts: out of memory");
    while (!st) {
        int done = 0;
        const double talker0 = tts_session_talker_ms(gen), pred0 = tts_session_predictor_ms(gen);
        if ((st = tts_session_step(gen, NULL, frame, &done)) || done) break;
        ember_stats_record(h->gen_stats, EMBER_STAT_TALKER, tts_session_talker_ms(gen) - talker0);
        ember_stats_record(h->gen_stats, EMBER_STAT_PREDICTOR, tts_session_predictor_ms(gen) - pred0);
        pthread_mutex_lock(&h->mu);
        int cancelled = h->cancelled;
        if (!cancelled) {
            memcpy(h->codes + (size_t)h->produced * h->groups, frame, sizeof(int32_t) * h->groups);
            h->t_frame[h->produced] = tts_now_ms();
            h->produced++;
            /* an alone chunk is complete: wait while it decodes on every core
             * (set here, before the next frame starts, so the two never overlap;
             * the decoder names the next alone chunk's end when it is done) */
            if (h->hold_at && h->produced == h->hold_at) {
                h->hold_gen = 1;
                h->hold_at = 0;
            }
            pthread_cond_broadcast(&h->cv);
        }
        while (h->hold_gen && !h->cancelled) pthread_cond_wait(&h->cv, &h->mu);
        pthread_mutex_unlock(&h->mu);
        if (cancelled) break;
    }
    free(frame);
    return st;
}

tts_pipeline_params tts_pipeline_default_params(void)
{
    tts_pipeline_params p;
    memset(&p, 0, sizeof p);
    p.alone_chunks = 1;
    return p;
}

ember_status tts_synthesize(tts_session *gen, c2w_stream *dec, const tts_request *rq,
                            const tts_pipeline_params *params, tts_pcm_fn cb, void *user,
                            tts_synth_stats *stats)
{
    const tts_pipeline_params defaults = tts_pipeline_default_params();
    const tts_pipeline_params *p = params ? params : &defaults;
    const tts_schedule *schedule = &p->schedule;
    if (!gen || !dec || !rq) return ember_fail(EMBER_ERR_INVALID_ARG, "tts_synthesize: NULL argument");
    const tts_model *m = gen->m;
    const c2w_model *dm = c2w_stream_model(dec);
    if (dm->cfg.n_quantizers != m->cfg.n_groups)
        return ember_fail(EMBER_ERR_INVALID_ARG,
                          "tts: the talker makes %d codes per frame but the decoder takes %d",
                          m->cfg.n_groups, dm->cfg.n_quantizers);
    const int32_t max_frames = rq->max_frames ? rq->max_frames : m->gen.max_new_tokens;
    int32_t largest = 0;
    tts_chunk_controller ctl = p->controller;
    if (ctl.next) {
        /* unbounded: the default ramp's steady size */
        if (ctl.max_frames <= 0) ctl.max_frames = tts_schedule_size(NULL, TTS_MAX_SCHEDULE);
        largest = ctl.max_frames;
    } else {
        for (int32_t i = 0; i <= TTS_MAX_SCHEDULE; i++)
            if (tts_schedule_size(schedule, i) > largest) largest = tts_schedule_size(schedule, i);
    }
    /* the final flush can be up to two chunks' worth */
    const size_t chunk_cap = 2 * (size_t)largest;
    handoff h;
    memset(&h, 0, sizeof h);
    h.groups = m->cfg.n_groups;
    h.flush_cap = (int32_t)chunk_cap;
    h.prime = rq->ref_codes;
    h.n_prime = rq->ref_codes ? rq->n_ref_frames : 0;
    h.codes = malloc(sizeof(int32_t) * (size_t)(max_frames > 0 ? max_frames : 1) * h.groups);
    h.pcm = malloc(sizeof(float) * chunk_cap * (size_t)dm->cfg.samples_per_frame);
    h.t_frame = malloc(sizeof(double) * (size_t)(max_frames > 0 ? max_frames : 1));
    if (!h.codes || !h.pcm || !h.t_frame) {
        free(h.codes);
        free(h.pcm);
        free(h.t_frame);
        return ember_fail(EMBER_ERR_NO_MEMORY, "tts: out of memory");
    }
    h.dec = dec;
    h.gen = gen;
    h.schedule = schedule;
    h.ctl = ctl;
    const int32_t cpus = pool_cpu_count();
    h.gen_all = tts_session_threads(gen);
    h.dec_all = c2w_stream_threads(dec);
    h.dec_busy = p->decoder_threads ? p->decoder_threads : (cpus / 2 > 0 ? cpus / 2 : 1);
    if (h.dec_busy > h.dec_all) h.dec_busy = h.dec_all;
    h.gen_busy = cpus - h.dec_busy > 0 ? cpus - h.dec_busy : 1;
    if (h.gen_busy > h.gen_all) h.gen_busy = h.gen_all;
    h.alone_chunks = p->alone_chunks;
    h.cpus = p->decoder_cpus;
    h.n_cpus = p->n_decoder_cpus;
    h.gen_stats = p->gen_stats;
    h.dec_stats = p->dec_stats;
    h.first_size = chunk_size(&h, 0, 0.0, 0);
    h.hold_at = is_alone(&h, 0) ? h.first_size : 0;
    h.cb = cb;
    h.user = user;
    h.t0 = tts_now_ms();
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    c2w_stream_reset(dec);

    ember_status st = EMBER_OK;
    pthread_t thread;
    if (pthread_create(&thread, NULL, decoder_main, &h) != 0) {
        st = ember_fail(EMBER_ERR_NO_MEMORY, "tts: cannot start the decoder thread");
    } else {
        double prefill_ms = 0;
        st = generate(gen, rq, &h, &prefill_ms);
        pthread_mutex_lock(&h.mu);
        h.gen_done = 1;
        if (st) h.cancelled = 1;
        pthread_cond_signal(&h.cv);
        pthread_mutex_unlock(&h.mu);
        pthread_join(thread, NULL);
        if (!st && h.dec_status) st = ember_fail(h.dec_status, "%s", h.dec_error);
        if (!st && h.cancelled) st = ember_fail(EMBER_ERR_CANCELLED, "tts: cancelled by the callback");
        if (stats) {
            memset(stats, 0, sizeof *stats);
            stats->frames = h.produced;
            stats->chunks = h.chunks;
            stats->prefill_ms = prefill_ms;
            stats->talker_ms = tts_session_talker_ms(gen);
            stats->predictor_ms = tts_session_predictor_ms(gen);
            stats->decoder_ms = h.decoder_ms;
            stats->first_audio_ms = h.first_audio_ms;
            stats->total_ms = tts_now_ms() - h.t0;
        }
    }
    tts_session_use_threads(gen, h.gen_all);
    c2w_stream_use_threads(dec, h.dec_all);
    pthread_cond_destroy(&h.cv);
    pthread_mutex_destroy(&h.mu);
    free(h.codes);
    free(h.pcm);
    free(h.t_frame);
    return st;
}
