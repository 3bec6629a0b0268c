/* Step statistics (src/base/stats.h): off is a no-op, the summaries and
 * percentiles follow the vLLM-Omni rule (Python's round: half to even), the
 * reservoir overwrites slot count*7919 mod 20000, per-thread recorders merge,
 * the attribution table and the JSON dump, worked out by hand. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/stats.h"
#include "check.h"
#include "io/read_file.h"

static void off_is_noop(void)
{
    ember_stats *st = NULL;
    ember_stats_record(st, EMBER_STAT_SAMPLER, 1.0);
    CHECK(ember_stats_start(st) == 0.0);
    ember_stats_stop(st, EMBER_STAT_SAMPLER, 0.0);
    CHECK(ember_stats_path(NULL, NULL) == NULL);
    CHECK(ember_stats_path("", "") == NULL);
    CHECK(!strcmp(ember_stats_path("a.json", "b.json"), "a.json"));
    CHECK(!strcmp(ember_stats_path("", "b.json"), "b.json"));
    CHECK(!strcmp(ember_stats_path(NULL, "b.json"), "b.json"));
}

/* 1..10: mean 5.5; p50 = sorted[round(4.5)] = sorted[4] = 5 (half to even);
 * p95 = sorted[round(8.55)] = sorted[9] = 10. Two samples 1, 2: p50 =
 * sorted[round(0.5)] = sorted[0] = 1 (C's round() would say 2). */
static void summary_and_percentiles(void)
{
    ember_stats *st;
    REQUIRE(ember_stats_create("text", &st) == EMBER_OK);
    for (int i = 10; i >= 1; i--) ember_stats_record(st, EMBER_STAT_SAMPLER, i);
    ember_stat_summary s;
    REQUIRE(ember_stats_summary(st, EMBER_STAT_SAMPLER, &s) == EMBER_OK);
    CHECK(s.count == 10 && s.sum_ms == 55 && s.mean_ms == 5.5 && s.max_ms == 10);
    CHECK_MSG(s.p50_ms == 5 && s.p95_ms == 10, "p50 %g p95 %g", s.p50_ms, s.p95_ms);
    ember_stats_record(st, EMBER_STAT_DETOKENIZE, 2);
    ember_stats_record(st, EMBER_STAT_DETOKENIZE, 1);
    REQUIRE(ember_stats_summary(st, EMBER_STAT_DETOKENIZE, &s) == EMBER_OK);
    CHECK_MSG(s.p50_ms == 1 && s.p95_ms == 2, "p50 %g p95 %g", s.p50_ms, s.p95_ms);
    REQUIRE(ember_stats_summary(st, EMBER_STAT_TALKER, &s) == EMBER_OK);
    CHECK(s.count == 0 && s.p50_ms == 0);
    ember_stats_record(st, 999, 1.0); /* an id that names no series: ignored */
    ember_stats_record(st, -1, 1.0);
    CHECK(ember_stats_find(st, "sampler") == EMBER_STAT_SAMPLER && ember_stats_find(st, "nope") == -1);
    ember_stats_free(st);
}

/* 20000 samples of 1 fill the reservoir; 5000 of 3 then overwrite the slots
 * count*7919 mod 20000 for counts 20001..25000, all distinct (7919 is prime
 * to 20000): 15000 ones and 5000 threes remain, so p50 = sorted[10000] = 1
 * and p95 = sorted[round(18999.05)] = 3. Without the overwrite p95 would be 1.
 * Another 15000 threes cover every slot: p50 = 3. */
static void reservoir_overwrite(void)
{
    ember_stats *st;
    REQUIRE(ember_stats_create(NULL, &st) == EMBER_OK);
    for (int i = 0; i < 20000; i++) ember_stats_record(st, EMBER_STAT_TALKER, 1.0);
    for (int i = 0; i < 5000; i++) ember_stats_record(st, EMBER_STAT_TALKER, 3.0);
    ember_stat_summary s;
    REQUIRE(ember_stats_summary(st, EMBER_STAT_TALKER, &s) == EMBER_OK);
    CHECK(s.count == 25000 && s.sum_ms == 35000 && s.max_ms == 3);
    CHECK_MSG(s.p50_ms == 1 && s.p95_ms == 3, "p50 %g p95 %g", s.p50_ms, s.p95_ms);
    for (int i = 0; i < 15000; i++) ember_stats_record(st, EMBER_STAT_TALKER, 3.0);
    REQUIRE(ember_stats_summary(st, EMBER_STAT_TALKER, &s) == EMBER_OK);
    CHECK_MSG(s.p50_ms == 3, "p50 %g", s.p50_ms);
    ember_stats_free(st);
}

static void custom_series(void)
{
    ember_stats *st;
    REQUIRE(ember_stats_create("tts", &st) == EMBER_OK);
    int id = -1, id2;
    REQUIRE(ember_stats_add_series(st, "vocoder.pad", EMBER_STAT_SPEECH, &id) == EMBER_OK);
    CHECK(id == EMBER_STAT_N_BUILTIN && ember_stats_find(st, "vocoder.pad") == id);
    CHECK(ember_stats_add_series(st, "vocoder.pad", EMBER_STAT_SPEECH, &id2) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_stats_add_series(st, "talker", EMBER_STAT_SPEECH, &id2) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_stats_add_series(st, "bad name", EMBER_STAT_TEXT, &id2) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_stats_add_series(st, "", EMBER_STAT_TEXT, &id2) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_stats_add_series(st, "x", (ember_stat_domain)7, &id2) == EMBER_ERR_INVALID_ARG);
    int added = 0;
    char name[32];
    for (int i = 0; i < EMBER_STATS_MAX_SERIES; i++) {
        snprintf(name, sizeof name, "extra%d", i);
        if (ember_stats_add_series(st, name, EMBER_STAT_TEXT, &id2) == EMBER_OK) added++;
    }
    CHECK(added == EMBER_STATS_MAX_SERIES - EMBER_STAT_N_BUILTIN - 1);
    CHECK(strstr(ember_last_error(), "in use") != NULL);
    ember_stats_record(st, id, 4.0);
    ember_stat_summary s;
    REQUIRE(ember_stats_summary(st, id, &s) == EMBER_OK);
    CHECK(s.count == 1 && s.sum_ms == 4.0);
    ember_stats *bad = NULL;
    CHECK(ember_stats_create("has space", &bad) == EMBER_ERR_INVALID_ARG && bad == NULL);
    ember_stats_free(st);
}

/* Two threads, one recorder each (as the TTS generator and decoder), merged
 * at the end: nothing lost, a series only the source has is added. */
typedef struct worker {
    ember_stats *st;
    int id;
    double value;
} worker;

static void *record_many(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < 30000; i++) ember_stats_record(w->st, w->id, w->value);
    return NULL;
}

static void merge_threads(void)
{
    ember_stats *gen, *dec;
    REQUIRE(ember_stats_create("tts", &gen) == EMBER_OK);
    REQUIRE(ember_stats_create("tts", &dec) == EMBER_OK);
    int extra;
    REQUIRE(ember_stats_add_series(dec, "dec.wait", EMBER_STAT_SPEECH, &extra) == EMBER_OK);
    worker a = {gen, EMBER_STAT_TALKER, 2.0}, b = {dec, EMBER_STAT_TALKER, 4.0};
    pthread_t ta, tb;
    REQUIRE(pthread_create(&ta, NULL, record_many, &a) == 0);
    REQUIRE(pthread_create(&tb, NULL, record_many, &b) == 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ember_stats_record(dec, extra, 7.0);
    REQUIRE(ember_stats_merge(gen, dec) == EMBER_OK);
    ember_stat_summary s;
    REQUIRE(ember_stats_summary(gen, EMBER_STAT_TALKER, &s) == EMBER_OK);
    CHECK(s.count == 60000 && s.sum_ms == 180000.0 && s.max_ms == 4.0 && s.mean_ms == 3.0);
    /* the reservoir: 20000 twos, then 30000 fours replayed over every slot */
    CHECK_MSG(s.p50_ms == 4.0, "p50 %g", s.p50_ms);
    int id = ember_stats_find(gen, "dec.wait");
    REQUIRE(id >= 0);
    REQUIRE(ember_stats_summary(gen, id, &s) == EMBER_OK);
    CHECK(s.count == 1 && s.sum_ms == 7.0);
    CHECK(ember_stats_merge(gen, gen) == EMBER_ERR_INVALID_ARG);
    ember_stats_free(gen);
    ember_stats_free(dec);
}

/* A text request: 1 prefill of 100 ms, 4 tokens of 50 ms wall, each with
 * 10 ms full layers, 20 ms sliding layers, 5 ms sampler. Token time 50 ms:
 * token 100%, prefill 100 / 4 / 50 = 50%, sliding 40%, full 20%, sampler 10%.
 * Speech: 10 frames with talker 40 ms and predictor 20 ms each, 2 chunks
 * decoded in 100 ms each: talker 40 / 80 = 50%, predictor 25%, codec decode
 * 200 / 10 / 80 = 25% (the spec's mean / 80 would say 125%). */
static ember_stats *worked_example(void)
{
    ember_stats *st;
    if (ember_stats_create("demo", &st) != EMBER_OK) return NULL;
    ember_stats_record(st, EMBER_STAT_PREFILL, 100);
    for (int i = 0; i < 4; i++) {
        ember_stats_record(st, EMBER_STAT_TOKEN, 50);
        ember_stats_record(st, EMBER_STAT_DECODE_FULL, 10);
        ember_stats_record(st, EMBER_STAT_DECODE_SLIDING, 20);
        ember_stats_record(st, EMBER_STAT_SAMPLER, 5);
    }
    for (int i = 0; i < 10; i++) {
        ember_stats_record(st, EMBER_STAT_TALKER, 40);
        ember_stats_record(st, EMBER_STAT_PREDICTOR, 20);
    }
    ember_stats_record(st, EMBER_STAT_CODEC_DECODE, 100);
    ember_stats_record(st, EMBER_STAT_CODEC_DECODE, 100);
    return st;
}

static void attribution_table(void)
{
    ember_stats *st = worked_example();
    REQUIRE(st);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    CHECK(ember_stats_write_table(st, f) == EMBER_OK);
    fclose(f);
    const char *want =
        "text: 4 tokens, 50.00 ms per token\n\n"
        "| role | counter | n | mean ms | p95 ms | share of token |\n|---|---|---|---|---|---|\n"
        "| demo | token | 4 | 50.00 | 50.00 | 100.0% |\n"
        "| demo | prefill | 1 | 100.00 | 100.00 | 50.0% |\n"
        "| demo | decode_sliding | 4 | 20.00 | 20.00 | 40.0% |\n"
        "| demo | decode_full | 4 | 10.00 | 10.00 | 20.0% |\n"
        "| demo | sampler | 4 | 5.00 | 5.00 | 10.0% |\n"
        "\nspeech: 10 frames\n\n"
        "| role | counter | n | mean ms | p95 ms | share of 80 ms |\n|---|---|---|---|---|---|\n"
        "| demo | talker | 10 | 40.00 | 40.00 | 50.0% |\n"
        "| demo | predictor | 10 | 20.00 | 20.00 | 25.0% |\n"
        "| demo | codec_decode | 2 | 100.00 | 100.00 | 25.0% |\n";
    CHECK_MSG(!strcmp(buf, want), "table:\n%s", buf);
    free(buf);
    ember_stats_free(st);

    /* without the token series: tokens = sampler calls, token time = the
     * per-token phases: (10 + 20 + 5) = 35 ms */
    REQUIRE(ember_stats_create("t", &st) == EMBER_OK);
    for (int i = 0; i < 2; i++) {
        ember_stats_record(st, EMBER_STAT_DECODE_FULL, 10);
        ember_stats_record(st, EMBER_STAT_DECODE_SLIDING, 20);
        ember_stats_record(st, EMBER_STAT_SAMPLER, 5);
    }
    f = open_memstream(&buf, &len);
    REQUIRE(f);
    CHECK(ember_stats_write_table(st, f) == EMBER_OK);
    fclose(f);
    CHECK_MSG(strstr(buf, "text: 2 tokens, 35.00 ms per token\n") && strstr(buf, "| t | decode_sliding | 2 | 20.00 | 20.00 | 57.1% |"),
              "table:\n%s", buf);
    CHECK(!strstr(buf, "speech"));
    free(buf);
    ember_stats_free(st);
}

static void json_dump(void)
{
    ember_stats *st = worked_example();
    REQUIRE(st);
    char dir[] = "/tmp/ember-stats-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/stats.json", dir);
    REQUIRE(ember_stats_write_json(st, path) == EMBER_OK);
    char *text = NULL;
    size_t len = 0;
    REQUIRE(io_read_text_file(path, 1 << 20, &text, &len) == EMBER_OK);
    cJSON *j = cJSON_Parse(text);
    free(text);
    REQUIRE(j);
    CHECK(!strcmp(cJSON_GetObjectItem(j, "role")->valuestring, "demo"));
    CHECK(cJSON_GetObjectItem(j, "pid")->valuedouble == (double)getpid());
    cJSON *c = cJSON_GetObjectItem(j, "counters");
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "token"), "count")->valuedouble == 4);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "codec_decode"), "p95_ms")->valuedouble == 100);
    CHECK(cJSON_GetObjectItem(c, "queue_wait") == NULL); /* unused series are left out */
    cJSON *sp = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "attribution"), "speech");
    CHECK(cJSON_GetObjectItem(sp, "frames")->valuedouble == 10);
    cJSON *row0 = cJSON_GetArrayItem(cJSON_GetObjectItem(sp, "rows"), 0);
    CHECK(!strcmp(cJSON_GetObjectItem(row0, "counter")->valuestring, "talker") &&
          cJSON_GetObjectItem(row0, "share")->valuedouble == 0.5);
    cJSON_Delete(j);
    /* atomic: only the file itself is left, no temporary beside it */
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') entries++;
    if (d) closedir(d);
    CHECK(entries == 1);
    /* a directory that does not exist: an error naming the path */
    snprintf(path, sizeof path, "%s/missing/stats.json", dir);
    CHECK(ember_stats_write_json(st, path) == EMBER_ERR_IO && strstr(ember_last_error(), "missing"));
    snprintf(path, sizeof path, "%s/stats.json", dir);
    unlink(path);
    rmdir(dir);
    ember_stats_free(st);
}

int main(void)
{
    RUN(off_is_noop);
    RUN(summary_and_percentiles);
    RUN(reservoir_overwrite);
    RUN(custom_series);
    RUN(merge_threads);
    RUN(attribution_table);
    RUN(json_dump);
    return check_summary();
}
