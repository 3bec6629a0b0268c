#include "onnx/onnx_audit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "onnx.pb-c.h"

/* The QNN execution provider's HTP op list (its documentation, spec
 * onnx-export.md section 2), less what the S25 team found rejected or what
 * NPU graphs must not use: IsNaN and Where (guards qairt-converter and AI Hub
 * refuse), MatMulNBits (no compressed-weight op on the NPU path). Erf is
 * handled apart: only inside the GELU pattern QNN fuses. */
static const char *const allowed_ops[] = {
    "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Exp", "Neg", "Gelu", "Sigmoid",
    "Tanh", "Softmax", "LogSoftmax", "MatMul", "Gemm", "FusedMatMul", "Einsum", "ReduceMean",
    "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "LayerNormalization",
    "RMSNormalization", "SimplifiedLayerNormalization", "Gather", "GatherElements", "GatherND",
    "Concat", "Split", "Slice", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Expand", "Tile",
    "Pad", "Cast", "Conv", "ConvTranspose", "Resize", "Sin", "Cos", "RotaryEmbedding", "Equal",
    "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "And", "Or", "Not", "CumSum", "TopK",
    "ArgMax", "QuantizeLinear", "DequantizeLinear"};

#define MAX_RANK 5 /* the largest rank any HTP op above takes (most: 4) */

int onnx_audit_op_allowed(const char *op_type)
{
    for (size_t i = 0; i < sizeof allowed_ops / sizeof *allowed_ops; i++)
        if (!strcmp(op_type, allowed_ops[i])) return 1;
    return 0;
}

typedef struct audit {
    const Onnx__GraphProto *g;
    const char *label;
    ember_line_fn line;
    void *user;
    int findings;
    char first[1024];
} audit;

static void say(audit *a, const char *fmt, ...) EMBER_PRINTF(2, 3);
static void say(audit *a, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (a->line) a->line(a->user, buf);
    /* a finding ("FAIL: ...") counts; the first becomes the error message */
    if (!strncmp(buf, "FAIL: ", 6) && !a->findings++)
        snprintf(a->first, sizeof a->first, "%.400s: %.600s", a->label, buf + 6);
}
#define finding(a, ...) say(a, "FAIL: " __VA_ARGS__)

static const char *str(const char *s)
{
    return s ? s : "";
}

static const Onnx__TensorProto *initializer(const audit *a, const char *name)
{
    for (size_t i = 0; i < a->g->n_initializer; i++)
        if (a->g->initializer[i] && !strcmp(str(a->g->initializer[i]->name), name))
            return a->g->initializer[i];
    return NULL;
}

static const Onnx__ValueInfoProto *graph_input(const audit *a, const char *name)
{
    for (size_t i = 0; i < a->g->n_input; i++)
        if (a->g->input[i] && !strcmp(str(a->g->input[i]->name), name)) return a->g->input[i];
    return NULL;
}

static const Onnx__NodeProto *producer(const audit *a, const char *name)
{
    for (size_t i = 0; i < a->g->n_node; i++) {
        const Onnx__NodeProto *n = a->g->node[i];
        for (size_t o = 0; n && o < n->n_output; o++)
            if (!strcmp(str(n->output[o]), name)) return n;
    }
    return NULL;
}

static const char *type_name(int32_t t)
{
    switch (t) {
    case 1: return "float32";
    case 2: return "uint8";
    case 3: return "int8";
    case 4: return "uint16";
    case 5: return "int16";
    case 6: return "int32";
    case 7: return "int64";
    case 9: return "bool";
    case 10: return "float16";
    case 11: return "float64";
    case 16: return "bfloat16";
    case 21: return "uint4";
    case 22: return "int4";
    default: return "other";
    }
}

/* One graph input or output: a tensor with every dim a fixed positive
 * number, no 64-bit integers (QNN casts them), rank the HTP takes. */
static void check_io(audit *a, const Onnx__ValueInfoProto *v, const char *what)
{
    const char *name = v ? str(v->name) : "";
    const Onnx__TypeProto *tp = v ? v->type : NULL;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
        finding(a, "%s %s is not a tensor with a declared type", what, name);
        return;
    }
    const Onnx__TypeProto__Tensor *t = tp->tensor_type;
    const Onnx__TensorShapeProto *sh = t->shape;
    char dims[256] = "";
    size_t used = 0;
    int dynamic = !sh;
    for (size_t i = 0; sh && i < sh->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
        int fixed = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                    d->dim_value > 0;
        dynamic |= !fixed;
        if (used < sizeof dims - 24) {
            int n = fixed ? snprintf(dims + used, sizeof dims - used, "%s%lld", i ? "," : "",
                                     (long long)d->dim_value)
                          : snprintf(dims + used, sizeof dims - used, "%s?", i ? "," : "");
            if (n > 0) used += (size_t)n;
        }
    }
    size_t rank = sh ? sh->n_dim : 0;
    say(a, "%s %s %s [%s] rank %zu", what, name, type_name(t->elem_type), dims, rank);
    if (dynamic) finding(a, "%s %s has a dynamic or missing dimension", what, name);
    if (t->elem_type == 7 || t->elem_type == 11)
        finding(a, "%s %s is %s: use int32 / float32", what, name, type_name(t->elem_type));
    if (rank > MAX_RANK) finding(a, "%s %s has rank %zu (> %d)", what, name, rank, MAX_RANK);
}

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i] && !strcmp(str(n->attribute[i]->name), name)) return n->attribute[i];
    return NULL;
}

static const char *input_at(const Onnx__NodeProto *n, size_t i)
{
    return i < n->n_input && n->input[i] && n->input[i][0] ? n->input[i] : NULL;
}

/* Inputs that must be constants for QNN (static Slice and Reshape). */
static void need_constant(audit *a, const Onnx__NodeProto *n, size_t first, size_t last)
{
    for (size_t i = first; i <= last; i++) {
        const char *in = input_at(n, i);
        if (in && !initializer(a, in))
            finding(a, "%s node %s: input %zu (%s) is not an initializer (QNN needs it static)",
                    str(n->op_type), str(n->name), i, in);
    }
}

/* An axes input given as a rank-0 initializer (the team saw converters
 * reject it: axes are a 1-D list). */
static void axes_rank(audit *a, const Onnx__NodeProto *n, size_t index)
{
    const char *in = input_at(n, index);
    const Onnx__TensorProto *t = in ? initializer(a, in) : NULL;
    if (t && t->n_dims == 0)
        finding(a, "%s node %s: axes initializer %s has rank 0", str(n->op_type), str(n->name), in);
}

static int consumed_by(const audit *a, const char *value, const char *op)
{
    int any = 0;
    for (size_t i = 0; i < a->g->n_node; i++) {
        const Onnx__NodeProto *n = a->g->node[i];
        for (size_t k = 0; n && k < n->n_input; k++)
            if (n->input[k] && !strcmp(n->input[k], value)) {
                if (strcmp(str(n->op_type), op)) return 0;
                any = 1;
            }
    }
    return any;
}

/* Erf reaches the HTP only as part of x*(erf(x/sqrt2)+1)*0.5: its input
 * from a Div or Mul by a constant, its output into Add. */
static void check_erf(audit *a, const Onnx__NodeProto *n)
{
    const char *in = input_at(n, 0);
    const Onnx__NodeProto *p = in ? producer(a, in) : NULL;
    int scaled = p && (!strcmp(str(p->op_type), "Div") || !strcmp(str(p->op_type), "Mul")) &&
                 ((input_at(p, 1) && initializer(a, input_at(p, 1))) ||
                  (input_at(p, 0) && initializer(a, input_at(p, 0))));
    if (!scaled || n->n_output < 1 || !n->output[0] || !consumed_by(a, n->output[0], "Add"))
        finding(a, "Erf node %s is not inside the GELU pattern QNN fuses (a lone Erf is not an "
                   "HTP op)", str(n->name));
}

static void check_gather(audit *a, const Onnx__NodeProto *n)
{
    const char *idx = input_at(n, 1);
    if (!idx) return;
    const Onnx__TensorProto *t = initializer(a, idx);
    const Onnx__ValueInfoProto *v = t ? NULL : graph_input(a, idx);
    int32_t type = t ? t->data_type
                     : v && v->type && v->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
                               v->type->tensor_type
                           ? v->type->tensor_type->elem_type
                           : 0;
    if (type == 7) finding(a, "Gather node %s: int64 indices %s (use int32)", str(n->name), idx);
}

static void check_node(audit *a, const Onnx__NodeProto *n)
{
    const char *op = str(n->op_type), *dom = str(n->domain);
    if (dom[0] && strcmp(dom, "ai.onnx") && strcmp(dom, "com.microsoft")) {
        finding(a, "node %s: op %s in domain %s", str(n->name), op, dom);
        return;
    }
    if (!strcmp(op, "Where") || !strcmp(op, "IsNaN")) {
        finding(a, "node %s: %s guard (rejected by qairt-converter / AI Hub)", str(n->name), op);
        return;
    }
    if (!strcmp(op, "Erf")) {
        check_erf(a, n);
        return;
    }
    if (!onnx_audit_op_allowed(op)) {
        finding(a, "node %s: op %s is not in the QNN HTP allow-list", str(n->name), op);
        return;
    }
    if (!strcmp(op, "Reshape")) {
        const Onnx__AttributeProto *z = attr(n, "allowzero");
        if (z && z->i != 0) finding(a, "Reshape node %s has allowzero=1", str(n->name));
        need_constant(a, n, 1, 1);
    } else if (!strcmp(op, "Slice")) {
        need_constant(a, n, 1, 4);
        axes_rank(a, n, 3);
    } else if (!strcmp(op, "Gather")) {
        check_gather(a, n);
    } else if (!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze") || !strncmp(op, "Reduce", 6)) {
        axes_rank(a, n, 1);
    }
}

typedef struct op_count {
    const char *op;
    int n;
} op_count;

static void list_ops(audit *a)
{
    op_count counts[64];
    int n_counts = 0, other = 0;
    for (size_t i = 0; i < a->g->n_node; i++) {
        const char *op = a->g->node[i] ? str(a->g->node[i]->op_type) : "";
        int k = 0;
        while (k < n_counts && strcmp(counts[k].op, op)) k++;
        if (k == n_counts) {
            if (n_counts == 64) {
                other++;
                continue;
            }
            counts[n_counts++] = (op_count){op, 0};
        }
        counts[k].n++;
    }
    char buf[900];
    size_t used = 0;
    for (int k = 0; k < n_counts && used < sizeof buf - 80; k++) {
        int w = snprintf(buf + used, sizeof buf - used, "%s%.40s x%d", k ? ", " : "", counts[k].op,
                         counts[k].n);
        if (w > 0) used += (size_t)w;
    }
    say(a, "ops: %s%s", used ? buf : "(none)", other ? ", and more" : "");
}

ember_status onnx_audit(const uint8_t *bytes, size_t len, const char *label, ember_line_fn line,
                        void *user)
{
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, bytes);
    if (!m) return ember_fail(EMBER_ERR_FORMAT, "%s: not an ONNX model (protobuf parse failed)", label);
    if (!m->graph) {
        onnx__model_proto__free_unpacked(m, NULL);
        return ember_fail(EMBER_ERR_FORMAT, "%s: the model has no graph", label);
    }
    audit a = {m->graph, label, line, user, 0, ""};
    int64_t opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (o && (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx"))) opset = o->version;
    }
    say(&a, "graph %s: %s, IR %lld, ai.onnx opset %lld, %zu nodes, %zu initializers", label,
        str(m->graph->name), (long long)m->ir_version, (long long)opset, m->graph->n_node,
        m->graph->n_initializer);
    list_ops(&a);
    if (opset < 13 || opset > 21)
        finding(&a, "ai.onnx opset %lld is outside 13..21 (what QNN and qairt-converter take)",
                (long long)opset);
    for (size_t i = 0; i < m->graph->n_input; i++) {
        const Onnx__ValueInfoProto *v = m->graph->input[i];
        if (v && initializer(&a, str(v->name))) continue; /* an initializer listed as input */
        check_io(&a, v, "input");
    }
    for (size_t i = 0; i < m->graph->n_output; i++) check_io(&a, m->graph->output[i], "output");
    for (size_t i = 0; i < m->graph->n_node; i++)
        if (m->graph->node[i]) check_node(&a, m->graph->node[i]);
    if (!a.findings) say(&a, "findings: none");
    onnx__model_proto__free_unpacked(m, NULL);
    if (a.findings)
        return ember_fail(EMBER_ERR_UNSUPPORTED, "%s (%d finding%s in all)", a.first, a.findings,
                          a.findings == 1 ? "" : "s");
    return EMBER_OK;
}
