#include "onnx/ort_api.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

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
    ORT_RELEASE_SESSION_OPTIONS = 100
};
#define ORT_API_VERSION_ASKED 1
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
typedef void (*fn_release)(void *);
typedef void (*fn_release_status)(ort_status *);

struct ort_runtime {
    void *lib;
    const ort_fn *api;
    const char *version;
    void *env;      /* OrtEnv */
    void *cpu_info; /* OrtMemoryInfo for tensors over host buffers */
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
    free(rt);
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
