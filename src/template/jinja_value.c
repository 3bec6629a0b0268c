/* Runtime values: lists, ordered dicts, truthiness, equality, conversion from
 * the JSON context, and the three ways a value becomes text (printing,
 * JavaScript's String(), and tojson), each matching @huggingface/jinja. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_internal.h"

ej_list *ej_list_new(ej_arena *a, size_t cap)
{
    ej_list *l = ej_alloc(a, sizeof *l);
    if (!l) return NULL;
    if (cap) {
        l->items = ej_alloc(a, cap * sizeof *l->items);
        if (!l->items) return NULL;
        l->cap = cap;
    }
    return l;
}

ember_status ej_list_push(ej_arena *a, ej_list *l, ej_value v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        ej_value *grown = ej_alloc(a, cap * sizeof *grown);
        if (!grown) return EMBER_ERR_NO_MEMORY;
        if (l->n) memcpy(grown, l->items, l->n * sizeof *grown);
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = v;
    return EMBER_OK;
}

ej_dict *ej_dict_new(ej_arena *a) { return ej_alloc(a, sizeof(ej_dict)); }

ej_value *ej_dict_get(const ej_dict *d, ej_str key)
{
    for (size_t i = 0; i < d->n; i++)
        if (ej_str_eq(d->keys[i], key)) return &d->vals[i];
    return NULL;
}

ember_status ej_dict_set(ej_arena *a, ej_dict *d, ej_str key, ej_value v)
{
    ej_value *slot = ej_dict_get(d, key);
    if (slot) {
        *slot = v;
        return EMBER_OK;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        ej_str *keys = ej_alloc(a, cap * sizeof *keys);
        ej_value *vals = ej_alloc(a, cap * sizeof *vals);
        if (!keys || !vals) return EMBER_ERR_NO_MEMORY;
        if (d->n) {
            memcpy(keys, d->keys, d->n * sizeof *keys);
            memcpy(vals, d->vals, d->n * sizeof *vals);
        }
        d->keys = keys, d->vals = vals, d->cap = cap;
    }
    d->keys[d->n] = key;
    d->vals[d->n++] = v;
    return EMBER_OK;
}

const char *ej_kind_name(ej_value v)
{
    switch (v.kind) {
    case EJV_UNDEF: return "UndefinedValue";
    case EJV_NONE: return "NullValue";
    case EJV_BOOL: return "BooleanValue";
    case EJV_INT: return "IntegerValue";
    case EJV_FLOAT: return "FloatValue";
    case EJV_STR: return "StringValue";
    case EJV_LIST: return v.u.list->tuple ? "TupleValue" : "ArrayValue";
    case EJV_DICT: return v.u.dict->kwargs ? "KeywordArgumentsValue" : "ObjectValue";
    case EJV_NS: return "NamespaceValue";
    case EJV_FUNC: return "FunctionValue";
    }
    return "?";
}

bool ej_truthy(ej_value v)
{
    switch (v.kind) {
    case EJV_UNDEF:
    case EJV_NONE: return false;
    case EJV_BOOL: return v.u.b;
    case EJV_INT:
    case EJV_FLOAT: return v.u.num != 0 && !isnan(v.u.num);
    case EJV_STR: return v.u.str.n > 0;
    case EJV_LIST: return v.u.list->n > 0;
    case EJV_DICT: return v.u.dict->n > 0;
    case EJV_NS:
    case EJV_FUNC: return true;
    }
    return false;
}

bool ej_is_number(ej_value v) { return v.kind == EJV_INT || v.kind == EJV_FLOAT; }

/* JavaScript orders an object's "array index" keys ("0", "17") first, ascending. */
static bool array_index_key(ej_str k, double *index)
{
    if (k.n == 0 || k.n > 10 || (k.n > 1 && k.s[0] == '0')) return false;
    double v = 0;
    for (size_t i = 0; i < k.n; i++) {
        if (k.s[i] < '0' || k.s[i] > '9') return false;
        v = v * 10 + (k.s[i] - '0');
    }
    *index = v;
    return v < 4294967295.0;
}

static void order_like_javascript(ej_dict *d)
{
    /* stable: insertion sort moving index keys to the front in numeric order */
    size_t n_index = 0;
    for (size_t i = 0; i < d->n; i++) {
        double vi;
        if (!array_index_key(d->keys[i], &vi)) continue;
        ej_str k = d->keys[i];
        ej_value v = d->vals[i];
        size_t j = n_index;
        while (j > 0) {
            double vj = 0;
            array_index_key(d->keys[j - 1], &vj);
            if (vj <= vi) break;
            j--;
        }
        memmove(d->keys + j + 1, d->keys + j, (i - j) * sizeof *d->keys);
        memmove(d->vals + j + 1, d->vals + j, (i - j) * sizeof *d->vals);
        d->keys[j] = k;
        d->vals[j] = v;
        n_index++;
    }
}

ember_status ej_from_json(ej_arena *a, const cJSON *j, ej_value *out)
{
    if (!j || cJSON_IsNull(j)) {
        *out = ej_none();
    } else if (cJSON_IsBool(j)) {
        *out = ej_bool(cJSON_IsTrue(j));
    } else if (cJSON_IsNumber(j)) {
        double x = j->valuedouble;
        *out = isfinite(x) && x == floor(x) ? ej_int(x) : ej_float(x);
    } else if (cJSON_IsString(j)) {
        *out = ej_string((ej_str){j->valuestring, strlen(j->valuestring)});
    } else if (cJSON_IsArray(j)) {
        ej_list *l = ej_list_new(a, (size_t)cJSON_GetArraySize(j));
        if (!l) return EMBER_ERR_NO_MEMORY;
        for (const cJSON *c = j->child; c; c = c->next) {
            ember_status st = ej_from_json(a, c, &l->items[l->n]);
            if (st) return st;
            l->n++;
        }
        *out = ej_list_value(l);
    } else if (cJSON_IsObject(j)) {
        ej_dict *d = ej_dict_new(a);
        if (!d) return EMBER_ERR_NO_MEMORY;
        for (const cJSON *c = j->child; c; c = c->next) {
            ej_value v;
            ember_status st = ej_from_json(a, c, &v);
            if (st) return st;
            const char *k = c->string ? c->string : "";
            if (ej_dict_set(a, d, (ej_str){k, strlen(k)}, v)) return EMBER_ERR_NO_MEMORY;
        }
        order_like_javascript(d);
        *out = ej_dict_value(d);
    } else {
        return ember_fail(EMBER_ERR_INVALID_ARG, "template context: unsupported JSON value");
    }
    return EMBER_OK;
}

ember_status ej_json_string(ej_buf *b, ej_str s, bool ensure_ascii)
{
    if (ej_buf_put(b, "\"", 1)) return EMBER_ERR_NO_MEMORY;
    size_t run = 0; /* bytes copied verbatim */
    for (size_t i = 0; i < s.n;) {
        unsigned char c = (unsigned char)s.s[i];
        const char *esc = NULL;
        char tmp[16];
        size_t next = i + 1;
        if (c == '"') esc = "\\\"";
        else if (c == '\\') esc = "\\\\";
        else if (c == '\b') esc = "\\b";
        else if (c == '\f') esc = "\\f";
        else if (c == '\n') esc = "\\n";
        else if (c == '\r') esc = "\\r";
        else if (c == '\t') esc = "\\t";
        else if (c < 0x20) {
            snprintf(tmp, sizeof tmp, "\\u%04x", c);
            esc = tmp;
        } else if (ensure_ascii && c >= 0x7f) {
            size_t j = i;
            uint32_t cp = ej_utf8_next(s.s, s.n, &j);
            next = j;
            if (cp >= 0x10000)
                snprintf(tmp, sizeof tmp, "\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10),
                         0xdc00 + ((cp - 0x10000) & 0x3ff));
            else
                snprintf(tmp, sizeof tmp, "\\u%04x", cp);
            esc = tmp;
        }
        if (!esc) {
            i++;
            run++;
            continue;
        }
        if (ej_buf_put(b, s.s + i - run, run) || ej_buf_putz(b, esc)) return EMBER_ERR_NO_MEMORY;
        run = 0;
        i = next;
    }
    if (ej_buf_put(b, s.s + s.n - run, run)) return EMBER_ERR_NO_MEMORY;
    return ej_buf_put(b, "\"", 1);
}

static ember_status pad(ej_buf *b, int indent, int depth)
{
    if (ej_buf_put(b, "\n", 1)) return EMBER_ERR_NO_MEMORY;
    for (long i = 0; i < (long)indent * depth; i++)
        if (ej_buf_put(b, " ", 1)) return EMBER_ERR_NO_MEMORY;
    return EMBER_OK;
}

static int compare_keys(const void *x, const void *y)
{
    const ej_str *a = *(const ej_str *const *)x, *b = *(const ej_str *const *)y;
    size_t n = a->n < b->n ? a->n : b->n;
    int c = n ? memcmp(a->s, b->s, n) : 0;
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

static ember_status dict_to_json(ej_buf *b, const ej_dict *d, const ej_json_opts *o, int depth,
                                 const char *item_sep, const char *key_sep)
{
    ember_status st = EMBER_OK;
    /* sort_keys orders a copy of the key pointers; the dict stays as it is */
    const ej_str **order = malloc((d->n ? d->n : 1) * sizeof *order);
    if (!order) return ember_fail(EMBER_ERR_NO_MEMORY, "template: out of memory");
    for (size_t i = 0; i < d->n; i++) order[i] = &d->keys[i];
    if (o->sort_keys) qsort(order, d->n, sizeof *order, compare_keys);
    st = ej_buf_put(b, "{", 1);
    for (size_t i = 0; i < d->n && !st; i++) {
        size_t k = (size_t)(order[i] - d->keys);
        if (i) st = ej_buf_putz(b, item_sep);
        if (!st && o->indent) st = pad(b, o->indent, depth + 1);
        if (!st) st = ej_json_string(b, d->keys[k], o->ensure_ascii);
        if (!st) st = ej_buf_putz(b, key_sep);
        if (!st) st = ej_to_json(b, d->vals[k], o, depth + 1);
    }
    if (!st && o->indent && d->n) st = pad(b, o->indent, depth);
    if (!st) st = ej_buf_put(b, "}", 1);
    free(order);
    return st;
}

ember_status ej_to_json(ej_buf *b, ej_value v, const ej_json_opts *o, int depth)
{
    if (depth > EJ_MAX_EVAL_DEPTH)
        return ember_fail(EMBER_ERR_INVALID_ARG, "template: tojson nested too deeply");
    const char *item_sep = o->item_sep ? o->item_sep : o->indent ? "," : ", ";
    const char *key_sep = o->key_sep ? o->key_sep : ": ";
    char num[EJ_NUMBER_MAX];
    switch (v.kind) {
    case EJV_UNDEF: return ej_buf_putz(b, o->undefined_as_null ? "null" : "undefined");
    case EJV_NONE: return ej_buf_putz(b, "null");
    case EJV_BOOL: return ej_buf_putz(b, v.u.b ? "true" : "false");
    case EJV_INT:
    case EJV_FLOAT:
        if (!isfinite(v.u.num)) return ej_buf_putz(b, "null");
        return ej_buf_put(b, num, ej_js_number(v.u.num, num));
    case EJV_STR: return ej_json_string(b, v.u.str, o->ensure_ascii);
    case EJV_LIST: {
        const ej_list *l = v.u.list;
        if (ej_buf_put(b, "[", 1)) return EMBER_ERR_NO_MEMORY;
        for (size_t i = 0; i < l->n; i++) {
            if (i && ej_buf_putz(b, item_sep)) return EMBER_ERR_NO_MEMORY;
            if (o->indent && pad(b, o->indent, depth + 1)) return EMBER_ERR_NO_MEMORY;
            ember_status st = ej_to_json(b, l->items[i], o, depth + 1);
            if (st) return st;
        }
        if (o->indent && l->n && pad(b, o->indent, depth)) return EMBER_ERR_NO_MEMORY;
        return ej_buf_put(b, "]", 1);
    }
    case EJV_DICT:
    case EJV_NS: return dict_to_json(b, v.u.dict, o, depth, item_sep, key_sep);
    case EJV_FUNC: break;
    }
    return ember_fail(EMBER_ERR_INVALID_ARG, "template: cannot convert to JSON: %s", ej_kind_name(v));
}

/* RuntimeValue.toString(): None and undefined spell themselves out. */
static ember_status to_string(ej_buf *b, ej_value v)
{
    char num[EJ_NUMBER_MAX];
    ej_json_opts o = {0};
    switch (v.kind) {
    case EJV_UNDEF: return ej_buf_putz(b, "undefined");
    case EJV_NONE: return ej_buf_putz(b, "null");
    case EJV_BOOL: return ej_buf_putz(b, v.u.b ? "true" : "false");
    case EJV_INT: return ej_buf_put(b, num, ej_js_number(v.u.num, num));
    case EJV_FLOAT: return ej_buf_put(b, num, ej_py_float(v.u.num, num));
    case EJV_STR: return ej_buf_put(b, v.u.str.s, v.u.str.n);
    case EJV_LIST:
    case EJV_DICT:
    case EJV_NS: return ej_to_json(b, v, &o, 0);
    case EJV_FUNC: return ej_buf_putz(b, "function");
    }
    return EMBER_OK;
}

ember_status ej_print(ej_buf *b, ej_value v)
{
    if (v.kind == EJV_UNDEF || v.kind == EJV_NONE) return EMBER_OK;
    return to_string(b, v);
}

ember_status ej_js_string(ej_buf *b, ej_value v)
{
    char num[EJ_NUMBER_MAX];
    switch (v.kind) {
    case EJV_INT:
    case EJV_FLOAT: return ej_buf_put(b, num, ej_js_number(v.u.num, num));
    case EJV_LIST: /* Array.prototype.toString: the items' toString joined by "," */
        for (size_t i = 0; i < v.u.list->n; i++) {
            if (i && ej_buf_put(b, ",", 1)) return EMBER_ERR_NO_MEMORY;
            ember_status st = to_string(b, v.u.list->items[i]);
            if (st) return st;
        }
        return EMBER_OK;
    case EJV_DICT:
    case EJV_NS: return ej_buf_putz(b, "[object Map]");
    default: return to_string(b, v);
    }
}

static bool is_object(ej_value v)
{
    return v.kind == EJV_LIST || v.kind == EJV_DICT || v.kind == EJV_NS || v.kind == EJV_FUNC;
}

static bool same_object(ej_value a, ej_value b)
{
    if (a.kind != b.kind) return false;
    if (a.kind == EJV_LIST) return a.u.list == b.u.list;
    if (a.kind == EJV_FUNC) return a.u.fn == b.u.fn;
    return a.u.dict == b.u.dict;
}

bool ej_strict_equal(ej_value a, ej_value b)
{
    if (ej_is_number(a) && ej_is_number(b)) return a.u.num == b.u.num;
    if (is_object(a) || is_object(b)) return same_object(a, b);
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case EJV_BOOL: return a.u.b == b.u.b;
    case EJV_STR: return ej_str_eq(a.u.str, b.u.str);
    default: return true; /* undefined === undefined, null === null */
    }
}

/* JavaScript's ToNumber for a string: decimal, 0x/0o/0b integers, Infinity. */
static double string_to_number(ej_str s)
{
    size_t start = ej_trim_start(s), end = ej_trim_end(s);
    if (end <= start) return 0;
    size_t n = end - start;
    char buf[128];
    if (n >= sizeof buf) return NAN;
    memcpy(buf, s.s + start, n);
    buf[n] = 0;
    const char *p = buf;
    if (n > 2 && p[0] == '0' && strchr("xXoObB", p[1])) {
        int base = (p[1] | 0x20) == 'x' ? 16 : (p[1] | 0x20) == 'o' ? 8 : 2;
        char *e;
        double v = (double)strtoull(p + 2, &e, base);
        return *e || p[2] == '-' || p[2] == '+' ? NAN : v;
    }
    const char *q = p + (p[0] == '+' || p[0] == '-');
    if (!strcmp(q, "Infinity")) return p[0] == '-' ? -INFINITY : INFINITY;
    for (const char *c = q; *c; c++)
        if (!strchr("0123456789.eE+-", *c)) return NAN; /* no inf/nan/hex-float spellings */
    char *e;
    double v = strtod(p, &e);
    return *e ? NAN : v;
}

static ember_status primitive_of(ej_value v, ej_buf *b) { return ej_js_string(b, v); }

bool ej_loose_equal(ej_value a, ej_value b)
{
    bool a_nullish = a.kind == EJV_UNDEF || a.kind == EJV_NONE;
    bool b_nullish = b.kind == EJV_UNDEF || b.kind == EJV_NONE;
    if (a_nullish || b_nullish) return a_nullish && b_nullish;
    if (is_object(a) && is_object(b)) return same_object(a, b);
    if (is_object(a) || is_object(b)) {
        /* ToPrimitive on the object side, then compare as primitives */
        ej_buf tmp = {0};
        ej_value obj = is_object(a) ? a : b, other = is_object(a) ? b : a;
        bool eq = false;
        if (!primitive_of(obj, &tmp))
            eq = ej_loose_equal(ej_string((ej_str){tmp.p ? tmp.p : "", tmp.n}), other);
        ej_buf_free(&tmp);
        return eq;
    }
    if (a.kind == EJV_BOOL) return ej_loose_equal(ej_int(a.u.b), b);
    if (b.kind == EJV_BOOL) return ej_loose_equal(a, ej_int(b.u.b));
    if (a.kind == EJV_STR && b.kind == EJV_STR) return ej_str_eq(a.u.str, b.u.str);
    double x = a.kind == EJV_STR ? string_to_number(a.u.str) : a.u.num;
    double y = b.kind == EJV_STR ? string_to_number(b.u.str) : b.u.num;
    return x == y;
}
