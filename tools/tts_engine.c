#include "tts_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "edge/probe.h"

const char tts_engine_usage[] =
    "  --dtype f32|bf16|q8_0          talker and predictor weights (default: the profile's)\n"
    "  --decoder-dtype f32|bf16       speech decoder arithmetic (default f32)\n"
    "  --threads N                    generator threads (default: one per CPU)\n"
    "  --decoder-threads N            decoder threads while the generator runs (default: half\n"
    "                                 the CPUs); the generator takes the rest meanwhile\n"
    "  --chunks 2,4,8,16,25           frames per decoded chunk, the last size repeating (default:\n"
    "                                 this machine's calibration, adaptive when it says so)\n"
    "  --no-calibration               ignore the cached calibration: the default ramp\n"
    "  --profile auto|off|explain     the derived profile picks the weight format and pins\n"
    "                                 the threads (default auto; off: as stored, unpinned)\n"
    "  --alone-chunks N               the first N chunks (-1: all) decode on every core while\n"
    "                                 the generator waits; later ones beside it (default 1)\n"
    "  --kernels NAME                 scalar|generic|avx2|avx512|neon (default: the best)\n"
    "  --no-warm-up                   skip the short dropped request run at load that warms\n"
    "                                 caches and buffers for the first real one\n"
    "  --no-pin                       leave the threads unpinned (default: the generator on the\n"
    "                                 profile's decode CPUs, the audio decoder on its own)\n";

void tts_engine_opts_init(tts_engine_opts *o)
{
    memset(o, 0, sizeof *o);
    o->dtype = EMBER_TYPE_NONE;
    o->decoder_dtype = EMBER_TYPE_F32;
    o->pipeline = tts_pipeline_default_params();
    o->warm_up = 1;
    o->pin = 1;
    o->calibrate = 1;
}

int tts_engine_option(int c, const char *arg, const char *cmd, tts_engine_opts *o)
{
    int bad = 0;
    char *end = NULL;
    switch (c) {
    case CLI_OPT_PROFILE: return cli_profile_option(c, arg, cmd, &o->profile);
    case TTS_OPT_NO_CALIBRATION: o->calibrate = 0; break;
    case TTS_OPT_DTYPE: bad = cli_parse_type(arg, &o->dtype); break;
    case TTS_OPT_DECODER_DTYPE:
        bad = cli_parse_type(arg, &o->decoder_dtype) ||
              (o->decoder_dtype != EMBER_TYPE_F32 && o->decoder_dtype != EMBER_TYPE_BF16);
        break;
    case TTS_OPT_THREADS:
        o->gen_threads = (int)strtol(arg, &end, 10);
        bad = *end || o->gen_threads < 1 || o->gen_threads > 1024;
        break;
    case TTS_OPT_DECODER_THREADS:
        o->pipeline.decoder_threads = (int32_t)strtol(arg, &end, 10);
        bad = *end || o->pipeline.decoder_threads < 1 || o->pipeline.decoder_threads > 1024;
        break;
    case TTS_OPT_NO_WARM_UP: o->warm_up = 0; break;
    case TTS_OPT_NO_PIN: o->pin = 0; break;
    case TTS_OPT_ALONE_CHUNKS:
        o->pipeline.alone_chunks = (int32_t)strtol(arg, &end, 10);
        bad = *end || o->pipeline.alone_chunks < -1;
        break;
    case TTS_OPT_KERNELS: o->kernels = arg; break;
    case TTS_OPT_CHUNKS:
        if (tts_schedule_parse(arg, &o->pipeline.schedule)) {
            fprintf(stderr, "ember %s: %s\n", cmd, ember_last_error());
            return -1;
        }
        break;
    default: return 0;
    }
    if (bad) {
        fprintf(stderr, "ember %s: bad value '%s'\n", cmd, arg);
        return -1;
    }
    return 1;
}

/* One short request whose audio is dropped: the first real request then
 * finds the caches, the session's buffers and the decoder's weights warm,
 * as a server's would after its first request (a cold first request is
 * ~100 ms later to first audio). */
static int warm_up(tts_engine *e, const tts_engine_opts *o)
{
    const tts_config *c = &e->m->cfg;
    const int32_t ids[] = {c->im_start, c->assistant, 198, 9707, c->im_end, 198, c->im_start,
                           c->assistant, 198};
    tts_request rq;
    memset(&rq, 0, sizeof rq);
    rq.text_ids = ids;
    rq.n_text_ids = sizeof ids / sizeof *ids;
    rq.greedy = 1;
    rq.max_frames = rq.min_frames = tts_schedule_size(&o->pipeline.schedule, 0);
    return tts_synthesize(e->gen, e->dec, &rq, &o->pipeline, NULL, NULL, NULL) ? -1 : 0;
}

/* The derived profile's placement: the generator on the decode CPUs, the
 * audio decoder on its own (on a machine with three or more big cores) or
 * on the same ones. */
static void place(tts_engine *e, tts_engine_opts *o, const edge_profile *prof)
{
    for (int i = 0; i < edge_cpuset_count(&prof->decode_cpus) && e->n_gen_cpus < 256; i++)
        e->gen_cpus[e->n_gen_cpus++] = edge_cpuset_nth(&prof->decode_cpus, i);
    for (int i = 0; i < edge_cpuset_count(&prof->audio_cpus) && e->n_dec_cpus < 256; i++)
        e->dec_cpus[e->n_dec_cpus++] = edge_cpuset_nth(&prof->audio_cpus, i);
    if (e->n_gen_cpus) {
        pool_pin_self(e->gen_cpus, e->n_gen_cpus);
        tts_session_pin(e->gen, e->gen_cpus, e->n_gen_cpus);
    }
    if (e->n_dec_cpus) {
        c2w_stream_pin(e->dec, e->dec_cpus, e->n_dec_cpus);
        o->pipeline.decoder_cpus = e->dec_cpus;
        o->pipeline.n_decoder_cpus = e->n_dec_cpus;
    }
}

int tts_engine_open(tts_engine *e, tts_engine_opts *o, int32_t max_prompt,
                    int32_t max_frames, const char *cmd)
{
    memset(e, 0, sizeof *e);
    /* the weight format: --dtype, else the profile's (none: as stored) */
    edge_profile prof;
    ember_type dtype = o->dtype;
    const int profiled = cli_apply_tts_profile(o->dir, o->profile, cmd, &dtype, &prof);
    if (profiled < 0) return -1;
    /* Both pools can span the machine; the pipeline decides how many of
     * their threads run at each moment (tts_pipeline.h). */
    int cpus = pool_cpu_count();
    e->gen_threads = o->gen_threads ? o->gen_threads : cpus;
    e->dec_threads = o->pipeline.decoder_threads > cpus ? o->pipeline.decoder_threads : cpus;
    tts_model_params mp = {dtype, o->kernels};
    c2w_model_params dp = {o->decoder_dtype, o->kernels, 1};
    tts_session_params sp = tts_session_default_params();
    sp.n_threads = e->gen_threads;
    sp.max_context = max_prompt + max_frames + 16;
    c2w_stream_params cp = c2w_stream_default_params();
    cp.n_threads = e->dec_threads;
    if (tts_model_load(o->dir, &mp, &e->m) || c2w_model_load(o->dir, &dp, &e->dm) ||
        tts_session_create(e->m, &sp, &e->gen) || c2w_stream_create(e->dm, &cp, &e->dec)) {
        fprintf(stderr, "ember %s: %s\n", cmd, ember_last_error());
        tts_engine_close(e);
        return -1;
    }
    if (o->pin && profiled) place(e, o, &prof);
    if (o->warm_up && warm_up(e, o)) {
        fprintf(stderr, "ember %s: warm-up: %s\n", cmd, ember_last_error());
        tts_engine_close(e);
        return -1;
    }
    return 0;
}

void tts_engine_close(tts_engine *e)
{
    c2w_stream_free(e->dec);
    tts_session_free(e->gen);
    c2w_model_free(e->dm);
    tts_model_free(e->m);
    memset(e, 0, sizeof *e);
}

void tts_arrivals_add(tts_arrivals *a, const tts_chunk_info *info, int32_t samples_per_frame)
{
    if (a->n == TTS_ENGINE_MAX_CHUNKS) return;
    a->chunks[a->n].t_ms = info->ready_ms;
    a->chunks[a->n].samples = (int64_t)info->n_frames * samples_per_frame;
    a->n++;
}

/* The cache file for this machine and the model in dir; 0 when it can be named. */
static int calibration_path(const char *dir, char *path, size_t cap)
{
    edge_hw hw;
    char fp[17];
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    if (edge_hw_detect(NULL, getenv("EMBER_HW_PROFILE"), &hw) != EMBER_OK ||
        edge_fingerprint(&hw, base, fp) != EMBER_OK ||
        edge_calibration_cache_path(getenv("XDG_CACHE_HOME"), getenv("HOME"), fp, path, cap) !=
            EMBER_OK)
        return -1;
    return 0;
}

int tts_calibration_find(const char *dir, const char *cmd, edge_calibration *out, char *path, size_t cap)
{
    bool found = false;
    if (calibration_path(dir, path, cap)) return 0;
    if (edge_calibration_load(path, out, &found) != EMBER_OK) {
        fprintf(stderr, "ember %s: calibration: %s (using the default ramp)\n", cmd, ember_last_error());
        return 0;
    }
    return found && out->measured;
}

int tts_engine_calibration_load(tts_engine_opts *o, const char *cmd, int verbose)
{
    char path[1024];
    edge_calibration *cal = &o->calibration;
    /* --chunks: a fixed schedule, neither calibrated nor adaptive */
    if (!o->calibrate || o->pipeline.schedule.n || !tts_calibration_find(o->dir, cmd, cal, path, sizeof path))
        return 0;
    o->pipeline.schedule.n = edge_calibration_schedule(cal, o->pipeline.schedule.sizes, TTS_MAX_SCHEDULE);
    o->adaptive = cal->adaptive;
    if (verbose) tts_calibration_describe(cal, path, cmd);
    return 1;
}

void tts_calibration_describe(const edge_calibration *cal, const char *path, const char *cmd)
{
    fprintf(stderr, "ember %s: chunks", cmd);
    for (int32_t i = 0; i < cal->n_ramp; i++) fprintf(stderr, "%s%d", i ? "," : " ", cal->ramp[i]);
    if (cal->adaptive) { /* the controller's starting state */
        edge_chunk_ctl ctl;
        edge_chunk_ctl_init(&ctl, cal);
        fprintf(stderr, ", adaptive from %d frames (margin %.0f ms, %.1f ms per frame to start),", ctl.min_frames,
                ctl.margin_ms, ctl.ewma_ms);
    }
    fprintf(stderr, " calibrated on this machine (%.1f frames/s measured; %s)\n", cal->rate_fps, path);
}

void tts_engine_start_request(tts_engine *e, tts_engine_opts *o)
{
    if (!o->adaptive) return;
    edge_chunk_ctl_init(&e->ctl, &o->calibration);
    o->pipeline.controller = (tts_chunk_controller){edge_chunk_ctl_callback, &e->ctl, EDGE_CAL_STEADY};
}

void tts_engine_calibration_save(const tts_engine_opts *o, const tts_arrivals *a,
                                 int32_t sample_rate, const char *cmd)
{
    char path[1024];
    edge_calibration cal;
    if (calibration_path(o->dir, path, sizeof path) ||
        edge_calibrate(a->chunks, a->n, sample_rate, &cal) != EMBER_OK || !cal.measured)
        return;
    if (edge_calibration_save(path, &cal) != EMBER_OK)
        fprintf(stderr, "ember %s: calibration: %s\n", cmd, ember_last_error());
}
