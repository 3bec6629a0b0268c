/* The derived profile on the snapshot machines for the tiny Spark model, a
 * Spark model of the 1.7B shape and the Qwen3-TTS 0.6B geometry. Every
 * expected value is worked out by hand below from the snapshot files
 * (tests/data/hw/make_snapshots.py), the configs and the rules in
 * src/edge/profile.c (class constants: x86_cpu cap 2 / headroom 2 GiB /
 * 10 GB/s per core up to 80; arm64_cpu 1 / 1 GiB / 4 up to 12; jetson 2 /
 * 3 GiB / 8 up to 60; npu_phone 1 / 1 GiB / 8 up to 30; targets 10 tok/s,
 * 25 frames/s). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edge/hw_json.h"
#include "edge/probe.h"
#include "edge/profile.h"
#include "io/read_file.h"
#include "nn/kv.h"
#include "llm/spark_config.h"

#define HW "tests/data/hw/"
#define GIB (1024LL * 1024 * 1024)

static int load_config(const char *path, edge_model_info *m)
{
    char *text = NULL;
    size_t len = 0;
    if (io_read_text_file(path, 1 << 20, &text, &len) != EMBER_OK) return -1;
    /* file_bytes 0: the weight bytes come from the geometry, as worked out here */
    ember_status st = edge_model_info_from_config(text, len, path, 0, m);
    free(text);
    return st == EMBER_OK ? 0 : -1;
}

static int tiny(edge_model_info *m) { return load_config("models/tiny/config.json", m); }
static int spark_17b(edge_model_info *m) { return load_config(HW "models/spark-1.7b/config.json", m); }
static int tts_06b(edge_model_info *m) { return load_config(HW "models/qwen3-tts-0.6b/config.json", m); }

static int cpus_are(const edge_cpuset *s, const char *want)
{
    char got[128];
    edge_cpuset_format(s, got, sizeof got);
    return !strcmp(got, want);
}

static int derive_on(const char *machine, const edge_model_info *m, edge_profile *p)
{
    char root[128];
    edge_hw hw;
    snprintf(root, sizeof root, HW "%s", machine);
    if (edge_probe(root, &hw) != EMBER_OK) return -1;
    return edge_derive(&hw, m, NULL, p) == EMBER_OK ? 0 : -1;
}

/* tiny: hidden 128, 4 layers (3 sliding + 1 full), 4 heads, 2 kv heads,
 * head_dim 32, intermediate 256, vocab 512, window 16, tied, bf16.
 * embedding 512*128 = 65536, final norm 128; per layer 2*128 norms +
 * (4+2*2)*32*128 q/k/v = 32768 + 4*128 gate = 512 + 128*128 out = 16384 +
 * 3*256*128 mlp = 98304 -> 148224; total 65536 + 128 + 4*148224 = 658560. */
static void model_info_tiny(void)
{
    edge_model_info m;
    REQUIRE(tiny(&m) == 0);
    CHECK(m.kind == EDGE_MODEL_LLM && m.stored_type == EMBER_TYPE_BF16);
    CHECK_MSG(m.n_weights == 658560, "n_weights %lld", (long long)m.n_weights);
    CHECK(m.read_weights_per_step == 658560); /* tied: the embedding is the output head */
    CHECK(m.weight_bytes == 2 * 658560);
    CHECK(m.n_full == 1 && m.n_sliding == 3 && m.window == 16 && m.kv_heads == 2 && m.head_dim == 32);
    /* the committed checkpoint: its bf16 tensors take 2 x 658560 bytes, the
     * rest of its files are the safetensors headers (a few KiB) */
    REQUIRE(edge_model_info_load("models/tiny", &m) == EMBER_OK);
    CHECK_MSG(m.weight_bytes >= 2 * 658560 && m.weight_bytes < 2 * 658560 + 16384, "files %lld",
              (long long)m.weight_bytes);
}

/* 1.7B shape: hidden 2048, 28 layers (21 sliding, 7 full), 8 heads, 2 kv
 * heads, head_dim 256, intermediate 6144, vocab 131072, window 512, tied.
 * embedding 131072*2048 = 268435456, norm 2048; per layer 4096 norms +
 * 12*256*2048 = 6291456 + 8*2048 = 16384 + 2048*2048 = 4194304 +
 * 3*6144*2048 = 37748736 -> 48254976; 268435456 + 2048 + 28*48254976 =
 * 1619576832 weights, 3239153664 bytes in bf16. */
static void model_info_spark_17b(void)
{
    edge_model_info m;
    REQUIRE(spark_17b(&m) == 0);
    CHECK_MSG(m.n_weights == 1619576832LL, "n_weights %lld", (long long)m.n_weights);
    CHECK(m.weight_bytes == 3239153664LL);
    CHECK(m.n_full == 7 && m.n_sliding == 21 && m.window == 512);
}

/* The talker of Qwen3-TTS 0.6B: 28 full layers, 8 kv heads of 128. */
static void model_info_tts(void)
{
    edge_model_info m;
    REQUIRE(tts_06b(&m) == 0);
    CHECK(m.kind == EDGE_MODEL_TTS && m.kv_f32_only && m.stored_type == EMBER_TYPE_BF16);
    CHECK(m.n_full == 28 && m.n_sliding == 0 && m.kv_heads == 8 && m.head_dim == 128);
    /* the code predictor: 5 layers x 16 positions x 8 kv heads x 128 x 4 B x K,V */
    CHECK(m.kv_fixed_f32_bytes == 5LL * 16 * 8 * 128 * 4 * 2);
}

/* Common to the 1.7B cases (context 4096, f32 cache, chunk 128):
 *   KV per token: 7 full x 2 kv heads x 256 x 4 B x 2 = 28672
 *   fixed per sequence: 21 sliding x 511 slots x 2 x 1024 B x 2 = 43954176
 *   per sequence: 4096 x 28672 + 43954176 = 161394688
 *   scratch per sequence: 4 x (128 x (2*2048 + 8*256 + 2*2*256 + 2*6144 +
 *     8*(128+256)) + 131072) = 4 x (128 x 22528 + 131072) = 12058624
 *   activations: 64 MiB + cap x 12058624 (cap 2: 91226112, cap 1: 79167488)
 *   bytes read per token: 1619576832 x {2, 34/32, 18/32} for bf16, q8_0,
 *     q4_0 = 3239153664, 1720800384, 911011968 (also the in-memory sizes) */
#define KV_TOKEN_17B 28672LL
#define KV_SEQ_17B 161394688LL

/* x86 server: one frequency cluster 0-31; NUMA node 0 = 0-7,16-23; minus the
 * SMT siblings 16-31 -> cores 0-7. Bandwidth min(80, 8 x 10) = 80 GB/s:
 * bf16 gives 80e9 / 3239153664 = 24.7 tok/s >= 10 -> bf16. Pool
 * 251234560 kB x 1024 = 257264189440; budget 257264189440 - 3239153664 -
 * 91226112 - 2 GiB = 251786326016 -> 1560 sequences, cap 2. */
static void derive_x86_server(void)
{
    edge_model_info m;
    edge_profile p;
    REQUIRE(spark_17b(&m) == 0 && derive_on("x86-server", &m, &p) == 0);
    CHECK(p.cls == EDGE_CLASS_X86_CPU);
    CHECK_MSG(p.n_threads == 8 && cpus_are(&p.decode_cpus, "0-7"), "threads %d", p.n_threads);
    CHECK(cpus_are(&p.audio_cpus, "7"));
    CHECK(p.weight_type == EMBER_TYPE_BF16 && !p.convert && p.weight_bytes == 3239153664LL);
    CHECK(p.bw_bytes_per_s == 80e9);
    CHECK(p.kv_bytes_per_token == KV_TOKEN_17B && p.kv_bytes_per_seq == KV_SEQ_17B);
    CHECK(p.act_bytes == 91226112LL);
    CHECK_MSG(p.kv_budget_bytes == 251786326016LL, "budget %lld", (long long)p.kv_budget_bytes);
    CHECK(p.max_seqs == 2);
    CHECK(p.n_ramp == 5 && p.chunk_ramp[0] == 2 && p.chunk_ramp[4] == 25 && p.chunk_margin_ms == 120);
    /* load: ceil(2 x 3239153664 / 1e9 + 60) = ceil(66.48) = 67 s; a step
     * predicted at 1000/24.7 = 40.5 ms, x20 = 810 -> the 1000 ms floor */
    CHECK(p.load_timeout_s == 67 && p.step_timeout_ms == 1000);
    /* tiny: 2 sequences fit easily; f32 cache: 1 full x 2 x 32 x 4 x 2 = 512
     * B/token, 3 sliding x 15 x 2 x 128 x 2 = 23040 fixed */
    REQUIRE(tiny(&m) == 0 && derive_on("x86-server", &m, &p) == 0);
    CHECK(p.weight_type == EMBER_TYPE_BF16 && p.max_seqs == 2 && p.n_threads == 8);
    CHECK(p.kv_bytes_per_token == 512 && p.kv_bytes_per_seq == 4096 * 512 + 23040);
}

/* Phone: capacities 1024 (cpu7), 871 (4-6), 389 (0-3). Big: 80% of 1024
 * (871*5 = 4355 >= 4096; 389*5 < 4096) -> cores 4-7. LLM: threads 4, the
 * audio thread on the slowest big cluster's last core, cpu 6. Bandwidth
 * min(30, 4 x 8) = 30 GB/s: bf16 30e9/3239153664 = 9.26 < 10; q8_0
 * 30e9/1720800384 = 17.4 and needs 1720800384 + 79167488 + 1 GiB +
 * 161394688 = 3035104384 <= 5123456 kB x 1024 = 5246418944 -> q8_0. Budget
 * 5246418944 - 1720800384 - 79167488 - 1 GiB = 2372709248 -> 14 sequences, cap 1. */
static void derive_snapdragon_phone(void)
{
    edge_model_info m;
    edge_profile p;
    REQUIRE(spark_17b(&m) == 0 && derive_on("snapdragon-phone", &m, &p) == 0);
    CHECK(p.cls == EDGE_CLASS_NPU_PHONE);
    CHECK(p.n_threads == 4 && cpus_are(&p.decode_cpus, "4-7") && cpus_are(&p.audio_cpus, "6"));
    CHECK(p.weight_type == EMBER_TYPE_Q8_0 && p.convert && p.weight_bytes == 1720800384LL);
    CHECK_MSG(p.kv_budget_bytes == 2372709248LL, "budget %lld", (long long)p.kv_budget_bytes);
    CHECK(p.max_seqs == 1);
    CHECK(p.n_ramp == 4 && p.chunk_ramp[0] == 4 && p.chunk_ramp[1] == 8 && p.chunk_ramp[3] == 25);
    CHECK(p.chunk_margin_ms == 200);
    /* TTS: the audio decoder takes cpu 6 for itself, decode keeps 4,5,7 */
    REQUIRE(tts_06b(&m) == 0 && derive_on("snapdragon-phone", &m, &p) == 0);
    CHECK(p.n_threads == 3 && cpus_are(&p.decode_cpus, "4-5,7") && cpus_are(&p.audio_cpus, "6"));
    /* 28 layers x 8 kv heads x 128 x 4 B x 2 = 229376 B/token (f32, always) */
    CHECK(p.kv_bytes_per_token == 229376 && p.kv_type == EMBER_TYPE_F32);
    REQUIRE(tiny(&m) == 0 && derive_on("snapdragon-phone", &m, &p) == 0);
    CHECK(p.weight_type == EMBER_TYPE_BF16 && p.max_seqs == 1);
}

/* Orin: 12 cores of one capacity, one NUMA node -> threads 12. Bandwidth
 * min(60, 12 x 8) = 60: bf16 60e9/3239153664 = 18.5 -> bf16. Budget
 * 60123456 kB x 1024 = 61566418944 - 3239153664 - 91226112 - 3 GiB =
 * 55014813696 -> 340 sequences, cap 2. */
static void derive_jetson_orin(void)
{
    edge_model_info m;
    edge_profile p;
    REQUIRE(spark_17b(&m) == 0 && derive_on("jetson-orin", &m, &p) == 0);
    CHECK(p.cls == EDGE_CLASS_JETSON);
    CHECK(p.n_threads == 12 && cpus_are(&p.decode_cpus, "0-11") && cpus_are(&p.audio_cpus, "11"));
    CHECK(p.weight_type == EMBER_TYPE_BF16);
    CHECK_MSG(p.kv_budget_bytes == 55014813696LL, "budget %lld", (long long)p.kv_budget_bytes);
    CHECK(p.max_seqs == 2);
    CHECK(p.chunk_ramp[0] == 2 && p.chunk_margin_ms == 80);
    REQUIRE(tiny(&m) == 0 && derive_on("jetson-orin", &m, &p) == 0);
    CHECK(p.weight_type == EMBER_TYPE_BF16 && p.max_seqs == 2 && p.n_threads == 12);
}

/* Pi 5: 4 cores, bandwidth min(12, 4 x 4) = 12: bf16 3.70 and q8_0
 * 12e9/1720800384 = 6.97 tok/s miss 10; q4_0 12e9/911011968 = 13.2 and
 * needs 911011968 + 79167488 + 1 GiB + 161394688 = 2225315968 <= 7512345 kB
 * x 1024 = 7692641280 -> q4_0. Budget 7692641280 - 911011968 - 79167488 -
 * 1 GiB = 5628720000 -> 34 sequences, cap 1. */
static void derive_raspberry_pi_5(void)
{
    edge_model_info m;
    edge_profile p;
    REQUIRE(spark_17b(&m) == 0 && derive_on("raspberry-pi-5", &m, &p) == 0);
    CHECK(p.cls == EDGE_CLASS_ARM64_CPU);
    CHECK(p.n_threads == 4 && cpus_are(&p.decode_cpus, "0-3") && cpus_are(&p.audio_cpus, "3"));
    CHECK(p.weight_type == EMBER_TYPE_Q4_0 && p.weight_bytes == 911011968LL);
    CHECK_MSG(p.kv_budget_bytes == 5628720000LL, "budget %lld", (long long)p.kv_budget_bytes);
    CHECK(p.max_seqs == 1);
    /* ramp from 3 frames: 3, 6, 12, 24, then the steady 25 */
    CHECK(p.n_ramp == 5 && p.chunk_ramp[0] == 3 && p.chunk_ramp[3] == 24 && p.chunk_ramp[4] == 25);
    /* load: ceil(2 x 3239153664 / 0.4e9 + 60) = ceil(76.2) = 77 s; step:
     * 1000 / 13.172 = 75.92 ms x 20 = 1518.4 -> 1519 ms */
    CHECK(p.load_timeout_s == 77 && p.step_timeout_ms == 1519);
    REQUIRE(tts_06b(&m) == 0 && derive_on("raspberry-pi-5", &m, &p) == 0);
    CHECK(p.n_threads == 3 && cpus_are(&p.decode_cpus, "0-2") && cpus_are(&p.audio_cpus, "3"));
    REQUIRE(tiny(&m) == 0 && derive_on("raspberry-pi-5", &m, &p) == 0);
    CHECK(p.weight_type == EMBER_TYPE_BF16 && p.max_seqs == 1 && p.n_threads == 4);
}

static int derive_with(const char *json, const edge_model_info *m, edge_profile *p)
{
    edge_hw hw;
    if (edge_hw_override(json, &hw) != EMBER_OK) return -1;
    return edge_derive(&hw, m, NULL, p) == EMBER_OK ? 0 : -1;
}

/* 2.5 GiB = 2684354560 and a measured 100 GB/s: bf16 (3239153664 +
 * 79167488 + 1 GiB + 161394688 = 4553457664) and q8_0 (3035104384) do not
 * fit, q4_0 (2225315968) does. Budget 2684354560 - 911011968 - 79167488 -
 * 1 GiB = 620433280: 3 sequences (cap 1); one sequence holds
 * (620433280 - 43954176) / 28672 = 20105 tokens. */
static void memory_picks_the_format(void)
{
    edge_model_info m;
    edge_profile p;
    REQUIRE(spark_17b(&m) == 0);
    REQUIRE(derive_with("{\"class\": \"arm64_cpu\", \"n_logical\": 4, \"ram_total_bytes\": 2684354560,"
                        " \"mem_bw_bytes_per_s\": 100000000000}", &m, &p) == 0);
    CHECK(p.weight_type == EMBER_TYPE_Q4_0 && p.bw_given && p.bw_bytes_per_s == 100e9);
    CHECK_MSG(p.kv_budget_bytes == 620433280LL, "budget %lld", (long long)p.kv_budget_bytes);
    CHECK(p.max_seqs == 1);
    CHECK_MSG(p.max_context_one_seq == 20105, "max context %d", p.max_context_one_seq);
    /* 2.1e9: even q4_0 (2225315968) does not fit; budget 2100000000 -
     * 911011968 - 79167488 - 1 GiB = 36078720 < one sequence -> 0, and below
     * the 43954176 of the sliding rings -> no context at all */
    REQUIRE(derive_with("{\"class\": \"arm64_cpu\", \"n_logical\": 4, \"ram_total_bytes\": 2100000000}", &m, &p) == 0);
    CHECK(p.weight_type == EMBER_TYPE_Q4_0 && p.max_seqs == 0 && p.max_context_one_seq == 0);
    CHECK(strstr(p.why[EDGE_WHY_DTYPE], "nothing fits") != NULL);
}

/* Speech never goes below q8_0. On the Pi 5 (3 decode threads: 12 GB/s)
 * the 0.6B talker + predictor reads R weights per frame: q8_0 gives 12e9 /
 * (R x 34/32) frames/s, short of 25, and q4_0's 12e9 / (R x 18/32) would be
 * faster, yet q8_0 is chosen, where the Spark 1.7B gets q4_0
 * (derive_raspberry_pi_5). With 1 GiB nothing fits: still q8_0. At a
 * measured 200 GB/s the stored bf16 reaches 200e9 / 2R > 25. */
static void speech_stops_at_q8_0(void)
{
    edge_model_info m;
    edge_profile p;
    REQUIRE(tts_06b(&m) == 0 && derive_on("raspberry-pi-5", &m, &p) == 0);
    const double r = (double)m.read_weights_per_step, q8 = 12e9 / (r * 34.0 / 32.0);
    CHECK(q8 < 25.0 && 12e9 / (r * 18.0 / 32.0) > q8);
    CHECK(p.weight_type == EMBER_TYPE_Q8_0 && p.convert);
    CHECK_MSG(p.step_rate > q8 * (1 - 1e-9) && p.step_rate < q8 * (1 + 1e-9), "rate %g, want %g", p.step_rate, q8);
    CHECK(strstr(p.why[EDGE_WHY_DTYPE], "speech stops at q8_0") != NULL);
    REQUIRE(derive_with("{\"class\": \"arm64_cpu\", \"n_logical\": 4, \"ram_total_bytes\": 1073741824}", &m, &p) == 0);
    CHECK(p.weight_type == EMBER_TYPE_Q8_0 && strstr(p.why[EDGE_WHY_DTYPE], "nothing fits") != NULL);
    REQUIRE(derive_with("{\"n_logical\": 8, \"ram_total_bytes\": 17179869184, \"mem_bw_bytes_per_s\": 200000000000}",
                        &m, &p) == 0);
    CHECK(200e9 / (2 * r) > 25.0);
    CHECK(p.weight_type == EMBER_TYPE_BF16 && !p.convert && strstr(p.why[EDGE_WHY_DTYPE], "speech stops") == NULL);
}

/* An SMT machine of 2 cores: threads = physical cores; audio shares them. */
static void smt_and_sharing(void)
{
    edge_model_info m;
    edge_profile p;
    REQUIRE(tts_06b(&m) == 0);
    REQUIRE(derive_with("{\"n_logical\": 4, \"smt_siblings\": [2, 3], \"ram_total_bytes\": 17179869184}",
                        &m, &p) == 0);
    CHECK(p.n_threads == 2 && cpus_are(&p.decode_cpus, "0-1") && cpus_are(&p.audio_cpus, "0-1"));
    CHECK(strstr(p.why[EDGE_WHY_THREADS], "2 SMT siblings left out") != NULL);
}

/* Decode runs on the big CPUs this process may use; when it may use none
 * of them, on what it may use. */
static void allowed_cpus_limit_the_threads(void)
{
    edge_model_info m;
    edge_profile p;
    REQUIRE(spark_17b(&m) == 0);
    /* big = 4-7 (capacity 1024), allowed 3-5 -> 4-5 */
    REQUIRE(derive_with("{\"n_logical\": 8, \"clusters\": [{\"cpus\": [4, 5, 6, 7], \"capacity\": 1024},"
                        " {\"cpus\": [0, 1, 2, 3], \"capacity\": 400}], \"allowed_cpus\": [3, 4, 5]}", &m, &p) == 0);
    CHECK(p.n_threads == 2 && cpus_are(&p.decode_cpus, "4-5"));
    CHECK(strstr(p.why[EDGE_WHY_THREADS], "2 CPUs outside this process's affinity") != NULL);
    REQUIRE(derive_with("{\"n_logical\": 8, \"clusters\": [{\"cpus\": [4, 5, 6, 7], \"capacity\": 1024},"
                        " {\"cpus\": [0, 1, 2, 3], \"capacity\": 400}], \"allowed_cpus\": [0, 1]}", &m, &p) == 0);
    CHECK(p.n_threads == 2 && cpus_are(&p.decode_cpus, "0-1"));
}

static void kv_formats_and_context(void)
{
    edge_model_info m;
    edge_profile p;
    edge_hw hw;
    REQUIRE(tiny(&m) == 0 && edge_probe(HW "raspberry-pi-5", &hw) == EMBER_OK);
    /* q8_0 rows: 32 values -> 34 B; 1 full x 2 kv heads x 34 x 2 = 136 B/token */
    edge_derive_opts o = {1000, EMBER_TYPE_Q8_0, 0};
    REQUIRE(edge_derive(&hw, &m, &o, &p) == EMBER_OK);
    CHECK(p.kv_bytes_per_token == 136 && p.context == 1000);
    CHECK(p.kv_bytes_per_seq == 1000 * 136 + 3 * 15 * 2 * 34 * 2);
    o.kv_type = EMBER_TYPE_F16; /* 1 x 2 x 64 x 2 = 256 */
    REQUIRE(edge_derive(&hw, &m, &o, &p) == EMBER_OK);
    CHECK(p.kv_bytes_per_token == 256);
    o.context = 4097; /* tiny's max_position_embeddings is 4096 */
    CHECK(edge_derive(&hw, &m, &o, &p) == EMBER_ERR_INVALID_ARG);
    o.context = 0;
    o.kv_type = EMBER_TYPE_Q4_0;
    CHECK(edge_derive(&hw, &m, &o, &p) == EMBER_ERR_INVALID_ARG);
    /* the TTS caches are f32 whatever is asked */
    REQUIRE(tts_06b(&m) == 0);
    o.kv_type = EMBER_TYPE_F16;
    REQUIRE(edge_derive(&hw, &m, &o, &p) == EMBER_OK);
    CHECK(p.kv_type == EMBER_TYPE_F32 && p.kv_bytes_per_token == 229376);
}

/* The per-sequence cache bytes agree with what kv.c allocates for the same
 * config, context and format (the cache's own sizing, not the profile's). */
static void kv_bytes_match_the_cache(void)
{
    static const char *const configs[] = {"models/tiny/config.json", HW "models/spark-1.7b/config.json"};
    static const struct {
        ember_type type;
        et_dtype dt;
    } formats[] = {{EMBER_TYPE_F32, ET_F32}, {EMBER_TYPE_F16, ET_F16}, {EMBER_TYPE_Q8_0, ET_Q8_0}};
    edge_hw hw;
    REQUIRE(edge_probe(HW "raspberry-pi-5", &hw) == EMBER_OK);
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        char *text = NULL;
        size_t len = 0;
        spark_config c;
        edge_model_info m;
        REQUIRE(io_read_text_file(configs[i], 1 << 20, &text, &len) == EMBER_OK);
        ember_status st = spark_config_parse(text, len, configs[i], &c);
        free(text);
        REQUIRE(st == EMBER_OK && load_config(configs[i], &m) == 0);
        for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
            static const int32_t contexts[] = {7, 600, 4096};
            for (size_t k = 0; k < 3; k++) {
                edge_derive_opts o = {contexts[k], formats[f].type, 0};
                edge_profile p;
                kv_cache kv;
                REQUIRE(edge_derive(&hw, &m, &o, &p) == EMBER_OK);
                kv_shape shape;
                spark_kv_shape(&c, &shape);
                REQUIRE(kv_cache_init(&kv, &shape, contexts[k], formats[f].dt) == EMBER_OK);
                CHECK_MSG((int64_t)kv.bytes == p.kv_bytes_per_seq, "%s %s context %d: cache %zu, profile %lld",
                          configs[i], edge_type_name(formats[f].type), contexts[k], kv.bytes,
                          (long long)p.kv_bytes_per_seq);
                kv_cache_free(&kv);
            }
        }
    }
}

static void explicit_flags_win(void)
{
    edge_model_info m;
    edge_profile p;
    REQUIRE(spark_17b(&m) == 0 && derive_on("raspberry-pi-5", &m, &p) == 0);
    ember_model_params mp = ember_model_default_params();
    ember_session_params sp = ember_session_default_params();
    edge_profile_apply(&p, NULL, &mp, &sp);
    CHECK(mp.weight_type == EMBER_TYPE_Q4_0 && sp.n_threads == 4 && sp.max_context == 4096 &&
          sp.kv_type == EMBER_TYPE_F32);
    edge_explicit x = {EMBER_TYPE_F32, 3, 0, EMBER_TYPE_F16};
    edge_profile_apply(&p, &x, &mp, &sp);
    CHECK(mp.weight_type == EMBER_TYPE_F32 && sp.n_threads == 3 && sp.max_context == 4096 &&
          sp.kv_type == EMBER_TYPE_F16);
    /* a format that is the stored one stays NONE (no conversion at load) */
    REQUIRE(derive_on("x86-server", &m, &p) == 0);
    edge_profile_apply(&p, NULL, &mp, NULL);
    CHECK(mp.weight_type == EMBER_TYPE_NONE);
}

static void every_choice_explained(void)
{
    edge_model_info m;
    edge_profile p;
    REQUIRE(spark_17b(&m) == 0 && derive_on("snapdragon-phone", &m, &p) == 0);
    for (int i = 0; i < EDGE_N_WHY; i++) CHECK_MSG(strlen(p.why[i]) > 20, "why[%d] '%s'", i, p.why[i]);
    CHECK(strstr(p.why[EDGE_WHY_DTYPE], "q8_0") && strstr(p.why[EDGE_WHY_DTYPE], "bf16 would be"));
    CHECK(strstr(p.why[EDGE_WHY_THREADS], "4 slower cores left out") != NULL);
    cJSON *o = edge_profile_to_json(&p);
    REQUIRE(o != NULL);
    const cJSON *seqs = cJSON_GetObjectItemCaseSensitive(o, "max_seqs");
    CHECK(cJSON_IsNumber(seqs) && seqs->valuedouble == 1);
    CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "why"), "kv")));
    cJSON_Delete(o);
}

int main(void)
{
    RUN(model_info_tiny);
    RUN(model_info_spark_17b);
    RUN(model_info_tts);
    RUN(derive_x86_server);
    RUN(derive_snapdragon_phone);
    RUN(derive_jetson_orin);
    RUN(derive_raspberry_pi_5);
    RUN(memory_picks_the_format);
    RUN(speech_stops_at_q8_0);
    RUN(smt_and_sharing);
    RUN(allowed_cpus_limit_the_threads);
    RUN(kv_formats_and_context);
    RUN(kv_bytes_match_the_cache);
    RUN(explicit_flags_win);
    RUN(every_choice_explained);
    return check_summary();
}
