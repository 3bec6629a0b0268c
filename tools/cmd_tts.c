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

#include "cli_tts_voice.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember tts -m DIR --text TEXT (-o OUT.wav | --stream) [--speaker S]\n"
            "                 [--language L|auto] [--max-frames N] [--seed S] [--greedy]\n"
            "                 [--streaming-text] [--json] [--temp T] [--top-k K] [--top-p P]\n"
            "                 [--repetition-penalty R] [--stats FILE] [voice options]\n"
            "                 [engine options]\n"
            "  DIR is a Qwen3-TTS directory (config.json, model.safetensors, vocab.json,\n"
            "  merges.txt, speech_tokenizer/), or the one .gguf `ember quantize DIR` wrote\n"
            "  from it (read as stored, mapped). --stream writes raw s16le mono 24 kHz PCM to\n"
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
            "voice options:\n%s"
            "engine options:\n%s",
            cli_tts_voice_usage, cli_tts_usage);
}

typedef struct sink {
    ember_wav *wav;
    FILE *raw;
    int failed;
    char error[300];
    int32_t *chunk_frames; /* each chunk's frames, for the summary */
    int32_t n_chunks, cap_chunks;
} sink;

static int on_s16(void *user, const int16_t *pcm, size_t n, const ember_speech_chunk *chunk)
{
    sink *k = user;
    if (k->n_chunks < k->cap_chunks) k->chunk_frames[k->n_chunks++] = chunk->n_frames;
    if (fwrite(pcm, sizeof *pcm, n, k->raw) != n || fflush(k->raw)) {
        snprintf(k->error, sizeof k->error, "stdout: %s", strerror(errno));
        k->failed = 1;
    }
    return k->failed;
}

static int on_f32(void *user, const float *pcm, size_t n, const ember_speech_chunk *chunk)
{
    sink *k = user;
    if (k->n_chunks < k->cap_chunks) k->chunk_frames[k->n_chunks++] = chunk->n_frames;
    if (ember_wav_write(k->wav, pcm, n)) {
        snprintf(k->error, sizeof k->error, "%s", ember_last_error());
        k->failed = 1;
    }
    return k->failed;
}

/* The run on stderr: a line, or JSON with --json. Both name the weight
 * format that ran and the chunking (adaptive: the controller's); JSON also
 * lists each chunk's frames. */
static void print_summary(const cli_tts_info *in, const ember_speech_timings *st, const sink *k, int json)
{
    const double audio_ms = st->frames * 1000.0 * in->samples_per_frame / in->sample_rate;
    const double per = st->frames ? 1.0 / st->frames : 0.0;
    const char *chunking = in->adaptive ? "adaptive" : "schedule";
    if (!json) {
        fprintf(stderr,
                "ember tts: %d frames in %d chunks (%s), %.1f ms of audio in %.1f ms; first audio after "
                "%.1f ms (prefill %.1f ms); per frame: talker %.2f ms, predictor %.2f ms, decoder %.2f ms; "
                "threads %d + %d; weights %s\n",
                st->frames, st->chunks, chunking, audio_ms, st->total_ms, st->first_audio_ms, st->prefill_ms,
                st->talker_ms * per, st->predictor_ms * per, st->decoder_ms * per, in->generator_threads,
                in->decoder_threads, in->weights);
        return;
    }
    fprintf(stderr,
            "{\"frames\": %d, \"chunks\": %d, \"audio_ms\": %.1f, \"wall_ms\": %.1f, "
            "\"first_audio_ms\": %.1f, \"prefill_ms\": %.1f, \"talker_ms_per_frame\": %.2f, "
            "\"predictor_ms_per_frame\": %.2f, \"decoder_ms_per_frame\": %.2f, "
            "\"generator_threads\": %d, \"decoder_threads\": %d, \"weights\": \"%s\", "
            "\"decoder_weights\": \"%s\", \"chunking\": \"%s\", \"chunk_frames\": [",
            st->frames, st->chunks, audio_ms, st->total_ms, st->first_audio_ms, st->prefill_ms,
            st->talker_ms * per, st->predictor_ms * per, st->decoder_ms * per, in->generator_threads,
            in->decoder_threads, in->weights, in->decoder_weights, chunking);
    for (int32_t i = 0; i < k->n_chunks; i++) fprintf(stderr, "%s%d", i ? ", " : "", k->chunk_frames[i]);
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
        {"stats", required_argument, 0, O_STATS},  CLI_TTS_VOICE_OPTIONS,
        CLI_TTS_OPTIONS,
        {0, 0, 0, 0}};
    cli_tts_opts to;
    cli_tts_opts_init(&to);
    ember_speech_request rq = ember_speech_default_request();
    cli_tts_voice vo = {0};
    const char *out_path = NULL;
    int stream = 0, json = 0, c;
    const char *stats_path = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:o:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'm': to.dir = optarg; break;
        case O_TEXT: rq.text = optarg; break;
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
        case O_STEXT: rq.streaming_text = 1; break;
        case O_JSON: json = 1; break;
        case O_TEMP: rq.temperature = strtof(optarg, &end); break;
        case O_TOPK: rq.top_k = (int32_t)strtol(optarg, &end, 10); break;
        case O_TOPP: rq.top_p = strtof(optarg, &end); break;
        case O_PENALTY: rq.repetition_penalty = strtof(optarg, &end); break;
        case O_STATS: stats_path = optarg; break;
        case 'h': usage(stdout); return 0;
        default: {
            if (cli_tts_voice_option(c, optarg, &vo)) break;
            int r = cli_tts_option(c, optarg, "tts", &to);
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
    /* -1 (unset): generation_config's */
    if ((rq.temperature != -1 && !(rq.temperature >= 0 && rq.temperature <= 100)) || rq.top_k < -1 ||
        (rq.top_p != -1 && !(rq.top_p > 0 && rq.top_p <= 1)) ||
        (rq.repetition_penalty != -1 && !(rq.repetition_penalty > 0 && rq.repetition_penalty <= 100))) {
        fprintf(stderr, "ember tts: bad sampling value (--temp >= 0, --top-k >= 0, "
                        "--top-p in (0, 1], --repetition-penalty > 0)\n");
        return 2;
    }
    if (!to.dir || !rq.text || (!out_path && !stream) || (out_path && stream)) {
        usage(stderr);
        return 2;
    }
    rq.chunks = to.chunks;
    /* a token is at least a byte: the text's length bounds its tokens */
    cli_tts_info info;
    ember_voice *voice = NULL;
    int vr = cli_tts_voice_request(&to, &vo, "tts", 1, NULL, NULL, &rq, &voice);
    if (vr) return vr;
    const int32_t text_bytes =
        (int32_t)(strlen(rq.text) + (rq.instruct ? strlen(rq.instruct) : 0)) + cli_tts_voice_rows(voice);
    ember_tts *tts = cli_tts_load(&to, text_bytes + 32, rq.max_frames ? rq.max_frames : 4096, "tts", 1, &info);
    if (!tts) {
        ember_voice_free(voice);
        return 1;
    }
    if (rq.instruct && rq.instruct[0] && info.small)
        fprintf(stderr, "ember tts: warning: a 0.6B model ignores --instruct (as the official code does)\n");
    int rc = 1;
    sink k = {NULL, stdout, 0, "", NULL, 0, 0};
    k.cap_chunks = rq.max_frames ? rq.max_frames : 4096;
    k.chunk_frames = malloc((size_t)k.cap_chunks * sizeof *k.chunk_frames);
    ember_stats *stats = cli_stats_open(stats_path, "tts", "tts");
    rq.stats = stats;
    if (!k.chunk_frames) {
        fprintf(stderr, "ember tts: out of memory\n");
        goto done;
    }
    if (out_path) {
        if (ember_wav_open(out_path, info.sample_rate, &k.wav)) {
            fprintf(stderr, "ember tts: %s\n", ember_last_error());
            goto done;
        }
    } else {
        signal(SIGPIPE, SIG_IGN); /* a closed pipe is a write error, reported below */
    }
    ember_speech_timings st;
    ember_status s = ember_tts_speak(tts, &rq, k.wav ? on_f32 : NULL, k.wav ? NULL : on_s16, &k, &st);
    if (s || k.failed) {
        fprintf(stderr, "ember tts: %s\n", k.failed ? k.error : ember_last_error());
        if (k.wav) ember_wav_abort(k.wav);
        goto done;
    }
    if (k.wav && ember_wav_close(k.wav)) {
        fprintf(stderr, "ember tts: %s\n", ember_last_error());
        goto done;
    }
    print_summary(&info, &st, &k, json);
    rc = cli_stats_close(stats, stats_path, "tts") ? 1 : 0;
    stats = NULL;
done:
    ember_stats_free(stats);
    free(k.chunk_frames);
    ember_voice_free(voice);
    ember_tts_free(tts);
    return rc;
}
