/* `ember tts-codes`: text -> Qwen3-TTS codec frames (16 codes per 80 ms
 * frame) from the talker and code predictor. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_public.h"
#include "ember_speech.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ember tts-codes -m DIR (--text TEXT | --ids 1,2,3) [--speaker ryan]\n"
            "                       [--language english|auto] [--max-frames N] [--greedy]\n"
            "                       [--seed S] [--streaming] [--json] [--dtype f32|bf16|q8_0]\n"
            "                       [--threads N] [--kernels NAME]\n"
            "       ember tts-codes -m DIR --golden FILE [--json] [--dtype ...]\n"
            "  --text needs DIR/tokenizer.json; --ids takes the ids of\n"
            "  <|im_start|>assistant\\n{text}<|im_end|>\\n<|im_start|>assistant\\n\n"
            "  --golden compares greedy frames and teacher-forced logits with a\n"
            "  reference/tts_golden.py file\n");
}

static void print_frame(const int32_t *codes, int32_t groups, int json, int first)
{
    if (json) printf("%s[", first ? "" : ", ");
    for (int32_t g = 0; g < groups; g++) printf("%s%d", g ? (json ? ", " : " ") : "", codes[g]);
    fputs(json ? "]" : "\n", stdout);
}

typedef struct frame_sink {
    int json;
} frame_sink;

static int on_codes(void *user, const int32_t *codes, int32_t n, int32_t frame)
{
    const frame_sink *k = user;
    print_frame(codes, n, k->json, frame == 0);
    fflush(stdout);
    return 0;
}

int cmd_tts_codes(int argc, char **argv)
{
    enum { O_TEXT = 1, O_IDS, O_SPEAKER, O_LANGUAGE, O_MAX, O_GREEDY, O_SEED, O_JSON, O_STREAM, O_GOLDEN };
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},      {"text", required_argument, 0, O_TEXT},
        {"ids", required_argument, 0, O_IDS},      {"speaker", required_argument, 0, O_SPEAKER},
        {"language", required_argument, 0, O_LANGUAGE}, {"max-frames", required_argument, 0, O_MAX},
        {"greedy", no_argument, 0, O_GREEDY},      {"seed", required_argument, 0, O_SEED},
        {"json", no_argument, 0, O_JSON},          {"streaming", no_argument, 0, O_STREAM},
        {"golden", required_argument, 0, O_GOLDEN}, {"help", no_argument, 0, 'h'},
        CLI_COMMON_OPTIONS,                        {0, 0, 0, 0}};
    const char *dir = NULL, *ids_text = NULL, *golden = NULL;
    ember_speech_request rq = ember_speech_default_request();
    int json = 0, c;
    ember_model_params mp = ember_model_default_params();
    ember_session_params esp = ember_session_default_params();
    esp.n_threads = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'm': dir = optarg; break;
        case O_TEXT: rq.text = optarg; break;
        case O_IDS: ids_text = optarg; break;
        case O_SPEAKER: rq.speaker = optarg; break;
        case O_LANGUAGE: rq.language = optarg; break;
        case O_MAX:
            rq.max_frames = (int32_t)strtol(optarg, &end, 10);
            if (*end || rq.max_frames < 1) {
                fprintf(stderr, "ember tts-codes: --max-frames must be a positive integer\n");
                return 2;
            }
            break;
        case O_GREEDY: rq.greedy = 1; break;
        case O_SEED: rq.seed = strtoull(optarg, NULL, 10); break;
        case O_JSON: json = 1; break;
        case O_STREAM: rq.streaming_text = 1; break;
        case O_GOLDEN: golden = optarg; break;
        case 'h': usage(stdout); return 0;
        default: {
            int r = cli_common_option(c, optarg, "tts-codes", &mp, &esp);
            if (r == 1) break;
            if (r == 0) usage(stderr);
            return 2;
        }
        }
    }
    if (!dir || (!golden && !rq.text == !ids_text) || optind < argc) {
        usage(stderr);
        return 2;
    }
    if (golden && mp.backend && strcmp(mp.backend, "cpu")) {
        fprintf(stderr, "ember tts-codes: --golden measures ember's native steps; drop --backend\n");
        return 2;
    }
    if (golden) return parity_tts_golden(dir, mp.weight_type, mp.kernels, esp.n_threads, golden, json);
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (ids_text && cli_parse_ids(ids_text, &ids, &n_ids) != 0) {
        fprintf(stderr, "ember tts-codes: --ids must be a comma-separated list of ids\n");
        return 1;
    }
    rq.text_ids = ids;
    rq.n_text_ids = n_ids;
    ember_tts_params tp = ember_tts_default_params();
    tp.weight_type = mp.weight_type;
    tp.kernels = mp.kernels;
    tp.backend = mp.backend;
    tp.onnx_runtime = mp.onnx_runtime;
    tp.onnx_provider = mp.onnx_provider;
    tp.onnx_options = mp.onnx_options;
    tp.n_threads = esp.n_threads;
    tp.codes_only = 1;
    /* a token is at least a byte: the text's length bounds its tokens */
    tp.max_text_tokens = (int32_t)(ids ? n_ids : strlen(rq.text)) + 16;
    tp.max_frames = rq.max_frames ? rq.max_frames : 8192;
    ember_tts *tts = NULL;
    ember_speech_timings st;
    frame_sink k = {json};
    int rc = 1;
    if (ember_tts_load(dir, &tp, &tts) != EMBER_OK) {
        fprintf(stderr, "ember tts-codes: %s\n", ember_last_error());
        goto done;
    }
    if (json) printf("{\"frames\": [");
    ember_status s = ember_tts_codes(tts, &rq, on_codes, &k, &st);
    if (s != EMBER_OK) {
        if (json) printf("]}\n");
        fprintf(stderr, "ember tts-codes: %s\n", ember_last_error());
        goto done;
    }
    if (json)
        printf("], \"prompt_length\": %d, \"n_frames\": %d, \"stopped_at_eos\": %s, \"talker_ms\": %.3f, "
               "\"predictor_ms\": %.3f}\n",
               st.prompt_tokens, st.frames, st.stopped_at_eos ? "true" : "false", st.talker_ms, st.predictor_ms);
    rc = 0;
done:
    ember_tts_free(tts);
    free(ids);
    return rc;
}
