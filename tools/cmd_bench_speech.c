/* `ember bench tts`: streaming speech end to end, measured as a listener
 * would feel it (definitions from spec/edge-runtime.md, "Stream latency
 * metrics"): time to first audio, the earliest playback start that never
 * underruns, real-time factor, per-stage milliseconds per frame, gaps
 * between chunks, peak RSS. Each rep synthesizes exactly --frames frames
 * (EOS is held off, as random weights would stop anywhere); the reported
 * figures are medians over the reps, plus the first rep's time to first
 * audio (caches and pages cold, as for a process's first request). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_tts_voice.h"
#include "edge/latency_report.h"

#define MAX_CHUNKS 4096

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember bench tts -m DIR [--text TEXT] [--frames 100] [--reps 3] [--json]\n"
            "                       [--speaker S] [--language L] [--trace] [--report DIR]\n"
            "                       [voice options] [engine options]\n"
            "  --trace prints each chunk's frames, ready time and decode time on stderr\n"
            "  --report DIR writes DIR/latency.json and DIR/latency.svg: the last rep's chunk\n"
            "  arrivals against playback, stalls marked\n"
            "  The JSON names the prompt mode the voice options make (speaker, instruct,\n"
            "  voice_design, clone_xvector, clone_in_context); with --ref-audio the voice is\n"
            "  made once a rep too: voice_ms is the median of reading the clip and running\n"
            "  the encoders (loaded once, encoder_load_ms).\n"
            "voice options:\n%s"
            "engine options:\n%s",
            cli_tts_voice_usage, cli_tts_usage);
}

typedef struct trace {
    double ready_ms[MAX_CHUNKS];
    int32_t frames[MAX_CHUNKS];
    double gaps[MAX_CHUNKS]; /* scratch for the percentiles */
    int32_t n;
    int verbose;             /* --trace: each chunk's timing on stderr */
    cli_rss peak;
} trace;

static int on_pcm(void *user, const float *pcm, size_t n, const ember_speech_chunk *info)
{
    trace *t = user;
    (void)pcm, (void)n;
    if (t->verbose)
        fprintf(stderr, "chunk %d frames %d..%d ready %.1f decode %.1f\n", info->index,
                info->first_frame, info->first_frame + info->n_frames, info->ready_ms, info->decode_ms);
    if (t->n < MAX_CHUNKS) {
        t->ready_ms[t->n] = info->ready_ms;
        t->frames[t->n++] = info->n_frames;
    }
    cli_rss_peak(&t->peak);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest rank: sorted[max(1, ceil(q n)) - 1]. */
static double percentile(double *v, int n, double q)
{
    if (n <= 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int k = (int)ceil(q * n);
    return v[(k < 1 ? 1 : k) - 1];
}

/* The metrics of one rep, in the order they are printed. */
enum { M_TTFA, M_PLAYBACK, M_RTF, M_TALKER, M_PREDICTOR, M_DECODER, M_GAP50, M_GAP95, M_GAPMAX,
       M_COUNT };

static void measure(trace *t, const ember_speech_timings *st, double frame_ms, double *r)
{
    double delivered = 0, *gaps = t->gaps;
    r[M_TTFA] = t->n ? t->ready_ms[0] : 0.0;
    r[M_PLAYBACK] = 0;
    for (int32_t i = 0; i < t->n; i++) {
        /* playback starting at s never starves iff s + delivered_before_i >= t_i */
        double need = t->ready_ms[i] - delivered;
        if (need > r[M_PLAYBACK]) r[M_PLAYBACK] = need;
        delivered += t->frames[i] * frame_ms;
        if (i) gaps[i - 1] = t->ready_ms[i] - t->ready_ms[i - 1];
    }
    r[M_RTF] = delivered > 0 && t->n ? t->ready_ms[t->n - 1] / delivered : 0.0;
    r[M_TALKER] = st->frames ? st->talker_ms / st->frames : 0;
    r[M_PREDICTOR] = st->frames ? st->predictor_ms / st->frames : 0;
    r[M_DECODER] = st->frames ? st->decoder_ms / st->frames : 0;
    int ng = t->n > 1 ? t->n - 1 : 0;
    r[M_GAP50] = percentile(gaps, ng, 0.50);
    r[M_GAP95] = percentile(gaps, ng, 0.95);
    r[M_GAPMAX] = ng ? gaps[ng - 1] : 0.0; /* sorted by percentile() */
}

int cmd_bench_speech(int argc, char **argv)
{
    enum { O_TEXT = 1, O_FRAMES, O_REPS, O_JSON, O_SPEAKER, O_LANGUAGE, O_TRACE, O_REPORT };
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},     {"text", required_argument, 0, O_TEXT},
        {"frames", required_argument, 0, O_FRAMES}, {"reps", required_argument, 0, O_REPS},
        {"json", no_argument, 0, O_JSON},         {"speaker", required_argument, 0, O_SPEAKER},
        {"language", required_argument, 0, O_LANGUAGE}, {"trace", no_argument, 0, O_TRACE},
        {"report", required_argument, 0, O_REPORT},
        {"help", no_argument, 0, 'h'},
        CLI_TTS_VOICE_OPTIONS,                    CLI_TTS_OPTIONS,
        {0, 0, 0, 0}};
    cli_tts_opts to;
    cli_tts_opts_init(&to);
    cli_tts_voice vo = {0};
    ember_speech_request rq = ember_speech_default_request();
    rq.text = "The quick brown fox jumps over the lazy dog, then naps in the warm sun.";
    const char *report_dir = NULL;
    int frames = 100, reps = 3, json = 0, trace_chunks = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': to.dir = optarg; break;
        case O_TEXT: rq.text = optarg; break;
        case O_FRAMES: frames = atoi(optarg); break;
        case O_REPS: reps = atoi(optarg); break;
        case O_JSON: json = 1; break;
        case O_SPEAKER: rq.speaker = optarg; break;
        case O_LANGUAGE: rq.language = optarg; break;
        case O_TRACE: trace_chunks = 1; break;
        case O_REPORT: report_dir = optarg; break;
        case 'h': usage(stdout); return 0;
        default: {
            if (cli_tts_voice_option(c, optarg, &vo)) break;
            int r = cli_tts_option(c, optarg, "bench tts", &to);
            if (r == 1) break;
            if (r == 0) usage(stderr);
            return 2;
        }
        }
    }
    if (!to.dir || frames < 1 || frames > 100000 || reps < 1 || reps > 15) {
        usage(stderr);
        return 2;
    }
    /* exactly `frames` frames a rep: random weights would stop anywhere */
    rq.max_frames = rq.min_frames = frames;
    rq.seed = 1234;
    rq.chunks = to.chunks;
    cli_tts_info info;
    ember_voice *voice = NULL;
    double voice_ms[15] = {0}, encoder_load_ms = 0;
    int vr = cli_tts_voice_request(&to, &vo, "bench tts", reps, voice_ms, &encoder_load_ms, &rq, &voice);
    if (vr) return vr;
    /* a token is at least a byte: the texts' lengths bound their tokens */
    const int32_t text_bytes =
        (int32_t)(strlen(rq.text) + (rq.instruct ? strlen(rq.instruct) : 0)) + cli_tts_voice_rows(voice);
    double t0 = cli_now_s();
    ember_tts *tts = cli_tts_load(&to, text_bytes + 32, frames, "bench tts", 1, &info);
    if (!tts) {
        ember_voice_free(voice);
        return 1;
    }
    double load_s = cli_now_s() - t0;
    const char *mode = cli_tts_mode(&rq, &info);
    if (!rq.speaker && !rq.voice && info.speaker[0]) rq.speaker = info.speaker;
    if (!rq.language && info.language[0]) rq.language = info.language;
    const double frame_ms = 1000.0 * info.samples_per_frame / info.sample_rate;
    trace *t = calloc(1, sizeof *t);
    double res[15][M_COUNT];
    ember_speech_timings st = {0};
    int rc = 1;
    if (!t) goto done;
    t->verbose = trace_chunks;
    for (int r = 0; r < reps; r++) {
        t->n = 0;
        if (ember_tts_speak(tts, &rq, on_pcm, NULL, t, &st)) {
            fprintf(stderr, "ember bench tts: %s\n", ember_last_error());
            goto done;
        }
        measure(t, &st, frame_ms, res[r]);
    }
    /* medians per metric */
    double col[15], med[M_COUNT];
    for (int k = 0; k < M_COUNT; k++) {
        for (int r = 0; r < reps; r++) col[r] = res[r][k];
        med[k] = cli_median(col, reps);
    }
    const char *chunking = info.adaptive ? "adaptive" : "schedule";
    if (report_dir) {
        /* the last rep's arrivals as the picture and the metrics' JSON */
        edge_chunk_time *arr = calloc((size_t)(t->n ? t->n : 1), sizeof *arr);
        char title[256];
        snprintf(title, sizeof title, "ember tts, %s, %s talker/predictor, %d frames", to.dir, info.weights,
                 frames);
        for (int32_t i = 0; arr && i < t->n; i++) {
            arr[i].t_ms = t->ready_ms[i];
            arr[i].samples = (int64_t)t->frames[i] * info.samples_per_frame;
        }
        if (!arr || edge_latency_write_report(report_dir, arr, t->n, info.sample_rate, title)) {
            fprintf(stderr, "ember bench tts: --report: %s\n", arr ? ember_last_error() : "out of memory");
            free(arr);
            goto done;
        }
        free(arr);
    }
    if (json)
        printf("{\"model\": \"%s\", \"mode\": \"%s\", \"kernels\": \"%s\", \"dtype\": \"%s\", \"decoder_dtype\": \"%s\", "
               "\"chunking\": \"%s\", "
               "\"generator_threads\": %d, \"decoder_threads\": %d, \"frames\": %d, \"reps\": %d, "
               "\"chunks\": %d, \"load_s\": %.3f, \"prefill_ms\": %.1f, \"ttfa_ms\": %.1f, "
               "\"ttfa_first_rep_ms\": %.1f, "
               "\"playback_start_ms\": %.1f, \"rtf\": %.4f, \"talker_ms_per_frame\": %.2f, "
               "\"predictor_ms_per_frame\": %.2f, \"decoder_ms_per_frame\": %.2f, "
               "\"chunk_gap_ms\": {\"p50\": %.1f, \"p95\": %.1f, \"max\": %.1f}, "
               "\"voice_ms\": %.1f, \"encoder_load_ms\": %.1f, \"peak_rss_bytes\": %zu}\n",
               to.dir, mode, info.kernels, info.weights, info.decoder_weights, chunking,
               info.generator_threads, info.decoder_threads, frames, reps, t->n, load_s, st.prefill_ms, med[0],
               res[0][M_TTFA], med[1], med[2], med[3], med[4], med[5], med[6], med[7], med[8],
               vo.ref_audio ? cli_median(voice_ms, reps) : 0.0, encoder_load_ms, t->peak.anon + t->peak.file);
    else
        printf("%s: first audio %.1f ms, playback can start at %.1f ms, RTF %.3f; per frame: talker "
               "%.2f ms, predictor %.2f ms, decoder %.2f ms; chunk gaps p50 %.1f p95 %.1f max "
               "%.1f ms; peak RSS %.1f MB; weights %s, chunks by %s\n",
               mode, med[0], med[1], med[2], med[3], med[4], med[5], med[6], med[7], med[8],
               (double)(t->peak.anon + t->peak.file) / 1e6, info.weights, chunking);
    rc = 0;
done:
    free(t);
    ember_tts_free(tts);
    ember_voice_free(voice);
    return rc;
}
