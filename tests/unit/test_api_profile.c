/* The public probe, profile, statistics and build-info calls
 * (include/ember_profile.h, ember_stats.h, ember.h): the JSON they return
 * parses and says what the CLI says, the profile applied to parameters
 * leaves explicit choices alone, and failures are values. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ember.h"

static const char pi5[] = "fuzz/corpus/hw_profile/raspberry-pi-5.json";
static const char spark17[] = "tests/data/hw/models/spark-1.7b";
static const char tts06[] = "tests/data/hw/models/qwen3-tts-0.6b";

static void test_version_and_build_info(void)
{
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", EMBER_VERSION_MAJOR, EMBER_VERSION_MINOR, EMBER_VERSION_PATCH);
    CHECK(!strcmp(ember_version_string(), want));
    char *json = NULL;
    REQUIRE(ember_build_info(&json) == EMBER_OK);
    cJSON *o = cJSON_Parse(json);
    REQUIRE(o);
    CHECK(cJSON_IsString(cJSON_GetObjectItem(o, "version")));
    const cJSON *built = cJSON_GetObjectItem(o, "kernels_built"), *run = cJSON_GetObjectItem(o, "kernels_runnable");
    CHECK(cJSON_GetArraySize(built) >= 1 && cJSON_GetArraySize(run) >= 1);
    CHECK(!strcmp(cJSON_GetArrayItem(run, 0)->valuestring, "scalar"));
    const cJSON *def = cJSON_GetObjectItem(o, "kernels_default");
    int found = 0;
    for (int i = 0; i < cJSON_GetArraySize(run); i++)
        found |= cJSON_IsString(def) && !strcmp(cJSON_GetArrayItem(run, i)->valuestring, def->valuestring);
    CHECK_MSG(found, "kernels_default is not runnable: %s", json);
    CHECK(cJSON_IsObject(cJSON_GetObjectItem(o, "cpu")));
    cJSON_Delete(o);
    ember_free(json);
    CHECK(ember_build_info(NULL) == EMBER_ERR_INVALID_ARG);
}

static void test_probe_snapshot_and_override(void)
{
    ember_profile_params p = ember_profile_default_params();
    p.root = "tests/data/hw/raspberry-pi-5";
    char *json = NULL;
    REQUIRE(ember_hardware_probe(&p, &json) == EMBER_OK);
    cJSON *o = cJSON_Parse(json);
    REQUIRE(o);
    const cJSON *cls = cJSON_GetObjectItem(o, "class");
    CHECK_MSG(cJSON_IsString(cls) && !strcmp(cls->valuestring, "arm64_cpu"), "%s", json);
    cJSON_Delete(o);
    ember_free(json);
    /* this machine, with no override */
    REQUIRE(ember_hardware_probe(NULL, &json) == EMBER_OK);
    CHECK(json && json[0] == '{');
    ember_free(json);
    /* a bad override is a value naming the profile, with no output */
    p = ember_profile_default_params();
    p.hardware = "{\"n_logical\": \"x\"";
    json = (char *)1;
    CHECK(ember_hardware_probe(&p, &json) != EMBER_OK && json == NULL);
    CHECK_MSG(strstr(ember_last_error(), "hardware profile") != NULL, "%s", ember_last_error());
    p.hardware = NULL;
    p.root = "no/such/root";
    CHECK(ember_hardware_probe(&p, &json) == EMBER_ERR_IO && json == NULL);
}

static void test_derive_on_a_pi5(void)
{
    ember_profile_params p = ember_profile_default_params();
    p.hardware = pi5;
    char *json = NULL;
    REQUIRE(ember_profile_derive(spark17, &p, &json) == EMBER_OK);
    cJSON *o = cJSON_Parse(json);
    REQUIRE(o);
    const cJSON *prof = cJSON_GetObjectItem(o, "profile"), *model = cJSON_GetObjectItem(o, "model");
    CHECK(cJSON_IsObject(cJSON_GetObjectItem(o, "hardware")));
    CHECK(!strcmp(cJSON_GetObjectItem(model, "kind")->valuestring, "llm"));
    CHECK_MSG(!strcmp(cJSON_GetObjectItem(prof, "weight_type")->valuestring, "q4_0"), "%s", json);
    CHECK(cJSON_GetObjectItem(prof, "threads")->valueint == 4);
    cJSON_Delete(o);
    ember_free(json);
    CHECK(ember_profile_derive("no/such/model", &p, &json) != EMBER_OK && json == NULL);
    CHECK(strstr(ember_last_error(), "no/such/model") != NULL);
}

static void test_apply_keeps_explicit_choices(void)
{
    ember_profile_params p = ember_profile_default_params();
    p.hardware = pi5;
    ember_model_params mp = ember_model_default_params();
    ember_session_params sp = ember_session_default_params();
    int applied = 0;
    char *why = NULL;
    REQUIRE(ember_profile_apply(spark17, &p, &mp, &sp, &applied, &why) == EMBER_OK);
    CHECK(applied == 1);
    CHECK(mp.weight_type == EMBER_TYPE_Q4_0 && sp.n_threads == 4);
    CHECK_MSG(why && strstr(why, "weights q4_0") && strstr(why, "threads 4"), "%s", why ? why : "(null)");
    ember_free(why);
    /* what the caller set wins */
    mp = ember_model_default_params();
    sp = ember_session_default_params();
    mp.weight_type = EMBER_TYPE_Q8_0;
    sp.n_threads = 2;
    REQUIRE(ember_profile_apply(spark17, &p, &mp, &sp, &applied, NULL) == EMBER_OK);
    CHECK(applied == 1 && mp.weight_type == EMBER_TYPE_Q8_0 && sp.n_threads == 2);
    /* no profile for a model the probe cannot read: nothing changes, OK */
    mp = ember_model_default_params();
    REQUIRE(ember_profile_apply("no/such/model", &p, &mp, NULL, &applied, &why) == EMBER_OK);
    CHECK(applied == 0 && mp.weight_type == EMBER_TYPE_NONE && why && why[0]);
    ember_free(why);
    /* a bad hardware profile is an error */
    p.hardware = "{\"n_logical\": \"x\"";
    CHECK(ember_profile_apply(spark17, &p, &mp, &sp, &applied, NULL) != EMBER_OK && applied == 0);
    /* speech: the talker's format on a Pi 5 is q8_0, not q4_0 */
    p.hardware = pi5;
    ember_tts_params tp = ember_tts_default_params();
    REQUIRE(ember_profile_apply_tts(tts06, &p, &tp, &applied, &why) == EMBER_OK);
    CHECK_MSG(applied == 1 && tp.weight_type == EMBER_TYPE_Q8_0, "%d %d %s", applied, (int)tp.weight_type,
              why ? why : "");
    ember_free(why);
}

static void test_stats_json(void)
{
    ember_stats *st = NULL;
    REQUIRE(ember_stats_create("text", &st) == EMBER_OK);
    for (int i = 1; i <= 10; i++) ember_stats_record_on(st, EMBER_STAT_TOKEN, (double)i);
    char *json = NULL;
    REQUIRE(ember_stats_json(st, &json) == EMBER_OK);
    cJSON *o = cJSON_Parse(json);
    REQUIRE(o);
    const cJSON *tok = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "counters"), "token");
    CHECK(tok && cJSON_GetObjectItem(tok, "count")->valueint == 10);
    CHECK(!strcmp(cJSON_GetObjectItem(o, "role")->valuestring, "text"));
    cJSON_Delete(o);
    ember_free(json);
    ember_stats_free(st);
    CHECK(ember_stats_json(NULL, &json) == EMBER_ERR_INVALID_ARG && json == NULL);
}

int main(void)
{
    RUN(test_version_and_build_info);
    RUN(test_probe_snapshot_and_override);
    RUN(test_derive_on_a_pi5);
    RUN(test_apply_keeps_explicit_choices);
    RUN(test_stats_json);
    return check_summary();
}
