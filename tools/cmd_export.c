/* `ember export onnx -m MODEL -o DIR [--context N]`: the decode step as an
 * ONNX graph plus its manifest; `ember export onnx --check DIR` audits an
 * exported folder against what NPU compilers accept. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_public.h"
#include "ember.h"
#include "ember_export.h"
#include "ember_speech.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: ember export onnx -m MODEL -o DIR [--context 1024] [--prefill-chunk 128]\n"
               "                         [--dtype f32|f16|qdq8|qdq4|qdq8a16|qdq4a16|lpbq4a16|T]\n"
               "                         [--calib FILE]\n"
               "       ember export onnx --check DIR\n"
               "  writes DIR/decode.onnx (the decode step, opset 17, static shapes),\n"
               "  DIR/prefill.onnx (a chunk of N prompt tokens), the weights both share in\n"
               "  DIR/weights.onnx.data and DIR/manifest.json (every input and output:\n"
               "  shape, type, meaning)\n"
               "  --context: the context bucket the graphs are compiled for (positions\n"
               "             0..N-1; full-attention caches hold N-1 entries)\n"
               "  --prefill-chunk: tokens per prefill run (default 128, or the context\n"
               "             when smaller); 0 writes no prefill graph\n"
               "  --dtype: the graphs' form: f32 (default), f16 (f16 weights, activations\n"
               "           and I/O, for NPUs), qdq8 (int8 per-channel weights behind\n"
               "           DequantizeLinear, f32 activations), qdq4 (int4 weights in blocks\n"
               "           of 64, opset 21), qdq8a16 / qdq4a16 (those weights, and uint16\n"
               "           QDQ on every weight MatMul's input, scaled from a calibration run\n"
               "           of the native model; opset 21), lpbq4a16 (qdq4a16 with each block's\n"
               "           scale a uint8 integer times a per-channel f32 scale: QNN's LPBQ);\n"
               "           any other type (q8_0, bf16...)\n"
               "           rounds the weights through it at load and writes f32\n"
               "  --calib FILE: the a16 forms' sample text (prompts, one per line),\n"
               "           tokenized and run through the model (default: a built-in set)\n"
               "  A Qwen3-TTS directory (config.json with a talker_config) gives\n"
               "  DIR/talker.onnx and DIR/predictor.onnx (one step each; --context is the\n"
               "  talker's bucket, prompt plus frames) and DIR/talker_prefill.onnx (a chunk\n"
               "  of prompt rows, --prefill-chunk, default 32 there) instead, and with its\n"
               "  speech decoder DIR/code2wav_N.onnx: the streaming decoder for chunks of\n"
               "  N = 1, 2, 4, 8, 16, 25 frames, its state as explicit inputs/outputs\n"
               "  --per-layer: also one graph per speech-decoder stage (25 frames;\n"
               "           DIR/code2wav_25_<stage>.onnx), for profiling\n"
               "  --check: list each graph's ops, opset and I/O shapes and fail on anything\n"
               "           outside the QNN HTP allow-list, dynamic dims, int64 indices,\n"
               "           IsNaN/Where guards, Reshape allowzero=1, rank-0 axes\n");
}

/* The a16 forms' default calibration text: the kinds of input the demo and
 * Spark models see (chat, a tool call, code, numbers), a few hundred tokens. */
static const char default_calibration[] =
    "The weather in Paris is mild in spring, with rain most afternoons.\n"
    "Hello there! What can I do for you today?\n"
    "Tell me about chess openings: the Sicilian, the French and the Queen's Gambit.\n"
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n"
    "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n"
    "In 1969, 3 astronauts flew 384,400 km to the Moon; the trip took about 76 hours.\n"
    "Summarize the following meeting notes in three bullet points for the team.\n"
    "The history of chess: a beginner's guide, from chaturanga to modern engines.\n";

/* The calibration text (path, or the default) as token ids (ember_free);
 * non-zero with the message printed when it cannot be read or tokenized. */
static int calibration_ids(const char *model_dir, const char *path, int32_t **ids, size_t *n)
{
    char *text = path ? cli_read_text(path, "export") : NULL;
    if (path && !text) return -1;
    ember_tokenizer *tok;
    ember_status st = ember_tokenizer_load(model_dir, &tok);
    if (!st) {
        const char *t = text ? text : default_calibration;
        st = ember_tokenizer_encode(tok, t, strlen(t), 0, ids, n);
        ember_tokenizer_free(tok);
    }
    free(text);
    if (st) fprintf(stderr, "ember export: calibration text: %s\n", ember_last_error());
    return st ? -1 : 0;
}

/* A Qwen3-TTS checkpoint: its config.json has a talker_config (a Spark
 * one never does); read only far enough to see the key. */
static int is_tts_dir(const char *dir)
{
    char path[4096], buf[1 << 16];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, "\"talker_config\"") != NULL;
}

static int export_tts(const char *model_dir, const char *out, const ember_export_params *ep,
                      ember_type weight_type)
{
    ember_tts_params tp = ember_tts_default_params();
    tp.weight_type = weight_type;
    tp.decoder_type = EMBER_TYPE_F32; /* the decoder graphs take the stored weights as f32 */
    tp.warm_up = 0;
    tp.decoder_threads = 1;
    ember_tts *tts;
    /* with the speech decoder when the checkpoint has one (its graphs too),
     * else the talker and predictor alone */
    ember_status lst = ember_tts_load(model_dir, &tp, &tts);
    if (lst != EMBER_OK) {
        fprintf(stderr, "ember export: no speech decoder graphs (%s)\n", ember_last_error());
        tp.codes_only = 1;
        lst = ember_tts_load(model_dir, &tp, &tts);
    }
    if (lst != EMBER_OK) {
        fprintf(stderr, "ember export: %s\n", ember_last_error());
        return 1;
    }
    ember_status st = ember_export_onnx_tts(tts, out, ep);
    const int with_decoder = ember_tts_sample_rate(tts) > 0;
    ember_tts_free(tts);
    if (st != EMBER_OK) {
        fprintf(stderr, "ember export: %s\n", ember_last_error());
        return 1;
    }
    if (with_decoder) printf("exported the speech decoder's streaming graphs (code2wav_N.onnx)\n");
    if (ep->prefill_chunk)
        printf("exported the talker step, a %d-row talker prefill chunk and the code-predictor step "
               "(context %d) to %s\n", ep->prefill_chunk, ep->context, out);
    else
        printf("exported the talker step and the code-predictor step (context %d) to %s\n", ep->context, out);
    return 0;
}

static void print_line(void *user, const char *line)
{
    fprintf(user, "%s\n", line);
}

int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {{"model", required_argument, 0, 'm'},
                                         {"out", required_argument, 0, 'o'},
                                         {"context", required_argument, 0, 'c'},
                                         {"dtype", required_argument, 0, 'd'},
                                         {"prefill-chunk", required_argument, 0, 'p'},
                                         {"check", required_argument, 0, 'k'},
                                         {"per-layer", no_argument, 0, 'L'},
                                         {"calib", required_argument, 0, 'C'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *model_dir = NULL, *out = NULL, *check = NULL, *calib = NULL;
    ember_model_params mp = ember_model_default_params();
    ember_export_params ep = ember_export_default_params();
    int c, chunk_given = 0;
    if (argc < 2 || strcmp(argv[1], "onnx") != 0) {
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
            usage(stdout);
            return 0;
        }
        fprintf(stderr, "ember export: the only format is 'onnx'\n");
        usage(stderr);
        return 2;
    }
    argc--;
    argv++;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model_dir = optarg; break;
        case 'o': out = optarg; break;
        case 'k': check = optarg; break;
        case 'L': ep.per_layer = 1; break;
        case 'C': calib = optarg; break;
        case 'c':
            if (cli_parse_int(optarg, 2, 1 << 20, &ep.context)) {
                fprintf(stderr, "ember export: --context must be an integer >= 2\n");
                return 2;
            }
            break;
        case 'p':
            if (cli_parse_int(optarg, 0, 1 << 20, &ep.prefill_chunk) || ep.prefill_chunk == 1) {
                fprintf(stderr, "ember export: --prefill-chunk must be 0 or an integer >= 2\n");
                return 2;
            }
            chunk_given = 1;
            break;
        case 'd':
            if (!strcmp(optarg, "f32")) ep.form = EMBER_EXPORT_F32;
            else if (!strcmp(optarg, "f16")) ep.form = EMBER_EXPORT_F16;
            else if (!strcmp(optarg, "qdq8")) ep.form = EMBER_EXPORT_QDQ8;
            else if (!strcmp(optarg, "qdq4")) ep.form = EMBER_EXPORT_QDQ4;
            else if (!strcmp(optarg, "qdq8a16")) ep.form = EMBER_EXPORT_QDQ8A16;
            else if (!strcmp(optarg, "qdq4a16")) ep.form = EMBER_EXPORT_QDQ4A16;
            else if (!strcmp(optarg, "lpbq4a16")) ep.form = EMBER_EXPORT_LPBQ4A16;
            else if (cli_parse_type(optarg, &mp.weight_type)) {
                fprintf(stderr, "ember export: unknown --dtype '%s'\n", optarg);
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc || (check && (model_dir || out)) || (!check && (!model_dir || !out))) {
        usage(stderr);
        return 2;
    }
    if (check) {
        if (ember_export_onnx_check(check, print_line, stdout) != EMBER_OK) {
            fprintf(stderr, "ember export: check failed: %s\n", ember_last_error());
            return 1;
        }
        printf("check: PASS\n");
        return 0;
    }
    /* a TTS prompt is some 20 to 100 rows: smaller talker chunks by default */
    const int tts = is_tts_dir(model_dir);
    if (tts && !chunk_given) ep.prefill_chunk = 32;
    if (!chunk_given && ep.prefill_chunk > ep.context) ep.prefill_chunk = ep.context;
    if (tts) return export_tts(model_dir, out, &ep, mp.weight_type);
    ember_model *model;
    if (ember_model_load(model_dir, &mp, &model) != EMBER_OK) {
        fprintf(stderr, "ember export: %s\n", ember_last_error());
        return 1;
    }
    int32_t *ids = NULL;
    if (ep.form >= EMBER_EXPORT_QDQ8A16 && ep.form <= EMBER_EXPORT_LPBQ4A16 &&
        calibration_ids(model_dir, calib, &ids, &ep.n_calib_ids)) {
        ember_model_free(model);
        return 1;
    }
    ep.calib_ids = ids;
    ember_status st = ember_export_onnx(model, out, &ep);
    ember_free(ids);
    ember_model_free(model);
    if (st != EMBER_OK) {
        fprintf(stderr, "ember export: %s\n", ember_last_error());
        return 1;
    }
    if (ep.prefill_chunk)
        printf("exported the decode step and a %d-token prefill chunk (context %d) to %s\n",
               ep.prefill_chunk, ep.context, out);
    else
        printf("exported the decode step (context %d) to %s\n", ep.context, out);
    return 0;
}
