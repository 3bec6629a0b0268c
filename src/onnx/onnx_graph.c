#include "onnx/onnx_graph.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/convert.h"
#include "kernels/formats.h"
#include "onnx.pb-c.h"

/* Tensors of at least this many elements go to the external data file. */
#define OG_EXTERNAL_MIN 1024

/* Every message, string and array of a graph lives in one arena, freed at
 * once: a built graph is written once and dropped. */
typedef struct og_chunk {
    struct og_chunk *next;
    size_t used, size;
    max_align_t data[];
} og_chunk;

typedef struct og_list {
    void **items;
    size_t n, cap;
} og_list;

struct og_graph {
    ember_status status;
    og_chunk *arena;
    const char *name;
    og_list nodes, inits, inputs, outputs;
    og_data *data;
    int owns_data; /* made by og_create: closed by og_write, removed by og_free */
    unsigned counter;
};

static void *og_alloc(og_graph *g, size_t bytes)
{
    if (g->status) return NULL;
    bytes = (bytes + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    og_chunk *c = g->arena;
    if (!c || c->size - c->used < bytes) {
        size_t size = bytes > 60000 ? bytes : 60000;
        c = malloc(sizeof *c + size);
        if (!c) {
            g->status = ember_fail(EMBER_ERR_NO_MEMORY, "onnx graph: out of memory");
            return NULL;
        }
        c->next = g->arena;
        c->used = 0;
        c->size = size;
        g->arena = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += bytes;
    memset(p, 0, bytes);
    return p;
}

static char *og_strdup(og_graph *g, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = og_alloc(g, n);
    if (p) memcpy(p, s, n);
    return p;
}

static char *og_printf(og_graph *g, const char *fmt, ...) EMBER_PRINTF(2, 3);
static char *og_printf(og_graph *g, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return og_strdup(g, buf);
}

static void og_push(og_graph *g, og_list *l, void *item)
{
    if (g->status || !item) return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        void **grown = realloc(l->items, cap * sizeof *grown);
        if (!grown) {
            g->status = ember_fail(EMBER_ERR_NO_MEMORY, "onnx graph: out of memory");
            return;
        }
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = item;
}

ember_status og_create_shared(const char *name, og_data *data, og_graph **out)
{
    *out = NULL;
    og_graph *g = calloc(1, sizeof *g);
    if (!g) return ember_fail(EMBER_ERR_NO_MEMORY, "onnx graph: out of memory");
    g->name = og_strdup(g, name);
    g->data = data;
    if (g->status) {
        og_free(g);
        return EMBER_ERR_NO_MEMORY;
    }
    *out = g;
    return EMBER_OK;
}

ember_status og_create(const char *name, const char *data_path, const char *data_location,
                       og_graph **out)
{
    og_data *d;
    ember_status st = og_data_open(data_path, data_location, &d);
    if (st) return st;
    st = og_create_shared(name, d, out);
    if (st) {
        og_data_discard(d);
        return st;
    }
    (*out)->owns_data = 1;
    return EMBER_OK;
}

void og_free(og_graph *g)
{
    if (!g) return;
    if (g->owns_data) og_data_discard(g->data); /* never written out: og_write closes it */
    while (g->arena) {
        og_chunk *next = g->arena->next;
        free(g->arena);
        g->arena = next;
    }
    free(g->nodes.items);
    free(g->inits.items);
    free(g->inputs.items);
    free(g->outputs.items);
    free(g);
}

ember_status og_status(const og_graph *g)
{
    return g->status;
}

static Onnx__ValueInfoProto *value_info(og_graph *g, const char *name, int type, int rank,
                                        const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = og_alloc(g, sizeof *vi);
    Onnx__TypeProto *tp = og_alloc(g, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = og_alloc(g, sizeof *tt);
    Onnx__TensorShapeProto *sh = og_alloc(g, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dv = og_alloc(g, (size_t)(rank ? rank : 1) * sizeof *dv);
    if (!vi || !tp || !tt || !sh || !dv) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int i = 0; i < rank; i++) {
        dv[i] = og_alloc(g, sizeof **dv);
        if (!dv[i]) return NULL;
        onnx__tensor_shape_proto__dimension__init(dv[i]);
        dv[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dv[i]->dim_value = dims[i];
    }
    sh->n_dim = (size_t)rank;
    sh->dim = dv;
    tt->has_elem_type = 1;
    tt->elem_type = type;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = og_strdup(g, name);
    vi->type = tp;
    return vi;
}

const char *og_input(og_graph *g, const char *name, int type, int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = value_info(g, name, type, rank, dims);
    og_push(g, &g->inputs, vi);
    return vi ? vi->name : "";
}

void og_output(og_graph *g, const char *name, int type, int rank, const int64_t *dims)
{
    og_push(g, &g->outputs, value_info(g, name, type, rank, dims));
}

static Onnx__TensorProto *tensor(og_graph *g, const char *name, int type, int rank,
                                 const int64_t *dims)
{
    Onnx__TensorProto *t = og_alloc(g, sizeof *t);
    int64_t *d = og_alloc(g, (size_t)(rank ? rank : 1) * sizeof *d);
    if (!t || !d) return NULL;
    onnx__tensor_proto__init(t);
    if (rank) memcpy(d, dims, (size_t)rank * sizeof *d); /* rank 0: a scalar, dims may be NULL */
    t->n_dims = (size_t)rank;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = type;
    t->name = og_strdup(g, name);
    return t;
}

static Onnx__StringStringEntryProto *entry(og_graph *g, const char *key, const char *value)
{
    Onnx__StringStringEntryProto *e = og_alloc(g, sizeof *e);
    if (!e) return NULL;
    onnx__string_string_entry_proto__init(e);
    e->key = og_strdup(g, key);
    e->value = og_strdup(g, value);
    return e;
}

/* Points the tensor at its bytes in the data file (written there unless a
 * graph before stored the same). The file holds the host's byte order:
 * little-endian, as ONNX requires (ember runs on x86-64 and AArch64 only). */
static void put_external(og_graph *g, Onnx__TensorProto *t, const void *bytes, size_t n)
{
    uint64_t offset;
    if (g->status) return;
    ember_status st = og_data_put(g->data, t->name, bytes, n, &offset);
    if (st) {
        g->status = st;
        return;
    }
    Onnx__StringStringEntryProto **ext = og_alloc(g, 3 * sizeof *ext);
    if (!ext) return;
    ext[0] = entry(g, "location", og_data_location(g->data));
    ext[1] = entry(g, "offset", og_printf(g, "%llu", (unsigned long long)offset));
    ext[2] = entry(g, "length", og_printf(g, "%zu", n));
    t->n_external_data = 3;
    t->external_data = ext;
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

static void put_inline(og_graph *g, Onnx__TensorProto *t, const void *bytes, size_t n)
{
    uint8_t *copy = og_alloc(g, n ? n : 1);
    if (!copy) return;
    memcpy(copy, bytes, n);
    t->has_raw_data = 1;
    t->raw_data.len = n;
    t->raw_data.data = copy;
}

const char *og_init_packed(og_graph *g, const char *name, int type, int rank,
                           const int64_t *dims, const void *data, size_t bytes)
{
    Onnx__TensorProto *t = tensor(g, name, type, rank, dims);
    if (!t) return "";
    size_t count = 1;
    for (int i = 0; i < rank; i++) count *= (size_t)dims[i];
    if (count >= OG_EXTERNAL_MIN)
        put_external(g, t, data, bytes);
    else
        put_inline(g, t, data, bytes);
    og_push(g, &g->inits, t);
    return g->status ? "" : t->name;
}

const char *og_init_raw(og_graph *g, const char *name, int type, int rank, const int64_t *dims,
                        const void *data, size_t elem_bytes)
{
    size_t count = 1;
    for (int i = 0; i < rank; i++) count *= (size_t)dims[i];
    return og_init_packed(g, name, type, rank, dims, data, count * elem_bytes);
}

const char *og_init_f32(og_graph *g, const char *name, int rank, const int64_t *dims,
                        const float *data)
{
    return og_init_raw(g, name, OG_FLOAT, rank, dims, data, sizeof *data);
}

const char *og_init_i64(og_graph *g, const char *name, int n, const int64_t *values)
{
    for (size_t i = 0; i < g->inits.n; i++) {
        const Onnx__TensorProto *old = g->inits.items[i];
        if (!strcmp(old->name, name)) {
            if (old->data_type == OG_INT64 && old->raw_data.len == (size_t)n * sizeof *values &&
                !memcmp(old->raw_data.data, values, old->raw_data.len))
                return old->name;
            g->status = ember_fail(EMBER_ERR_INVALID_ARG, "onnx graph: initializer %s redefined", name);
            return "";
        }
    }
    const int64_t dims[1] = {n};
    Onnx__TensorProto *t = tensor(g, name, OG_INT64, 1, dims);
    if (!t) return "";
    put_inline(g, t, values, (size_t)n * sizeof *values);
    og_push(g, &g->inits, t);
    return g->status ? "" : t->name;
}

const char *og_const_f32(og_graph *g, const char *name, float value)
{
    const int64_t one[1] = {1};
    return og_init_f32(g, name, 1, one, &value);
}

const char *og_const_float(og_graph *g, const char *name, int type, float value)
{
    if (type != OG_FLOAT16) return og_const_f32(g, name, value);
    const int64_t one[1] = {1};
    const uint16_t h = ek_f32_to_f16(value);
    return og_init_raw(g, name, OG_FLOAT16, 1, one, &h, sizeof h);
}

static Onnx__AttributeProto *attribute(og_graph *g, const og_attr *a)
{
    Onnx__AttributeProto *p = og_alloc(g, sizeof *p);
    if (!p) return NULL;
    onnx__attribute_proto__init(p);
    p->name = og_strdup(g, a->name);
    p->has_type = 1;
    switch (a->kind) {
    case OG_ATTR_INT:
        p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        p->has_i = 1;
        p->i = a->i;
        break;
    case OG_ATTR_FLOAT:
        p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        p->has_f = 1;
        p->f = a->f;
        break;
    case OG_ATTR_INTS:
        p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        p->ints = og_alloc(g, (size_t)(a->n_ints ? a->n_ints : 1) * sizeof *p->ints);
        if (!p->ints) return NULL;
        memcpy(p->ints, a->ints, (size_t)a->n_ints * sizeof *p->ints);
        p->n_ints = (size_t)a->n_ints;
        break;
    }
    return p;
}

static Onnx__NodeProto *node(og_graph *g, const char *op, int n_in, const char *const *in,
                             int n_attr, const og_attr *attrs)
{
    Onnx__NodeProto *nd = og_alloc(g, sizeof *nd);
    char **inputs = og_alloc(g, (size_t)(n_in ? n_in : 1) * sizeof *inputs);
    Onnx__AttributeProto **at = og_alloc(g, (size_t)(n_attr ? n_attr : 1) * sizeof *at);
    if (!nd || !inputs || !at) return NULL;
    onnx__node_proto__init(nd);
    while (n_in > 0 && !in[n_in - 1]) n_in--;
    for (int i = 0; i < n_in; i++) inputs[i] = og_strdup(g, in[i] ? in[i] : "");
    for (int i = 0; i < n_attr; i++) at[i] = attribute(g, &attrs[i]);
    nd->op_type = og_strdup(g, op);
    nd->n_input = (size_t)n_in;
    nd->input = inputs;
    nd->n_attribute = (size_t)n_attr;
    nd->attribute = at;
    nd->name = og_printf(g, "%s_%u", op, g->counter++);
    return g->status ? NULL : nd;
}

static const char *finish_node(og_graph *g, Onnx__NodeProto *nd, char *out)
{
    char **outs = og_alloc(g, sizeof *outs);
    if (!nd || !outs || !out) return "";
    outs[0] = out;
    nd->n_output = 1;
    nd->output = outs;
    og_push(g, &g->nodes, nd);
    return g->status ? "" : out;
}

const char *og_node(og_graph *g, const char *op, const char *hint, int n_in,
                    const char *const *in, int n_attr, const og_attr *attrs)
{
    Onnx__NodeProto *nd = node(g, op, n_in, in, n_attr, attrs);
    return finish_node(g, nd, og_printf(g, "%s_%u", hint, g->counter++));
}

const char *og_node_named(og_graph *g, const char *op, const char *name, int n_in,
                          const char *const *in, int n_attr, const og_attr *attrs)
{
    Onnx__NodeProto *nd = node(g, op, n_in, in, n_attr, attrs);
    return finish_node(g, nd, og_strdup(g, name));
}

void og_node_multi(og_graph *g, const char *op, const char *hint, int n_in,
                   const char *const *in, int n_out, const char **outs, int n_attr,
                   const og_attr *attrs)
{
    Onnx__NodeProto *nd = node(g, op, n_in, in, n_attr, attrs);
    char **names = og_alloc(g, (size_t)(n_out ? n_out : 1) * sizeof *names);
    for (int i = 0; i < n_out; i++) outs[i] = "";
    if (!nd || !names) return;
    for (int i = 0; i < n_out; i++) {
        names[i] = og_printf(g, "%s_%u_%d", hint, g->counter, i);
        outs[i] = names[i] ? names[i] : "";
    }
    g->counter++;
    nd->n_output = (size_t)n_out;
    nd->output = names;
    og_push(g, &g->nodes, nd);
}

typedef struct file_sink {
    ProtobufCBuffer base;
    FILE *f;
    int failed;
} file_sink;

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    file_sink *s = (file_sink *)b;
    if (!s->failed && fwrite(data, 1, len, s->f) != len) s->failed = 1;
}

ember_status og_write(og_graph *g, const char *path, int64_t ir_version, int64_t opset,
                      const char *producer_version)
{
    if (g->status) return g->status;
    if (g->owns_data) {
        g->owns_data = 0;
        ember_status st = og_data_close(g->data);
        g->data = NULL;
        if (st) return g->status = st;
    }

    Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
    graph.name = (char *)g->name;
    graph.n_node = g->nodes.n;
    graph.node = (Onnx__NodeProto **)g->nodes.items;
    graph.n_initializer = g->inits.n;
    graph.initializer = (Onnx__TensorProto **)g->inits.items;
    graph.n_input = g->inputs.n;
    graph.input = (Onnx__ValueInfoProto **)g->inputs.items;
    graph.n_output = g->outputs.n;
    graph.output = (Onnx__ValueInfoProto **)g->outputs.items;
    Onnx__OperatorSetIdProto ops = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    ops.domain = (char *)"";
    ops.has_version = 1;
    ops.version = opset;
    Onnx__OperatorSetIdProto *ops_list[1] = {&ops};
    Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
    model.has_ir_version = 1;
    model.ir_version = ir_version;
    model.n_opset_import = 1;
    model.opset_import = ops_list;
    model.producer_name = (char *)"ember";
    model.producer_version = (char *)producer_version;
    model.graph = &graph;

    FILE *f = fopen(path, "wb");
    if (!f) return g->status = ember_fail(EMBER_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    file_sink sink = {{sink_append}, f, 0};
    onnx__model_proto__pack_to_buffer(&model, &sink.base);
    if (fclose(f) != 0 || sink.failed) {
        remove(path);
        return g->status = ember_fail(EMBER_ERR_IO, "%s: write failed", path);
    }
    return EMBER_OK;
}
