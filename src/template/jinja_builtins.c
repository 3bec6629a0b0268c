/* Built-ins other than filters: the `is` tests, the methods of strings and
 * dicts (str.split, dict.items, ...), and the global functions namespace(),
 * raise_exception(), range() and strftime_now(). Each follows
 * @huggingface/jinja, JavaScript string semantics included: strip() ignores
 * its argument and trims JavaScript whitespace, title() capitalizes after
 * ASCII word boundaries only, capitalize() leaves the rest as it is. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "template/jinja_internal.h"

#define TRY(x)                                                                                \
    do {                                                                                      \
        ember_status st_ = (x);                                                               \
        if (st_) return st_;                                                                  \
    } while (0)

static bool name_in(ej_str name, const char *const *names)
{
    for (; *names; names++)
        if (ej_str_eqz(name, *names)) return true;
    return false;
}

static const char *const TESTS[] = {"boolean", "callable", "odd", "even", "false", "true", "none",
                                    "string", "number", "integer", "iterable", "mapping", "sequence",
                                    "lower", "upper", "defined", "undefined", "equalto", "eq", NULL};

bool ej_test_known(ej_str name) { return name_in(name, TESTS); }

static bool same_case(ej_rt *rt, ej_str s, bool upper, bool *out)
{
    ej_str mapped;
    if (ej_case_map(&rt->arena, s, upper, &mapped)) return false;
    *out = ej_str_eq(s, mapped);
    return true;
}

ember_status ej_apply_test(ej_rt *rt, const ej_node *at, ej_str name, ej_value v, bool *out)
{
    if (ej_str_eqz(name, "odd") || ej_str_eqz(name, "even")) {
        if (v.kind != EJV_INT) return ej_rt_fail(rt, at, "Cannot %.*s on %s", (int)name.n, name.s, ej_kind_name(v));
        bool odd = fmod(v.u.num, 2) != 0;
        *out = name.s[0] == 'o' ? odd : !odd;
        return EMBER_OK;
    }
    if (ej_str_eqz(name, "lower") || ej_str_eqz(name, "upper")) {
        *out = false;
        if (v.kind == EJV_STR && !same_case(rt, v.u.str, name.s[0] == 'u', out)) return EMBER_ERR_NO_MEMORY;
        return EMBER_OK;
    }
    bool r;
    if (ej_str_eqz(name, "boolean")) r = v.kind == EJV_BOOL;
    else if (ej_str_eqz(name, "callable")) r = v.kind == EJV_FUNC;
    else if (ej_str_eqz(name, "false")) r = v.kind == EJV_BOOL && !v.u.b;
    else if (ej_str_eqz(name, "true")) r = v.kind == EJV_BOOL && v.u.b;
    else if (ej_str_eqz(name, "none")) r = v.kind == EJV_NONE;
    else if (ej_str_eqz(name, "string")) r = v.kind == EJV_STR;
    else if (ej_str_eqz(name, "number")) r = ej_is_number(v);
    else if (ej_str_eqz(name, "integer")) r = v.kind == EJV_INT;
    else if (ej_str_eqz(name, "iterable")) r = (v.kind == EJV_LIST && !v.u.list->tuple) || v.kind == EJV_STR;
    else if (ej_str_eqz(name, "mapping")) r = v.kind == EJV_DICT;
    else if (ej_str_eqz(name, "sequence")) r = v.kind == EJV_LIST || v.kind == EJV_DICT || v.kind == EJV_STR;
    else if (ej_str_eqz(name, "defined")) r = v.kind != EJV_UNDEF;
    else if (ej_str_eqz(name, "undefined")) r = v.kind == EJV_UNDEF;
    else if (ej_str_eqz(name, "equalto") || ej_str_eqz(name, "eq")) r = v.kind == EJV_UNDEF; /* no second operand */
    else return ej_rt_fail(rt, at, "Unknown test: %.*s", (int)name.n, name.s);
    *out = r;
    return EMBER_OK;
}

/* ---- attributes and methods */
static const char *const STRING_METHODS[] = {"upper", "lower", "strip", "title", "capitalize", "rstrip",
                                             "lstrip", "startswith", "endswith", "split", "replace", NULL};
static const char *const DICT_METHODS[] = {"get", "items", "keys", "values", "dictsort", NULL};

static ember_status bound_method(ej_rt *rt, ej_value self, ej_str name, ej_value *out)
{
    ej_func *f = ej_alloc(&rt->arena, sizeof *f);
    if (!f) return EMBER_ERR_NO_MEMORY;
    f->kind = EJF_METHOD;
    f->self = self;
    f->name = name;
    out->kind = EJV_FUNC;
    out->u.fn = f;
    return EMBER_OK;
}

ember_status ej_builtin_attribute(ej_rt *rt, ej_value self, ej_str name, ej_value *out, bool *ok)
{
    *ok = true;
    if ((self.kind == EJV_STR || self.kind == EJV_LIST) && ej_str_eqz(name, "length")) {
        *out = ej_int((double)(self.kind == EJV_STR ? ej_utf16_length(self.u.str) : self.u.list->n));
        return EMBER_OK;
    }
    if ((self.kind == EJV_STR && name_in(name, STRING_METHODS)) ||
        (self.kind == EJV_DICT && name_in(name, DICT_METHODS)))
        return bound_method(rt, self, name, out);
    *ok = false;
    *out = ej_undef();
    return EMBER_OK;
}

static ember_status new_string(ej_rt *rt, const char *s, size_t n, ej_value *out)
{
    char *p = ej_strdup_arena(&rt->arena, s, n);
    if (!p) return EMBER_ERR_NO_MEMORY;
    *out = ej_string((ej_str){p, n});
    return EMBER_OK;
}

static ember_status title_case(ej_rt *rt, ej_str s, ej_value *out)
{
    char *p = ej_strdup_arena(&rt->arena, s.s, s.n);
    if (!p) return EMBER_ERR_NO_MEMORY;
    for (size_t i = 0; i < s.n; i++) {
        char c = p[i], prev = i ? s.s[i - 1] : ' ';
        bool word = (c >= '0' && c <= '9') || c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
        bool prev_word = (prev >= '0' && prev <= '9') || prev == '_' || ((prev | 0x20) >= 'a' && (prev | 0x20) <= 'z');
        if (word && !prev_word && c >= 'a' && c <= 'z') p[i] = (char)(c - 32);
    }
    *out = ej_string((ej_str){p, s.n});
    return EMBER_OK;
}

static ember_status capitalize(ej_rt *rt, ej_str s, ej_value *out)
{
    if (s.n == 0) return new_string(rt, "", 0, out);
    size_t i = 0;
    uint32_t cp = ej_utf8_next(s.s, s.n, &i);
    if (cp >= 0x10000) return new_string(rt, s.s, s.n, out);
    ej_str head;
    TRY(ej_case_map(&rt->arena, (ej_str){s.s, i}, true, &head));
    char *p = ej_alloc(&rt->arena, head.n + s.n - i + 1);
    if (!p) return EMBER_ERR_NO_MEMORY;
    memcpy(p, head.s, head.n);
    memcpy(p + head.n, s.s + i, s.n - i);
    *out = ej_string((ej_str){p, head.n + s.n - i});
    return EMBER_OK;
}

/* upper, lower, title, capitalize, strip, lstrip, rstrip (no arguments). */
ember_status ej_string_filter(ej_rt *rt, ej_str s, ej_str name, ej_value *out)
{
    if (ej_str_eqz(name, "upper") || ej_str_eqz(name, "lower")) {
        ej_str m;
        TRY(ej_case_map(&rt->arena, s, name.s[0] == 'u', &m));
        *out = ej_string(m);
        return EMBER_OK;
    }
    if (ej_str_eqz(name, "title")) return title_case(rt, s, out);
    if (ej_str_eqz(name, "capitalize")) return capitalize(rt, s, out);
    size_t from = 0, to = s.n;
    if (ej_str_eqz(name, "strip") || ej_str_eqz(name, "lstrip")) from = ej_trim_start(s);
    if (ej_str_eqz(name, "strip") || ej_str_eqz(name, "rstrip")) to = ej_trim_end(s);
    if (to < from) to = from;
    *out = ej_string((ej_str){s.s + from, to - from});
    return EMBER_OK;
}

static bool has_prefix(ej_str s, ej_str p, bool at_end)
{
    if (p.n > s.n) return false;
    return p.n == 0 || !memcmp(at_end ? s.s + s.n - p.n : s.s, p.s, p.n);
}

static ember_status starts_or_ends(ej_rt *rt, const ej_node *at, ej_str s, bool at_end, ej_value *args,
                                   size_t n_args, ej_value *out)
{
    const char *fn = at_end ? "endswith" : "startswith";
    if (n_args == 0) return ej_rt_fail(rt, at, "%s() requires at least one argument", fn);
    if (args[0].kind == EJV_STR) {
        *out = ej_bool(has_prefix(s, args[0].u.str, at_end));
        return EMBER_OK;
    }
    if (args[0].kind != EJV_LIST) return ej_rt_fail(rt, at, "%s() argument must be a string or tuple of strings", fn);
    for (size_t i = 0; i < args[0].u.list->n; i++) {
        ej_value p = args[0].u.list->items[i];
        if (p.kind != EJV_STR) return ej_rt_fail(rt, at, "%s() tuple elements must be strings", fn);
        if (has_prefix(s, p.u.str, at_end)) {
            *out = ej_bool(true);
            return EMBER_OK;
        }
    }
    *out = ej_bool(false);
    return EMBER_OK;
}

static ember_status push_str(ej_rt *rt, ej_list *l, const char *s, size_t n)
{
    return ej_list_push(&rt->arena, l, ej_string((ej_str){s, n}));
}

static ember_status split(ej_rt *rt, const ej_node *at, ej_str s, ej_value *args, size_t n_args, ej_value *out)
{
    ej_value sep = n_args > 0 ? args[0] : ej_none();
    ej_value maxv = n_args > 1 ? args[1] : ej_int(-1);
    if (sep.kind != EJV_STR && sep.kind != EJV_NONE) return ej_rt_fail(rt, at, "sep argument must be a string or null");
    if (maxv.kind != EJV_INT) return ej_rt_fail(rt, at, "maxsplit argument must be a number");
    double max = maxv.u.num;
    ej_list *l = ej_list_new(&rt->arena, 0);
    if (!l) return EMBER_ERR_NO_MEMORY;
    if (sep.kind == EJV_NONE) {
        /* runs of non-whitespace; past maxsplit the rest of the text is one item */
        size_t i = ej_trim_start(s);
        while (i < s.n) {
            size_t start = i;
            while (i < s.n) {
                size_t j = i;
                if (ej_js_space(ej_utf8_next(s.s, s.n, &j))) break;
                i = j;
            }
            if (max != -1 && (double)l->n >= max) {
                TRY(push_str(rt, l, s.s + start, s.n - start));
                break;
            }
            TRY(push_str(rt, l, s.s + start, i - start));
            while (i < s.n) {
                size_t j = i;
                if (!ej_js_space(ej_utf8_next(s.s, s.n, &j))) break;
                i = j;
            }
        }
    } else {
        ej_str d = sep.u.str;
        if (d.n == 0) return ej_rt_fail(rt, at, "empty separator");
        size_t start = 0;
        for (size_t i = 0; i + d.n <= s.n;) {
            if (memcmp(s.s + i, d.s, d.n)) {
                i++;
                continue;
            }
            if (max != -1 && (double)l->n >= max) break;
            TRY(push_str(rt, l, s.s + start, i - start));
            i += d.n;
            start = i;
        }
        TRY(push_str(rt, l, s.s + start, s.n - start));
    }
    *out = ej_list_value(l);
    return EMBER_OK;
}

ember_status ej_string_replace(ej_rt *rt, const ej_node *at, ej_str s, ej_value *args, size_t n_args,
                               ej_value *out)
{
    if (n_args < 2) return ej_rt_fail(rt, at, "replace() requires at least two arguments");
    if (args[0].kind != EJV_STR || args[1].kind != EJV_STR) return ej_rt_fail(rt, at, "replace() arguments must be strings");
    ej_value count = ej_none();
    if (n_args > 2) {
        count = args[2];
        if (count.kind == EJV_DICT && count.u.dict->kwargs) {
            ej_value *c = ej_dict_get(count.u.dict, (ej_str){"count", 5});
            count = c ? *c : ej_none();
        }
    }
    if (count.kind != EJV_INT && count.kind != EJV_NONE)
        return ej_rt_fail(rt, at, "replace() count argument must be a number or null");
    double left = count.kind == EJV_NONE || count.u.num < 0 ? INFINITY : count.u.num;
    ej_str from = args[0].u.str, to = args[1].u.str;
    ej_buf b = {0};
    ember_status st = EMBER_OK;
    size_t i = 0;
    if (from.n == 0) {
        /* an empty pattern matches before every code point and at the end */
        while (!st) {
            if (left > 0) {
                st = ej_buf_put(&b, to.s, to.n);
                left--;
            }
            if (i >= s.n || st) break;
            size_t j = i;
            ej_utf8_next(s.s, s.n, &j);
            st = ej_buf_put(&b, s.s + i, j - i);
            i = j;
        }
    } else {
        size_t copied = 0;
        while (left > 0 && i + from.n <= s.n) {
            if (memcmp(s.s + i, from.s, from.n)) {
                i++;
                continue;
            }
            if ((st = ej_buf_put(&b, s.s + copied, i - copied)) || (st = ej_buf_put(&b, to.s, to.n))) break;
            i += from.n;
            copied = i;
            left--;
        }
        if (!st) st = ej_buf_put(&b, s.s + copied, s.n - copied);
    }
    if (!st) st = ej_rt_str(rt, &b, out);
    ej_buf_free(&b);
    return st;
}

static ember_status dict_method(ej_rt *rt, const ej_node *at, const ej_dict *d, ej_str name, ej_value *args,
                                size_t n_args, ej_value *out)
{
    if (ej_str_eqz(name, "get")) {
        ej_value key = n_args > 0 ? args[0] : ej_undef();
        if (key.kind != EJV_STR) return ej_rt_fail(rt, at, "object key must be a string: got %s", ej_kind_name(key));
        ej_value *v = ej_dict_get(d, key.u.str);
        *out = v ? *v : n_args > 1 ? args[1] : ej_none();
        return EMBER_OK;
    }
    if (ej_str_eqz(name, "dictsort")) return ej_dictsort(rt, at, d, args, n_args, out);
    if (ej_str_eqz(name, "items")) return ej_dict_items(rt, d, out);
    ej_list *l = ej_list_new(&rt->arena, d->n);
    if (!l) return EMBER_ERR_NO_MEMORY;
    bool keys = ej_str_eqz(name, "keys");
    for (size_t i = 0; i < d->n; i++) l->items[l->n++] = keys ? ej_string(d->keys[i]) : d->vals[i];
    *out = ej_list_value(l);
    return EMBER_OK;
}

ember_status ej_dict_items(ej_rt *rt, const ej_dict *d, ej_value *out)
{
    ej_list *l = ej_list_new(&rt->arena, d->n);
    if (!l) return EMBER_ERR_NO_MEMORY;
    for (size_t i = 0; i < d->n; i++) {
        ej_list *pair = ej_list_new(&rt->arena, 2);
        if (!pair) return EMBER_ERR_NO_MEMORY;
        pair->items[0] = ej_string(d->keys[i]);
        pair->items[1] = d->vals[i];
        pair->n = 2;
        l->items[l->n++] = ej_list_value(pair);
    }
    *out = ej_list_value(l);
    return EMBER_OK;
}

ember_status ej_call_method(ej_rt *rt, const ej_node *at, ej_value self, ej_str name, ej_value *args,
                            size_t n_args, ej_value *out)
{
    if (self.kind == EJV_DICT) return dict_method(rt, at, self.u.dict, name, args, n_args, out);
    ej_str s = self.u.str;
    if (ej_str_eqz(name, "startswith") || ej_str_eqz(name, "endswith"))
        return starts_or_ends(rt, at, s, name.s[0] == 'e', args, n_args, out);
    if (ej_str_eqz(name, "split")) return split(rt, at, s, args, n_args, out);
    if (ej_str_eqz(name, "replace")) return ej_string_replace(rt, at, s, args, n_args, out);
    return ej_string_filter(rt, s, name, out); /* the argument-less ones ignore their arguments */
}

/* ---- global functions */
static ember_status namespace_new(ej_rt *rt, const ej_node *at, ej_value *args, size_t n_args, ej_value *out)
{
    ej_dict *kw = NULL;
    if (n_args && args[n_args - 1].kind == EJV_DICT && args[n_args - 1].u.dict->kwargs) kw = args[--n_args].u.dict;
    if (n_args > 1) return ej_rt_fail(rt, at, "namespace expected at most 1 argument, got %zu", n_args);
    ej_dict *d = ej_dict_new(&rt->arena);
    if (!d) return EMBER_ERR_NO_MEMORY;
    if (n_args == 1) {
        ej_value src = args[0];
        if (src.kind == EJV_DICT) {
            for (size_t i = 0; i < src.u.dict->n; i++) TRY(ej_dict_set(&rt->arena, d, src.u.dict->keys[i], src.u.dict->vals[i]));
        } else if (src.kind == EJV_LIST) {
            for (size_t i = 0; i < src.u.list->n; i++) {
                ej_value pair = src.u.list->items[i];
                ej_value k, v;
                if (pair.kind == EJV_LIST && pair.u.list->n == 2) {
                    k = pair.u.list->items[0];
                    v = pair.u.list->items[1];
                } else if (pair.kind == EJV_STR && ej_utf16_length(pair.u.str) == 2) {
                    size_t j = 0;
                    ej_utf8_next(pair.u.str.s, pair.u.str.n, &j);
                    k = ej_string((ej_str){pair.u.str.s, j});
                    v = ej_string((ej_str){pair.u.str.s + j, pair.u.str.n - j});
                } else {
                    return ej_rt_fail(rt, at, "namespace expected an object or an iterable of [key, value] pairs");
                }
                if (k.kind != EJV_STR) return ej_rt_fail(rt, at, "namespace keys must be strings");
                TRY(ej_dict_set(&rt->arena, d, k.u.str, v));
            }
        } else {
            return ej_rt_fail(rt, at, "'%s' object is not iterable", ej_kind_name(src));
        }
    }
    for (size_t i = 0; kw && i < kw->n; i++) TRY(ej_dict_set(&rt->arena, d, kw->keys[i], kw->vals[i]));
    out->kind = EJV_NS;
    out->u.dict = d;
    return EMBER_OK;
}

static ember_status range_list(ej_rt *rt, const ej_node *at, ej_value *args, size_t n_args, ej_value *out)
{
    double v[3] = {0, 0, 1};
    if (n_args < 1 || n_args > 3) return ej_rt_fail(rt, at, "range() takes 1 to 3 integer arguments");
    for (size_t i = 0; i < n_args; i++) {
        if (!ej_is_number(args[i])) return ej_rt_fail(rt, at, "range() arguments must be numbers, got %s", ej_kind_name(args[i]));
        v[i] = args[i].u.num;
    }
    double start = n_args == 1 ? 0 : v[0], stop = n_args == 1 ? v[0] : v[1], stepv = n_args == 3 ? v[2] : 1;
    if (stepv == 0) return ej_rt_fail(rt, at, "range() step must not be zero");
    double count = stepv > 0 ? ceil((stop - start) / stepv) : ceil((start - stop) / -stepv);
    if (!(count < 10e6)) return ej_rt_fail(rt, at, "range() of more than 10 million items");
    ej_list *l = ej_list_new(&rt->arena, count > 0 ? (size_t)count : 0);
    if (!l) return EMBER_ERR_NO_MEMORY;
    for (double x = start; stepv > 0 ? x < stop : x > stop; x += stepv) {
        ej_value item = x == floor(x) ? ej_int(x) : ej_float(x);
        TRY(ej_list_push(&rt->arena, l, item));
    }
    *out = ej_list_value(l);
    return EMBER_OK;
}

static ember_status strftime_now(ej_rt *rt, const ej_node *at, ej_value *args, size_t n_args, ej_value *out)
{
    static const char *const months[] = {"January", "February", "March", "April", "May", "June", "July",
                                         "August", "September", "October", "November", "December"};
    if (n_args < 1 || args[0].kind != EJV_STR) return ej_rt_fail(rt, at, "strftime_now() takes a format string");
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm)) return ej_rt_fail(rt, at, "strftime_now(): no local time");
    ej_str f = args[0].u.str;
    ej_buf b = {0};
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < f.n && !st; i++) {
        char tmp[32];
        const char *piece = NULL;
        if (f.s[i] == '%' && i + 1 < f.n) {
            switch (f.s[i + 1]) {
            case 'Y': snprintf(tmp, sizeof tmp, "%d", tm.tm_year + 1900); piece = tmp; break;
            case 'm': snprintf(tmp, sizeof tmp, "%02d", tm.tm_mon + 1); piece = tmp; break;
            case 'd': snprintf(tmp, sizeof tmp, "%02d", tm.tm_mday); piece = tmp; break;
            case 'H': snprintf(tmp, sizeof tmp, "%02d", tm.tm_hour); piece = tmp; break;
            case 'M': snprintf(tmp, sizeof tmp, "%02d", tm.tm_min); piece = tmp; break;
            case 'B': piece = months[tm.tm_mon]; break;
            case 'b': snprintf(tmp, sizeof tmp, "%.3s", months[tm.tm_mon]); piece = tmp; break;
            case '%': piece = "%"; break;
            default: break;
            }
        }
        if (piece) {
            st = ej_buf_putz(&b, piece);
            i++;
        } else {
            st = ej_buf_put(&b, f.s + i, 1);
        }
    }
    if (!st) st = ej_rt_str(rt, &b, out);
    ej_buf_free(&b);
    return st;
}

ember_status ej_call_builtin(ej_rt *rt, const ej_node *at, ej_str name, ej_value *args, size_t n_args,
                             ej_value *out)
{
    if (ej_str_eqz(name, "namespace")) return namespace_new(rt, at, args, n_args, out);
    if (ej_str_eqz(name, "range")) return range_list(rt, at, args, n_args, out);
    if (ej_str_eqz(name, "strftime_now")) return strftime_now(rt, at, args, n_args, out);
    /* raise_exception: the message is the arguments as JavaScript prints an array */
    ej_list l = {.items = args, .n = n_args, .cap = n_args};
    ej_buf b = {0};
    ember_status st = ej_js_string(&b, ej_list_value(&l));
    if (!st) st = ej_rt_fail(rt, at, "raise_exception: %s", b.p ? b.p : "");
    ej_buf_free(&b);
    return st;
}
