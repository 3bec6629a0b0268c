/* The public probe and profile (include/ember_profile.h): the hardware
 * profile and the derived profile of src/edge/ as JSON, and the profile
 * applied to load and session parameters (what the CLI's --profile does). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/status.h"
#include "ember.h"
#include "edge/hw_json.h"
#include "edge/model_info.h"
#include "api/api_internal.h"
#include "edge/profile.h"

ember_profile_params ember_profile_default_params(void)
{
    ember_profile_params p;
    memset(&p, 0, sizeof p);
    return p;
}

ember_status api_json_out(cJSON *o, const char *what, char **json)
{
    char *text = o ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (!text) return ember_fail(EMBER_ERR_NO_MEMORY, "%s: out of memory building the JSON", what);
    *json = text;
    return EMBER_OK;
}

ember_status ember_hardware_probe(const ember_profile_params *p, char **json)
{
    if (json) *json = NULL;
    if (!json) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_hardware_probe: json is NULL");
    const ember_profile_params def = ember_profile_default_params();
    if (!p) p = &def;
    edge_hw *hw = malloc(sizeof *hw);
    if (!hw) return ember_fail(EMBER_ERR_NO_MEMORY, "ember_hardware_probe: out of memory");
    ember_status st = edge_hw_for(p->root, p->hardware, hw);
    if (!st) st = api_json_out(edge_hw_to_json(hw), "ember_hardware_probe", json);
    free(hw);
    return st;
}

ember_status ember_profile_derive(const char *model_dir, const ember_profile_params *p, char **json)
{
    if (json) *json = NULL;
    if (!json || !model_dir) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_profile_derive: a NULL argument");
    const ember_profile_params def = ember_profile_default_params();
    if (!p) p = &def;
    edge_hw *hw = malloc(sizeof *hw);
    edge_profile *prof = malloc(sizeof *prof);
    edge_model_info m;
    const edge_derive_opts o = {p->context, p->kv_type, p->prefill_chunk};
    ember_status st = !hw || !prof ? ember_fail(EMBER_ERR_NO_MEMORY, "ember_profile_derive: out of memory")
                                   : edge_hw_for(p->root, p->hardware, hw);
    if (!st) st = edge_model_info_load(model_dir, &m);
    if (!st) st = edge_derive(hw, &m, &o, prof);
    if (!st) {
        cJSON *model = cJSON_CreateObject();
        bool ok = model && cJSON_AddStringToObject(model, "kind", m.kind == EDGE_MODEL_TTS ? "tts" : "llm") &&
                  cJSON_AddStringToObject(model, "stored_type", edge_type_name(m.stored_type)) &&
                  cJSON_AddNumberToObject(model, "n_weights", (double)m.n_weights) &&
                  cJSON_AddNumberToObject(model, "weight_bytes", (double)m.weight_bytes);
        cJSON *root = ok ? cJSON_CreateObject() : NULL;
        cJSON *parts[3] = {edge_hw_to_json(hw), model, edge_profile_to_json(prof)};
        static const char *const keys[3] = {"hardware", "model", "profile"};
        for (int i = 0; i < 3; i++) {
            ok = ok && root && parts[i] && cJSON_AddItemToObject(root, keys[i], parts[i]);
            if (!ok) cJSON_Delete(parts[i]); /* not attached: ours to free */
        }
        if (!ok) {
            cJSON_Delete(root);
            root = NULL;
        }
        st = api_json_out(root, "ember_profile_derive", json);
    }
    free(hw);
    free(prof);
    return st;
}

/* The reasons shown[0..n) joined by newlines into *why (ember_free). */
static ember_status why_text(const edge_profile *prof, const edge_why *shown, size_t n, char **why)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++) len += strlen(prof->why[shown[i]]) + 1;
    char *text = malloc(len), *at = text;
    if (!text) return ember_fail(EMBER_ERR_NO_MEMORY, "ember_profile_apply: out of memory");
    for (size_t i = 0; i < n; i++) at += sprintf(at, "%s%s", i ? "\n" : "", prof->why[shown[i]]);
    *at = 0;
    *why = text;
    return EMBER_OK;
}

static ember_status reason_text(const char *reason, char **why)
{
    if (!(*why = strdup(reason))) return ember_fail(EMBER_ERR_NO_MEMORY, "ember_profile_apply: out of memory");
    return EMBER_OK;
}

ember_status ember_profile_apply(const char *model_dir, const ember_profile_params *p,
                                 ember_model_params *mp, ember_session_params *sp, int *applied,
                                 char **why)
{
    if (applied) *applied = 0;
    if (why) *why = NULL;
    if (!model_dir) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_profile_apply: model_dir is NULL");
    const ember_profile_params def = ember_profile_default_params();
    if (!p) p = &def;
    const ember_session_params sdef = ember_session_default_params();
    const ember_session_params *s = sp ? sp : &sdef;
    const edge_derive_opts o = {s->max_context, s->kv_type, s->prefill_chunk};
    edge_profile *prof = malloc(sizeof *prof);
    if (!prof) return ember_fail(EMBER_ERR_NO_MEMORY, "ember_profile_apply: out of memory");
    char reason[512];
    bool found;
    ember_status st = edge_profile_for(model_dir, p->root, p->hardware, &o, prof, &found, reason, sizeof reason);
    if (!st && !found && why) st = reason_text(reason, why);
    if (!st && found) {
        /* what a text model uses: the format, the threads, the cache */
        static const edge_why shown[] = {EDGE_WHY_DTYPE, EDGE_WHY_THREADS, EDGE_WHY_KV, EDGE_WHY_SEQS};
        if (why) st = why_text(prof, shown, sizeof shown / sizeof *shown, why);
        if (!st) {
            const edge_explicit x = {mp ? mp->weight_type : EMBER_TYPE_NONE, s->n_threads, s->max_context,
                                     s->kv_type};
            edge_profile_apply(prof, &x, mp, sp);
            if (applied) *applied = 1;
        }
    }
    free(prof);
    return st;
}

/* The profile's placement of speech: the generator on the decode CPUs, the
 * audio decoder on its own (on a machine with three or more big cores) or
 * on the same ones; CPUs the caller already chose stay. */
static void place_tts(const edge_profile *prof, ember_tts_params *tp)
{
    if (!tp->n_generator_cpus)
        for (int i = 0; i < edge_cpuset_count(&prof->decode_cpus) && tp->n_generator_cpus < 256; i++)
            tp->generator_cpus[tp->n_generator_cpus++] = edge_cpuset_nth(&prof->decode_cpus, i);
    if (!tp->n_decoder_cpus)
        for (int i = 0; i < edge_cpuset_count(&prof->audio_cpus) && tp->n_decoder_cpus < 256; i++)
            tp->decoder_cpus[tp->n_decoder_cpus++] = edge_cpuset_nth(&prof->audio_cpus, i);
}

ember_status ember_profile_apply_tts(const char *dir, const ember_profile_params *p, ember_tts_params *tp,
                                     int *applied, char **why)
{
    if (applied) *applied = 0;
    if (why) *why = NULL;
    if (!dir) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_profile_apply_tts: dir is NULL");
    const ember_profile_params def = ember_profile_default_params();
    if (!p) p = &def;
    const edge_derive_opts o = {0, EMBER_TYPE_NONE, 0};
    edge_profile *prof = malloc(sizeof *prof);
    if (!prof) return ember_fail(EMBER_ERR_NO_MEMORY, "ember_profile_apply_tts: out of memory");
    char reason[512];
    bool found;
    ember_status st = edge_profile_for(dir, p->root, p->hardware, &o, prof, &found, reason, sizeof reason);
    if (!st && !found && why) st = reason_text(reason, why);
    if (!st && found) {
        static const edge_why shown[] = {EDGE_WHY_DTYPE, EDGE_WHY_THREADS, EDGE_WHY_AUDIO};
        if (why) st = why_text(prof, shown, tp ? 3 : 1, why);
        if (!st && tp) {
            const edge_explicit x = {tp->weight_type, 0, 0, EMBER_TYPE_NONE};
            ember_model_params mp = ember_model_default_params();
            edge_profile_apply(prof, &x, &mp, NULL);
            tp->weight_type = mp.weight_type;
            place_tts(prof, tp);
        }
        if (!st && applied) *applied = 1;
    }
    free(prof);
    return st;
}
