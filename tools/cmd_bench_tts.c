/* `ember bench tts-codes`: milliseconds per 80 ms frame of the Qwen3-TTS
 * talker and of the 15-step code predictor. Frames are teacher-forced with
 * pseudo-random codes so every run does the same work (random weights would
 * otherwise stop at EOS whenever they happen to pick it); the forward passes
 * are exactly those of generation, only the two sampling calls are skipped.
 * Times are medians over --reps runs. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "tts/tts_session.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: ember bench tts-codes -m DIR [--frames 20] [--reps 3] [--json]\n"
               "                             [--dtype f32|bf16|q8_0] [--threads N] [--kernels NAME]\n");
}

int cmd_bench_tts(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"frames", required_argument, 0, 'f'},
        {"reps", required_argument, 0, 'r'},  {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},        CLI_COMMON_OPTIONS,
        {0, 0, 0, 0}};
    const char *dir = NULL;
    int frames = 20, reps = 3, json = 0, c;
    ember_model_params mp = ember_model_default_params();
    ember_session_params esp = ember_session_default_params();
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': dir = optarg; break;
        case 'f': frames = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'j': json = 1; break;
        case 'h': usage(stdout); return 0;
        default: {
            int r = cli_common_option(c, optarg, "bench tts-codes", &mp, &esp);
            if (r == 1) break;
            if (r == 0) usage(stderr);
            return 2;
        }
        }
    }
    if (!dir || frames < 1 || frames > 4000 || reps < 1 || reps > 16) {
        usage(stderr);
        return 2;
    }
    tts_model_params tp = {mp.weight_type, mp.kernels};
    tts_session_params sp = tts_session_default_params();
    sp.n_threads = esp.n_threads;
    tts_model *m = NULL;
    tts_session *s = NULL;
    int rc = 1;
    double t0 = cli_now_s();
    if (tts_model_load(dir, &tp, &m) != EMBER_OK) {
        fprintf(stderr, "ember bench tts-codes: %s\n", ember_last_error());
        return 1;
    }
    double load_s = cli_now_s() - t0;
    const tts_config *cfg = &m->cfg;
    /* a 40-token text in the TTS template */
    int32_t ids[48], codes[TTS_MAX_GROUPS], force[TTS_MAX_GROUPS];
    size_t n_ids = 0;
    ids[n_ids++] = cfg->im_start;
    ids[n_ids++] = cfg->assistant;
    ids[n_ids++] = 198;
    for (int i = 0; i < 40; i++) ids[n_ids++] = 1000 + 37 * i;
    const int32_t tail[] = {cfg->im_end, 198, cfg->im_start, cfg->assistant, 198};
    for (size_t i = 0; i < 5; i++) ids[n_ids++] = tail[i];
    tts_request rq = {ids, n_ids, cfg->n_speakers ? cfg->speakers[0].name : NULL,
                      cfg->n_languages ? cfg->languages[0].name : NULL, 0, 1, 0, frames, 0, NULL, NULL, 0, NULL, NULL, 0, NULL, 0};
    sp.max_context = (int32_t)n_ids + 16 + frames;
    double talker[16], pred[16], prefill[16], bw[16], roof[16];
    const double frame_bytes =
        (double)tts_model_talker_bytes(m) +
        (double)tts_model_predictor_pass_bytes(m) * (double)(cfg->n_groups - 1);
    uint32_t state = 2463534242u;
    if (tts_session_create(m, &sp, &s) != EMBER_OK) goto fail;
    for (int r = 0; r < reps; r++) {
        double a = cli_now_s();
        if (tts_session_start(s, &rq) != EMBER_OK) goto fail;
        prefill[r] = 1e3 * (cli_now_s() - a);
        for (int f = 0; f < frames; f++) {
            int done = 0;
            for (int32_t g = 0; g < cfg->n_groups; g++) {
                state ^= state << 13, state ^= state >> 17, state ^= state << 5;
                force[g] = (int32_t)(state % (uint32_t)cfg->predictor.vocab);
            }
            if (tts_session_step(s, force, codes, &done) != EMBER_OK) goto fail;
        }
        talker[r] = tts_session_talker_ms(s) / frames;
        pred[r] = tts_session_predictor_ms(s) / frames;
        /* each rep paired with a probe read right after it (the host's
         * bandwidth drifts): the fraction of the weights' roofline */
        bw[r] = cli_read_bandwidth_gbs((size_t)1 << 30, sp.n_threads);
        roof[r] = bw[r] > 0 ? frame_bytes / (1e-3 * (talker[r] + pred[r])) / (bw[r] * 1e9) : 0.0;
    }
    size_t anon, file;
    cli_rss r_now = cli_rss_now();
    anon = r_now.anon;
    file = r_now.file;
    double tm = cli_median(talker, reps), pm = cli_median(pred, reps), pf = cli_median(prefill, reps);
    double bwm = cli_median(bw, reps), rf = cli_median(roof, reps);
    if (json)
        printf("{\"model\": \"%s\", \"kernels\": \"%s\", \"dtype\": \"%s\", \"threads\": %d, "
               "\"frames\": %d, \"reps\": %d, \"load_s\": %.3f, \"prompt_positions\": %d, "
               "\"prefill_ms\": %.3f, \"talker_ms_per_frame\": %.3f, \"predictor_ms_per_frame\": %.3f, "
               "\"total_ms_per_frame\": %.3f, \"realtime_factor\": %.4f, \"talker_bytes_per_frame\": %zu, "
               "\"predictor_bytes_per_frame\": %zu, \"read_bw_gbs\": %.3f, \"roofline_fraction\": %.4f, "
               "\"rss_anon_bytes\": %zu, \"rss_file_bytes\": %zu}\n",
               dir, m->kernels->name, cli_type_name(mp.weight_type), sp.n_threads, frames, reps, load_s,
               tts_session_prompt_length(s), pf, tm, pm, tm + pm, (tm + pm) / 80.0,
               tts_model_talker_bytes(m), tts_model_predictor_pass_bytes(m) * (size_t)(cfg->n_groups - 1),
               bwm, rf, anon, file);
    else
        printf("talker %.2f ms/frame, predictor %.2f ms/frame, total %.2f ms per 80 ms frame "
               "(prefill %.1f ms, %.2f of the %.1f GB/s roofline, RSS anon %.1f MB file %.1f MB)\n",
               tm, pm, tm + pm, pf, rf, bwm, (double)anon / 1e6, (double)file / 1e6);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "ember bench tts-codes: %s\n", ember_last_error());
done:
    tts_session_free(s);
    tts_model_free(m);
    return rc;
}
