/* The Base speaker path against the PyTorch reference (reference/voice_ref.py,
 * goldens written by reference/voice_golden.py into tests/data/):
 *   - the log mel of the committed clip (read by the WAV reader) against the
 *     float64 reference mel, SNR in dB, held to the reference's own float32
 *     floor less MARGIN_DB;
 *   - the x-vector of the tiny Base checkpoint (made with the generator
 *     command the golden names, in a temporary directory, unless
 *     $EMBER_TTS_BASE_MODEL names one) from that mel and from the golden mel,
 *     on every kernel set this CPU runs and with a thread pool, likewise;
 *   - the speech tokenizer encoder's reference codes of the clip on the
 *     committed models/tts-tiny: every code equal to the float64 reference's
 *     except where the reference itself has a near tie (margin under
 *     NEAR_TIE), and its latent at the float32 floor less MARGIN_DB;
 *   - lengths, configs and models the encoder refuses. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "check.h"
#include "io/read_file.h"
#include "io/wav_read.h"
#include "kernels/matmul.h"
#include "tts/mel.h"
#include "tts/speaker_config.h"
#include "tts/speaker_encoder.h"
#include "tts/speech_encoder.h"

#define GOLDEN "tests/data/voice-golden.json"
#define WAV "tests/data/voice-ref-24k.wav"
#define MEL "tests/data/voice-mel.f32"
/* ember's float32 sums run in other orders than PyTorch's: its error
 * against float64 may sit a few dB under the reference's float32 floor; a
 * semantic error costs tens of dB. */
#define MARGIN_DB 10.0
/* A nearest-codebook choice whose runner-up is this close (in distance) may
 * flip under float32 rounding of the latent (~1e-6 relative here). */
#define NEAR_TIE 1e-4

static cJSON *golden;
static const char *base_model;

static double snr_db(const float *got, const double *want, size_t n)
{
    double s = 0, e = 0;
    for (size_t i = 0; i < n; i++) {
        s += want[i] * want[i];
        e += (got[i] - want[i]) * (got[i] - want[i]);
    }
    return e == 0 ? 999.0 : 10 * log10(s / e);
}

static double floor_of(const char *part)
{
    const cJSON *p = cJSON_GetObjectItem(golden, part);
    const cJSON *f = cJSON_GetObjectItem(p, "float32_floor_snr_db");
    return cJSON_IsNumber(f) ? f->valuedouble : 1e9; /* no floor: every check fails */
}

/* The clip's mel computed here; *frames set. */
static float *clip_mel(int64_t *frames)
{
    wav_info info;
    float *wave, *mel = NULL;
    size_t n;
    mel_frontend *m;
    *frames = 0;
    if (wav_load(WAV, MEL_SAMPLE_RATE, 0, &info, &wave, &n) != EMBER_OK) return NULL;
    if (mel_frontend_create(&m) == EMBER_OK) {
        *frames = mel_frames(n);
        mel = malloc(sizeof(float) * (size_t)*frames * MEL_BINS);
        if (mel_compute(m, wave, n, mel) != EMBER_OK) {
            free(mel);
            mel = NULL;
        }
        mel_frontend_free(m);
    }
    free(wave);
    return mel;
}

static double *golden_mel(size_t *n)
{
    char *raw;
    size_t len;
    *n = 0;
    if (io_read_text_file(MEL, 1 << 24, &raw, &len) != EMBER_OK) return NULL;
    *n = len / sizeof(float);
    double *out = malloc(sizeof(double) * *n);
    for (size_t i = 0; i < *n; i++) {
        float f;
        memcpy(&f, raw + i * sizeof f, sizeof f);
        out[i] = f;
    }
    free(raw);
    return out;
}

static void mel_matches_reference(void)
{
    int64_t T;
    size_t n;
    float *mel = clip_mel(&T);
    double *want = golden_mel(&n);
    REQUIRE(mel && want);
    const cJSON *frames = cJSON_GetObjectItem(cJSON_GetObjectItem(golden, "mel"), "frames");
    CHECK(cJSON_IsNumber(frames) && frames->valueint == T && n == (size_t)T * MEL_BINS);
    if (n == (size_t)T * MEL_BINS) {
        const double db = snr_db(mel, want, n), bar = floor_of("mel") - MARGIN_DB;
        printf("     mel: %lld frames, %.1f dB against the float64 reference (its float32 floor "
               "%.1f dB, bar %.1f)\n", (long long)T, db, floor_of("mel"), bar);
        CHECK_MSG(db >= bar, "mel SNR %.1f dB under the bar %.1f dB", db, bar);
    }
    free(mel);
    free(want);
}

static void mel_lengths(void)
{
    mel_frontend *m;
    REQUIRE(mel_frontend_create(&m) == EMBER_OK);
    /* T = floor((n + 768 - 1024) / 256) + 1 */
    CHECK(mel_frames(384) == 0 && mel_frames(385) == 1 && mel_frames(640) == 2 &&
          mel_frames(1280) == 5 && mel_frames(24000) == 93);
    float x[385] = {0}, out[MEL_BINS];
    EXPECT_FAIL(mel_compute(m, x, 384, out), EMBER_ERR_INVALID_ARG, "384 samples is too short");
    /* silence: every bin at the log floor ln(1e-5) */
    CHECK(mel_compute(m, x, 385, out) == EMBER_OK);
    int at_floor = 1;
    for (int b = 0; b < MEL_BINS; b++) at_floor &= fabsf(out[b] - logf(1e-5f)) < 1e-6f;
    CHECK(at_floor);
    /* the Slaney filters: the first spans FFT bins 1..2, the last starts at
     * bin 485 and reaches 12 kHz, the Nyquist bin 512, where its weight is 0
     * up to rounding (numpy's exp puts the top edge 2e-12 Hz above 12 kHz,
     * a weight of 2e-17 there; libm's exp puts it on 12 kHz) */
    int32_t lo, hi;
    const float *f0 = mel_filter(m, 0, &lo, &hi);
    CHECK(lo == 1 && hi == 3 && f0[0] == 0.0f);
    const float *last = mel_filter(m, MEL_BINS - 1, &lo, &hi);
    CHECK_MSG(lo == 485 && (hi == 512 || hi == 513) && last[MEL_FFT_BINS - 1] < 1e-12f,
              "last filter over bins [%d, %d)", lo, hi);
    mel_frontend_free(m);
}

/* x-vector of `mel` (pool may be NULL); SNR against the golden. */
static double xvector_snr(const spk_encoder *e, ember_pool *pool,
                          const float *mel, int64_t T)
{
    const cJSON *vals = cJSON_GetObjectItem(cJSON_GetObjectItem(golden, "xvector"), "values");
    const int32_t dim = spk_encoder_config(e)->enc_dim;
    if (cJSON_GetArraySize(vals) != dim) return -999.0;
    double want[4096];
    float got[4096];
    for (int32_t i = 0; i < dim && i < 4096; i++) want[i] = cJSON_GetArrayItem(vals, i)->valuedouble;
    if (spk_encoder_xvector(e, pool, mel, T, got) != EMBER_OK) return -998.0;
    return snr_db(got, want, (size_t)dim);
}

static void xvector_matches_reference(void)
{
    if (!base_model) {
        printf("SKIP xvector_matches_reference: no tiny Base checkpoint (needs torch under "
               "/usr/bin/python3 or $EMBER_TTS_BASE_MODEL)\n");
        return;
    }
    int64_t T;
    size_t n;
    float *mel = clip_mel(&T);
    double *want_mel = golden_mel(&n);
    REQUIRE(mel && want_mel && n == (size_t)T * MEL_BINS);
    float *gmel = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) gmel[i] = (float)want_mel[i];
    const double bar = floor_of("xvector") - MARGIN_DB;
    static const char *const sets[] = {"scalar", "generic", "avx2", "avx512", "neon"};
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        const ek_kernel_set *k = ek_kernels_by_name(sets[s]);
        if (!k) continue;
        spk_encoder *e;
        ember_status st = spk_encoder_load(base_model, k, &e);
        CHECK_MSG(st == EMBER_OK, "%s: %s", sets[s], ember_last_error());
        if (st) continue;
        ember_pool *pool = NULL;
        CHECK(pool_create(2, &pool) == EMBER_OK);
        const double from_wav = xvector_snr(e, NULL, mel, T);
        const double from_golden_mel = xvector_snr(e, NULL, gmel, T);
        const double pooled = xvector_snr(e, pool, mel, T);
        printf("     x-vector (%s kernels): %.1f dB from ember's mel, %.1f dB from the golden mel, "
               "%.1f dB on 2 threads (float32 floor %.1f dB, bar %.1f)\n",
               sets[s], from_wav, from_golden_mel, pooled, floor_of("xvector"), bar);
        CHECK_MSG(from_wav >= bar && from_golden_mel >= bar && pooled >= bar,
                  "%s: x-vector SNR %.1f / %.1f / %.1f dB, bar %.1f", sets[s], from_wav,
                  from_golden_mel, pooled, bar);
        CHECK(spk_encoder_min_frames(e) == 5);
        float x[4096];
        EXPECT_FAIL(spk_encoder_xvector(e, NULL, mel, 4, x), EMBER_ERR_INVALID_ARG,
                    "4 mel frames is too short (at least 5");
        pool_free(pool);
        spk_encoder_free(e);
    }
    free(gmel);
    free(mel);
    free(want_mel);
}

static void codes_match_reference(void)
{
    const cJSON *g = cJSON_GetObjectItem(golden, "codes");
    const cJSON *frames = cJSON_GetObjectItem(g, "frames"), *gaps = cJSON_GetObjectItem(g, "gaps");
    const cJSON *lat = cJSON_GetObjectItem(g, "latent"), *model = cJSON_GetObjectItem(g, "model");
    REQUIRE(cJSON_IsArray(frames) && cJSON_IsArray(gaps) && cJSON_IsArray(lat) && cJSON_IsString(model));
    wav_info info;
    float *wave;
    size_t n;
    REQUIRE(wav_load(WAV, 24000, 0, &info, &wave, &n) == EMBER_OK);
    static const char *const sets[] = {"scalar", "avx2", "avx512"};
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        const ek_kernel_set *k = ek_kernels_by_name(sets[s]);
        se_encoder *e;
        if (!k) continue;
        ember_status st = se_encoder_load(model->valuestring, k, &e);
        CHECK_MSG(st == EMBER_OK, "%s", ember_last_error());
        if (st) break;
        const se_config *c = se_encoder_config(e);
        const int64_t F = se_encoder_frames(e, n);
        CHECK(F == cJSON_GetArraySize(frames) && c->n_codes == 16);
        int32_t *codes = malloc(sizeof(int32_t) * (size_t)(F * c->n_codes));
        float *latent = malloc(sizeof(float) * (size_t)(F * c->hidden));
        double *want = malloc(sizeof(double) * (size_t)(F * c->hidden));
        CHECK(se_encoder_encode(e, NULL, wave, n, codes, NULL, latent) == EMBER_OK);
        int mismatches = 0, excused = 0;
        for (int64_t f = 0; f < F && f < cJSON_GetArraySize(frames); f++) {
            const cJSON *fr = cJSON_GetArrayItem(frames, (int)f), *gr = cJSON_GetArrayItem(gaps, (int)f);
            const cJSON *lr = cJSON_GetArrayItem(lat, (int)f);
            for (int32_t q = 0; q < c->n_codes; q++)
                if (codes[f * c->n_codes + q] != cJSON_GetArrayItem(fr, q)->valueint) {
                    mismatches++;
                    excused += cJSON_GetArrayItem(gr, q)->valuedouble < NEAR_TIE;
                }
            for (int32_t i = 0; i < c->hidden; i++) want[f * c->hidden + i] = cJSON_GetArrayItem(lr, i)->valuedouble;
        }
        const double db = snr_db(latent, want, (size_t)(F * c->hidden));
        const double bar = cJSON_GetObjectItem(g, "latent_float32_floor_snr_db")->valuedouble - MARGIN_DB;
        printf("     codes (%s kernels): %lld frames x 16, %d differ from the float64 reference (%d at "
               "its near ties); latent %.1f dB (bar %.1f)\n", sets[s], (long long)F, mismatches,
               excused, db, bar);
        CHECK_MSG(mismatches == excused, "%s: %d codes differ outside near ties", sets[s],
                  mismatches - excused);
        CHECK_MSG(db >= bar, "%s: latent %.1f dB under the bar %.1f", sets[s], db, bar);
        free(codes), free(latent), free(want);
        se_encoder_free(e);
    }
    free(wave);
}

static void refusals(void)
{
    spk_encoder *e = (spk_encoder *)&e;
    EXPECT_FAIL(spk_encoder_load("models/tts-tiny", NULL, &e), EMBER_ERR_UNSUPPORTED,
                "tts_model_type is \"custom_voice\", not \"base\"");
    CHECK(e == NULL);
    spk_config c;
    const char *ok = "{\"tts_model_type\":\"base\",\"speaker_encoder_config\":{\"enc_dim\":2048}}";
    CHECK(spk_config_parse(ok, strlen(ok), "c.json", &c) == EMBER_OK && c.enc_dim == 2048 &&
          c.n_layers == 5 && c.channels[4] == 1536 && c.dilations[3] == 4 && c.res2net_scale == 8);
    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"{\"tts_model_type\":\"base\",\"speaker_encoder_config\":{\"enc_channels\":[8,8,8,8,20]}}",
         "last entry must be the sum"},
        {"{\"tts_model_type\":\"base\",\"speaker_encoder_config\":{\"enc_channels\":[8,8,8]}}",
         "enc_kernel_sizes': must have as many entries as enc_channels"},
        {"{\"tts_model_type\":\"base\",\"speaker_encoder_config\":{\"enc_channels\":[12,12,12,12,36]}}",
         "enc_res2net_scale': must divide"},
        {"{\"tts_model_type\":\"base\",\"speaker_encoder_config\":{\"mel_dim\":80}}", "mel_dim"},
        {"{\"tts_model_type\":\"base\",\"speaker_encoder_config\":{\"sample_rate\":16000}}",
         "sample_rate"},
        {"{\"tts_model_type\":\"base\",\"speaker_encoder_config\":[]}", "must be an object"},
        {"{\"tts_model_type\":\"voice_design\"}", "not \"base\""},
        {"{}", "tts_model_type is missing"},
        {"[1]", "must be a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const ember_status st = spk_config_parse(bad[i].json, strlen(bad[i].json), "c.json", &c);
        CHECK_MSG(st != EMBER_OK && check_error_has(bad[i].needle), "case %zu: %s", i,
                  ember_last_error());
    }
}

/* The tiny Base checkpoint of the golden: $EMBER_TTS_BASE_MODEL, else made
 * with the command the golden records (NULL when that cannot run). */
static char made_dir[64];
static const char *find_base_model(void)
{
    const char *env = getenv("EMBER_TTS_BASE_MODEL");
    if (env && *env) return env;
    const cJSON *cmd = cJSON_GetObjectItem(cJSON_GetObjectItem(golden, "xvector"), "model");
    if (!cJSON_IsString(cmd) || system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        return NULL;
    strcpy(made_dir, "/tmp/ember-test-voice-XXXXXX");
    if (!mkdtemp(made_dir)) return NULL;
    char line[512];
    snprintf(line, sizeof line, "/usr/bin/python3 %s --out %s/base >/dev/null", cmd->valuestring,
             made_dir);
    if (system(line) != 0) return NULL;
    strcat(made_dir, "/base");
    return made_dir;
}

int main(void)
{
    char *text;
    size_t len;
    if (io_read_text_file(GOLDEN, 1 << 20, &text, &len) == EMBER_OK) {
        golden = cJSON_Parse(text);
        free(text);
    }
    if (!golden) {
        printf("FAIL golden: %s is missing or not JSON\n", GOLDEN);
        return 1;
    }
    base_model = find_base_model();
    RUN(mel_matches_reference);
    RUN(mel_lengths);
    RUN(xvector_matches_reference);
    RUN(codes_match_reference);
    RUN(refusals);
    if (made_dir[0]) {
        char line[128];
        *strrchr(made_dir, '/') = '\0';
        snprintf(line, sizeof line, "rm -rf %s", made_dir);
        if (system(line) != 0) printf("     could not remove %s\n", made_dir);
    }
    cJSON_Delete(golden);
    return check_summary();
}
