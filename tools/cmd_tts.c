/* `ember tts`: text -> 24 kHz speech. The talker and code predictor make
 * codec frames while the decoder thread turns them into audio chunk by
 * chunk: written to a WAV file, or with --stream to stdout as raw s16le PCM
 * the moment each chunk is decoded (pipe it into `play -t raw -r 24000 -e
 * signed -b 16 -c 1 -` or `aplay -f S16_LE -r 24000`). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "io/wav.h"
#include "tts_cli.h"
#include "tts_engine.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember tts -m DIR --text TEXT (-o OUT.wav | --stream) [--speaker S]\n"
            "                 [--language L|auto] [--max-frames N] [--seed S] [--greedy]\n"
            "                 [--streaming-text] [--json] [--temp T] [--top-k K] [--top-p P]\n"
            "                 [--repetition-penalty R] [--stats FILE]\n"
            "                 [engine options]\n"
            "  DIR is a Qwen3-TTS directory (config.json, model.safetensors, vocab.json,\n"
            "  merges.txt, speech_tokenizer/). --stream writes raw s16le mono 24 kHz PCM to\n"
            "  stdout as it is produced. A summary goes to stderr (JSON with --json).\n"
            "  Sampling defaults come from generation_config.json; --temp/--top-k/--top-p\n"
            "  set the talker and the code predictor alike (--temp 0: greedy).\n"
            "  Without --chunks the schedule calibrated by earlier runs on this machine is\n"
            "  used (cached under $XDG_CACHE_HOME/ember), chunk by chunk by the adaptive\n"
            "  controller when the calibration says so, and each run refreshes it.\n"
            "  The derived profile (--profile) picks the talker and predictor's format\n"
            "  unless --dtype names one; the summary says which ran.\n"
            "  --stats FILE (or EMBER_STATS) writes step statistics and prints where the\n"
            "  80 ms of each frame went.\n"
            "engine options:\n%s",
            tts_engine_usage);
}

typedef struct sink {
    wav_writer *wav;
    FILE *raw;
    int failed;
    char error[300];
    tts_arrivals *arrivals; /* for the summary and the calibration */
    int32_t samples_per_frame;
} sink;

static int on_pcm(void *user, const float *pcm, size_t n, const tts_chunk_info *info)
{
    sink *k = user;
    tts_arrivals_add(k->arrivals, info, k->samples_per_frame);
    if (k->wav) {
        if (wav_append(k->wav, pcm, n)) {
            snprintf(k->error, sizeof k->error, "%s", ember_last_error());
            k->failed = 1;
        }
        return k->failed;
    }
    int16_t buf[2048];
    for (size_t off = 0; off < n && !k->failed;) {
        size_t c = n - off < 2048 ? n - off : 2048;
        wav_f32_to_s16(pcm + off, buf, c);
        if (fwrite(buf, sizeof *buf, c, k->raw) != c) {
            snprintf(k->error, sizeof k->error, "stdout: %s", strerror(errno));
            k->failed = 1;
        }
        off += c;
    }
    if (!k->failed && fflush(k->raw)) {
        snprintf(k->error, sizeof k->error, "stdout: %s", strerror(errno));
        k->failed = 1;
    }
    return k->failed;
}

/* The run on stderr: a line, or JSON with --json. Both name the weight
 * format that ran and the chunking (adaptive: the controller's); JSON also
 * lists each chunk's frames. */
static void print_summary(const tts_engine *e, const tts_engine_opts *o, const tts_synth_stats *st,
                          const tts_arrivals *a, int json)
{
    const c2w_config *dc = &e->dm->cfg;
    const double audio_ms = st->frames * 1000.0 * dc->samples_per_frame / dc->sample_rate;
    const double per = st->frames ? 1.0 / st->frames : 0.0;
    const char *weights = edge_type_name(e->m->weight_type);
    const char *chunking = o->pipeline.controller.next ? "adaptive" : "schedule";
    if (!json) {
        fprintf(stderr,
                "ember tts: %d frames in %d chunks (%s), %.1f ms of audio in %.1f ms; first audio after "
                "%.1f ms (prefill %.1f ms); per frame: talker %.2f ms, predictor %.2f ms, decoder %.2f ms; "
                "threads %d + %d; weights %s\n",
                st->frames, st->chunks, chunking, audio_ms, st->total_ms, st->first_audio_ms, st->prefill_ms,
                st->talker_ms * per, st->predictor_ms * per, st->decoder_ms * per, e->gen_threads,
                e->dec_threads, weights);
        return;
    }
    fprintf(stderr,
            "{\"frames\": %d, \"chunks\": %d, \"audio_ms\": %.1f, \"wall_ms\": %.1f, "
            "\"first_audio_ms\": %.1f, \"prefill_ms\": %.1f, \"talker_ms_per_frame\": %.2f, "
            "\"predictor_ms_per_frame\": %.2f, \"decoder_ms_per_frame\": %.2f, "
            "\"generator_threads\": %d, \"decoder_threads\": %d, \"weights\": \"%s\", "
            "\"chunking\": \"%s\", \"chunk_frames\": [",
            st->frames, st->chunks, audio_ms, st->total_ms, st->first_audio_ms, st->prefill_ms,
            st->talker_ms * per, st->predictor_ms * per, st->decoder_ms * per, e->gen_threads, e->dec_threads,
            weights, chunking);
    for (int32_t i = 0; i < a->n; i++)
        fprintf(stderr, "%s%lld", i ? ", " : "", (long long)(a->chunks[i].samples / dc->samples_per_frame));
    fprintf(stderr, "]}\n");
}

int cmd_tts(int argc, char **argv)
{
    enum { O_TEXT = 1, O_SPEAKER, O_LANGUAGE, O_MAX, O_SEED, O_GREEDY, O_STREAM, O_STEXT, O_JSON,
           O_TEMP, O_TOPK, O_TOPP, O_PENALTY, O_STATS };
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},      {"text", required_argument, 0, O_TEXT},
        {"out", required_argument, 0, 'o'},        {"speaker", required_argument, 0, O_SPEAKER},
        {"language", required_argument, 0, O_LANGUAGE}, {"max-frames", required_argument, 0, O_MAX},
        {"seed", required_argument, 0, O_SEED},    {"greedy", no_argument, 0, O_GREEDY},
        {"stream", no_argument, 0, O_STREAM},      {"streaming-text", no_argument, 0, O_STEXT},
        {"json", no_argument, 0, O_JSON},          {"help", no_argument, 0, 'h'},
        {"temp", required_argument, 0, O_TEMP},    {"top-k", required_argument, 0, O_TOPK},
        {"top-p", required_argument, 0, O_TOPP},   {"repetition-penalty", required_argument, 0, O_PENALTY},
        {"stats", required_argument, 0, O_STATS},  TTS_ENGINE_OPTIONS,
        {0, 0, 0, 0}};
    tts_engine_opts eo;
    tts_engine_opts_init(&eo);
    tts_request rq;
    memset(&rq, 0, sizeof rq);
    const char *text = NULL, *out_path = NULL;
    int stream = 0, json = 0, c;
    const char *stats_path = NULL;
    /* sampling overrides (talker and predictor alike); < 0: generation_config's */
    double temp = -1, top_p = -1, penalty = -1;
    long top_k = -1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:o:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'm': eo.dir = optarg; break;
        case O_TEXT: text = optarg; break;
        case 'o': out_path = optarg; break;
        case O_SPEAKER: rq.speaker = optarg; break;
        case O_LANGUAGE: rq.language = optarg; break;
        case O_MAX:
            rq.max_frames = (int32_t)strtol(optarg, &end, 10);
            if (*end || rq.max_frames < 1) {
                fprintf(stderr, "ember tts: --max-frames must be a positive integer\n");
                return 2;
            }
            break;
        case O_SEED: rq.seed = strtoull(optarg, NULL, 10); break;
        case O_GREEDY: rq.greedy = 1; break;
        case O_STREAM: stream = 1; break;
        case O_STEXT: rq.streaming = 1; break;
        case O_JSON: json = 1; break;
        case O_TEMP: temp = strtod(optarg, &end); break;
        case O_TOPK: top_k = strtol(optarg, &end, 10); break;
        case O_TOPP: top_p = strtod(optarg, &end); break;
        case O_PENALTY: penalty = strtod(optarg, &end); break;
        case O_STATS: stats_path = optarg; break;
        case 'h': usage(stdout); return 0;
        default: {
            int r = tts_engine_option(c, optarg, "tts", &eo);
            if (r == 1) break;
            if (r == 0) usage(stderr);
            return 2;
        }
        }
        if (end && (end == optarg || *end)) {
            fprintf(stderr, "ember tts: bad number '%s'\n", optarg);
            return 2;
        }
    }
    if ((temp != -1 && !(temp >= 0 && temp <= 100)) || (top_p != -1 && !(top_p > 0 && top_p <= 1)) ||
        (top_k != -1 && top_k < 0) || (penalty != -1 && !(penalty > 0 && penalty <= 100))) {
        fprintf(stderr, "ember tts: bad sampling value (--temp >= 0, --top-k >= 0, "
                        "--top-p in (0, 1], --repetition-penalty > 0)\n");
        return 2;
    }
    if (!eo.dir || !text || (!out_path && !stream) || (out_path && stream)) {
        usage(stderr);
        return 2;
    }
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (tts_cli_encode(eo.dir, text, &ids, &n_ids)) return 1;
    rq.text_ids = ids;
    rq.n_text_ids = n_ids;
    tts_engine e;
    int32_t max_frames = rq.max_frames ? rq.max_frames : 4096;
    tts_engine_calibration_load(&eo, "tts", 1);
    if (tts_engine_open(&e, &eo, (int32_t)n_ids, max_frames, "tts")) {
        free(ids);
        return 1;
    }
    if (!rq.max_frames) rq.max_frames = max_frames;
    tts_gen_config sampling = e.m->gen;
    tts_sampling *both[2] = {&sampling.talker, &sampling.subtalker};
    for (int i = 0; i < 2; i++) {
        if (temp >= 0) both[i]->temperature = (float)temp, both[i]->do_sample = temp > 0;
        if (top_k >= 0) both[i]->top_k = (int32_t)top_k;
        if (top_p > 0) both[i]->top_p = (float)top_p;
    }
    if (penalty > 0) sampling.repetition_penalty = (float)penalty;
    rq.sampling = &sampling;
    wav_writer wav;
    int rc = 1;
    tts_arrivals *arrivals = calloc(1, sizeof *arrivals);
    sink k = {NULL, stdout, 0, "", arrivals, e.dm->cfg.samples_per_frame};
    ember_stats *stats = cli_stats_open(stats_path, "tts", "tts"), *dec_stats = NULL;
    if (stats && ember_stats_create("tts_decoder", &dec_stats) != EMBER_OK) dec_stats = NULL;
    eo.pipeline.gen_stats = stats;
    eo.pipeline.dec_stats = dec_stats;
    if (!arrivals) {
        fprintf(stderr, "ember tts: out of memory\n");
        goto done;
    }
    if (out_path) {
        if (wav_open(&wav, out_path, (uint32_t)e.dm->cfg.sample_rate)) {
            fprintf(stderr, "ember tts: %s\n", ember_last_error());
            goto done;
        }
        k.wav = &wav;
    } else {
        signal(SIGPIPE, SIG_IGN); /* a closed pipe is a write error, reported below */
    }
    tts_synth_stats st;
    tts_engine_start_request(&e, &eo);
    ember_status s = tts_synthesize(e.gen, e.dec, &rq, &eo.pipeline, on_pcm, &k, &st);
    if (s || k.failed) {
        fprintf(stderr, "ember tts: %s\n", k.failed ? k.error : ember_last_error());
        if (k.wav) wav_abort(k.wav);
        goto done;
    }
    if (k.wav && wav_close(k.wav)) {
        fprintf(stderr, "ember tts: %s\n", ember_last_error());
        goto done;
    }
    if (eo.calibrate) tts_engine_calibration_save(&eo, arrivals, e.dm->cfg.sample_rate, "tts");
    print_summary(&e, &eo, &st, arrivals, json);
    rc = 0;
    if (stats && dec_stats) ember_stats_merge(stats, dec_stats);
    if (cli_stats_close(stats, stats_path, "tts")) rc = 1;
    stats = NULL;
done:
    ember_stats_free(stats);
    ember_stats_free(dec_stats);
    free(arrivals);
    tts_engine_close(&e);
    free(ids);
    return rc;
}
