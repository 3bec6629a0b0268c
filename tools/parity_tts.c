/* `ember tts-codes --golden FILE`: the TTS parity check (a measurement, so
 * it reads the model through internals, as `ember parity` does) against a file from
 * reference/tts_golden.py. Free-running greedy frames are compared id for id;
 * then the golden frames are teacher-forced so every recorded talker and
 * predictor logit vector is compared on the reference's own inputs (SNR in
 * dB: signal power over error power, as `ember parity` reports it). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/read_file.h"
#include "cli.h"
#include "tts/tts_session.h"

#define SNR_CAP_DB 300.0 /* reported when the logits match bit for bit */

static double snr_db(const float *ours, const cJSON *ref, int32_t n, int *bad)
{
    double signal = 0.0, noise = 0.0;
    int32_t i = 0;
    const cJSON *e;
    if (!cJSON_IsArray(ref) || cJSON_GetArraySize(ref) != n) {
        *bad = 1;
        return 0.0;
    }
    cJSON_ArrayForEach(e, ref) {
        double r = e->valuedouble, d = (double)ours[i++] - r;
        if (!isfinite((double)ours[i - 1])) *bad = 1;
        signal += r * r;
        noise += d * d;
    }
    if (noise <= 0.0) return SNR_CAP_DB;
    double db = 10.0 * log10(signal / noise);
    return db > SNR_CAP_DB ? SNR_CAP_DB : db;
}

/* A list of lists of ints (the frames) into rows x groups. */
static int32_t *read_frames(const cJSON *a, int32_t groups, int32_t *n)
{
    *n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
    if (*n < 0) return NULL;
    int32_t *out = malloc(((size_t)*n * (size_t)groups + 1) * sizeof *out);
    const cJSON *row, *e;
    int32_t f = 0;
    if (!out) return NULL;
    cJSON_ArrayForEach(row, a) {
        int32_t g = 0;
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != groups) break;
        cJSON_ArrayForEach(e, row) out[(size_t)f * (size_t)groups + (size_t)g++] = (int32_t)e->valuedouble;
        f++;
    }
    if (f != *n) {
        free(out);
        return NULL;
    }
    return out;
}

static const char *str_or_null(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A JSON array of numbers as n int32 or float values (malloc'd; n 0 and
 * NULL when absent or null). -1 when it is something else. */
static int read_numbers(const cJSON *a, int as_float, void **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!a || cJSON_IsNull(a)) return 0;
    if (!cJSON_IsArray(a)) return -1;
    size_t count = (size_t)cJSON_GetArraySize(a), i = 0;
    int32_t *ints = as_float ? NULL : malloc((count + 1) * sizeof *ints);
    float *floats = as_float ? malloc((count + 1) * sizeof *floats) : NULL;
    if (!ints && !floats) return -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        if (!cJSON_IsNumber(e)) {
            free(ints);
            free(floats);
            return -1;
        }
        if (as_float) floats[i++] = (float)e->valuedouble;
        else ints[i++] = (int32_t)e->valuedouble;
    }
    *out = as_float ? (void *)floats : (void *)ints;
    *n = count;
    return 0;
}

static int golden(const tts_model *m, const tts_session_params *base, const char *path, int json)
{
    char *text = NULL;
    size_t len = 0;
    cJSON *root = NULL;
    tts_session *s = NULL;
    int32_t *ids = NULL, *gold = NULL, n_gold = 0, codes[TTS_MAX_GROUPS];
    void *instruct = NULL, *xvector = NULL, *ref_ids = NULL, *ref_codes = NULL;
    const int32_t groups = m->cfg.n_groups;
    int rc = 1;
    if (io_read_text_file(path, (size_t)1 << 30, &text, &len) != EMBER_OK ||
        !(root = cJSON_ParseWithLength(text, len))) {
        fprintf(stderr, "ember tts-codes: %s: %s\n", path,
                text ? "not valid JSON" : ember_last_error());
        goto done;
    }
    const cJSON *settings = cJSON_GetObjectItemCaseSensitive(root, "settings");
    const cJSON *jids = cJSON_GetObjectItemCaseSensitive(root, "text_ids"), *e;
    const cJSON *tl = cJSON_GetObjectItemCaseSensitive(root, "talker_logits");
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(root, "predictor_logits");
    gold = read_frames(cJSON_GetObjectItemCaseSensitive(root, "frames"), groups, &n_gold);
    if (!cJSON_IsObject(settings) || !cJSON_IsArray(jids) || !gold || !cJSON_IsArray(tl) ||
        !cJSON_IsArray(pl)) {
        fprintf(stderr, "ember tts-codes: %s: not a tts golden (settings, text_ids, frames, "
                        "talker_logits, predictor_logits)\n", path);
        goto done;
    }
    size_t n_ids = (size_t)cJSON_GetArraySize(jids), i = 0;
    ids = malloc((n_ids + 1) * sizeof *ids);
    if (!ids) goto done;
    cJSON_ArrayForEach(e, jids) ids[i++] = (int32_t)e->valuedouble;
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(settings, "non_streaming");
    const cJSON *nf = cJSON_GetObjectItemCaseSensitive(settings, "frames");
    /* the voice: an instruction's ids, a Base model's x-vector */
    size_t n_instruct = 0, n_xvector = 0, n_ref_ids = 0, n_ref_codes = 0;
    if (read_numbers(cJSON_GetObjectItemCaseSensitive(settings, "instruct_ids"), 0, &instruct, &n_instruct) ||
        read_numbers(cJSON_GetObjectItemCaseSensitive(root, "xvector"), 1, &xvector, &n_xvector) ||
        (xvector && n_xvector != (size_t)m->cfg.talker.hidden) ||
        read_numbers(cJSON_GetObjectItemCaseSensitive(settings, "ref_ids"), 0, &ref_ids, &n_ref_ids) ||
        read_numbers(cJSON_GetObjectItemCaseSensitive(root, "ref_codes"), 0, &ref_codes, &n_ref_codes) ||
        n_ref_codes % (size_t)groups) {
        fprintf(stderr, "ember tts-codes: %s: settings.instruct_ids, ref_ids, xvector (%d floats) or ref_codes "
                        "(frames of %d) malformed\n", path, m->cfg.talker.hidden, groups);
        goto done;
    }
    tts_request rq = {ids, n_ids, str_or_null(settings, "speaker"), str_or_null(settings, "language"),
                      cJSON_IsFalse(ns), 1, 0, cJSON_IsNumber(nf) ? (int32_t)nf->valuedouble : n_gold, 0, NULL,
                      instruct, n_instruct, xvector, ref_ids, n_ref_ids, ref_codes,
                      (int32_t)(n_ref_codes / (size_t)groups)};
    tts_session_params sp = *base;
    sp.max_context = (int32_t)(n_ids + n_instruct + n_ref_ids) + rq.n_ref_frames + 16 + rq.max_frames;
    if (tts_session_create(m, &sp, &s) != EMBER_OK || tts_session_start(s, &rq) != EMBER_OK) {
        fprintf(stderr, "ember tts-codes: %s\n", ember_last_error());
        goto done;
    }
    /* 1. free-running greedy frames */
    int32_t n_ours = 0, equal = 0, first_mismatch = -1;
    int done = 0, bad = 0;
    for (;;) {
        if (tts_session_step(s, NULL, codes, &done) != EMBER_OK) {
            fprintf(stderr, "ember tts-codes: %s\n", ember_last_error());
            goto done;
        }
        if (done) break;
        int same = n_ours < n_gold && !memcmp(codes, gold + (size_t)n_ours * (size_t)groups,
                                              (size_t)groups * sizeof *codes);
        if (same && first_mismatch < 0) equal++;
        else if (first_mismatch < 0) first_mismatch = n_ours;
        n_ours++;
    }
    if (first_mismatch < 0 && n_ours != n_gold) first_mismatch = n_ours < n_gold ? n_ours : n_gold;
    /* 2. teacher-forced logits along the golden frames */
    if (tts_session_start(s, &rq) != EMBER_OK) goto done;
    const int32_t n_tl = cJSON_GetArraySize(tl), n_pl = cJSON_GetArraySize(pl);
    double t_snr[64], p_snr[64][TTS_MAX_GROUPS], t_min = SNR_CAP_DB, p_min = SNR_CAP_DB;
    for (int32_t f = 0; f < n_gold && (f < n_tl || f < n_pl) && f < 64; f++) {
        if (f < n_tl) {
            t_snr[f] = snr_db(tts_session_talker_logits(s), cJSON_GetArrayItem(tl, f), m->cfg.talker.vocab, &bad);
            if (t_snr[f] < t_min) t_min = t_snr[f];
        }
        if (tts_session_step(s, gold + (size_t)f * (size_t)groups, codes, &done) != EMBER_OK || done) {
            fprintf(stderr, "ember tts-codes: forced frame %d: %s\n", f, done ? "ended early" : ember_last_error());
            goto done;
        }
        if (f < n_pl) {
            const cJSON *rows = cJSON_GetArrayItem(pl, f);
            for (int32_t g = 0; g + 1 < groups; g++) {
                p_snr[f][g] = snr_db(tts_session_predictor_logits(s, g), cJSON_GetArrayItem(rows, g),
                                     m->cfg.predictor.vocab, &bad);
                if (p_snr[f][g] < p_min) p_min = p_snr[f][g];
            }
        }
    }
    if (json) {
        printf("{\"golden_frames\": %d, \"frames\": %d, \"frames_equal\": %d, \"first_mismatch\": ",
               n_gold, n_ours, equal);
        if (first_mismatch < 0) printf("null");
        else printf("%d", first_mismatch);
        printf(", \"agreement\": %.4f, \"talker_snr_db\": [", n_gold ? (double)equal / n_gold : 1.0);
        for (int32_t f = 0; f < n_tl && f < 64; f++) printf("%s%.2f", f ? ", " : "", t_snr[f]);
        printf("], \"predictor_snr_db\": [");
        for (int32_t f = 0; f < n_pl && f < 64; f++) {
            printf("%s[", f ? ", " : "");
            for (int32_t g = 0; g + 1 < groups; g++) printf("%s%.2f", g ? ", " : "", p_snr[f][g]);
            printf("]");
        }
        printf("], \"talker_snr_min\": %.2f, \"predictor_snr_min\": %.2f, \"non_finite\": %s, "
               "\"weights_unconverted\": %d}\n",
               t_min, p_min, bad ? "true" : "false", m->n_unconverted);
    } else {
        printf("greedy frames: %d of %d equal (first mismatch %d); logits SNR min: talker %.2f dB, "
               "predictor %.2f dB%s\n",
               equal, n_gold, first_mismatch, t_min, p_min, bad ? "; NON-FINITE or misshaped logits" : "");
    }
    rc = bad ? 1 : 0;
done:
    tts_session_free(s);
    cJSON_Delete(root);
    free(text);
    free(ids);
    free(gold);
    free(instruct);
    free(xvector);
    free(ref_ids);
    free(ref_codes);
    return rc;
}

int parity_tts_golden(const char *dir, ember_type weight_type, const char *kernels, int32_t n_threads,
                      const char *path, int json)
{
    tts_model_params tp = {weight_type, kernels};
    tts_session_params sp = tts_session_default_params();
    sp.n_threads = n_threads;
    tts_model *m = NULL;
    if (tts_model_load(dir, &tp, &m) != EMBER_OK) {
        fprintf(stderr, "ember tts-codes: %s\n", ember_last_error());
        return 1;
    }
    int rc = golden(m, &sp, path, json);
    tts_model_free(m);
    return rc;
}
