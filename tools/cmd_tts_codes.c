/* `ember tts-codes`: text -> Qwen3-TTS codec frames (16 codes per 80 ms
 * frame) from the talker and code predictor. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tokenizer/tokenizer.h"
#include "tts_cli.h"

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

int tts_cli_encode(const char *dir, const char *text, int32_t **ids, size_t *n)
{
    static const char head[] = "<|im_start|>assistant\n", tail[] = "<|im_end|>\n<|im_start|>assistant\n";
    et_tokenizer *tok = NULL;
    if (et_tokenizer_load(dir, &tok) != EMBER_OK) {
        fprintf(stderr,
                "ember tts-codes: %s\n  (--text needs a tokenizer.json in the model directory; "
                "or pass the prompt's token ids with --ids)\n",
                ember_last_error());
        return -1;
    }
    size_t len = strlen(head) + strlen(text) + strlen(tail);
    char *full = malloc(len + 1);
    int rc = -1;
    if (full) {
        snprintf(full, len + 1, "%s%s%s", head, text, tail);
        if (et_tokenizer_encode(tok, full, len, false, ids, n) == EMBER_OK) rc = 0;
        else fprintf(stderr, "ember tts-codes: %s\n", ember_last_error());
    }
    free(full);
    et_tokenizer_free(tok);
    return rc;
}

static void print_frame(const int32_t *codes, int32_t groups, int json, int first)
{
    if (json) printf("%s[", first ? "" : ", ");
    for (int32_t g = 0; g < groups; g++) printf("%s%d", g ? (json ? ", " : " ") : "", codes[g]);
    fputs(json ? "]" : "\n", stdout);
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
    const char *dir = NULL, *text = NULL, *ids_text = NULL, *golden = NULL;
    tts_request rq;
    memset(&rq, 0, sizeof rq);
    int json = 0, c;
    ember_model_params mp = ember_model_default_params();
    ember_session_params esp = ember_session_default_params();
    esp.n_threads = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'm': dir = optarg; break;
        case O_TEXT: text = optarg; break;
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
        case O_STREAM: rq.streaming = 1; break;
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
    if (!dir || (!golden && !text == !ids_text) || optind < argc) {
        usage(stderr);
        return 2;
    }
    tts_model_params tp = {mp.weight_type, mp.kernels};
    tts_session_params sp = tts_session_default_params();
    sp.n_threads = esp.n_threads;
    tts_model *m = NULL;
    tts_session *s = NULL;
    int32_t *ids = NULL, *codes = NULL;
    size_t n_ids = 0;
    int rc = 1;
    if (tts_model_load(dir, &tp, &m) != EMBER_OK) {
        fprintf(stderr, "ember tts-codes: %s\n", ember_last_error());
        return 1;
    }
    if (golden) {
        rc = tts_cli_golden(m, &sp, golden, json);
        goto done;
    }
    if (ids_text ? cli_parse_ids(ids_text, &ids, &n_ids) != 0 : tts_cli_encode(dir, text, &ids, &n_ids) != 0) {
        if (ids_text) fprintf(stderr, "ember tts-codes: --ids must be a comma-separated list of ids\n");
        goto done;
    }
    rq.text_ids = ids;
    rq.n_text_ids = n_ids;
    if (!rq.max_frames) rq.max_frames = m->gen.max_new_tokens;
    if (sp.max_context < (int32_t)n_ids + 16 + rq.max_frames) sp.max_context = (int32_t)n_ids + 16 + rq.max_frames;
    if (sp.max_context > m->cfg.talker.max_positions) sp.max_context = m->cfg.talker.max_positions;
    codes = malloc((size_t)m->cfg.n_groups * sizeof *codes);
    if (!codes || tts_session_create(m, &sp, &s) != EMBER_OK || tts_session_start(s, &rq) != EMBER_OK) {
        fprintf(stderr, "ember tts-codes: %s\n", codes ? ember_last_error() : "out of memory");
        goto done;
    }
    if (json) printf("{\"prompt_length\": %d, \"frames\": [", tts_session_prompt_length(s));
    int done = 0, eos = 0;
    for (;;) {
        if (tts_session_step(s, NULL, codes, &done) != EMBER_OK) {
            if (json) printf("]}\n");
            fprintf(stderr, "ember tts-codes: %s\n", ember_last_error());
            goto done;
        }
        if (done) break;
        print_frame(codes, m->cfg.n_groups, json, tts_session_frames(s) == 1);
        fflush(stdout);
    }
    eos = tts_session_frames(s) < rq.max_frames;
    if (json)
        printf("], \"n_frames\": %d, \"stopped_at_eos\": %s, \"talker_ms\": %.3f, \"predictor_ms\": %.3f}\n",
               tts_session_frames(s), eos ? "true" : "false", tts_session_talker_ms(s),
               tts_session_predictor_ms(s));
    rc = 0;
done:
    tts_session_free(s);
    tts_model_free(m);
    free(ids);
    free(codes);
    return rc;
}
