/* The derivation rules. The per-class constants follow the vLLM-Omni edge
 * fork (shared/spec/edge-runtime.md section 2); where ember differs:
 *   - threads are the physical cores of the big cores (ember's decode is
 *     memory-bound: an SMT sibling shares its core's load/store units and
 *     adds no bandwidth, and a little core makes every row-split matmul wait
 *     for it), one NUMA node's worth on a multi-socket machine;
 *   - the weight format is chosen by memory and by the predicted decode
 *     rate (bandwidth / bytes read per step), quantized formats included
 *     (for speech down to q8_0 only: see derive_dtype);
 *   - the KV cache is budgeted by layer type, as src/nn/kv.c allocates it:
 *     sliding layers hold min(window-1, context) slots, full layers context;
 *   - activations are ember's per-sequence scratch, not 15% of the weights. */
#include "edge/profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "ember.h"
#include "edge/hw_json.h"
#include "edge/probe.h"
#include "kernels/formats.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define STEADY_FRAMES 25         /* 2 s of audio at 12.5 frames/s: the steady chunk */
#define LLM_TARGET_RATE 10.0     /* tokens/s: twice a fast reader's pace */
#define TTS_TARGET_RATE 25.0     /* frames/s: twice real time (12.5 frames/s) */
#define PROCESS_OVERHEAD (64 * 1024 * 1024) /* tokenizer, pools, page tables */
#define STALL_FACTOR 20          /* a step 20x slower than predicted is stuck */

typedef struct class_rules {
    int32_t max_seqs;
    int64_t headroom;
    int32_t chunk_min, margin_ms;
    double disk_bps;               /* nominal read rate of the model files */
    double bw_per_core, bw_cap;    /* nominal memory read bandwidth, bytes/s */
} class_rules;

/* Bandwidths are nominal figures for the class (a desktop/server DDR4-5
 * core reads ~10 GB/s, a Cortex-A76 ~4 GB/s from LPDDR4X); a measured
 * mem_bw_bytes_per_s in the hardware profile replaces them. */
static const class_rules rules[EDGE_N_CLASSES] = {
    [EDGE_CLASS_X86_CPU] = {2, (int64_t)(2 * GIB), 2, 120, 1.0e9, 10e9, 80e9},
    [EDGE_CLASS_ARM64_CPU] = {1, (int64_t)(1 * GIB), 3, 160, 0.4e9, 4e9, 12e9},
    [EDGE_CLASS_JETSON] = {2, (int64_t)(3 * GIB), 2, 80, 0.8e9, 8e9, 60e9},
    [EDGE_CLASS_CUDA_DISCRETE] = {4, (int64_t)(2 * GIB), 2, 50, 2.0e9, 10e9, 80e9},
    [EDGE_CLASS_NPU_PHONE] = {1, (int64_t)(1 * GIB), 4, 200, 0.3e9, 8e9, 30e9},
};

const char *edge_type_name(ember_type t)
{
    switch (t) {
    case EMBER_TYPE_F32: return "f32";
    case EMBER_TYPE_F16: return "f16";
    case EMBER_TYPE_BF16: return "bf16";
    case EMBER_TYPE_Q8_0: return "q8_0";
    case EMBER_TYPE_Q4_0: return "q4_0";
    case EMBER_TYPE_Q2_K: return "q2_k";
    case EMBER_TYPE_Q3_K: return "q3_k";
    case EMBER_TYPE_Q4_K: return "q4_k";
    case EMBER_TYPE_Q5_K: return "q5_k";
    case EMBER_TYPE_Q6_K: return "q6_k";
    case EMBER_TYPE_IQ4_NL: return "iq4_nl";
    case EMBER_TYPE_IQ4_XS: return "iq4_xs";
    case EMBER_TYPE_Q4_1: return "q4_1";
    case EMBER_TYPE_Q5_0: return "q5_0";
    case EMBER_TYPE_Q5_1: return "q5_1";
    case EMBER_TYPE_NONE: break;
    }
    return "as stored";
}

/* Bytes per weight in memory: the format table's block bytes over block
 * values (NONE: as bf16). */
static double bytes_per_weight(ember_type t)
{
    const ek_format *f = ek_format_by_name(edge_type_name(t));
    return f ? (double)f->block_bytes / (double)f->block : 2.0;
}

/* ---- threads and pinning ---- */

static int64_t cluster_speed(const edge_cluster *c, bool by_capacity)
{
    return by_capacity ? c->capacity : c->max_khz;
}

typedef struct core_plan {
    edge_cpuset cores;    /* one logical CPU per physical big core */
    int n_little_skipped; /* CPUs of slower clusters left out */
    int n_smt_skipped;    /* SMT siblings left out */
    int n_not_allowed;    /* big CPUs outside this process's affinity */
    int node;             /* the NUMA node kept, -1 when there is one */
    int audio_core;       /* the big core the audio thread takes */
} core_plan;

/* Big = every cluster at 80% or more of the fastest one's speed: a row split
 * waits for its slowest thread, so a core at 80% loses at most a fifth of
 * its share, while a phone's mid cores (85% of the prime core) double the
 * cores that decode. */
static void plan_cores(const edge_hw *hw, core_plan *p)
{
    memset(p, 0, sizeof *p);
    p->node = -1;
    const bool by_capacity = hw->clusters[0].capacity > 0;
    const int64_t top = cluster_speed(&hw->clusters[0], by_capacity);
    edge_cpuset big;
    memset(&big, 0, sizeof big);
    int last_big = 0;
    for (int i = 0; i < hw->n_clusters; i++) {
        bool is_big = i == 0 || (top > 0 && cluster_speed(&hw->clusters[i], by_capacity) * 5 >= top * 4);
        if (!is_big) {
            p->n_little_skipped += edge_cpuset_count(&hw->clusters[i].cpus);
            continue;
        }
        last_big = i;
        for (size_t w = 0; w < sizeof big.bits / sizeof big.bits[0]; w++)
            big.bits[w] |= hw->clusters[i].cpus.bits[w];
    }
    /* Only the CPUs this process may run on (a container's share); when
     * none of them is big, whatever it may run on. */
    if (edge_cpuset_count(&hw->allowed_cpus) > 0) {
        edge_cpuset kept;
        for (size_t w = 0; w < sizeof big.bits / sizeof big.bits[0]; w++)
            kept.bits[w] = big.bits[w] & hw->allowed_cpus.bits[w];
        if (edge_cpuset_count(&kept) == 0) kept = hw->allowed_cpus;
        p->n_not_allowed = edge_cpuset_count(&big) - edge_cpuset_count(&kept);
        if (p->n_not_allowed < 0) p->n_not_allowed = 0;
        big = kept;
    }
    /* Several NUMA nodes: the node of the first big CPU. Weights and caches
     * are first touched by the loading thread, so they live in one node;
     * threads on another socket would read them over the socket link. */
    int first = edge_cpuset_nth(&big, 0);
    for (int n = 0; hw->numa_nodes > 1 && n < hw->numa_nodes && n < EDGE_MAX_NODES; n++) {
        if (!edge_cpuset_has(&hw->node_cpus[n], first)) continue;
        p->node = n;
        for (size_t w = 0; w < sizeof big.bits / sizeof big.bits[0]; w++)
            big.bits[w] &= hw->node_cpus[n].bits[w];
        break;
    }
    p->audio_core = -1;
    for (int cpu = 0; cpu < EDGE_MAX_CPUS; cpu++) {
        if (!edge_cpuset_has(&big, cpu)) continue;
        if (edge_cpuset_has(&hw->smt_siblings, cpu)) {
            p->n_smt_skipped++;
            continue;
        }
        edge_cpuset_add(&p->cores, cpu);
        /* the audio thread goes to the slowest big cluster's last core */
        if (edge_cpuset_has(&hw->clusters[last_big].cpus, cpu) || p->audio_core < 0) p->audio_core = cpu;
    }
    if (p->audio_core < 0) { /* a profile that marks every big CPU a sibling: take one anyway */
        p->audio_core = first >= 0 ? first : 0;
        edge_cpuset_add(&p->cores, p->audio_core);
    }
}

static void set_without(edge_cpuset *dst, const edge_cpuset *src, int cpu)
{
    *dst = *src;
    if (cpu >= 0) dst->bits[cpu / 64] &= ~(1ull << (cpu % 64));
}

static void derive_threads(const edge_hw *hw, const edge_model_info *m, edge_profile *out)
{
    core_plan p;
    char list[256], audio[256], extra[200] = "";
    plan_cores(hw, &p);
    const int n = edge_cpuset_count(&p.cores);
    const bool tts = m->kind == EDGE_MODEL_TTS;
    if (n >= 3 && tts) {
        set_without(&out->decode_cpus, &p.cores, p.audio_core);
        memset(&out->audio_cpus, 0, sizeof out->audio_cpus);
        edge_cpuset_add(&out->audio_cpus, p.audio_core);
    } else {
        out->decode_cpus = p.cores;
        if (n >= 3) {
            memset(&out->audio_cpus, 0, sizeof out->audio_cpus);
            edge_cpuset_add(&out->audio_cpus, p.audio_core);
        } else {
            out->audio_cpus = p.cores;
        }
    }
    out->n_threads = edge_cpuset_count(&out->decode_cpus);
    edge_cpuset_format(&out->decode_cpus, list, sizeof list);
    edge_cpuset_format(&out->audio_cpus, audio, sizeof audio);
    size_t used = 0;
    if (p.n_smt_skipped)
        used += (size_t)snprintf(extra + used, sizeof extra - used,
                                 "; %d SMT siblings left out: they share a core's load/store path and add no bandwidth",
                                 p.n_smt_skipped);
    if (p.n_little_skipped && used < sizeof extra)
        used += (size_t)snprintf(extra + used, sizeof extra - used,
                                 "; %d slower cores left out: a row split waits for its slowest thread",
                                 p.n_little_skipped);
    if (p.n_not_allowed && used < sizeof extra)
        used += (size_t)snprintf(extra + used, sizeof extra - used, "; %d CPUs outside this process's affinity",
                                 p.n_not_allowed);
    if (p.node >= 0 && used < sizeof extra)
        snprintf(extra + used, sizeof extra - used, "; NUMA node %d only: the weights live in its memory",
                 p.node);
    snprintf(out->why[EDGE_WHY_THREADS], sizeof out->why[0],
             "threads %d on cpus %.96s: %d physical big cores%s%s%s", out->n_threads, list, n,
             n >= 3 && tts ? " less 1 for the audio decoder" : "",
             ", decode is memory-bound", extra);
    snprintf(out->why[EDGE_WHY_AUDIO], sizeof out->why[0], "audio decoder thread on cpu %.96s: %s",
             audio,
             n < 3   ? "shared with decode (fewer than 3 big cores)"
             : tts   ? "a big core of its own, so codec decode never waits for a decode step"
                     : "the core a TTS stream would take (this model has no audio decoder)");
}

/* ---- memory ---- */

static ember_status kv_row_bytes(ember_type t, int32_t head_dim, int64_t *out)
{
    switch (t) {
    case EMBER_TYPE_F32: *out = 4 * (int64_t)head_dim; return EMBER_OK;
    case EMBER_TYPE_F16: *out = 2 * (int64_t)head_dim; return EMBER_OK;
    case EMBER_TYPE_Q8_0:
        if (head_dim % 32)
            return ember_fail(EMBER_ERR_UNSUPPORTED, "KV format q8_0 needs head_dim a multiple of 32, not %d",
                              head_dim);
        *out = head_dim / 32 * 34;
        return EMBER_OK;
    default:
        return ember_fail(EMBER_ERR_INVALID_ARG, "KV format %s is not one of f32, f16, q8_0",
                          edge_type_name(t));
    }
}

/* Cache bytes of one sequence at `ctx` tokens, as kv_cache_init sizes it. */
static int64_t seq_kv_bytes(const edge_model_info *m, int64_t row, int64_t ctx)
{
    const int64_t slot = (int64_t)m->kv_heads * row * 2; /* K and V */
    const int64_t ring = m->window - 1 < ctx ? m->window - 1 : ctx;
    return (int64_t)m->n_full * ctx * slot + (int64_t)m->n_sliding * ring * slot + m->kv_fixed_f32_bytes;
}

/* ember's per-sequence scratch (session.c sizes it at creation): a prefill
 * chunk's activations, attention scores over chunk + one 256-key tile, logits. */
static int64_t scratch_bytes(const edge_model_info *m, int64_t chunk)
{
    const int64_t q = (int64_t)m->n_heads * m->head_dim, kv = (int64_t)m->kv_heads * m->head_dim;
    const int64_t per_token = 2 * (int64_t)m->hidden + q + 2 * kv + 2 * (int64_t)m->intermediate +
                              (int64_t)m->n_heads * (chunk + 256);
    return 4 * (chunk * per_token + m->vocab);
}

static double gb(double bytes) { return bytes / 1e9; }

/* Bytes in binary units, 3 significant digits ("3.02 GiB", "41.9 MiB"). */
typedef struct size_text {
    char s[24];
} size_text;

static size_text sz(double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_text t;
    int u = 0;
    while (fabs(bytes) >= 1024.0 && u < 4) bytes /= 1024.0, u++;
    snprintf(t.s, sizeof t.s, u == 0 ? "%.0f %s" : fabs(bytes) < 10 ? "%.2f %s" : fabs(bytes) < 100 ? "%.1f %s" : "%.0f %s",
             bytes, units[u]);
    return t;
}

/* ---- the weight format ---- */

typedef struct dtype_ctx {
    const edge_model_info *m;
    int64_t fixed_need; /* act + headroom + one sequence's cache */
    int64_t pool;       /* 0 unknown */
    double bw, target;
} dtype_ctx;

static int64_t weights_in(const edge_model_info *m, ember_type t)
{
    return (int64_t)((double)m->weight_bytes * bytes_per_weight(t) / bytes_per_weight(m->stored_type));
}

static double rate_in(const dtype_ctx *c, ember_type t)
{
    const double read = (double)c->m->read_weights_per_step * bytes_per_weight(t);
    return read > 0 ? c->bw / read : 0;
}

static bool fits(const dtype_ctx *c, ember_type t)
{
    return c->pool == 0 || weights_in(c->m, t) + c->fixed_need <= c->pool;
}

/* Most precise first: the stored format (converting up never adds
 * precision), then bf16 for an f32 checkpoint, then q8_0, q4_0. The first
 * that fits and reaches the target rate wins; when none reaches it, the
 * fastest that fits; when none fits, the smallest (and the KV line says so).
 *
 * Speech stops at q8_0. A codec token is sampled from the talker's and the
 * predictor's logits, sixteen per 80 ms frame, and one changed token is an
 * audible glitch; on the 0.6B geometry (reference/make_tts_checkpoint.py,
 * against reference/tts_golden.py's float64 run) q8_0's logits are within
 * 37.9 dB SNR, q4_0's only 15.5 dB, and q4_0's greedy frames leave the
 * reference's after the first. q4_0 is not much faster either: the codec
 * decoder's share of a frame does not shrink with the talker's weights
 * (`ember bench tts` on the 0.6B, 50 frames, on a busy 2-core x86: RTF 1.61
 * in q4_0, 1.80-1.98 in q8_0, 3.21 in bf16). */
static void derive_dtype(const dtype_ctx *c, edge_profile *out)
{
    const bool speech = c->m->kind == EDGE_MODEL_TTS;
    ember_type cand[4];
    int n = 0;
    cand[n++] = c->m->stored_type;
    if (c->m->stored_type == EMBER_TYPE_F32) cand[n++] = EMBER_TYPE_BF16;
    cand[n++] = EMBER_TYPE_Q8_0;
    if (!speech) cand[n++] = EMBER_TYPE_Q4_0;
    int pick = -1;
    for (int i = 0; i < n && pick < 0; i++)
        if (fits(c, cand[i]) && rate_in(c, cand[i]) >= c->target) pick = i;
    const char *reason = "fits and reaches";
    if (pick < 0) {
        for (int i = 0; i < n; i++)
            if (fits(c, cand[i]) && (pick < 0 || rate_in(c, cand[i]) > rate_in(c, cand[pick]))) pick = i;
        reason = pick >= 0 ? "the fastest that fits; nothing reaches" : "nothing fits; the smallest, short of";
        if (pick < 0) pick = n - 1;
    }
    const ember_type t = cand[pick];
    out->weight_type = t;
    out->convert = t != c->m->stored_type;
    out->weight_bytes = weights_in(c->m, t);
    out->step_rate = rate_in(c, t);
    const char *unit = speech ? "frames/s" : "tok/s";
    char before[160] = "";
    if (pick > 0)
        snprintf(before, sizeof before, "; %s would be %s at %.1f %s%s", edge_type_name(cand[pick - 1]),
                 sz((double)weights_in(c->m, cand[pick - 1])).s, rate_in(c, cand[pick - 1]), unit,
                 fits(c, cand[pick - 1]) ? "" : " and not fit");
    snprintf(out->why[EDGE_WHY_DTYPE], sizeof out->why[0],
             "weights %s%s, %s: %.1f %s predicted (%.1f GB/s %s / %s read per step), %s the %.1f %s target%s%s",
             edge_type_name(t), out->convert ? " (converted at load)" : " (as stored)", sz((double)out->weight_bytes).s,
             out->step_rate, unit, gb(c->bw), out->bw_given ? "measured" : "nominal",
             sz((double)c->m->read_weights_per_step * bytes_per_weight(t)).s, reason, c->target, unit, before,
             speech && t == EMBER_TYPE_Q8_0 ? "; speech stops at q8_0 (q4_0 moves the codec logits to 15 dB SNR, q8_0's 38)" : "");
}

/* ---- the rest ---- */

static void derive_chunks(const class_rules *r, edge_profile *out)
{
    out->n_ramp = 0;
    for (int32_t v = r->chunk_min; v < STEADY_FRAMES && out->n_ramp < EDGE_MAX_RAMP - 1; v *= 2)
        out->chunk_ramp[out->n_ramp++] = v;
    out->chunk_ramp[out->n_ramp++] = STEADY_FRAMES;
    out->chunk_margin_ms = r->margin_ms;
    char ramp[64];
    size_t used = 0;
    for (int i = 0; i < out->n_ramp; i++)
        used += (size_t)snprintf(ramp + used, sizeof ramp - used, "%s%d", i ? "," : "", out->chunk_ramp[i]);
    snprintf(out->why[EDGE_WHY_CHUNKS], sizeof out->why[0],
             "audio chunks [%s] frames, margin %d ms: %s starts at %d frames (%d ms of audio) and doubles to the steady %d",
             ramp, out->chunk_margin_ms, edge_class_name(out->cls), r->chunk_min, r->chunk_min * 80,
             STEADY_FRAMES);
}

static void derive_timeouts(const class_rules *r, const edge_model_info *m, edge_profile *out)
{
    out->load_timeout_s = (int32_t)fmin(86400.0, ceil(2.0 * (double)m->weight_bytes / r->disk_bps + 60.0));
    const double step_ms = out->step_rate > 0 ? 1000.0 / out->step_rate : 1000.0;
    /* 1 s at least; at most an hour (a profile claiming a bandwidth of a few
     * bytes per second must not overflow the field) */
    out->step_timeout_ms = (int32_t)fmin(3600e3, fmax(1000.0, ceil(STALL_FACTOR * step_ms)));
    snprintf(out->why[EDGE_WHY_TIMEOUTS], sizeof out->why[0],
             "load timeout %d s: twice %s at %.1f GB/s (%s nominal disk read) + 60 s; step timeout %d ms: %dx the predicted %.1f ms (1 s at least)",
             out->load_timeout_s, sz((double)m->weight_bytes).s, gb(r->disk_bps), edge_class_name(out->cls),
             out->step_timeout_ms, STALL_FACTOR, step_ms);
}

static void derive_memory(const class_rules *r, const edge_model_info *m, int64_t row, edge_profile *out)
{
    const int64_t pool = out->pool_bytes;
    out->kv_budget_bytes = pool - out->weight_bytes - out->act_bytes - out->headroom_bytes;
    if (out->kv_budget_bytes < 0) out->kv_budget_bytes = 0;
    const int64_t slot = (int64_t)m->kv_heads * row * 2;
    const int64_t fixed = seq_kv_bytes(m, row, (int64_t)m->max_positions) - (int64_t)m->n_full * m->max_positions * slot;
    int64_t seqs = 0;
    if (pool == 0) {
        out->max_seqs = r->max_seqs;
        out->max_context_one_seq = m->max_positions;
    } else {
        seqs = out->kv_budget_bytes / out->kv_bytes_per_seq;
        out->max_seqs = (int32_t)(seqs < r->max_seqs ? seqs : r->max_seqs);
        int64_t ctx = out->kv_budget_bytes < fixed ? 0
                      : out->kv_bytes_per_token ? (out->kv_budget_bytes - fixed) / out->kv_bytes_per_token
                                                : m->max_positions;
        out->max_context_one_seq = (int32_t)(ctx < m->max_positions ? ctx : m->max_positions);
    }
    char fixed_text[128] = "";
    if (fixed)
        snprintf(fixed_text, sizeof fixed_text, " + %s fixed per sequence (%s)", sz((double)fixed).s,
                 m->n_sliding ? "sliding layers hold window-1 slots" : "the code predictor's cache");
    if (pool == 0)
        snprintf(out->why[EDGE_WHY_KV], sizeof out->why[0],
                 "KV budget unknown: the profile gives no memory size; %lld B/token%s",
                 (long long)out->kv_bytes_per_token, fixed_text);
    else
        snprintf(out->why[EDGE_WHY_KV], sizeof out->why[0],
                 "KV budget %s = %s available - %s weights - %s activations - %s headroom; %lld B/token (%d full layers x %d kv heads x %lld B x K,V, %s)%s",
                 sz((double)out->kv_budget_bytes).s, sz((double)pool).s, sz((double)out->weight_bytes).s,
                 sz((double)out->act_bytes).s, sz((double)out->headroom_bytes).s, (long long)out->kv_bytes_per_token,
                 m->n_full, m->kv_heads, (long long)row, edge_type_name(out->kv_type), fixed_text);
    snprintf(out->why[EDGE_WHY_SEQS], sizeof out->why[0],
             "max_seqs %d: a sequence of %d tokens needs %s of cache, %lld fit the budget%s, the %s cap is %d; one sequence fits %d tokens",
             out->max_seqs, out->context, sz((double)out->kv_bytes_per_seq).s, (long long)seqs,
             pool == 0 ? " (memory unknown: not limited)" : "", edge_class_name(out->cls), r->max_seqs,
             out->max_context_one_seq);
}

ember_status edge_derive(const edge_hw *hw, const edge_model_info *m, const edge_derive_opts *o,
                         edge_profile *out)
{
    memset(out, 0, sizeof *out);
    edge_derive_opts opts = o ? *o : (edge_derive_opts){0};
    const class_rules *r = &rules[(unsigned)hw->cls < EDGE_N_CLASSES ? hw->cls : EDGE_CLASS_X86_CPU];
    out->cls = hw->cls;
    if (opts.context < 0 || opts.context > m->max_positions)
        return ember_fail(EMBER_ERR_INVALID_ARG, "context %d must be in [1, %d] (the model's maximum)",
                          opts.context, m->max_positions);
    out->context = opts.context ? opts.context : (m->max_positions < 4096 ? m->max_positions : 4096);
    out->kv_type = m->kv_f32_only || opts.kv_type == EMBER_TYPE_NONE ? EMBER_TYPE_F32 : opts.kv_type;
    int64_t row = 0;
    ember_status st = kv_row_bytes(out->kv_type, m->head_dim, &row);
    if (st) return st;
    const int64_t chunk = opts.prefill_chunk > 0 ? opts.prefill_chunk
                                                  : ember_session_default_params().prefill_chunk;

    derive_threads(hw, m, out);

    out->bw_given = hw->mem_bw_bytes_per_s > 0;
    out->bw_bytes_per_s = out->bw_given ? (double)hw->mem_bw_bytes_per_s
                                        : fmin(r->bw_cap, r->bw_per_core * out->n_threads);
    out->pool_bytes = hw->ram_available_bytes > 0 ? hw->ram_available_bytes : hw->ram_total_bytes;
    out->headroom_bytes = r->headroom;
    out->act_bytes = PROCESS_OVERHEAD + (int64_t)r->max_seqs * scratch_bytes(m, chunk);
    out->kv_bytes_per_token = (int64_t)m->n_full * m->kv_heads * row * 2;
    out->kv_bytes_per_seq = seq_kv_bytes(m, row, out->context);

    dtype_ctx c = {m, out->act_bytes + out->headroom_bytes + out->kv_bytes_per_seq, out->pool_bytes,
                   out->bw_bytes_per_s, m->kind == EDGE_MODEL_TTS ? TTS_TARGET_RATE : LLM_TARGET_RATE};
    derive_dtype(&c, out);
    derive_memory(r, m, row, out);
    derive_chunks(r, out);
    derive_timeouts(r, m, out);
    return EMBER_OK;
}

void edge_profile_apply(const edge_profile *p, const edge_explicit *x, ember_model_params *mp,
                        ember_session_params *sp)
{
    const edge_explicit none = {EMBER_TYPE_NONE, 0, 0, EMBER_TYPE_NONE};
    if (!x) x = &none;
    if (mp) mp->weight_type = x->weight_type ? x->weight_type : p->convert ? p->weight_type : EMBER_TYPE_NONE;
    if (!sp) return;
    sp->n_threads = x->n_threads ? x->n_threads : p->n_threads;
    sp->max_context = x->max_context ? x->max_context : p->context;
    sp->kv_type = x->kv_type ? x->kv_type : p->kv_type;
}

static bool add_cpus(cJSON *o, const char *key, const edge_cpuset *s)
{
    char text[1024];
    edge_cpuset_format(s, text, sizeof text);
    return cJSON_AddStringToObject(o, key, text) != NULL;
}

cJSON *edge_profile_to_json(const edge_profile *p)
{
    static const char *const why_keys[EDGE_N_WHY] = {"dtype", "threads", "audio", "kv",
                                                     "seqs", "chunks", "timeouts"};
    cJSON *o = cJSON_CreateObject(), *ramp = NULL, *why = NULL;
    bool ok = o && cJSON_AddStringToObject(o, "class", edge_class_name(p->cls)) &&
              cJSON_AddStringToObject(o, "weight_type", edge_type_name(p->weight_type)) &&
              cJSON_AddBoolToObject(o, "convert", p->convert) &&
              cJSON_AddNumberToObject(o, "weight_bytes", (double)p->weight_bytes) &&
              cJSON_AddNumberToObject(o, "bw_bytes_per_s", p->bw_bytes_per_s) &&
              cJSON_AddBoolToObject(o, "bw_measured", p->bw_given) &&
              cJSON_AddNumberToObject(o, "predicted_steps_per_s", p->step_rate) &&
              cJSON_AddNumberToObject(o, "threads", p->n_threads) && add_cpus(o, "decode_cpus", &p->decode_cpus) &&
              add_cpus(o, "audio_cpus", &p->audio_cpus) && cJSON_AddNumberToObject(o, "context", p->context) &&
              cJSON_AddStringToObject(o, "kv_type", edge_type_name(p->kv_type)) &&
              cJSON_AddNumberToObject(o, "pool_bytes", (double)p->pool_bytes) &&
              cJSON_AddNumberToObject(o, "activation_bytes", (double)p->act_bytes) &&
              cJSON_AddNumberToObject(o, "headroom_bytes", (double)p->headroom_bytes) &&
              cJSON_AddNumberToObject(o, "kv_budget_bytes", (double)p->kv_budget_bytes) &&
              cJSON_AddNumberToObject(o, "kv_bytes_per_token", (double)p->kv_bytes_per_token) &&
              cJSON_AddNumberToObject(o, "kv_bytes_per_seq", (double)p->kv_bytes_per_seq) &&
              cJSON_AddNumberToObject(o, "max_seqs", p->max_seqs) &&
              cJSON_AddNumberToObject(o, "max_context_one_seq", p->max_context_one_seq) &&
              (ramp = cJSON_AddArrayToObject(o, "chunk_ramp")) != NULL &&
              cJSON_AddNumberToObject(o, "chunk_margin_ms", p->chunk_margin_ms) &&
              cJSON_AddNumberToObject(o, "load_timeout_s", p->load_timeout_s) &&
              cJSON_AddNumberToObject(o, "step_timeout_ms", p->step_timeout_ms) &&
              (why = cJSON_AddObjectToObject(o, "why")) != NULL;
    for (int i = 0; ok && i < p->n_ramp; i++) ok = cJSON_AddItemToArray(ramp, cJSON_CreateNumber(p->chunk_ramp[i]));
    for (int i = 0; ok && i < EDGE_N_WHY; i++) ok = cJSON_AddStringToObject(why, why_keys[i], p->why[i]) != NULL;
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

ember_status edge_hw_for(const char *root, const char *hardware, edge_hw *out)
{
    if (root) return edge_probe(root, out);
    if (hardware && *hardware) return edge_hw_override(hardware, out);
    return edge_probe("/", out);
}

ember_status edge_profile_for(const char *dir, const char *root, const char *hardware,
                              const edge_derive_opts *o, edge_profile *prof, bool *found,
                              char *reason, size_t cap)
{
    *found = false;
    if (cap) reason[0] = 0;
    edge_model_info info;
    if (edge_model_info_load(dir, &info) != EMBER_OK) {
        if (cap) snprintf(reason, cap, "%s", ember_last_error());
        ember_clear_error();
        return EMBER_OK;
    }
    edge_hw *hw = malloc(sizeof *hw);
    if (!hw) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory probing the hardware", dir);
    ember_status st = edge_hw_for(root, hardware, hw);
    if (!st) st = edge_derive(hw, &info, o, prof);
    free(hw);
    if (!st) *found = true;
    return st;
}
