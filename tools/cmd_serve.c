/* `ember serve`: the OpenAI-compatible server (src/serve/server.h) until
 * SIGINT or SIGTERM. */
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "serve/server.h"
#include "cli_tts.h"
#include "edge/calibrate.h"

/* The speech model's calibration cached on this machine (said on stderr),
 * whose chunks every speech request follows: 1 when there is one. */
static int find_calibration(const char *dir, edge_calibration *cal)
{
    char path[1024], text[1536];
    bool found = false;
    if (edge_calibration_path_for(dir, path, sizeof path)) return 0;
    if (edge_calibration_load(path, cal, &found) != EMBER_OK) {
        fprintf(stderr, "ember serve: calibration: %s (using the default ramp)\n", ember_last_error());
        return 0;
    }
    if (!found || !cal->measured) return 0;
    edge_calibration_describe(cal, path, text, sizeof text);
    fprintf(stderr, "ember serve: %s\n", text);
    return 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember serve -m MODEL [--host 127.0.0.1] [--port 8080] [--api-key KEY]\n"
            "                   [--max-seqs 8] [--ctx 4096] [--threads N] [--max-queue N]\n"
            "                   [--timeout SECONDS] [--max-body BYTES] [--prefix-cache MB]\n"
            "                   [--prefix-cache-dir DIR] [--speculate ngram|draft:DIR [--draft-max K]]\n"
            "                   [--stats FILE] [--tts QWEN3_TTS_DIR] [options]\n"
            "  POST /v1/chat/completions, POST /v1/completions, POST /v1/audio/speech, GET /v1/models,\n"
            "  GET /health, GET /metrics (OpenAI request and response shapes)\n"
            "  -m MODEL          a model directory or a GGUF file (its tokenizer and template inside)\n"
            "  --host ADDR       IPv4 address to listen on (default 127.0.0.1: this machine only)\n"
            "  --port N          0 picks a free port; the address is printed on stderr\n"
            "  --api-key KEY     require Authorization: Bearer KEY (or $EMBER_API_KEY)\n"
            "  --max-seqs N      sequences decoded together in one batch (default 8); with\n"
            "                    --backend onnx:DIR each one holds its own ONNX Runtime sessions\n"
            "  --ctx N           tokens per sequence, prompt + reply (default 4096)\n"
            "  --max-queue N     requests waiting for a free sequence before 503 (default 4 x max-seqs)\n"
            "  --timeout S       per-request limit in seconds (decimals allowed), queueing included\n"
            "                    (default 600)\n"
            "  --max-body BYTES  request body cap (default 4194304)\n"
            "  --prefix-cache MB finished conversations kept so the next turn runs only its new\n"
            "                    tokens (default 256, 0: off)\n"
            "  --prefix-cache-dir DIR  keep them on disk too (one prompt-cache file each, within the\n"
            "                    same MB, least recently used removed first): a restarted server\n"
            "                    resumes them\n"
            "  --speculate ngram speculative decoding with prompt lookup: drafted ids verified\n"
            "                    several per pass, replies identical to plain decoding\n"
            "  --speculate draft:DIR  the same with a draft model's guesses (a smaller checkpoint\n"
            "                    with the same tokenizer, loaded once; each sequence keeps its\n"
            "                    own draft session); requests may still ask for ngram\n"
            "  --draft-max K     the most drafted ids per verify pass, 1-64 (default 8); a\n"
            "                    request's \"speculate\" (off|ngram|draft) and \"draft_max\" choose\n"
            "                    within what the server loaded\n"
            "  --stats FILE      step statistics of the text engine (queue wait, prefill, decode\n"
            "                    steps by layer type, sampler, detokenizer) written as JSON at\n"
            "                    shutdown, with the attribution table on stderr (or $EMBER_STATS)\n"
            "  --tts DIR         also serve POST /v1/audio/speech with this Qwen3-TTS model\n"
            "                    (a directory, or the .gguf `ember quantize DIR` wrote)\n"
            "  --tts-dtype T     its talker and predictor weights (f32|bf16|q8_0; default: the\n"
            "                    profile's); its chunks follow this machine's calibration\n"
            "  --tts-backend cpu|onnx:DIR  who runs its talker and predictor steps: ember's\n"
            "                    kernels (default) or the graphs `ember export onnx -m TTS_DIR`\n"
            "                    wrote to DIR, on --onnx-runtime's library (decoder native)\n"
            "  --voices DIR      saved voices (DIR/NAME.voice from `ember voice create`) that a\n"
            "                    Base speech model speaks in: a request's \"voice\" names one;\n"
            "                    \"instructions\" reach a 1.7B CustomVoice or VoiceDesign model\n"
            "  --profile auto|off|explain  the derived profile picks the LLM's weight format\n"
            "                    and threads, and the TTS model's format, unless given (default\n"
            "                    auto; off: as stored)\n%s",
            cli_common_usage);
}

static int parse_long(const char *arg, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    enum { OPT_HOST = 1, OPT_PORT, OPT_API_KEY, OPT_MAX_SEQS, OPT_CTX, OPT_MAX_QUEUE, OPT_TIMEOUT,
           OPT_MAX_BODY, OPT_PREFIX_CACHE, OPT_PREFIX_CACHE_DIR, OPT_TTS, OPT_TTS_DTYPE, OPT_TTS_BACKEND, OPT_PROFILE, OPT_STATS,
           OPT_VOICES, OPT_SPECULATE, OPT_DRAFT_MAX };
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},         {"host", required_argument, 0, OPT_HOST},
        {"port", required_argument, 0, OPT_PORT},     {"api-key", required_argument, 0, OPT_API_KEY},
        {"max-seqs", required_argument, 0, OPT_MAX_SEQS}, {"ctx", required_argument, 0, OPT_CTX},
        {"max-queue", required_argument, 0, OPT_MAX_QUEUE},
        {"timeout", required_argument, 0, OPT_TIMEOUT},
        {"max-body", required_argument, 0, OPT_MAX_BODY},
        {"prefix-cache", required_argument, 0, OPT_PREFIX_CACHE},
        {"prefix-cache-dir", required_argument, 0, OPT_PREFIX_CACHE_DIR},
        {"tts", required_argument, 0, OPT_TTS},
        {"tts-dtype", required_argument, 0, OPT_TTS_DTYPE},
        {"tts-backend", required_argument, 0, OPT_TTS_BACKEND},
        {"voices", required_argument, 0, OPT_VOICES},
        {"profile", required_argument, 0, OPT_PROFILE},
        {"stats", required_argument, 0, OPT_STATS},
        {"speculate", required_argument, 0, OPT_SPECULATE},
        {"draft-max", required_argument, 0, OPT_DRAFT_MAX},
        {"help", no_argument, 0, 'h'},                CLI_COMMON_OPTIONS,
        {0, 0, 0, 0}};
    sv_server_params p;
    sv_server_params_default(&p);
    p.api_key = getenv("EMBER_API_KEY");
    if (p.api_key && !*p.api_key) p.api_key = NULL;
    ember_session_params sp = ember_session_default_params();
    cli_profile profile = CLI_PROFILE_AUTO;
    const char *stats_path = NULL;
    int speculate = 0;
    int32_t draft_max = 8;
    int opt;
    long v = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        int r = 0;
        switch (opt) {
        case 'm': p.model_dir = optarg; break;
        case OPT_HOST: p.host = optarg; break;
        case OPT_API_KEY: p.api_key = optarg; break;
        case OPT_PORT: r = parse_long(optarg, 0, 65535, &v); p.port = (int)v; break;
        case OPT_MAX_SEQS: r = parse_long(optarg, 1, 1024, &v); p.max_seqs = (int)v; break;
        case OPT_CTX: r = parse_long(optarg, 2, 1 << 24, &v); p.ctx = (int32_t)v; break;
        case OPT_MAX_QUEUE: r = parse_long(optarg, 1, 1 << 20, &v); p.max_queue = (int)v; break;
        case OPT_TIMEOUT: {
            char *end;
            p.timeout_s = strtod(optarg, &end);
            r = end == optarg || *end || !(p.timeout_s >= 0.01 && p.timeout_s <= 86400) ? -1 : 0;
            break;
        }
        case OPT_MAX_BODY: r = parse_long(optarg, 1024, 1L << 30, &v); p.max_body = (size_t)v; break;
        case OPT_PREFIX_CACHE:
            r = parse_long(optarg, 0, 1L << 20, &v);
            p.prefix_cache_bytes = (size_t)v << 20;
            break;
        case OPT_PREFIX_CACHE_DIR: p.prefix_cache_dir = optarg; break;
        case OPT_TTS: p.tts_dir = optarg; break;
        case OPT_VOICES: p.tts_voices = optarg; break;
        case OPT_TTS_DTYPE: r = cli_parse_type(optarg, &p.tts_weight_type) ? 1 : 0; break;
        case OPT_TTS_BACKEND: r = cli_parse_backend(optarg, &p.tts_backend, &p.model.onnx_runtime); break;
        case OPT_PROFILE:
            r = cli_profile_option(CLI_OPT_PROFILE, optarg, "serve", &profile) == 1 ? 0 : 1;
            break;
        case OPT_STATS: stats_path = optarg; break;
        case OPT_SPECULATE:
            if (!strncmp(optarg, "draft:", 6) && optarg[6]) p.draft_dir = optarg + 6;
            else if (strcmp(optarg, "ngram")) r = -1;
            else p.draft_dir = NULL;
            speculate = 1;
            break;
        case OPT_DRAFT_MAX: r = parse_long(optarg, 1, 64, &v); draft_max = (int32_t)v; break;
        case 'h': usage(stdout); return 0;
        default:
            r = cli_common_option(opt, optarg, "serve", &p.model, &sp);
            if (r == 0) usage(stderr);
            if (r != 1) return 2;
            r = 0;
        }
        if (r) {
            const struct option *o = opts;
            while (o->name && o->val != opt) o++;
            fprintf(stderr, "ember serve: bad value '%s' for --%s\n", optarg, o->name ? o->name : "?");
            return 2;
        }
    }
    if (speculate) p.draft_max = draft_max;
    if (!p.model_dir || optind != argc) {
        usage(stderr);
        return 2;
    }
    if (cli_apply_profile(p.model_dir, profile, "serve", &p.model, &sp)) return 1;
    /* the speech model: its own profile's format, the cached calibration's chunks */
    edge_calibration tts_calibration;
    if (p.tts_dir) {
        cli_tts_opts to; /* the format only: the server places no speech threads */
        cli_tts_opts_init(&to);
        to.dir = p.tts_dir;
        to.profile = profile;
        to.pin = 0;
        to.params.weight_type = p.tts_weight_type;
        if (cli_tts_apply_profile(&to, "serve --tts")) return 1;
        p.tts_weight_type = to.params.weight_type;
        if (find_calibration(p.tts_dir, &tts_calibration)) p.tts_calibration = &tts_calibration;
    }
    p.n_threads = sp.n_threads;
    p.kv_type = sp.kv_type;

    /* Every thread the server starts inherits this mask: the signals are
     * taken here by sigwait, and a peer that hangs up never raises SIGPIPE. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    sigdelset(&stop, SIGPIPE);

    /* Every request allocates and frees a KV cache sized to its prompt and
     * reply. glibc's default raises its mmap threshold to the largest block
     * freed so far, after which those caches come from the heap and fragment
     * it: RSS crept up 7.5% over a 10-minute soak (bench/soak.sh) with a
     * full prefix cache. A fixed threshold keeps them mapped on their own
     * and returned to the system when freed. */
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
    sv_server *s;
    p.stats = cli_stats_open(stats_path, "text", "serve");
    if (sv_server_start(&p, &s) != EMBER_OK) {
        fprintf(stderr, "ember serve: %s\n", ember_last_error());
        ember_stats_free(p.stats);
        return 1;
    }
    fprintf(stderr, "ember serve: listening on http://%s:%d (model %s)\n",
            strcmp(p.host, "localhost") ? p.host : "127.0.0.1", sv_server_port(s), p.model_dir);
    fflush(stderr);
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "ember serve: signal %d, stopping\n", sig);
    sv_server_stop(s);
    /* the engine thread is gone: the recorder is this thread's now */
    return cli_stats_close(p.stats, stats_path, "serve") ? 1 : 0;
}
