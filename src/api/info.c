/* Version and build information (include/ember.h). */
#include <stdbool.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/status.h"
#include "ember.h"
#include "kernels/cpu.h"
#include "kernels/matmul.h"

#define EMBER_STR2(x) #x
#define EMBER_STR(x) EMBER_STR2(x)

const char *ember_version_string(void)
{
    return EMBER_STR(EMBER_VERSION_MAJOR) "." EMBER_STR(EMBER_VERSION_MINOR) "." EMBER_STR(EMBER_VERSION_PATCH);
}

#if defined(__x86_64__) || defined(_M_X64)
static const char *const built[] = {"scalar", "avx2", "avx512"};
static const char arch[] = "x86_64";
#elif defined(__aarch64__)
static const char *const built[] = {"scalar", "neon"};
static const char arch[] = "aarch64";
#else
static const char *const built[] = {"scalar"};
static const char arch[] = "generic";
#endif

static bool add_flag(cJSON *o, const char *name, bool on)
{
    return cJSON_AddBoolToObject(o, name, on) != NULL;
}

static bool add_name(cJSON *array, const char *name)
{
    cJSON *s = cJSON_CreateString(name);
    if (s && cJSON_AddItemToArray(array, s)) return true;
    cJSON_Delete(s);
    return false;
}

ember_status ember_build_info(char **json)
{
    if (!json) return ember_fail(EMBER_ERR_INVALID_ARG, "ember_build_info: json is NULL");
    *json = NULL;
    const size_t n_built = sizeof built / sizeof *built;
    const ek_cpu cpu = ek_cpu_detect();
    cJSON *o = cJSON_CreateObject(), *b = NULL, *r = NULL, *c = NULL;
    bool ok = o && cJSON_AddStringToObject(o, "version", ember_version_string()) &&
#if defined(__clang__)
              cJSON_AddStringToObject(o, "compiler", "clang " __clang_version__) &&
#elif defined(__GNUC__)
              cJSON_AddStringToObject(o, "compiler", "gcc " __VERSION__) &&
#else
              cJSON_AddStringToObject(o, "compiler", "unknown") &&
#endif
              cJSON_AddStringToObject(o, "arch", arch) &&
              (b = cJSON_AddArrayToObject(o, "kernels_built")) != NULL &&
              (r = cJSON_AddArrayToObject(o, "kernels_runnable")) != NULL &&
              cJSON_AddStringToObject(o, "kernels_default", ek_kernels_best()->name) &&
              (c = cJSON_AddObjectToObject(o, "cpu")) != NULL;
    for (size_t i = 0; ok && i < n_built; i++) {
        ok = add_name(b, built[i]) && (!ek_kernels_by_name(built[i]) || add_name(r, built[i]));
    }
    ok = ok && add_flag(c, "avx2", cpu.avx2) && add_flag(c, "fma", cpu.fma) && add_flag(c, "f16c", cpu.f16c) &&
         add_flag(c, "avx512f", cpu.avx512f) && add_flag(c, "avx512bw", cpu.avx512bw) &&
         add_flag(c, "avx512vl", cpu.avx512vl) && add_flag(c, "avx512vnni", cpu.avx512vnni) &&
         add_flag(c, "avx512bf16", cpu.avx512bf16) && add_flag(c, "avxvnni", cpu.avxvnni) &&
         add_flag(c, "avx512_full_width", ek_cpu_zmm_full_width()) &&
         add_flag(c, "neon", cpu.neon) && add_flag(c, "dotprod", cpu.dotprod);
    char *text = ok ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (!text) return ember_fail(EMBER_ERR_NO_MEMORY, "ember_build_info: out of memory");
    *json = text;
    return EMBER_OK;
}
