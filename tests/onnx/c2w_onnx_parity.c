/* The exported speech decoder's streaming graphs through ONNX Runtime
 * against ember's native streaming decoder: FRAMES frames of random codes
 * (fixed seed) decoded natively in one stream, then by a stream on the onnx
 * backend once per chunk schedule given (the sizes as tts --chunks takes
 * them, the last repeating; the graphs of the folder run largest first
 * inside each chunk), the stream reset between schedules. Each schedule's
 * audio is compared with native's: the SNR in dB of the whole utterance and
 * of its worst chunk. FRAMES past the decoder's sliding window make the
 * attention rings slide.
 *
 *   c2w_onnx_parity MODEL_DIR EXPORT_DIR LIBONNXRUNTIME FRAMES MIN_SNR_DB SCHEDULE...
 *
 * Prints one line per schedule and, with C2W_PARITY_TIMING=1 in the
 * environment, the time of one chunk of each graph size on each side (1 thread, warm, the median CPU time of 5 alternating runs;
 * reported, never asserted); with C2W_PARITY_STAGES=1, the folder's
 * per-stage graphs (`export --per-layer`) chained over the same frames
 * (whole chunks of their size) against native too, with each stage's CPU
 * time per chunk. Exits 1 when a chunk falls below MIN_SNR_DB. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember.h"
#include "onnx/c2w_ort.h"
#include "tts/code2wav.h"
#include "tts/tts_pipeline.h"
#include "parity_math.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The calling thread's CPU time: both sides run on it with 1 thread (ORT's
 * single intra-op thread is the caller), and it does not count the time
 * other processes take on a loaded machine. */
static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One chunk of each size the folder has graphs for, native and onnx
 * alternating, the median ms of 5 each. */
static int time_chunks(c2w_stream *nat, c2w_stream *ort, const int32_t *sizes, int n, const int32_t *codes,
                       float *pcm)
{
    enum { REPS = 5 };
    for (int i = 0; i < n; i++) {
        double t[2][REPS];
        for (int r = 0; r < REPS; r++)
            for (int side = 0; side < 2; side++) {
                const double t0 = cpu_ms();
                if (c2w_stream_push(side ? ort : nat, codes, sizes[i], pcm) != EMBER_OK) return 1;
                t[side][r] = cpu_ms() - t0;
            }
        qsort(t[0], REPS, sizeof(double), by_value);
        qsort(t[1], REPS, sizeof(double), by_value);
        printf("c2w_onnx_parity: a %d-frame chunk: native %.2f, onnx %.2f CPU ms\n", sizes[i], t[0][REPS / 2],
               t[1][REPS / 2]);
    }
    return 0;
}

/* The per-stage graphs chained, chunk by chunk: the worst chunk's SNR. */
static int stages(const char *dir, const char *lib, const c2w_config *c, const int32_t *codes, int32_t frames,
                  float *pcm, const float *ref, double *worst)
{
    c2w_ort *o;
    const ort_choice rt = {lib, NULL, NULL};
    if (c2w_ort_open_stages(c, dir, &rt, 1, &o) != EMBER_OK) return 1;
    int32_t N;
    c2w_ort_sizes(o, &N, 1);
    const int32_t q = c->n_quantizers, spf = c->samples_per_frame;
    int32_t done = 0;
    *worst = 300.0;
    for (; done + N <= frames; done += N) {
        if (c2w_ort_push(o, codes + (size_t)done * q, N, pcm) != EMBER_OK) {
            c2w_ort_free(o);
            return 1;
        }
        const double db = snr_db(ref + (size_t)done * spf, pcm, N * spf);
        if (db < *worst) *worst = db;
    }
    const char *names[32];
    double ms[32];
    const int n = c2w_ort_stage_times(o, names, ms, 32);
    printf("c2w_onnx_parity: %d per-stage graphs of %d frames chained over %d frames: worst chunk %.1f dB; "
           "CPU ms per chunk:", n, N, done, *worst);
    for (int k = 0; k < n && done; k++) printf(" %s %.2f", names[k], ms[k] / (done / N));
    printf("\n");
    c2w_ort_free(o);
    return done ? 0 : 1;
}

/* Pushes every frame in the schedule's chunks; the worst chunk's SNR
 * against ref and the time spent. */
static int decode(c2w_stream *s, const tts_schedule *sch, const int32_t *codes, int32_t frames, int32_t q,
                  int32_t spf, float *pcm, const float *ref, double *worst, int32_t *worst_at, double *ms)
{
    double t = now_ms();
    *worst = 300.0;
    *worst_at = 0;
    for (int32_t i = 0, done = 0; done < frames; i++) {
        int32_t n = tts_schedule_size(sch, i);
        if (n > frames - done) n = frames - done;
        if (c2w_stream_push(s, codes + (size_t)done * q, n, pcm + (size_t)done * spf) != EMBER_OK) return 1;
        if (ref) {
            const double db = snr_db(ref + (size_t)done * spf, pcm + (size_t)done * spf, n * spf);
            if (db < *worst) {
                *worst = db;
                *worst_at = done;
            }
        }
        done += n;
    }
    *ms = now_ms() - t;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: c2w_onnx_parity MODEL_DIR EXPORT_DIR LIBONNXRUNTIME FRAMES MIN_SNR_DB SCHEDULE...\n");
        return 2;
    }
    const int32_t frames = atoi(argv[4]);
    const double min_db = atof(argv[5]);
    c2w_model_params mp = {EMBER_TYPE_F32, NULL, 1};
    c2w_model *m = NULL;
    c2w_stream *nat = NULL, *ort = NULL;
    c2w_stream_params sp = c2w_stream_default_params();
    sp.n_threads = 1;
    if (c2w_model_load(argv[1], &mp, &m) != EMBER_OK || c2w_stream_create(m, &sp, &nat) != EMBER_OK) {
        fprintf(stderr, "c2w_onnx_parity: %s\n", ember_last_error());
        c2w_model_free(m);
        return 1;
    }
    sp.onnx_dir = argv[2];
    sp.onnx_runtime = argv[3];
    if (frames < 1 || c2w_stream_create(m, &sp, &ort) != EMBER_OK || !c2w_stream_on_onnx(ort)) {
        fprintf(stderr, "c2w_onnx_parity: %s\n", frames < 1 ? "FRAMES must be positive"
                                                  : ort ? "the folder has no decoder graphs"
                                                        : ember_last_error());
        c2w_stream_free(ort);
        c2w_stream_free(nat);
        c2w_model_free(m);
        return 1;
    }
    const int32_t q = m->cfg.n_quantizers, spf = m->cfg.samples_per_frame;
    int32_t *codes = malloc((size_t)frames * q * sizeof *codes);
    float *ref = malloc((size_t)frames * spf * sizeof *ref), *pcm = malloc((size_t)frames * spf * sizeof *pcm);
    uint32_t seed = 12345;
    for (size_t i = 0; codes && i < (size_t)frames * q; i++) {
        seed = seed * 1664525u + 1013904223u;
        codes[i] = (int32_t)((seed >> 8) % (uint32_t)m->cfg.codebook_size);
    }
    int rc = !codes || !ref || !pcm;
    double nat_ms = 0, db, ms;
    int32_t at;
    tts_schedule ramp = {{0}, 0};
    if (!rc) rc = decode(nat, &ramp, codes, frames, q, spf, ref, NULL, &db, &at, &nat_ms);
    double overall_worst = 300.0;
    for (int a = 6; !rc && a < argc; a++) {
        tts_schedule sch;
        if (tts_schedule_parse(argv[a], &sch) != EMBER_OK) {
            rc = 1;
            break;
        }
        c2w_stream_reset(ort);
        if ((rc = decode(ort, &sch, codes, frames, q, spf, pcm, ref, &db, &at, &ms))) break;
        const double whole = snr_db(ref, pcm, frames * spf);
        printf("c2w_onnx_parity: schedule %s: %d frames, audio %.1f dB, worst chunk %.1f dB (from frame %d)\n",
               argv[a], frames, whole, db, at);
        if (db < overall_worst) overall_worst = db;
    }
    int32_t sizes[16];
    const int n_sizes = c2w_stream_onnx_sizes(ort, sizes, 16);
    const char *staged = getenv("C2W_PARITY_STAGES");
    if (!rc && staged && !strcmp(staged, "1")) {
        rc = stages(argv[2], argv[3], &m->cfg, codes, frames, pcm, ref, &db);
        if (!rc && db < overall_worst) overall_worst = db;
    }
    const char *timing = getenv("C2W_PARITY_TIMING");
    if (!rc && timing && !strcmp(timing, "1") && n_sizes && sizes[0] <= frames) rc = time_chunks(nat, ort, sizes, n_sizes, codes, pcm);
    if (rc) fprintf(stderr, "c2w_onnx_parity: %s\n", ember_last_error());
    if (!rc && overall_worst < min_db) {
        fprintf(stderr, "c2w_onnx_parity: a chunk at %.1f dB, below %.1f\n", overall_worst, min_db);
        rc = 1;
    }
    free(codes);
    free(ref);
    free(pcm);
    c2w_stream_free(ort);
    c2w_stream_free(nat);
    c2w_model_free(m);
    return rc;
}
