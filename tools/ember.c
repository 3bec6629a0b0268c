/* `ember`: the command-line front end of the library. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_public.h"

int cli_parse_ids(const char *text, int32_t **ids, size_t *n)
{
    size_t cap = 16, count = 0;
    int32_t *out = malloc(cap * sizeof *out);
    const char *p = text;
    if (!out) return -1;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
            free(out);
            return -1;
        }
        if (count == cap) {
            int32_t *grown = realloc(out, 2 * cap * sizeof *out);
            if (!grown) {
                free(out);
                return -1;
            }
            out = grown;
            cap *= 2;
        }
        out[count++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    if (count == 0) {
        free(out);
        return -1;
    }
    *ids = out;
    *n = count;
    return 0;
}

int32_t cli_argmax(const float *x, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* The subcommands and their synopses: the top-level help is printed from this
 * table, so a command cannot be reachable without being listed. Add a line
 * here (and a prototype in cli_public.h) for a new one. */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *synopsis; /* lines after the first are indented by the printer */
} commands[] = {
    {"generate", cmd_generate,
     "-m DIR -p TEXT [-n 128] [sampling options]   stream a continuation\n"
     "(or --ids 1,2,3 [--print-ids]: a prompt of token ids)"},
    {"chat", cmd_chat, "-m DIR [--system S] [--tools FILE.json]   interactive chat, tool calls as JSON"},
    {"parity", cmd_parity,
     "--model DIR --golden FILE [--json] [thresholds]\n"
     "compare logits with a golden file from reference/golden.py"},
    {"bench", cmd_bench,
     "llm -m DIR [--ctx 0,4096] [--prompt 512] [--gen 64] [--json]\n"
     "    prefill/decode speed, bytes per token, roofline fraction, RSS\n"
     "tts -m DIR [--frames 100] [--json]   time to first audio, real-time factor, chunk gaps\n"
     "tts-codes -m DIR [--frames 10] [--json]   ms per codec frame, roofline"},
    {"quantize", cmd_quantize, "IN OUT.gguf [--type q8_0|q4_0|q4_k_m|q5_k_m|q6_k|...]   write a GGUF"},
    {"tokenize", cmd_tokenize, "-m DIR [--json] [--jsonl] [--no-special]   text on stdin -> token ids"},
    {"detokenize", cmd_detokenize, "-m DIR [--skip-special]   token ids on stdin -> text"},
    {"template", cmd_template,
     "-m DIR --messages FILE.json [--tools FILE.json] [--add-generation-prompt]\n"
     "[--enable-thinking 0|1] [--cases FILE.json]   render the chat template"},
    {"tts-codes", cmd_tts_codes,
     "-m DIR --text T --speaker ryan --language english [--max-frames N]\n"
     "[--greedy] [--json]   Qwen3-TTS codec frames (16 codes each)"},
    {"tts", cmd_tts,
     "-m DIR --text T (-o OUT.wav | --stream) [--speaker S] [--language L]\n"
     "[--chunks 2,4,8,16,25]   speech, decoded while it is generated"},
    {"voice", cmd_voice,
     "xvector -m BASE_DIR --ref-audio A.wav   the speaker x-vector of a recording\n"
     "(Qwen3-TTS Base models: voice cloning's speaker encoder), as JSON\n"
     "codes -m DIR --ref-audio A.wav   its reference codes (the speech tokenizer's encoder)"},
    {"decode-codes", cmd_decode_codes,
     "-m DIR --codes FRAMES.json [-o OUT.wav] [--chunks 2,4,8]\n"
     "codec frames -> 24 kHz audio with the speech decoder"},
    {"serve", cmd_serve,
     "-m DIR [--host 127.0.0.1] [--port 8080] [--api-key KEY] [--max-seqs N]\n"
     "an OpenAI-compatible server: /v1/chat/completions, /v1/completions, ..."},
    {"export", cmd_export,
     "onnx -m DIR -o OUT [--context 1024]   the decode step as an ONNX graph + manifest\n"
     "onnx --check OUT   audit exported graphs for NPU compilers (QNN HTP)"},
    {"probe", cmd_probe, "[--json] [--root DIR] [--derive MODEL_DIR]   hardware profile and derived settings"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: ember <command> [options]\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const char *line = commands[i].synopsis;
        fprintf(f, "  %-12s ", commands[i].name);
        for (;;) {
            const char *nl = strchr(line, '\n');
            int len = nl ? (int)(nl - line) : (int)strlen(line);
            fprintf(f, "%.*s\n", len, line);
            if (!nl) break;
            line = nl + 1;
            fprintf(f, "  %-12s ", "");
        }
    }
    fprintf(f, "run 'ember <command> --help' for the options of one command\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "ember: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
