#include "onnx/ort_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/status.h"

/* The C API's handles are opaque pointers; ember never looks inside. */
typedef struct OrtStatusOpaque ort_status;
typedef void (*ort_fn)(void);

/* What OrtGetApiBase returns: GetApi(version) and GetVersionString(). */
typedef struct ort_api_base {
    const ort_fn *(*get_api)(uint32_t version);
    const char *(*get_version_string)(void);
} ort_api_base;

/* Positions of the entry points ember calls in the OrtApi table (part of
 * ORT's stable ABI: the table only grows at its end). All are in the
 * table's first version, so any ORT release serves. */
enum {
    ORT_GET_ERROR_MESSAGE = 2,
    ORT_CREATE_ENV = 3,
    ORT_CREATE_SESSION = 7,
    ORT_RUN = 9,
    ORT_CREATE_SESSION_OPTIONS = 10,
    ORT_SET_GRAPH_OPTIMIZATION_LEVEL = 23,
    ORT_SET_INTRA_OP_NUM_THREADS = 24,
    ORT_CREATE_TENSOR_WITH_DATA = 49,
    ORT_CREATE_CPU_MEMORY_INFO = 69,
    ORT_RELEASE_ENV = 92,
    ORT_RELEASE_STATUS = 93,
    ORT_RELEASE_MEMORY_INFO = 94,
    ORT_RELEASE_SESSION = 95,
    ORT_RELEASE_VALUE = 96,
    ORT_RELEASE_SESSION_OPTIONS = 100,
    /* providers: asked of the table of version ORT_API_VERSION_PROVIDERS */
    ORT_GET_AVAILABLE_PROVIDERS = 125,
    ORT_RELEASE_AVAILABLE_PROVIDERS = 126,
    ORT_ADD_SESSION_CONFIG_ENTRY = 130,
    ORT_SESSION_OPTIONS_APPEND_EXECUTION_PROVIDER_CUDA_V2 = 204,
    ORT_CREATE_CUDA_PROVIDER_OPTIONS = 205,
    ORT_UPDATE_CUDA_PROVIDER_OPTIONS = 206,
    ORT_RELEASE_CUDA_PROVIDER_OPTIONS = 208,
    ORT_SESSION_OPTIONS_APPEND_EXECUTION_PROVIDER = 216
};
#define ORT_API_VERSION_ASKED 1
/* SessionOptionsAppendExecutionProvider (by name) came with ORT 1.12 */
#define ORT_API_VERSION_PROVIDERS 12
#define MAX_OPTIONS 32
#define ORT_LOG_WARNING 2       /* OrtLoggingLevel */
#define ORT_ARENA_ALLOCATOR 1   /* OrtAllocatorType */
#define ORT_MEM_DEFAULT 0       /* OrtMemType */

typedef const char *(*fn_error_message)(const ort_status *);
typedef ort_status *(*fn_create_env)(int level, const char *logid, void **out);
typedef ort_status *(*fn_create_session)(const void *env, const char *path, const void *opts,
                                         void **out);
typedef ort_status *(*fn_run)(void *sess, const void *run_opts, const char *const *in_names,
                              void *const *inputs, size_t n_in, const char *const *out_names,
                              size_t n_out, void **outputs);
typedef ort_status *(*fn_create_opts)(void **out);
typedef ort_status *(*fn_set_int)(void *opts, int value);
typedef ort_status *(*fn_create_tensor)(const void *info, void *data, size_t bytes,
                                        const int64_t *shape, size_t rank, int type, void **out);
typedef ort_status *(*fn_create_cpu_info)(int alloc_type, int mem_type, void **out);
typedef ort_status *(*fn_append_provider)(void *opts, const char *name, const char *const *keys,
                                          const char *const *values, size_t n);
typedef ort_status *(*fn_create_cuda_opts)(void **out);
typedef ort_status *(*fn_update_cuda_opts)(void *cuda_opts, const char *const *keys, const char *const *values,
                                           size_t n);
typedef ort_status *(*fn_append_cuda)(void *opts, const void *cuda_opts);
typedef ort_status *(*fn_add_config)(void *opts, const char *key, const char *value);
typedef ort_status *(*fn_get_providers)(char ***out, int *n);
typedef ort_status *(*fn_release_providers)(char **list, int n);
typedef void (*fn_release)(void *);
typedef void (*fn_release_status)(ort_status *);

/* A runtime's execution provider and options, parsed from an ort_choice
 * into one owned buffer (the strings point into it). */
typedef struct ort_provider {
    char *asked;          /* the name as the caller gave it */
    const char *name;     /* as ORT spells it */
    char *buf;            /* the options, split in place */
    const char *keys[MAX_OPTIONS], *values[MAX_OPTIONS]; /* the provider's */
    size_t n;
    const char *cfg_keys[MAX_OPTIONS], *cfg_values[MAX_OPTIONS]; /* session config */
    size_t n_cfg;
} ort_provider;

struct ort_runtime {
    void *lib;
    const ort_fn *api;
    const ort_fn *api_providers; /* the table at ORT_API_VERSION_PROVIDERS; NULL: older */
    const char *version;
    void *env;      /* OrtEnv */
    void *cpu_info; /* OrtMemoryInfo for tensors over host buffers */
    ort_provider prov; /* prov.name NULL: the CPU provider */
};

struct ort_graph {
    ort_runtime *rt;
    void *session;
};

#define API(rt, type, index) ((type)(rt)->api[index])

/* Turns an ORT status into an ember error (and releases it). */
static ember_status check(const ort_runtime *rt, ort_status *s, const char *what)
{
    if (!s) return EMBER_OK;
    ember_status st = ember_fail(EMBER_ERR_FORMAT, "onnxruntime: %s: %s", what,
                                 API(rt, fn_error_message, ORT_GET_ERROR_MESSAGE)(s));
    API(rt, fn_release_status, ORT_RELEASE_STATUS)(s);
    return st;
}

ember_status ort_runtime_open(const char *lib_path, ort_runtime **out)
{
    *out = NULL;
    ort_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) return ember_fail(EMBER_ERR_NO_MEMORY, "onnxruntime: out of memory");
    rt->lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!rt->lib) {
        ember_status st = ember_fail(EMBER_ERR_IO, "onnxruntime: cannot load %s: %s", lib_path, dlerror());
        free(rt);
        return st;
    }
    const ort_api_base *(*get_base)(void);
    *(void **)&get_base = dlsym(rt->lib, "OrtGetApiBase");
    const ort_api_base *base = get_base ? get_base() : NULL;
    rt->api = base ? base->get_api(ORT_API_VERSION_ASKED) : NULL;
    if (!rt->api) {
        ort_runtime_close(rt);
        return ember_fail(EMBER_ERR_UNSUPPORTED, "onnxruntime: %s has no usable OrtGetApiBase", lib_path);
    }
    rt->version = base->get_version_string();
    rt->api_providers = base->get_api(ORT_API_VERSION_PROVIDERS);
    ember_status st = check(rt, API(rt, fn_create_env, ORT_CREATE_ENV)(ORT_LOG_WARNING, "ember", &rt->env),
                            "CreateEnv");
    if (!st)
        st = check(rt, API(rt, fn_create_cpu_info, ORT_CREATE_CPU_MEMORY_INFO)(
                           ORT_ARENA_ALLOCATOR, ORT_MEM_DEFAULT, &rt->cpu_info),
                   "CreateCpuMemoryInfo");
    if (st) {
        ort_runtime_close(rt);
        return st;
    }
    *out = rt;
    return EMBER_OK;
}

void ort_runtime_close(ort_runtime *rt)
{
    if (!rt) return;
    if (rt->api) {
        if (rt->cpu_info) API(rt, fn_release, ORT_RELEASE_MEMORY_INFO)(rt->cpu_info);
        if (rt->env) API(rt, fn_release, ORT_RELEASE_ENV)(rt->env);
    }
    /* the library stays loaded: ORT keeps process-wide threads and state
     * that do not survive dlclose */
    free(rt->prov.asked);
    free(rt->prov.buf);
    free(rt);
}

/* ORT's spelling of the providers SessionOptionsAppendExecutionProvider
 * knows by name; another name goes to ORT as given. CUDA has its own entry
 * points (append_cuda). */
static const char *const provider_names[] = {"QNN",    "CoreML", "XNNPACK", "OpenVINO", "DML",   "SNPE",
                                             "WebGPU", "WebNN",  "VitisAI", "AZURE",    "NNAPI", "CUDA"};

/* Splits options ("k=v;k=v") into p's provider options and session
 * config entries. */
static ember_status parse_options(ort_provider *p, const char *options)
{
    if (!options || !*options) return EMBER_OK;
    if (!(p->buf = strdup(options))) return ember_fail(EMBER_ERR_NO_MEMORY, "onnxruntime: out of memory");
    for (char *save = NULL, *item = strtok_r(p->buf, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || eq == item)
            return ember_fail(EMBER_ERR_INVALID_ARG, "onnx option '%s': expected key=value", item);
        *eq = '\0';
        const int cfg = !strncmp(item, "session.", 8) || !strncmp(item, "ep.", 3);
        size_t *n = cfg ? &p->n_cfg : &p->n;
        if (*n == MAX_OPTIONS)
            return ember_fail(EMBER_ERR_INVALID_ARG, "onnx options: more than %d", MAX_OPTIONS);
        (cfg ? p->cfg_keys : p->keys)[*n] = item;
        (cfg ? p->cfg_values : p->values)[(*n)++] = eq + 1;
    }
    return EMBER_OK;
}

static ember_status set_provider(ort_runtime *rt, const ort_choice *c)
{
    ort_provider *p = &rt->prov;
    ember_status st = parse_options(p, c->options);
    if (st) return st;
    if (p->n_cfg && !rt->api_providers)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "onnxruntime %s is older than 1.12: session option %s not "
                          "applied", rt->version, p->cfg_keys[0]);
    if (!c->provider || !strcasecmp(c->provider, "cpu")) {
        if (p->n)
            return ember_fail(EMBER_ERR_INVALID_ARG, "onnx option %s=%s is a provider's option: name the "
                              "provider (--onnx-provider)", p->keys[0], p->values[0]);
        return EMBER_OK;
    }
    if (!*c->provider) return ember_fail(EMBER_ERR_INVALID_ARG, "onnx provider: empty name");
    if (!rt->api_providers)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "onnxruntime %s is older than 1.12: it cannot add the "
                          "execution provider '%s' by name", rt->version, c->provider);
    if (!(p->asked = strdup(c->provider))) return ember_fail(EMBER_ERR_NO_MEMORY, "onnxruntime: out of memory");
    p->name = p->asked;
    for (size_t i = 0; i < sizeof provider_names / sizeof *provider_names; i++)
        if (!strcasecmp(c->provider, provider_names[i])) p->name = provider_names[i];
    return EMBER_OK;
}

ember_status ort_runtime_open_choice(const ort_choice *c, ort_runtime **out)
{
    ember_status st = ort_runtime_open(c->lib ? c->lib : "libonnxruntime.so.1", out);
    if (!st) st = set_provider(*out, c);
    if (st) {
        ort_runtime_close(*out);
        *out = NULL;
    }
    return st;
}

/* The providers this library was built with, comma separated, into buf. */
static void available_providers(const ort_runtime *rt, char *buf, size_t cap)
{
    char **list = NULL;
    int n = 0;
    snprintf(buf, cap, "?");
    ort_status *s = API(rt, fn_get_providers, ORT_GET_AVAILABLE_PROVIDERS)(&list, &n);
    if (s) {
        API(rt, fn_release_status, ORT_RELEASE_STATUS)(s);
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", list[i]);
    s = API(rt, fn_release_providers, ORT_RELEASE_AVAILABLE_PROVIDERS)(list, n);
    if (s) API(rt, fn_release_status, ORT_RELEASE_STATUS)(s);
}

/* The CUDA provider (not known to the by-name call): its options object,
 * updated with the runtime's options, appended. */
static ort_status *append_cuda(const ort_runtime *rt, void *opts)
{
    const ort_fn *api = rt->api_providers;
    const ort_provider *p = &rt->prov;
    void *cuda = NULL;
    ort_status *s = ((fn_create_cuda_opts)api[ORT_CREATE_CUDA_PROVIDER_OPTIONS])(&cuda);
    if (!s) s = ((fn_update_cuda_opts)api[ORT_UPDATE_CUDA_PROVIDER_OPTIONS])(cuda, p->keys, p->values, p->n);
    if (!s) s = ((fn_append_cuda)api[ORT_SESSION_OPTIONS_APPEND_EXECUTION_PROVIDER_CUDA_V2])(opts, cuda);
    if (cuda) ((fn_release)api[ORT_RELEASE_CUDA_PROVIDER_OPTIONS])(cuda);
    return s;
}

/* Adds the runtime's session config entries and provider to opts. */
static ember_status apply_provider(const ort_runtime *rt, void *opts)
{
    const ort_provider *p = &rt->prov;
    ember_status st = EMBER_OK;
    for (size_t i = 0; !st && i < p->n_cfg; i++)
        st = check(rt, ((fn_add_config)rt->api_providers[ORT_ADD_SESSION_CONFIG_ENTRY])(opts, p->cfg_keys[i],
                                                                                       p->cfg_values[i]),
                   p->cfg_keys[i]);
    if (st || !p->name) return st;
    ort_status *s = !strcmp(p->name, "CUDA")
                        ? append_cuda(rt, opts)
                        : ((fn_append_provider)rt->api_providers[ORT_SESSION_OPTIONS_APPEND_EXECUTION_PROVIDER])(
                              opts, p->name, p->keys, p->values, p->n);
    if (!s) return EMBER_OK;
    char have[256];
    available_providers(rt, have, sizeof have);
    st = ember_fail(EMBER_ERR_UNSUPPORTED, "onnxruntime %s: execution provider '%s' (%s) cannot be added: %s "
                    "(this library has: %s)", rt->version, p->asked, p->name,
                    API(rt, fn_error_message, ORT_GET_ERROR_MESSAGE)(s), have);
    API(rt, fn_release_status, ORT_RELEASE_STATUS)(s);
    return st;
}

const char *ort_runtime_version(const ort_runtime *rt)
{
    return rt->version;
}

ember_status ort_graph_load(ort_runtime *rt, const char *model_path, int threads, int level,
                            ort_graph **out)
{
    *out = NULL;
    ort_graph *g = calloc(1, sizeof *g);
    if (!g) return ember_fail(EMBER_ERR_NO_MEMORY, "onnxruntime: out of memory");
    g->rt = rt;
    void *opts = NULL;
    ember_status st = check(rt, API(rt, fn_create_opts, ORT_CREATE_SESSION_OPTIONS)(&opts),
                            "CreateSessionOptions");
    if (!st)
        st = check(rt, API(rt, fn_set_int, ORT_SET_INTRA_OP_NUM_THREADS)(opts, threads),
                   "SetIntraOpNumThreads");
    if (!st)
        st = check(rt, API(rt, fn_set_int, ORT_SET_GRAPH_OPTIMIZATION_LEVEL)(opts, level),
                   "SetSessionGraphOptimizationLevel");
    if (!st && rt->api_providers) st = apply_provider(rt, opts);
    if (!st)
        st = check(rt, API(rt, fn_create_session, ORT_CREATE_SESSION)(rt->env, model_path, opts, &g->session),
                   model_path);
    if (opts) API(rt, fn_release, ORT_RELEASE_SESSION_OPTIONS)(opts);
    if (st) {
        ort_graph_free(g);
        return st;
    }
    *out = g;
    return EMBER_OK;
}

void ort_graph_free(ort_graph *g)
{
    if (!g) return;
    if (g->session) API(g->rt, fn_release, ORT_RELEASE_SESSION)(g->session);
    free(g);
}

ember_status ort_tensor_wrap(ort_runtime *rt, void *data, size_t bytes, const int64_t *dims,
                             int rank, int type, ort_tensor **out)
{
    void *value = NULL;
    *out = NULL;
    ember_status st = check(rt, API(rt, fn_create_tensor, ORT_CREATE_TENSOR_WITH_DATA)(
                                    rt->cpu_info, data, bytes, dims, (size_t)rank, type, &value),
                            "CreateTensorWithDataAsOrtValue");
    if (!st) *out = value;
    return st;
}

void ort_tensor_free(ort_runtime *rt, ort_tensor *t)
{
    if (t) API(rt, fn_release, ORT_RELEASE_VALUE)(t);
}

ember_status ort_graph_run(ort_graph *g, const char *const *in_names,
                           ort_tensor *const *inputs, size_t n_in,
                           const char *const *out_names, ort_tensor **outputs, size_t n_out)
{
    return check(g->rt, API(g->rt, fn_run, ORT_RUN)(g->session, NULL, in_names, (void *const *)inputs,
                                                    n_in, out_names, n_out, (void **)outputs),
                 "Run");
}
