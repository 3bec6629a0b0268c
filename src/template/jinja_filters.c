/* Filters (`x | name` and `x | name(args)`), which the reference treats as
 * two different things: the bare form dispatches on the operand's type, the
 * call form knows tojson/join/int/float/default for any operand and a few
 * more per type. Sorting and comparison live here too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_internal.h"

#define TRY(x)                                                                                \
    do {                                                                                      \
        ember_status st_ = (x);                                                               \
        if (st_) return st_;                                                                  \
    } while (0)


static const char *const FILTERS[] = {
    "safe", "tojson", "list", "first", "last", "length", "reverse", "sort", "join", "string",
    "unique", "upper", "lower", "title", "capitalize", "trim", "indent", "int", "float", "abs",
    "items", "bool", "default", "selectattr", "rejectattr", "map", "replace", "get", "keys",
    "values", "dictsort", NULL};

bool ej_filter_known(ej_str name)
{
    for (const char *const *f = FILTERS; *f; f++)
        if (ej_str_eqz(name, *f)) return true;
    return false;
}

/* ---- comparison and a stable merge sort that can fail */
ember_status ej_compare(ej_rt *rt, const ej_node *at, ej_value a, ej_value b, bool case_sensitive, int *out)
{
    bool an = a.kind == EJV_NONE, bn = b.kind == EJV_NONE, au = a.kind == EJV_UNDEF, bu = b.kind == EJV_UNDEF;
    if ((an && bn) || (au && bu)) {
        *out = 0;
        return EMBER_OK;
    }
    if (an || bn || au || bu || a.kind == EJV_FUNC)
        return ej_rt_fail(rt, at, "Cannot compare %s with %s", ej_kind_name(a), ej_kind_name(b));
    bool a_num = ej_is_number(a) || a.kind == EJV_BOOL, b_num = ej_is_number(b) || b.kind == EJV_BOOL;
    if (a_num && b_num) {
        double x = a.kind == EJV_BOOL ? a.u.b : a.u.num, y = b.kind == EJV_BOOL ? b.u.b : b.u.num;
        *out = x < y ? -1 : x > y ? 1 : 0;
        return EMBER_OK;
    }
    if (a.kind != b.kind)
        return ej_rt_fail(rt, at, "Cannot compare different types: %s and %s", ej_kind_name(a), ej_kind_name(b));
    if (a.kind != EJV_STR) return ej_rt_fail(rt, at, "Cannot compare type: %s", ej_kind_name(a));
    ej_str x = a.u.str, y = b.u.str;
    if (!case_sensitive) {
        TRY(ej_case_map(&rt->arena, x, false, &x));
        TRY(ej_case_map(&rt->arena, y, false, &y));
    }
    size_t n = x.n < y.n ? x.n : y.n;
    int c = n ? memcmp(x.s, y.s, n) : 0;
    *out = c < 0 ? -1 : c > 0 ? 1 : (x.n > y.n) - (x.n < y.n);
    return EMBER_OK;
}

typedef struct sort_ctx {
    ej_rt *rt;
    const ej_node *at;
    bool reverse, case_sensitive;
    const ej_value *keys; /* parallel to the items: what is compared */
} sort_ctx;

static ember_status merge_sort(sort_ctx *c, size_t *idx, size_t *tmp, size_t n)
{
    if (n < 2) return EMBER_OK;
    size_t h = n / 2;
    TRY(merge_sort(c, idx, tmp, h));
    TRY(merge_sort(c, idx + h, tmp, n - h));
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n) {
        int r;
        TRY(ej_compare(c->rt, c->at, c->keys[idx[j]], c->keys[idx[i]], c->case_sensitive, &r));
        if (c->reverse) r = -r;
        tmp[o++] = r < 0 ? idx[j++] : idx[i++]; /* ties keep the left one first */
    }
    while (i < h) tmp[o++] = idx[i++];
    while (j < n) tmp[o++] = idx[j++];
    memcpy(idx, tmp, n * sizeof *idx);
    return EMBER_OK;
}

static ember_status sorted(ej_rt *rt, const ej_node *at, const ej_value *items, const ej_value *keys, size_t n,
                           bool reverse, bool case_sensitive, ej_value *out)
{
    size_t *idx = ej_alloc(&rt->arena, (n + 1) * sizeof *idx), *tmp = ej_alloc(&rt->arena, (n + 1) * sizeof *tmp);
    ej_list *l = ej_list_new(&rt->arena, n);
    if (!idx || !tmp || !l) return EMBER_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) idx[i] = i;
    sort_ctx c = {rt, at, reverse, case_sensitive, keys};
    TRY(merge_sort(&c, idx, tmp, n));
    for (size_t i = 0; i < n; i++) l->items[l->n++] = items[idx[i]];
    *out = ej_list_value(l);
    return EMBER_OK;
}

/* item.a.b for "a.b" (list items by index), undefined when missing. */
static ej_value attribute_path(ej_value item, ej_str path)
{
    size_t i = 0;
    while (i <= path.n) {
        size_t j = i;
        while (j < path.n && path.s[j] != '.') j++;
        ej_str part = {path.s + i, j - i};
        if (item.kind == EJV_DICT || item.kind == EJV_NS) {
            ej_value *v = ej_dict_get(item.u.dict, part);
            if (!v) return ej_undef();
            item = *v;
        } else if (item.kind == EJV_LIST) {
            char *end;
            char buf[24];
            size_t k = part.n < sizeof buf - 1 ? part.n : sizeof buf - 1;
            memcpy(buf, part.s, k);
            buf[k] = 0;
            long index = strtol(buf, &end, 10);
            if (end == buf || index < 0 || (size_t)index >= item.u.list->n) return ej_undef();
            item = item.u.list->items[index];
        } else {
            return ej_undef();
        }
        i = j + 1;
    }
    return item;
}

static ej_value kw_or(const ej_dict *kw, const char *name, ej_value fallback)
{
    ej_value *v = kw ? ej_dict_get(kw, (ej_str){name, strlen(name)}) : NULL;
    return v ? *v : fallback;
}

ember_status ej_dictsort(ej_rt *rt, const ej_node *at, const ej_dict *d, ej_value *args, size_t n_args,
                         ej_value *out)
{
    ej_dict *kw = NULL;
    ej_value pos[3];
    size_t n_pos = 0;
    for (size_t i = 0; i < n_args; i++) {
        if (args[i].kind == EJV_DICT && args[i].u.dict->kwargs) kw = args[i].u.dict;
        else if (n_pos < 3) pos[n_pos++] = args[i];
    }
    ej_value cs = n_pos > 0 ? pos[0] : kw_or(kw, "case_sensitive", ej_bool(false));
    ej_value by = n_pos > 1 ? pos[1] : kw_or(kw, "by", ej_string((ej_str){"key", 3}));
    ej_value rev = n_pos > 2 ? pos[2] : kw_or(kw, "reverse", ej_bool(false));
    if (cs.kind != EJV_BOOL) return ej_rt_fail(rt, at, "case_sensitive must be a boolean");
    if (by.kind != EJV_STR) return ej_rt_fail(rt, at, "by must be a string");
    if (!ej_str_eqz(by.u.str, "key") && !ej_str_eqz(by.u.str, "value"))
        return ej_rt_fail(rt, at, "by must be either 'key' or 'value'");
    if (rev.kind != EJV_BOOL) return ej_rt_fail(rt, at, "reverse must be a boolean");
    ej_value pairs;
    TRY(ej_dict_items(rt, d, &pairs));
    ej_value *items = pairs.u.list->items;
    ej_value *keys = ej_alloc(&rt->arena, (d->n + 1) * sizeof *keys);
    if (!keys) return EMBER_ERR_NO_MEMORY;
    bool by_key = ej_str_eqz(by.u.str, "key");
    for (size_t i = 0; i < d->n; i++) keys[i] = items[i].u.list->items[by_key ? 0 : 1];
    return sorted(rt, at, items, keys, d->n, rev.u.b, cs.u.b, out);
}

/* ---- parseInt / parseFloat */
static double parse_int(ej_str s)
{
    size_t i = ej_trim_start(s);
    bool neg = false;
    if (i < s.n && (s.s[i] == '-' || s.s[i] == '+')) neg = s.s[i++] == '-';
    double v = 0;
    size_t start = i;
    while (i < s.n && s.s[i] >= '0' && s.s[i] <= '9') v = v * 10 + (s.s[i++] - '0');
    if (i == start) return NAN;
    return neg ? -v : v;
}

static double parse_float(ej_str s)
{
    size_t i = ej_trim_start(s), start = i;
    if (i < s.n && (s.s[i] == '-' || s.s[i] == '+')) i++;
    if (s.n - i >= 8 && !memcmp(s.s + i, "Infinity", 8)) return s.s[start] == '-' ? -INFINITY : INFINITY;
    size_t digits = 0;
    while (i < s.n && s.s[i] >= '0' && s.s[i] <= '9') i++, digits++;
    if (i < s.n && s.s[i] == '.') {
        i++;
        while (i < s.n && s.s[i] >= '0' && s.s[i] <= '9') i++, digits++;
    }
    if (!digits) return NAN;
    if (i < s.n && (s.s[i] | 0x20) == 'e') {
        size_t e = i + 1;
        if (e < s.n && (s.s[e] == '-' || s.s[e] == '+')) e++;
        if (e < s.n && s.s[e] >= '0' && s.s[e] <= '9') {
            while (e < s.n && s.s[e] >= '0' && s.s[e] <= '9') e++;
            i = e;
        }
    }
    char buf[128];
    size_t n = i - start < sizeof buf - 1 ? i - start : sizeof buf - 1;
    memcpy(buf, s.s + start, n);
    buf[n] = 0;
    return strtod(buf, NULL);
}

static ember_status indent_lines(ej_rt *rt, ej_str s, long width, bool first, bool blank, ej_value *out)
{
    if (width < 0 || width > 1000) width = width < 0 ? 0 : 1000;
    ej_buf b = {0};
    ember_status st = EMBER_OK;
    size_t line = 0, start = 0;
    for (size_t i = 0; i <= s.n && !st; i++) {
        if (i < s.n && s.s[i] != '\n') continue;
        bool skip = (!first && line == 0) || (!blank && i == start);
        for (long k = 0; !skip && k < width && !st; k++) st = ej_buf_put(&b, " ", 1);
        if (!st) st = ej_buf_put(&b, s.s + start, i - start);
        if (!st && i < s.n) st = ej_buf_put(&b, "\n", 1);
        start = i + 1;
        line++;
    }
    if (!st) st = ej_rt_str(rt, &b, out);
    ej_buf_free(&b);
    return st;
}

static ember_status join_values(ej_rt *rt, ej_value v, ej_str sep, ej_value *out)
{
    ej_buf b = {0};
    ember_status st = EMBER_OK;
    if (v.kind == EJV_STR) { /* Array.from(string): one item per code point */
        for (size_t i = 0; i < v.u.str.n && !st;) {
            size_t j = i;
            ej_utf8_next(v.u.str.s, v.u.str.n, &j);
            if (i) st = ej_buf_put(&b, sep.s, sep.n);
            if (!st) st = ej_buf_put(&b, v.u.str.s + i, j - i);
            i = j;
        }
    } else {
        for (size_t i = 0; i < v.u.list->n && !st; i++) {
            ej_value item = v.u.list->items[i];
            if (i) st = ej_buf_put(&b, sep.s, sep.n);
            /* Array.join prints null and undefined as nothing */
            if (!st && item.kind != EJV_NONE && item.kind != EJV_UNDEF) st = ej_js_string(&b, item);
        }
    }
    if (!st) st = ej_rt_str(rt, &b, out);
    ej_buf_free(&b);
    return st;
}

static ember_status to_json_value(ej_rt *rt, ej_value v, const ej_json_opts *o, ej_value *out)
{
    ej_buf b = {0};
    ember_status st = ej_to_json(&b, v, o, 0);
    if (!st) st = ej_rt_str(rt, &b, out);
    ej_buf_free(&b);
    return st;
}

/* ---- `x | name` */
static ember_status bare_filter(ej_rt *rt, const ej_node *at, ej_str name, ej_value v, ej_value *out)
{
    char num[EJ_NUMBER_MAX];
    if (ej_str_eqz(name, "safe")) {
        *out = v;
        return EMBER_OK;
    }
    if (ej_str_eqz(name, "tojson")) {
        ej_json_opts o = {.undefined_as_null = true};
        return to_json_value(rt, v, &o, out);
    }
    if (v.kind == EJV_LIST) {
        ej_list *l = v.u.list;
        if (ej_str_eqz(name, "list")) *out = v;
        else if (ej_str_eqz(name, "first")) *out = l->n ? l->items[0] : ej_undef();
        else if (ej_str_eqz(name, "last")) *out = l->n ? l->items[l->n - 1] : ej_undef();
        else if (ej_str_eqz(name, "length")) *out = ej_int((double)l->n);
        else if (ej_str_eqz(name, "reverse")) {
            ej_list *r = ej_list_new(&rt->arena, l->n);
            if (!r) return EMBER_ERR_NO_MEMORY;
            for (size_t i = l->n; i > 0; i--) r->items[r->n++] = l->items[i - 1];
            *out = ej_list_value(r);
        } else if (ej_str_eqz(name, "sort")) return sorted(rt, at, l->items, l->items, l->n, false, false, out);
        else if (ej_str_eqz(name, "join")) return join_values(rt, v, (ej_str){"", 0}, out);
        else if (ej_str_eqz(name, "string")) {
            ej_json_opts o = {0};
            return to_json_value(rt, v, &o, out);
        } else if (ej_str_eqz(name, "unique")) {
            ej_list *u = ej_list_new(&rt->arena, l->n);
            if (!u) return EMBER_ERR_NO_MEMORY;
            for (size_t i = 0; i < l->n; i++) {
                bool seen = false;
                for (size_t k = 0; k < u->n && !seen; k++) seen = ej_strict_equal(u->items[k], l->items[i]);
                if (!seen) u->items[u->n++] = l->items[i];
            }
            *out = ej_list_value(u);
        } else return ej_rt_fail(rt, at, "Unknown ArrayValue filter: %.*s", (int)name.n, name.s);
        return EMBER_OK;
    }
    if (v.kind == EJV_STR) {
        if (ej_str_eqz(name, "length")) *out = ej_int((double)ej_utf16_length(v.u.str));
        else if (ej_str_eqz(name, "upper") || ej_str_eqz(name, "lower") || ej_str_eqz(name, "title") ||
                 ej_str_eqz(name, "capitalize"))
            return ej_string_filter(rt, v.u.str, name, out);
        else if (ej_str_eqz(name, "trim")) return ej_string_filter(rt, v.u.str, (ej_str){"strip", 5}, out);
        else if (ej_str_eqz(name, "indent")) return indent_lines(rt, v.u.str, 4, false, false, out);
        else if (ej_str_eqz(name, "join") || ej_str_eqz(name, "string")) *out = v;
        else if (ej_str_eqz(name, "int")) {
            double x = parse_int(v.u.str);
            *out = ej_int(isnan(x) ? 0 : x);
        } else if (ej_str_eqz(name, "float")) {
            double x = parse_float(v.u.str);
            *out = ej_float(isnan(x) ? 0 : x);
        } else return ej_rt_fail(rt, at, "Unknown StringValue filter: %.*s", (int)name.n, name.s);
        return EMBER_OK;
    }
    if (ej_is_number(v)) {
        if (ej_str_eqz(name, "abs")) *out = v, out->u.num = fabs(v.u.num);
        else if (ej_str_eqz(name, "int")) *out = ej_int(floor(v.u.num));
        else if (ej_str_eqz(name, "float")) *out = ej_float(v.u.num);
        else if (ej_str_eqz(name, "string")) {
            size_t n = v.kind == EJV_INT ? ej_js_number(v.u.num, num) : ej_py_float(v.u.num, num);
            char *s = ej_strdup_arena(&rt->arena, num, n);
            if (!s) return EMBER_ERR_NO_MEMORY;
            *out = ej_string((ej_str){s, n});
        } else return ej_rt_fail(rt, at, "Unknown NumericValue filter: %.*s", (int)name.n, name.s);
        return EMBER_OK;
    }
    if (v.kind == EJV_DICT) {
        if (ej_str_eqz(name, "items")) return ej_dict_items(rt, v.u.dict, out);
        if (ej_str_eqz(name, "length")) {
            *out = ej_int((double)v.u.dict->n);
            return EMBER_OK;
        }
        ej_value m;
        bool ok;
        TRY(ej_builtin_attribute(rt, v, name, &m, &ok));
        if (ok) return ej_call_method(rt, at, v, name, NULL, 0, out);
        return ej_rt_fail(rt, at, "Unknown ObjectValue filter: %.*s", (int)name.n, name.s);
    }
    if (v.kind == EJV_BOOL) {
        if (ej_str_eqz(name, "bool")) *out = v;
        else if (ej_str_eqz(name, "int")) *out = ej_int(v.u.b);
        else if (ej_str_eqz(name, "float")) *out = ej_float(v.u.b);
        else if (ej_str_eqz(name, "string")) *out = ej_string(v.u.b ? (ej_str){"true", 4} : (ej_str){"false", 5});
        else return ej_rt_fail(rt, at, "Unknown BooleanValue filter: %.*s", (int)name.n, name.s);
        return EMBER_OK;
    }
    return ej_rt_fail(rt, at, "Cannot apply filter \"%.*s\" to type: %s", (int)name.n, name.s, ej_kind_name(v));
}

/* ---- `x | name(args)` */
static ember_status tojson_call(ej_rt *rt, const ej_node *at, ej_value v, const ej_dict *kw, ej_value *out)
{
    ej_value indent = kw_or(kw, "indent", ej_none());
    ej_value ascii = kw_or(kw, "ensure_ascii", ej_bool(false));
    ej_value sort = kw_or(kw, "sort_keys", ej_bool(false));
    ej_value seps = kw_or(kw, "separators", ej_none());
    if (indent.kind != EJV_INT && indent.kind != EJV_NONE) return ej_rt_fail(rt, at, "if set, indent must be a number");
    if (indent.kind == EJV_INT && (indent.u.num < 0 || indent.u.num > 100))
        return ej_rt_fail(rt, at, "indent must be between 0 and 100");
    if (ascii.kind != EJV_BOOL) return ej_rt_fail(rt, at, "if set, ensure_ascii must be a boolean");
    if (sort.kind != EJV_BOOL) return ej_rt_fail(rt, at, "if set, sort_keys must be a boolean");
    ej_json_opts o = {.indent = indent.kind == EJV_INT ? (int)indent.u.num : 0,
                      .ensure_ascii = ascii.u.b,
                      .sort_keys = sort.u.b,
                      .undefined_as_null = true};
    if (seps.kind == EJV_LIST) {
        if (seps.u.list->n != 2 || seps.u.list->items[0].kind != EJV_STR || seps.u.list->items[1].kind != EJV_STR)
            return ej_rt_fail(rt, at, "separators must be a tuple of two strings");
        /* the arena copies are NUL-terminated, as the JSON writer wants */
        ej_str a = seps.u.list->items[0].u.str, b = seps.u.list->items[1].u.str;
        char *x = ej_strdup_arena(&rt->arena, a.s, a.n), *y = ej_strdup_arena(&rt->arena, b.s, b.n);
        if (!x || !y) return EMBER_ERR_NO_MEMORY;
        o.item_sep = x;
        o.key_sep = y;
    } else if (seps.kind != EJV_NONE) {
        return ej_rt_fail(rt, at, "if set, separators must be a tuple of two strings");
    }
    return to_json_value(rt, v, &o, out);
}

static ember_status select_items(ej_rt *rt, ej_scope *env, const ej_node *call, ej_str name, ej_value v,
                                 ej_value *out)
{
    bool select = ej_str_eqz(name, "selectattr");
    for (size_t i = 0; i < v.u.list->n; i++)
        if (v.u.list->items[i].kind != EJV_DICT && v.u.list->items[i].kind != EJV_NS)
            return ej_rt_fail(rt, call, "`%.*s` can only be applied to array of objects", (int)name.n, name.s);
    for (size_t i = 0; i < call->n; i++)
        if (call->list[i]->kind != EJN_STR)
            return ej_rt_fail(rt, call, "arguments of `%.*s` must be strings", (int)name.n, name.s);
    ej_value a[3] = {ej_undef(), ej_undef(), ej_undef()};
    for (size_t i = 0; i < call->n && i < 3; i++) TRY(ej_eval(rt, env, call->list[i], &a[i]));
    if (a[0].kind != EJV_STR) return ej_rt_fail(rt, call, "`%.*s` needs an attribute name", (int)name.n, name.s);
    bool has_test = call->n > 1;
    if (has_test && !ej_test_known(a[1].u.str))
        return ej_rt_fail(rt, call, "Unknown test: %.*s", (int)a[1].u.str.n, a[1].u.str.s);
    ej_list *l = ej_list_new(&rt->arena, v.u.list->n);
    if (!l) return EMBER_ERR_NO_MEMORY;
    for (size_t i = 0; i < v.u.list->n; i++) {
        ej_value *field = ej_dict_get(v.u.list->items[i].u.dict, a[0].u.str);
        bool r = false;
        if (field && !has_test) {
            r = ej_truthy(*field);
        } else if (field && (ej_str_eqz(a[1].u.str, "equalto") || ej_str_eqz(a[1].u.str, "eq"))) {
            r = ej_strict_equal(*field, a[2]);
        } else if (field) {
            TRY(ej_apply_test(rt, call, a[1].u.str, *field, &r));
        }
        if (r == select) l->items[l->n++] = v.u.list->items[i];
    }
    *out = ej_list_value(l);
    return EMBER_OK;
}

static ember_status list_call_filter(ej_rt *rt, ej_scope *env, const ej_node *call, ej_str name, ej_value v,
                                     ej_value *args, size_t n_args, const ej_dict *kw, ej_value *out)
{
    ej_list *l = v.u.list;
    if (ej_str_eqz(name, "selectattr") || ej_str_eqz(name, "rejectattr")) return select_items(rt, env, call, name, v, out);
    if (ej_str_eqz(name, "sort")) {
        ej_value rev = n_args > 0 ? args[0] : kw_or(kw, "reverse", ej_bool(false));
        ej_value cs = n_args > 1 ? args[1] : kw_or(kw, "case_sensitive", ej_bool(false));
        ej_value attr = n_args > 2 ? args[2] : kw_or(kw, "attribute", ej_none());
        if (rev.kind != EJV_BOOL) return ej_rt_fail(rt, call, "reverse must be a boolean");
        if (cs.kind != EJV_BOOL) return ej_rt_fail(rt, call, "case_sensitive must be a boolean");
        if (attr.kind != EJV_STR && attr.kind != EJV_INT && attr.kind != EJV_NONE)
            return ej_rt_fail(rt, call, "attribute must be a string, integer, or null");
        ej_value *keys = ej_alloc(&rt->arena, (l->n + 1) * sizeof *keys);
        if (!keys) return EMBER_ERR_NO_MEMORY;
        char num[EJ_NUMBER_MAX];
        ej_str path = attr.kind == EJV_STR ? attr.u.str : (ej_str){num, attr.kind == EJV_INT ? ej_js_number(attr.u.num, num) : 0};
        for (size_t i = 0; i < l->n; i++) keys[i] = attr.kind == EJV_NONE ? l->items[i] : attribute_path(l->items[i], path);
        return sorted(rt, call, l->items, keys, l->n, rev.u.b, cs.u.b, out);
    }
    if (ej_str_eqz(name, "map")) {
        ej_value *attr = kw ? ej_dict_get(kw, (ej_str){"attribute", 9}) : NULL;
        if (!attr) return ej_rt_fail(rt, call, "`map` expressions without `attribute` set are not currently supported");
        if (attr->kind != EJV_STR) return ej_rt_fail(rt, call, "attribute must be a string");
        ej_value *dflt = ej_dict_get(kw, (ej_str){"default", 7});
        ej_list *m = ej_list_new(&rt->arena, l->n);
        if (!m) return EMBER_ERR_NO_MEMORY;
        for (size_t i = 0; i < l->n; i++) {
            if (l->items[i].kind != EJV_DICT && l->items[i].kind != EJV_NS)
                return ej_rt_fail(rt, call, "items in map must be an object");
            ej_value x = attribute_path(l->items[i], attr->u.str);
            m->items[m->n++] = x.kind == EJV_UNDEF && dflt ? *dflt : x;
        }
        *out = ej_list_value(m);
        return EMBER_OK;
    }
    return ej_rt_fail(rt, call, "Unknown ArrayValue filter: %.*s", (int)name.n, name.s);
}

static ember_status call_filter(ej_rt *rt, ej_scope *env, const ej_node *call, ej_value v, ej_value *out)
{
    ej_str name = call->a->str;
    ej_value *args;
    size_t n_args;
    ej_dict *kw;
    /* selectattr/rejectattr look at the argument nodes themselves */
    bool lazy = v.kind == EJV_LIST && (ej_str_eqz(name, "selectattr") || ej_str_eqz(name, "rejectattr"));
    if (lazy) return select_items(rt, env, call, name, v, out);
    TRY(ej_eval_args(rt, env, call->list, call->n, &args, &n_args, &kw));
    if (ej_str_eqz(name, "tojson")) return tojson_call(rt, call, v, kw, out);
    if (ej_str_eqz(name, "join")) {
        if (v.kind != EJV_STR && v.kind != EJV_LIST)
            return ej_rt_fail(rt, call, "Cannot apply filter \"join\" to type: %s", ej_kind_name(v));
        ej_value sep = n_args > 0 ? args[0] : kw_or(kw, "separator", ej_string((ej_str){"", 0}));
        if (sep.kind != EJV_STR) return ej_rt_fail(rt, call, "separator must be a string");
        return join_values(rt, v, sep.u.str, out);
    }
    if (ej_str_eqz(name, "int") || ej_str_eqz(name, "float")) {
        bool is_int = name.s[0] == 'i';
        ej_value dflt = n_args > 0 ? args[0] : kw_or(kw, "default", is_int ? ej_int(0) : ej_float(0));
        if (v.kind == EJV_STR) {
            double x = is_int ? parse_int(v.u.str) : parse_float(v.u.str);
            *out = isnan(x) ? dflt : is_int ? ej_int(x) : ej_float(x);
        } else if (ej_is_number(v)) {
            *out = v;
        } else if (v.kind == EJV_BOOL) {
            *out = is_int ? ej_int(v.u.b) : ej_float(v.u.b);
        } else {
            return ej_rt_fail(rt, call, "Cannot apply filter \"%.*s\" to type: %s", (int)name.n, name.s, ej_kind_name(v));
        }
        return EMBER_OK;
    }
    if (ej_str_eqz(name, "default")) {
        ej_value dflt = n_args > 0 ? args[0] : ej_string((ej_str){"", 0});
        ej_value flag = n_args > 1 ? args[1] : kw_or(kw, "boolean", ej_bool(false));
        if (flag.kind != EJV_BOOL) return ej_rt_fail(rt, call, "`default` filter flag must be a boolean");
        *out = v.kind == EJV_UNDEF || (flag.u.b && !ej_truthy(v)) ? dflt : v;
        return EMBER_OK;
    }
    if (v.kind == EJV_LIST) return list_call_filter(rt, env, call, name, v, args, n_args, kw, out);
    if (v.kind == EJV_STR) {
        if (ej_str_eqz(name, "indent")) {
            ej_value width = n_args > 0 ? args[0] : kw_or(kw, "width", ej_int(4));
            ej_value first = n_args > 1 ? args[1] : kw_or(kw, "first", ej_bool(false));
            ej_value blank = n_args > 2 ? args[2] : kw_or(kw, "blank", ej_bool(false));
            if (width.kind != EJV_INT) return ej_rt_fail(rt, call, "width must be a number");
            return indent_lines(rt, v.u.str, (long)width.u.num, ej_truthy(first), ej_truthy(blank), out);
        }
        if (ej_str_eqz(name, "replace")) {
            ej_value *all = ej_alloc(&rt->arena, (n_args + 1) * sizeof *all);
            if (!all) return EMBER_ERR_NO_MEMORY;
            for (size_t i = 0; i < n_args; i++) all[i] = args[i];
            all[n_args] = ej_dict_value(kw);
            return ej_string_replace(rt, call, v.u.str, all, n_args + 1, out);
        }
        return ej_rt_fail(rt, call, "Unknown StringValue filter: %.*s", (int)name.n, name.s);
    }
    if (v.kind == EJV_DICT) {
        ej_value m;
        bool ok;
        TRY(ej_builtin_attribute(rt, v, name, &m, &ok));
        if (!ok) return ej_rt_fail(rt, call, "Unknown ObjectValue filter: %.*s", (int)name.n, name.s);
        ej_value *all = ej_alloc(&rt->arena, (n_args + 1) * sizeof *all);
        if (!all) return EMBER_ERR_NO_MEMORY;
        for (size_t i = 0; i < n_args; i++) all[i] = args[i];
        if (kw->n) all[n_args++] = ej_dict_value(kw);
        return ej_call_method(rt, call, v, name, all, n_args, out);
    }
    return ej_rt_fail(rt, call, "Cannot apply filter \"%.*s\" to type: %s", (int)name.n, name.s, ej_kind_name(v));
}

ember_status ej_apply_filter(ej_rt *rt, ej_scope *env, const ej_node *filter, ej_value operand, ej_value *out)
{
    if (filter->kind == EJN_IDENT) return bare_filter(rt, filter, filter->str, operand, out);
    if (filter->kind == EJN_CALL && filter->a->kind == EJN_IDENT) return call_filter(rt, env, filter, operand, out);
    return ej_rt_fail(rt, filter, "Unknown filter");
}
