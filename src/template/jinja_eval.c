/* The evaluator: statements write into an output buffer, expressions yield
 * values. Scoping follows @huggingface/jinja: a for loop gets one scope for
 * all its iterations (a `set` inside it is gone after the loop), if blocks
 * get none, a macro body runs in a child of the scope it is *called* from,
 * and break/continue drop the output of the iteration they leave. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja.h"
#include "template/jinja_internal.h"

#define TRY(x)                                                                                \
    do {                                                                                      \
        ember_status st_ = (x);                                                               \
        if (st_) return st_;                                                                  \
    } while (0)

ember_status ej_rt_fail(ej_rt *rt, const ej_node *n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ej_fail_at(EMBER_ERR_INVALID_ARG, rt->t->src, rt->t->src_len, n ? n->pos : 0, "%s", msg);
}

ember_status ej_rt_str(ej_rt *rt, const ej_buf *b, ej_value *out)
{
    char *s = ej_strdup_arena(&rt->arena, b->p ? b->p : "", b->n);
    if (!s) return EMBER_ERR_NO_MEMORY;
    *out = ej_string((ej_str){s, b->n});
    return EMBER_OK;
}

/* ---- scopes */
static ej_scope *scope_new(ej_rt *rt, ej_scope *parent)
{
    ej_scope *s = ej_alloc(&rt->arena, sizeof *s);
    if (s) s->parent = parent;
    return s;
}

static ej_value scope_lookup(const ej_scope *s, ej_str name)
{
    for (; s; s = s->parent) {
        ej_value *v = ej_dict_get(&s->vars, name);
        if (v) return *v;
    }
    return ej_undef();
}

static ember_status scope_set(ej_rt *rt, ej_scope *s, ej_str name, ej_value v)
{
    return ej_dict_set(&rt->arena, &s->vars, name, v);
}

static ember_status exec_block(ej_rt *rt, ej_scope *env, ej_node *const *body, size_t n, ej_buf *out);

static ember_status step(ej_rt *rt, const ej_node *n)
{
    if (++rt->steps > EJ_MAX_STEPS)
        return ej_rt_fail(rt, n, "render takes more than %u evaluation steps", EJ_MAX_STEPS);
    if (rt->depth > EJ_MAX_EVAL_DEPTH)
        return ej_rt_fail(rt, n, "evaluation nested deeper than %d levels", EJ_MAX_EVAL_DEPTH);
    return EMBER_OK;
}

static const char *op_name(ej_op op)
{
    static const char *const names[] = {
        [EJO_NONE] = "?", [EJO_ADD] = "+", [EJO_SUB] = "-", [EJO_CONCAT] = "~", [EJO_MUL] = "*",
        [EJO_DIV] = "/", [EJO_FLOORDIV] = "//", [EJO_MOD] = "%", [EJO_POW] = "**",
        [EJO_EQ] = "==", [EJO_NE] = "!=", [EJO_LT] = "<", [EJO_GT] = ">", [EJO_LE] = "<=",
        [EJO_GE] = ">=", [EJO_AND] = "and", [EJO_OR] = "or", [EJO_NOT] = "not", [EJO_IN] = "in",
        [EJO_NOT_IN] = "not in", [EJO_NEG] = "-", [EJO_POS] = "+"};
    return names[op];
}

/* ---- expressions */
static bool numeric_like(ej_value v) { return ej_is_number(v) || v.kind == EJV_BOOL; }
static double numeric_of(ej_value v) { return v.kind == EJV_BOOL ? (double)v.u.b : v.u.num; }

static ember_status concat_strings(ej_rt *rt, ej_value l, ej_value r, ej_value *out)
{
    ej_buf b = {0};
    ember_status st = ej_js_string(&b, l);
    if (!st) st = ej_js_string(&b, r);
    if (!st) st = ej_rt_str(rt, &b, out);
    ej_buf_free(&b);
    return st;
}

static bool str_contains(ej_str hay, ej_str needle)
{
    if (needle.n == 0) return true;
    if (needle.n > hay.n) return false;
    for (size_t i = 0; i + needle.n <= hay.n; i++)
        if (!memcmp(hay.s + i, needle.s, needle.n)) return true;
    return false;
}

static ember_status eval_binary(ej_rt *rt, ej_scope *env, const ej_node *n, ej_value *out)
{
    ej_value l, r;
    TRY(ej_eval(rt, env, n->a, &l));
    if (n->op == EJO_AND) return ej_truthy(l) ? ej_eval(rt, env, n->b, out) : (*out = l, EMBER_OK);
    if (n->op == EJO_OR) return ej_truthy(l) ? (*out = l, EMBER_OK) : ej_eval(rt, env, n->b, out);
    TRY(ej_eval(rt, env, n->b, &r));
    ej_op op = n->op;
    if (op == EJO_EQ || op == EJO_NE) {
        *out = ej_bool(ej_loose_equal(l, r) == (op == EJO_EQ));
        return EMBER_OK;
    }
    bool membership = op == EJO_IN || op == EJO_NOT_IN;
    if (l.kind == EJV_UNDEF || r.kind == EJV_UNDEF) {
        if (r.kind == EJV_UNDEF && membership) {
            *out = ej_bool(op == EJO_NOT_IN);
            return EMBER_OK;
        }
        return ej_rt_fail(rt, n, "Cannot perform operation %s on undefined values", op_name(op));
    }
    if (l.kind == EJV_NONE || r.kind == EJV_NONE)
        return ej_rt_fail(rt, n, "Cannot perform operation on null values");
    if (op == EJO_CONCAT) return concat_strings(rt, l, r, out);
    if (op == EJO_POW && numeric_like(l) && numeric_like(r)) {
        double a = numeric_of(l), b = numeric_of(r);
        if (a == 0 && b < 0) return ej_rt_fail(rt, n, "0.0 cannot be raised to a negative power");
        double x = pow(a, b);
        if (!isfinite(x)) return ej_rt_fail(rt, n, "exponentiation result is not a finite real number");
        *out = l.kind == EJV_FLOAT || r.kind == EJV_FLOAT || b < 0 ? ej_float(x) : ej_int(x);
        return EMBER_OK;
    }
    if (ej_is_number(l) && ej_is_number(r)) {
        double a = l.u.num, b = r.u.num;
        bool flt = l.kind == EJV_FLOAT || r.kind == EJV_FLOAT;
        switch (op) {
        case EJO_ADD: *out = flt ? ej_float(a + b) : ej_int(a + b); return EMBER_OK;
        case EJO_SUB: *out = flt ? ej_float(a - b) : ej_int(a - b); return EMBER_OK;
        case EJO_MUL: *out = flt ? ej_float(a * b) : ej_int(a * b); return EMBER_OK;
        case EJO_DIV: *out = ej_float(a / b); return EMBER_OK;
        case EJO_FLOORDIV: *out = flt ? ej_float(floor(a / b)) : ej_int(floor(a / b)); return EMBER_OK;
        case EJO_MOD: *out = flt ? ej_float(fmod(a, b)) : ej_int(fmod(a, b)); return EMBER_OK;
        case EJO_LT: *out = ej_bool(a < b); return EMBER_OK;
        case EJO_GT: *out = ej_bool(a > b); return EMBER_OK;
        case EJO_GE: *out = ej_bool(a >= b); return EMBER_OK;
        case EJO_LE: *out = ej_bool(a <= b); return EMBER_OK;
        default: break;
        }
    } else if (l.kind == EJV_LIST && r.kind == EJV_LIST) {
        if (op == EJO_ADD) {
            ej_list *c = ej_list_new(&rt->arena, l.u.list->n + r.u.list->n);
            if (!c) return EMBER_ERR_NO_MEMORY;
            for (size_t i = 0; i < l.u.list->n; i++) c->items[c->n++] = l.u.list->items[i];
            for (size_t i = 0; i < r.u.list->n; i++) c->items[c->n++] = r.u.list->items[i];
            *out = ej_list_value(c);
            return EMBER_OK;
        }
    } else if (r.kind == EJV_LIST && membership) {
        bool found = false;
        for (size_t i = 0; i < r.u.list->n && !found; i++) found = ej_strict_equal(r.u.list->items[i], l);
        *out = ej_bool(found == (op == EJO_IN));
        return EMBER_OK;
    }
    if ((l.kind == EJV_STR || r.kind == EJV_STR) && op == EJO_ADD) return concat_strings(rt, l, r, out);
    if (l.kind == EJV_STR && r.kind == EJV_STR && membership) {
        *out = ej_bool(str_contains(r.u.str, l.u.str) == (op == EJO_IN));
        return EMBER_OK;
    }
    if (l.kind == EJV_STR && r.kind == EJV_DICT && membership) {
        *out = ej_bool((ej_dict_get(r.u.dict, l.u.str) != NULL) == (op == EJO_IN));
        return EMBER_OK;
    }
    return ej_rt_fail(rt, n, "Unknown operator \"%s\" between %s and %s", op_name(op), ej_kind_name(l),
                      ej_kind_name(r));
}

static ember_status eval_unary(ej_rt *rt, ej_scope *env, const ej_node *n, ej_value *out)
{
    ej_value v;
    TRY(ej_eval(rt, env, n->a, &v));
    if (n->op == EJO_NOT) {
        *out = ej_bool(!ej_truthy(v));
        return EMBER_OK;
    }
    if (!numeric_like(v))
        return ej_rt_fail(rt, n, "Unknown operator \"%s\" for %s", op_name(n->op), ej_kind_name(v));
    double x = numeric_of(v) * (n->op == EJO_NEG ? -1 : 1);
    *out = v.kind == EJV_FLOAT ? ej_float(x) : ej_int(x);
    return EMBER_OK;
}

/* Python-style slicing as the reference does it (its slice() in utils). */
static void slice_bounds(long len, const ej_value *start, const ej_value *stop, long step, long *from,
                         long *to)
{
    long s, e;
    if (step >= 0) {
        s = start->kind == EJV_UNDEF ? 0 : (long)start->u.num;
        e = stop->kind == EJV_UNDEF ? len : (long)stop->u.num;
        s = s < 0 ? (len + s > 0 ? len + s : 0) : (s < len ? s : len);
        e = e < 0 ? (len + e > 0 ? len + e : 0) : (e < len ? e : len);
    } else {
        s = start->kind == EJV_UNDEF ? len - 1 : (long)start->u.num;
        e = stop->kind == EJV_UNDEF ? -1 : (long)stop->u.num;
        s = s < 0 ? (len + s > -1 ? len + s : -1) : (s < len - 1 ? s : len - 1);
        e = e < -1 ? (len + e > -1 ? len + e : -1) : (e < len - 1 ? e : len - 1);
    }
    *from = s;
    *to = e;
}

static ember_status eval_slice(ej_rt *rt, ej_scope *env, const ej_node *n, ej_value obj, ej_value *out)
{
    if (obj.kind != EJV_LIST && obj.kind != EJV_STR)
        return ej_rt_fail(rt, n, "slice object must be an array or string");
    ej_value parts[3];
    const ej_node *nodes[3] = {n->a, n->b, n->c};
    for (int i = 0; i < 3; i++) {
        parts[i] = ej_undef();
        if (nodes[i]) TRY(ej_eval(rt, env, nodes[i], &parts[i]));
        if (parts[i].kind != EJV_INT && parts[i].kind != EJV_UNDEF)
            return ej_rt_fail(rt, n, "slice %s must be an integer or undefined",
                              i == 0 ? "start" : i == 1 ? "stop" : "step");
        if (parts[i].kind == EJV_INT && fabs(parts[i].u.num) > 1e15)
            parts[i].u.num = parts[i].u.num < 0 ? -1e15 : 1e15;
    }
    long stepv = parts[2].kind == EJV_UNDEF ? 1 : (long)parts[2].u.num;
    long dir = stepv > 0 ? 1 : stepv < 0 ? -1 : 0;
    /* strings slice by code point (Array.from), lists by item */
    size_t len = 0;
    size_t *cp_at = NULL;
    if (obj.kind == EJV_LIST) {
        len = obj.u.list->n;
    } else {
        cp_at = ej_alloc(&rt->arena, (obj.u.str.n + 1) * sizeof *cp_at);
        if (!cp_at) return EMBER_ERR_NO_MEMORY;
        for (size_t i = 0; i < obj.u.str.n;) {
            cp_at[len++] = i;
            ej_utf8_next(obj.u.str.s, obj.u.str.n, &i);
        }
        cp_at[len] = obj.u.str.n;
    }
    long from, to;
    slice_bounds((long)len, &parts[0], &parts[1], stepv, &from, &to);
    size_t count = 0;
    for (long i = from; dir != 0 && dir * i < dir * to; i += stepv) count++;
    if (obj.kind == EJV_LIST) {
        ej_list *l = ej_list_new(&rt->arena, count);
        if (!l) return EMBER_ERR_NO_MEMORY;
        for (long i = from; dir != 0 && dir * i < dir * to; i += stepv) l->items[l->n++] = obj.u.list->items[i];
        *out = ej_list_value(l);
        return EMBER_OK;
    }
    char *s = ej_alloc(&rt->arena, obj.u.str.n + 1);
    if (!s) return EMBER_ERR_NO_MEMORY;
    size_t o = 0;
    for (long i = from; dir != 0 && dir * i < dir * to; i += stepv) {
        size_t k = cp_at[i + 1] - cp_at[i];
        if (o + k > obj.u.str.n) break; /* cannot happen: each code point at most once */
        memcpy(s + o, obj.u.str.s + cp_at[i], k);
        o += k;
    }
    *out = ej_string((ej_str){s, o});
    return EMBER_OK;
}

/* str.at(i): the UTF-16 code unit at i; half of a surrogate pair reads as U+FFFD. */
static ember_status string_at(ej_rt *rt, ej_str s, double index, ej_value *out)
{
    double len = (double)ej_utf16_length(s);
    double k = index < 0 ? len + index : index;
    *out = ej_undef();
    if (k < 0 || k >= len) return EMBER_OK;
    size_t unit = 0;
    for (size_t i = 0; i < s.n;) {
        size_t start = i;
        uint32_t cp = ej_utf8_next(s.s, s.n, &i);
        size_t w = cp >= 0x10000 ? 2 : 1;
        if ((double)(unit + w) > k) {
            const char *p = w == 2 ? "\xef\xbf\xbd" : s.s + start;
            size_t n = w == 2 ? 3 : i - start;
            char *c = ej_strdup_arena(&rt->arena, p, n);
            if (!c) return EMBER_ERR_NO_MEMORY;
            *out = ej_string((ej_str){c, n});
            return EMBER_OK;
        }
        unit += w;
    }
    return EMBER_OK;
}

static ember_status eval_member(ej_rt *rt, ej_scope *env, const ej_node *n, ej_value *out)
{
    ej_value obj, prop;
    TRY(ej_eval(rt, env, n->a, &obj));
    if (n->flag) {
        if (n->b->kind == EJN_SLICE) return eval_slice(rt, env, n->b, obj, out);
        TRY(ej_eval(rt, env, n->b, &prop));
    } else if (n->b->kind == EJN_INT) {
        prop = ej_int(n->b->num);
    } else {
        prop = ej_string(n->b->str);
    }
    *out = ej_undef();
    if (obj.kind == EJV_DICT || obj.kind == EJV_NS) {
        if (prop.kind != EJV_STR)
            return ej_rt_fail(rt, n, "Cannot access property with non-string: got %s", ej_kind_name(prop));
        ej_value *v = ej_dict_get(obj.u.dict, prop.u.str);
        if (v) {
            *out = *v;
            return EMBER_OK;
        }
        bool ok;
        if (obj.kind == EJV_DICT) return ej_builtin_attribute(rt, obj, prop.u.str, out, &ok);
        return EMBER_OK;
    }
    if (obj.kind == EJV_LIST || obj.kind == EJV_STR) {
        if (prop.kind == EJV_INT) {
            if (obj.kind == EJV_STR) return string_at(rt, obj.u.str, prop.u.num, out);
            double len = (double)obj.u.list->n, k = prop.u.num < 0 ? len + prop.u.num : prop.u.num;
            if (k >= 0 && k < len) *out = obj.u.list->items[(size_t)k];
            return EMBER_OK;
        }
        if (prop.kind == EJV_STR) {
            bool ok;
            return ej_builtin_attribute(rt, obj, prop.u.str, out, &ok);
        }
        return ej_rt_fail(rt, n, "Cannot access property with non-string/non-number: got %s",
                          ej_kind_name(prop));
    }
    if (prop.kind != EJV_STR)
        return ej_rt_fail(rt, n, "Cannot access property with non-string: got %s", ej_kind_name(prop));
    return EMBER_OK; /* numbers, booleans, None, undefined have no attributes */
}

ember_status ej_eval_args(ej_rt *rt, ej_scope *env, ej_node **args, size_t n, ej_value **out,
                          size_t *n_out, ej_dict **kwargs)
{
    ej_list *pos = ej_list_new(&rt->arena, n + 1);
    ej_dict *kw = ej_dict_new(&rt->arena);
    if (!pos || !kw) return EMBER_ERR_NO_MEMORY;
    kw->kwargs = true;
    for (size_t i = 0; i < n; i++) {
        const ej_node *a = args[i];
        if (a->kind == EJN_KWARG || a->kind == EJN_KWSPREAD) continue;
        ej_value v;
        TRY(ej_eval(rt, env, a->kind == EJN_SPREAD ? a->a : a, &v));
        if (a->kind != EJN_SPREAD) {
            TRY(ej_list_push(&rt->arena, pos, v));
            continue;
        }
        if (v.kind != EJV_LIST) return ej_rt_fail(rt, a, "Cannot unpack non-iterable type: %s", ej_kind_name(v));
        for (size_t k = 0; k < v.u.list->n; k++) TRY(ej_list_push(&rt->arena, pos, v.u.list->items[k]));
    }
    for (size_t i = 0; i < n; i++) {
        const ej_node *a = args[i];
        if (a->kind != EJN_KWARG && a->kind != EJN_KWSPREAD) continue;
        ej_value v;
        TRY(ej_eval(rt, env, a->a, &v));
        if (a->kind == EJN_KWARG) {
            if (ej_dict_get(kw, a->str))
                return ej_rt_fail(rt, a, "got multiple values for keyword argument '%.*s'", (int)a->str.n, a->str.s);
            TRY(ej_dict_set(&rt->arena, kw, a->str, v));
            continue;
        }
        if (v.kind != EJV_DICT) return ej_rt_fail(rt, a, "argument after ** must be a mapping, not %s", ej_kind_name(v));
        for (size_t k = 0; k < v.u.dict->n; k++) {
            ej_str key = v.u.dict->keys[k];
            if (ej_dict_get(kw, key))
                return ej_rt_fail(rt, a, "got multiple values for keyword argument '%.*s'", (int)key.n, key.s);
            TRY(ej_dict_set(&rt->arena, kw, key, v.u.dict->vals[k]));
        }
    }
    *out = pos->items;
    *n_out = pos->n;
    if (kwargs) {
        *kwargs = kw;
    } else if (kw->n) { /* the reference passes keyword arguments as a trailing dict */
        TRY(ej_list_push(&rt->arena, pos, ej_dict_value(kw)));
        *out = pos->items;
        *n_out = pos->n;
    }
    return EMBER_OK;
}

static ember_status eval_call(ej_rt *rt, ej_scope *env, const ej_node *n, ej_value *out)
{
    ej_value *args, fn;
    size_t n_args;
    TRY(ej_eval_args(rt, env, n->list, n->n, &args, &n_args, NULL));
    TRY(ej_eval(rt, env, n->a, &fn));
    if (fn.kind != EJV_FUNC)
        return ej_rt_fail(rt, n, "Cannot call something that is not a function: got %s", ej_kind_name(fn));
    return ej_call_function(rt, env, n, fn, args, n_args, out);
}

static ember_status eval_dict(ej_rt *rt, ej_scope *env, const ej_node *n, ej_value *out)
{
    ej_dict *d = ej_dict_new(&rt->arena);
    if (!d) return EMBER_ERR_NO_MEMORY;
    for (size_t i = 0; i < n->n; i++) {
        ej_value k, v;
        TRY(ej_eval(rt, env, n->list[i], &k));
        if (k.kind != EJV_STR) return ej_rt_fail(rt, n->list[i], "object keys must be strings: got %s", ej_kind_name(k));
        TRY(ej_eval(rt, env, n->list2[i], &v));
        TRY(ej_dict_set(&rt->arena, d, k.u.str, v));
    }
    *out = ej_dict_value(d);
    return EMBER_OK;
}

static ember_status eval_inner(ej_rt *rt, ej_scope *env, const ej_node *n, ej_value *out)
{
    switch (n->kind) {
    case EJN_INT: *out = ej_int(n->num); return EMBER_OK;
    case EJN_FLOAT: *out = ej_float(n->num); return EMBER_OK;
    case EJN_STR: *out = ej_string(n->str); return EMBER_OK;
    case EJN_IDENT: *out = scope_lookup(env, n->str); return EMBER_OK;
    case EJN_LIST:
    case EJN_TUPLE: {
        ej_list *l = ej_list_new(&rt->arena, n->n);
        if (!l) return EMBER_ERR_NO_MEMORY;
        l->tuple = n->kind == EJN_TUPLE;
        for (size_t i = 0; i < n->n; i++) TRY(ej_eval(rt, env, n->list[i], &l->items[l->n++]));
        *out = ej_list_value(l);
        return EMBER_OK;
    }
    case EJN_DICT: return eval_dict(rt, env, n, out);
    case EJN_MEMBER: return eval_member(rt, env, n, out);
    case EJN_CALL: return eval_call(rt, env, n, out);
    case EJN_BINARY: return eval_binary(rt, env, n, out);
    case EJN_UNARY: return eval_unary(rt, env, n, out);
    case EJN_FILTER: {
        ej_value v;
        TRY(ej_eval(rt, env, n->a, &v));
        return ej_apply_filter(rt, env, n->b, v, out);
    }
    case EJN_TEST: {
        ej_value v;
        bool r;
        TRY(ej_eval(rt, env, n->a, &v));
        TRY(ej_apply_test(rt, n, n->str, v, &r));
        *out = ej_bool(r != n->flag);
        return EMBER_OK;
    }
    case EJN_SELECT: {
        ej_value c;
        TRY(ej_eval(rt, env, n->b, &c));
        if (!ej_truthy(c)) {
            *out = ej_undef();
            return EMBER_OK;
        }
        return ej_eval(rt, env, n->a, out);
    }
    case EJN_TERNARY: {
        ej_value c;
        TRY(ej_eval(rt, env, n->a, &c));
        return ej_eval(rt, env, ej_truthy(c) ? n->b : n->c, out);
    }
    default: return ej_rt_fail(rt, n, "this is not an expression");
    }
}

ember_status ej_eval(ej_rt *rt, ej_scope *env, const ej_node *n, ej_value *out)
{
    TRY(step(rt, n));
    rt->depth++;
    ember_status st = eval_inner(rt, env, n, out);
    rt->depth--;
    return st;
}

/* ---- macros and call blocks */
static ember_status bind_arguments(ej_rt *rt, const ej_node *def, const char *display,
                                   ej_node *const *params, size_t n_params, unsigned special,
                                   ej_value *args, size_t n_args, ej_scope *scope)
{
    ej_dict *kw = NULL;
    if (n_args && args[n_args - 1].kind == EJV_DICT && args[n_args - 1].u.dict->kwargs) kw = args[--n_args].u.dict;
    bool *used = kw && kw->n ? ej_alloc(&rt->arena, kw->n * sizeof *used) : NULL;
    if (kw && kw->n && !used) return EMBER_ERR_NO_MEMORY;
    for (size_t i = 0; i < n_params; i++) {
        const ej_node *p = params[i];
        ej_value v = ej_undef();
        bool have = i < n_args;
        if (have) v = args[i];
        for (size_t k = 0; !have && kw && k < kw->n; k++)
            if (!used[k] && ej_str_eq(kw->keys[k], p->str)) {
                v = kw->vals[k];
                used[k] = have = true;
            }
        TRY(scope_set(rt, scope, p->str, v));
    }
    ej_dict *rest = ej_dict_new(&rt->arena);
    if (!rest) return EMBER_ERR_NO_MEMORY;
    for (size_t k = 0; kw && k < kw->n; k++)
        if (!used[k]) TRY(ej_dict_set(&rt->arena, rest, kw->keys[k], kw->vals[k]));
    if (special & 2)
        TRY(scope_set(rt, scope, (ej_str){"kwargs", 6}, ej_dict_value(rest)));
    else if (rest->n)
        return ej_rt_fail(rt, def, "macro %s takes no keyword argument '%.*s'", display, (int)rest->keys[0].n,
                          rest->keys[0].s);
    if (special & 1) {
        ej_list *extra = ej_list_new(&rt->arena, n_args > n_params ? n_args - n_params : 0);
        if (!extra) return EMBER_ERR_NO_MEMORY;
        for (size_t i = n_params; i < n_args; i++) extra->items[extra->n++] = args[i];
        TRY(scope_set(rt, scope, (ej_str){"varargs", 7}, ej_list_value(extra)));
    } else if (n_args > n_params) {
        return ej_rt_fail(rt, def, "macro %s takes not more than %zu argument(s)", display, n_params);
    }
    /* defaults last, so they see every parameter bound (and none from outside) */
    for (size_t i = 0; i < n_params; i++) {
        const ej_node *p = params[i];
        if (p->kind != EJN_KWARG || i < n_args) continue;
        bool from_kw = false;
        for (size_t k = 0; kw && k < kw->n; k++) from_kw |= used[k] && ej_str_eq(kw->keys[k], p->str);
        if (from_kw) continue;
        ej_value v;
        TRY(ej_eval(rt, scope, p->a, &v));
        TRY(scope_set(rt, scope, p->str, v));
    }
    return EMBER_OK;
}

static ember_status run_body(ej_rt *rt, const ej_node *at, ej_scope *scope, ej_node *const *body, size_t n,
                             ej_value *out)
{
    ej_buf b = {0};
    ember_status st = exec_block(rt, scope, body, n, &b);
    if (!st && rt->control != EJ_CTL_NONE) st = ej_rt_fail(rt, at, "break or continue outside a loop");
    if (!st) st = ej_rt_str(rt, &b, out);
    ej_buf_free(&b);
    return st;
}

ember_status ej_call_function(ej_rt *rt, ej_scope *env, const ej_node *at, ej_value fn, ej_value *args,
                              size_t n_args, ej_value *out)
{
    const ej_func *f = fn.u.fn;
    switch (f->kind) {
    case EJF_BUILTIN: return ej_call_builtin(rt, at, f->name, args, n_args, out);
    case EJF_METHOD: return ej_call_method(rt, at, f->self, f->name, args, n_args, out);
    case EJF_MACRO:
    case EJF_CALLER: break;
    }
    if (rt->call_depth >= EJ_MAX_CALL_DEPTH)
        return ej_rt_fail(rt, at, "macro calls nested deeper than %d levels", EJ_MAX_CALL_DEPTH);
    const ej_node *def = f->node;
    ej_scope *scope = scope_new(rt, f->kind == EJF_MACRO ? env : f->scope);
    if (!scope) return EMBER_ERR_NO_MEMORY;
    char display[80];
    if (f->kind == EJF_MACRO)
        snprintf(display, sizeof display, "'%.*s'", (int)(def->str.n < 60 ? def->str.n : 60), def->str.s);
    else
        snprintf(display, sizeof display, "None");
    rt->call_depth++;
    ember_status st = bind_arguments(rt, def, display, def->list, def->n, (unsigned)def->num, args, n_args, scope);
    if (!st) st = run_body(rt, at, scope, def->list2, def->n2, out);
    rt->call_depth--;
    return st;
}

static ember_status exec_call_block(ej_rt *rt, ej_scope *env, const ej_node *n, ej_buf *out)
{
    ej_func *caller = ej_alloc(&rt->arena, sizeof *caller);
    if (!caller) return EMBER_ERR_NO_MEMORY;
    caller->kind = EJF_CALLER;
    caller->node = n;
    caller->scope = env;
    const ej_node *call = n->a;
    ej_value *args, fn, result;
    size_t n_args;
    ej_dict *kw;
    TRY(ej_eval_args(rt, env, call->list, call->n, &args, &n_args, &kw));
    ej_list *with_kw = ej_list_new(&rt->arena, n_args + 1);
    if (!with_kw) return EMBER_ERR_NO_MEMORY;
    for (size_t i = 0; i < n_args; i++) with_kw->items[with_kw->n++] = args[i];
    with_kw->items[with_kw->n++] = ej_dict_value(kw); /* always passed, even when empty */
    TRY(ej_eval(rt, env, call->a, &fn));
    if (fn.kind != EJV_FUNC)
        return ej_rt_fail(rt, n, "Cannot call something that is not a function: got %s", ej_kind_name(fn));
    ej_scope *scope = scope_new(rt, env);
    if (!scope) return EMBER_ERR_NO_MEMORY;
    ej_value caller_value = {EJV_FUNC, {.fn = caller}};
    TRY(scope_set(rt, scope, (ej_str){"caller", 6}, caller_value));
    TRY(ej_call_function(rt, scope, n, fn, with_kw->items, with_kw->n, &result));
    return ej_print(out, result);
}

/* ---- statements */
static ember_status assign(ej_rt *rt, ej_scope *env, const ej_node *target, ej_value v)
{
    if (target->kind == EJN_IDENT) return scope_set(rt, env, target->str, v);
    if (target->kind == EJN_TUPLE) {
        if (v.kind != EJV_LIST) return ej_rt_fail(rt, target, "Cannot unpack non-iterable type in set: %s", ej_kind_name(v));
        if (v.u.list->n != target->n)
            return ej_rt_fail(rt, target, "too %s items to unpack in set", target->n > v.u.list->n ? "few" : "many");
        for (size_t i = 0; i < target->n; i++) {
            if (target->list[i]->kind != EJN_IDENT) return ej_rt_fail(rt, target->list[i], "Cannot unpack to a non-name in set");
            TRY(scope_set(rt, env, target->list[i]->str, v.u.list->items[i]));
        }
        return EMBER_OK;
    }
    ej_value obj;
    TRY(ej_eval(rt, env, target->a, &obj));
    if (obj.kind != EJV_NS) return ej_rt_fail(rt, target, "Cannot assign attribute on non-namespace object");
    if (target->b->kind != EJN_IDENT) return ej_rt_fail(rt, target, "Cannot assign to member with non-identifier property");
    return ej_dict_set(&rt->arena, obj.u.dict, target->b->str, v);
}

/* Binds a loop item to the loop target (a name or a tuple of names). */
static ember_status bind_target(ej_rt *rt, ej_scope *scope, const ej_node *target, ej_value item)
{
    if (target->kind == EJN_IDENT) return scope_set(rt, scope, target->str, item);
    if (item.kind != EJV_LIST || item.u.list->tuple)
        return ej_rt_fail(rt, target, "Cannot unpack non-iterable type: %s", ej_kind_name(item));
    if (item.u.list->n != target->n)
        return ej_rt_fail(rt, target, "too %s items to unpack", target->n > item.u.list->n ? "few" : "many");
    for (size_t j = 0; j < target->n; j++) {
        if (target->list[j]->kind != EJN_IDENT)
            return ej_rt_fail(rt, target->list[j], "Cannot unpack to a non-name");
        TRY(scope_set(rt, scope, target->list[j]->str, item.u.list->items[j]));
    }
    return EMBER_OK;
}

static ember_status loop_info(ej_rt *rt, const ej_list *items, size_t i, ej_value *out)
{
    ej_dict *d = ej_dict_new(&rt->arena);
    if (!d) return EMBER_ERR_NO_MEMORY;
    size_t n = items->n;
    const struct {
        const char *name;
        ej_value v;
    } fields[] = {
        {"index", ej_int((double)i + 1)},
        {"index0", ej_int((double)i)},
        {"revindex", ej_int((double)(n - i))},
        {"revindex0", ej_int((double)(n - i - 1))},
        {"first", ej_bool(i == 0)},
        {"last", ej_bool(i == n - 1)},
        {"length", ej_int((double)n)},
        {"previtem", i > 0 ? items->items[i - 1] : ej_undef()},
        {"nextitem", i + 1 < n ? items->items[i + 1] : ej_undef()},
    };
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
        TRY(ej_dict_set(&rt->arena, d, (ej_str){fields[k].name, strlen(fields[k].name)}, fields[k].v));
    *out = ej_dict_value(d);
    return EMBER_OK;
}

static ember_status exec_for(ej_rt *rt, ej_scope *env, const ej_node *n, ej_buf *out)
{
    ej_scope *scope = scope_new(rt, env);
    if (!scope) return EMBER_ERR_NO_MEMORY;
    const ej_node *test = NULL;
    ej_value it;
    if (n->b->kind == EJN_SELECT) {
        TRY(ej_eval(rt, scope, n->b->a, &it));
        test = n->b->b;
    } else {
        TRY(ej_eval(rt, scope, n->b, &it));
    }
    if (it.kind != EJV_LIST && it.kind != EJV_DICT)
        return ej_rt_fail(rt, n->b, "expected iterable or object type in for loop: got %s", ej_kind_name(it));
    ej_list *all;
    if (it.kind == EJV_DICT) {
        all = ej_list_new(&rt->arena, it.u.dict->n);
        if (!all) return EMBER_ERR_NO_MEMORY;
        for (size_t i = 0; i < it.u.dict->n; i++) all->items[all->n++] = ej_string(it.u.dict->keys[i]);
    } else {
        all = it.u.list;
    }
    ej_list *items = ej_list_new(&rt->arena, all->n);
    if (!items) return EMBER_ERR_NO_MEMORY;
    for (size_t i = 0; i < all->n; i++) {
        if (test || n->a->kind == EJN_TUPLE) {
            ej_scope *probe = scope_new(rt, scope);
            if (!probe) return EMBER_ERR_NO_MEMORY;
            TRY(bind_target(rt, probe, n->a, all->items[i]));
            if (test) {
                ej_value keep;
                TRY(ej_eval(rt, probe, test, &keep));
                if (!ej_truthy(keep)) continue;
            }
        }
        items->items[items->n++] = all->items[i];
    }
    bool ran = false;
    for (size_t i = 0; i < items->n; i++) {
        ej_value loop;
        TRY(loop_info(rt, items, i, &loop));
        TRY(scope_set(rt, scope, (ej_str){"loop", 4}, loop));
        TRY(bind_target(rt, scope, n->a, items->items[i]));
        size_t mark = out->n;
        TRY(exec_block(rt, scope, n->list, n->n, out));
        if (rt->control != EJ_CTL_NONE) {
            int c = rt->control;
            rt->control = EJ_CTL_NONE;
            out->n = mark; /* the reference drops an interrupted iteration's output */
            if (out->p) out->p[mark] = 0;
            if (c == EJ_CTL_BREAK) break;
            continue;
        }
        ran = true;
    }
    if (!ran) TRY(exec_block(rt, scope, n->list2, n->n2, out));
    return EMBER_OK;
}

static ember_status exec_stmt(ej_rt *rt, ej_scope *env, const ej_node *n, ej_buf *out)
{
    switch (n->kind) {
    case EJN_TEXT: return ej_buf_put(out, n->str.s, n->str.n);
    case EJN_OUTPUT: {
        ej_value v;
        TRY(ej_eval(rt, env, n->a, &v));
        return ej_print(out, v);
    }
    case EJN_IF: {
        ej_value c;
        TRY(ej_eval(rt, env, n->a, &c));
        return ej_truthy(c) ? exec_block(rt, env, n->list, n->n, out) : exec_block(rt, env, n->list2, n->n2, out);
    }
    case EJN_FOR: return exec_for(rt, env, n, out);
    case EJN_SET: {
        ej_value v;
        if (n->b) {
            TRY(ej_eval(rt, env, n->b, &v));
        } else {
            ej_buf b = {0};
            ember_status st = exec_block(rt, env, n->list, n->n, &b);
            if (!st) st = ej_rt_str(rt, &b, &v);
            ej_buf_free(&b);
            TRY(st);
        }
        return assign(rt, env, n->a, v);
    }
    case EJN_MACRO: {
        ej_func *f = ej_alloc(&rt->arena, sizeof *f);
        if (!f) return EMBER_ERR_NO_MEMORY;
        f->kind = EJF_MACRO;
        f->node = n;
        ej_value v = {EJV_FUNC, {.fn = f}};
        return scope_set(rt, env, n->str, v);
    }
    case EJN_CALL_BLOCK: return exec_call_block(rt, env, n, out);
    case EJN_FILTER_BLOCK: {
        ej_value body, result;
        ej_buf b = {0};
        ember_status st = exec_block(rt, env, n->list, n->n, &b);
        if (!st) st = ej_rt_str(rt, &b, &body);
        ej_buf_free(&b);
        TRY(st);
        TRY(ej_apply_filter(rt, env, n->a, body, &result));
        return ej_print(out, result);
    }
    case EJN_BREAK: rt->control = EJ_CTL_BREAK; return EMBER_OK;
    case EJN_CONTINUE: rt->control = EJ_CTL_CONTINUE; return EMBER_OK;
    default: {
        ej_value v; /* an expression used as a statement prints */
        TRY(ej_eval(rt, env, n, &v));
        return ej_print(out, v);
    }
    }
}

static ember_status exec_block(ej_rt *rt, ej_scope *env, ej_node *const *body, size_t n, ej_buf *out)
{
    for (size_t i = 0; i < n && rt->control == EJ_CTL_NONE; i++) {
        TRY(step(rt, body[i]));
        rt->depth++;
        ember_status st = exec_stmt(rt, env, body[i], out);
        rt->depth--;
        TRY(st);
    }
    return EMBER_OK;
}

/* ---- the public entry points */
static ember_status declare(ej_rt *rt, ej_scope *g, const char *name, ej_value v)
{
    ej_str k = {name, strlen(name)};
    if (ej_dict_get(&g->vars, k)) return ember_fail(EMBER_ERR_INVALID_ARG, "template context: variable already declared: %s", name);
    return scope_set(rt, g, k, v);
}

static ember_status declare_builtin(ej_rt *rt, ej_scope *g, const char *name)
{
    ej_func *f = ej_alloc(&rt->arena, sizeof *f);
    if (!f) return EMBER_ERR_NO_MEMORY;
    f->kind = EJF_BUILTIN;
    f->name = (ej_str){name, strlen(name)};
    ej_value v = {EJV_FUNC, {.fn = f}};
    return declare(rt, g, name, v);
}

static ember_status setup_globals(ej_rt *rt, ej_scope *g, const cJSON *context)
{
    TRY(declare_builtin(rt, g, "namespace"));
    TRY(declare(rt, g, "false", ej_bool(false)));
    TRY(declare(rt, g, "true", ej_bool(true)));
    TRY(declare(rt, g, "none", ej_none()));
    TRY(declare_builtin(rt, g, "raise_exception"));
    TRY(declare_builtin(rt, g, "range"));
    TRY(declare_builtin(rt, g, "strftime_now"));
    TRY(declare(rt, g, "True", ej_bool(true)));
    TRY(declare(rt, g, "False", ej_bool(false)));
    TRY(declare(rt, g, "None", ej_none()));
    if (!context) return EMBER_OK;
    if (!cJSON_IsObject(context)) return ember_fail(EMBER_ERR_INVALID_ARG, "template context: not a JSON object");
    ej_value ctx;
    TRY(ej_from_json(&rt->arena, context, &ctx));
    for (size_t i = 0; i < ctx.u.dict->n; i++) {
        ej_str k = ctx.u.dict->keys[i];
        if (ej_dict_get(&g->vars, k))
            return ember_fail(EMBER_ERR_INVALID_ARG, "template context: variable already declared: %.*s", (int)k.n, k.s);
        TRY(scope_set(rt, g, k, ctx.u.dict->vals[i]));
    }
    return EMBER_OK;
}

ember_status ej_parse(const char *src, size_t len, ej_template **out)
{
    if (!out || (!src && len)) return ember_fail(EMBER_ERR_INVALID_ARG, "ej_parse: NULL argument");
    *out = NULL;
    ej_template *t = calloc(1, sizeof *t);
    if (!t) return ember_fail(EMBER_ERR_NO_MEMORY, "template: out of memory");
    ej_arena_init(&t->arena, EJ_MAX_MEMORY);
    ej_token *toks;
    size_t n_toks;
    ember_status st = EMBER_OK;
    char *copy = ej_strdup_arena(&t->arena, src ? src : "", len);
    if (!copy) st = EMBER_ERR_NO_MEMORY;
    if (!st) {
        t->src = copy;
        t->src_len = len;
        st = ej_lex(&t->arena, copy, len, &toks, &n_toks);
    }
    if (!st) st = ej_parse_tokens(&t->arena, copy, len, toks, &t->body, &t->n_body);
    if (st) {
        ej_free(t);
        return st;
    }
    *out = t;
    return EMBER_OK;
}

ember_status ej_render(const ej_template *t, const cJSON *context, char **out, size_t *out_len)
{
    if (!t || !out) return ember_fail(EMBER_ERR_INVALID_ARG, "ej_render: NULL argument");
    *out = NULL;
    if (out_len) *out_len = 0;
    ej_rt rt = {.t = t};
    ej_arena_init(&rt.arena, EJ_MAX_MEMORY);
    ej_buf b = {0};
    ej_scope *g = scope_new(&rt, NULL);
    ember_status st = g ? setup_globals(&rt, g, context) : EMBER_ERR_NO_MEMORY;
    if (!st) st = exec_block(&rt, g, t->body, t->n_body, &b);
    if (!st && rt.control != EJ_CTL_NONE) st = ember_fail(EMBER_ERR_INVALID_ARG, "template: break or continue outside a loop");
    if (!st && !b.p) {
        b.p = malloc(1);
        if (!b.p) st = ember_fail(EMBER_ERR_NO_MEMORY, "template: out of memory");
        else b.p[0] = 0;
    }
    ej_arena_free(&rt.arena);
    if (st) {
        ej_buf_free(&b);
        return st;
    }
    *out = b.p;
    if (out_len) *out_len = b.n;
    return EMBER_OK;
}

void ej_free(ej_template *t)
{
    if (!t) return;
    ej_arena_free(&t->arena);
    free(t);
}
