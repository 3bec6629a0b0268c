/* Internals shared by the jinja_*.c files: the arena, strings, tokens, the
 * AST and the runtime value type. Nothing here is part of the public API.
 *
 * Semantics follow @huggingface/jinja 0.5.x, which runs on JavaScript: numbers
 * are doubles (an "int" is a double flagged integral), strings print the way
 * JavaScript prints them, and `x.strip('\n')` ignores its argument because the
 * reference does. Where that differs from Python's Jinja, the reference wins:
 * the point is to produce the prompt transformers.js produces. */
#ifndef EMBER_TEMPLATE_JINJA_INTERNAL_H
#define EMBER_TEMPLATE_JINJA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "base/status.h"
#include "template/jinja.h"

/* ---- limits: bad or hostile templates fail instead of exhausting the host */
#define EJ_MAX_PARSE_DEPTH 200           /* nested expressions/statements */
#define EJ_MAX_CALL_DEPTH 64              /* nested macro calls */
#define EJ_MAX_EVAL_DEPTH 400             /* nested evaluation overall */
#define EJ_MAX_STEPS 20000000u            /* evaluation steps per render */
#define EJ_MAX_OUTPUT ((size_t)64 << 20)  /* bytes of rendered text */
#define EJ_MAX_MEMORY ((size_t)256 << 20) /* bytes of values per render */

/* ---- arena: everything of one parse or one render, freed at once */
typedef struct ej_chunk ej_chunk;
typedef struct ej_arena {
    ej_chunk *head;
    size_t total, limit;
} ej_arena;
void ej_arena_init(ej_arena *a, size_t limit);
/* Zeroed memory, or NULL (with ember_fail set) past the limit or out of memory. */
void *ej_alloc(ej_arena *a, size_t n);
void ej_arena_free(ej_arena *a);

/* ---- strings: UTF-8 bytes with a length, never owned by themselves */
typedef struct ej_str {
    const char *s;
    size_t n;
} ej_str;
bool ej_str_eq(ej_str a, ej_str b);
bool ej_str_eqz(ej_str a, const char *z);
char *ej_strdup_arena(ej_arena *a, const char *s, size_t n);

/* A growable malloc'd byte buffer (rendered output is built in these). */
typedef struct ej_buf {
    char *p;
    size_t n, cap;
} ej_buf;
ember_status ej_buf_put(ej_buf *b, const char *s, size_t n);
ember_status ej_buf_putz(ej_buf *b, const char *z);
void ej_buf_free(ej_buf *b);

/* ---- Unicode helpers with JavaScript's definitions (jinja_unicode.c) */
/* Decodes one code point at s[i] (i < n); invalid bytes decode as U+FFFD of length 1. */
uint32_t ej_utf8_next(const char *s, size_t n, size_t *i);
size_t ej_utf8_put(char out[4], uint32_t cp);
bool ej_js_space(uint32_t cp); /* JavaScript's \s and String.prototype.trim */
size_t ej_utf16_length(ej_str s);
/* Offsets after JavaScript's trimStart / trimEnd. */
size_t ej_trim_start(ej_str s);
size_t ej_trim_end(ej_str s);
ember_status ej_case_map(ej_arena *a, ej_str s, bool upper, ej_str *out);

/* ---- numbers printed the way JavaScript prints them (jinja_number.c) */
#define EJ_NUMBER_MAX 40
size_t ej_js_number(double x, char out[EJ_NUMBER_MAX]);  /* String(x) */
size_t ej_py_float(double x, char out[EJ_NUMBER_MAX]);   /* FloatValue.toString */

/* ---- tokens (jinja_lex.c) */
typedef enum ej_tok_type {
    EJT_EOF,
    EJT_TEXT,
    EJT_NUMBER,
    EJT_STRING,
    EJT_IDENT,
    EJT_EQUALS,
    EJT_LPAREN,
    EJT_RPAREN,
    EJT_OPEN_STMT,
    EJT_CLOSE_STMT,
    EJT_OPEN_EXPR,
    EJT_CLOSE_EXPR,
    EJT_LBRACKET,
    EJT_RBRACKET,
    EJT_LBRACE,
    EJT_RBRACE,
    EJT_COMMA,
    EJT_DOT,
    EJT_COLON,
    EJT_PIPE,
    EJT_ADD, /* + - ~ */
    EJT_MUL, /* * / // % */
    EJT_POW, /* ** */
    EJT_CMP, /* < > <= >= == != */
    EJT_UNARY,
    EJT_COMMENT
} ej_tok_type;

typedef struct ej_token {
    ej_tok_type type;
    ej_str text;  /* string literals unescaped; points into the arena */
    uint32_t pos; /* byte offset in the original source */
} ej_token;

/* Tokenizes src (after the trim_blocks / lstrip_blocks preprocessing) into an
 * arena array that ends with an EJT_EOF token. */
ember_status ej_lex(ej_arena *a, const char *src, size_t len, ej_token **out, size_t *n_out);
/* "template:LINE:COL: " + message, for an offset in the original source. */
ember_status ej_fail_at(ember_status st, const char *src, size_t len, uint32_t pos,
                        const char *fmt, ...) EMBER_PRINTF(5, 6);

/* ---- AST (jinja_parse.c) */
typedef enum ej_node_kind {
    /* statements */
    EJN_TEXT,   /* str: literal output */
    EJN_OUTPUT, /* a: the expression in {{ }} */
    EJN_IF,     /* a: test, list: body, list2: else (an elif is one EJN_IF) */
    EJN_FOR,    /* a: target, b: iterable, list: body, list2: else */
    EJN_SET,    /* a: target, b: value or NULL with list: block body */
    EJN_MACRO,  /* str: name, list: parameters, list2: body, num: 1 if the body reads
                   varargs, +2 if kwargs */
    EJN_CALL_BLOCK, /* a: the call, list: caller parameters, list2: body, num: as MACRO */
    EJN_FILTER_BLOCK, /* a: filter (IDENT or CALL), list: body */
    EJN_BREAK,
    EJN_CONTINUE,
    /* expressions */
    EJN_INT,    /* num */
    EJN_FLOAT,  /* num */
    EJN_STR,    /* str */
    EJN_IDENT,  /* str */
    EJN_LIST,   /* list: items */
    EJN_TUPLE,  /* list: items */
    EJN_DICT,   /* list: keys, list2: values */
    EJN_MEMBER, /* a: object, b: property; flag: computed ([]) */
    EJN_SLICE,  /* a, b, c: start, stop, step (each may be NULL) */
    EJN_CALL,   /* a: callee, list: arguments */
    EJN_KWARG,  /* str: name, a: value */
    EJN_SPREAD, /* a: *value */
    EJN_KWSPREAD, /* a: **value */
    EJN_BINARY, /* op, a, b */
    EJN_UNARY,  /* op, a */
    EJN_FILTER, /* a: operand, b: filter (IDENT or CALL of IDENT) */
    EJN_TEST,   /* a: operand, str: test name, flag: negated */
    EJN_SELECT, /* a: value, b: condition (`a if b` without else) */
    EJN_TERNARY /* a: condition, b: if true, c: if false */
} ej_node_kind;

typedef enum ej_op {
    EJO_NONE,
    EJO_ADD, EJO_SUB, EJO_CONCAT, EJO_MUL, EJO_DIV, EJO_FLOORDIV, EJO_MOD, EJO_POW,
    EJO_EQ, EJO_NE, EJO_LT, EJO_GT, EJO_LE, EJO_GE,
    EJO_AND, EJO_OR, EJO_NOT, EJO_IN, EJO_NOT_IN,
    EJO_NEG, EJO_POS
} ej_op;

typedef struct ej_node ej_node;
struct ej_node {
    ej_node_kind kind;
    ej_op op;
    uint32_t pos;
    bool flag;
    double num;
    ej_str str;
    ej_node *a, *b, *c;
    ej_node **list, **list2;
    size_t n, n2;
};

struct ej_template {
    ej_arena arena;
    const char *src; /* the original source, for line:col in runtime errors */
    size_t src_len;
    ej_node **body;
    size_t n_body;
};

ember_status ej_parse_tokens(ej_arena *a, const char *src, size_t len, const ej_token *toks,
                             ej_node ***body, size_t *n_body);
/* Known names, checked at parse time so that an unknown one fails early. */
bool ej_filter_known(ej_str name);
bool ej_test_known(ej_str name);

/* ---- runtime values (jinja_value.c) */
typedef enum ej_kind {
    EJV_UNDEF,
    EJV_NONE,
    EJV_BOOL,
    EJV_INT,
    EJV_FLOAT,
    EJV_STR,
    EJV_LIST, /* also tuples (list->tuple) */
    EJV_DICT, /* also keyword-argument bundles (dict->kwargs) */
    EJV_NS,   /* namespace(): a dict whose attributes can be set */
    EJV_FUNC
} ej_kind;

typedef struct ej_list ej_list;
typedef struct ej_dict ej_dict;
typedef struct ej_func ej_func;

typedef struct ej_value {
    ej_kind kind;
    union {
        bool b;
        double num;
        ej_str str;
        ej_list *list;
        ej_dict *dict;
        ej_func *fn;
    } u;
} ej_value;

struct ej_list {
    ej_value *items;
    size_t n, cap;
    bool tuple;
};

struct ej_dict {
    ej_str *keys;
    ej_value *vals;
    size_t n, cap;
    bool kwargs;
};

typedef struct ej_scope ej_scope;
struct ej_scope {
    ej_scope *parent;
    ej_dict vars;
};

typedef enum ej_func_kind {
    EJF_BUILTIN, /* name: a global function */
    EJF_METHOD,  /* name: a method of self (str.split, dict.items, ...) */
    EJF_MACRO,   /* node: EJN_MACRO */
    EJF_CALLER   /* node: EJN_CALL_BLOCK, scope: where the call block stands */
} ej_func_kind;

struct ej_func {
    ej_func_kind kind;
    ej_str name;
    ej_value self;
    const ej_node *node;
    ej_scope *scope;
};

static inline ej_value ej_undef(void) { ej_value v = {EJV_UNDEF, {0}}; return v; }
static inline ej_value ej_none(void) { ej_value v = {EJV_NONE, {0}}; return v; }
static inline ej_value ej_bool(bool b) { ej_value v = {EJV_BOOL, {.b = b}}; return v; }
static inline ej_value ej_int(double x) { ej_value v = {EJV_INT, {.num = x}}; return v; }
static inline ej_value ej_float(double x) { ej_value v = {EJV_FLOAT, {.num = x}}; return v; }
static inline ej_value ej_string(ej_str s) { ej_value v = {EJV_STR, {.str = s}}; return v; }

ej_list *ej_list_new(ej_arena *a, size_t cap);
ember_status ej_list_push(ej_arena *a, ej_list *l, ej_value v);
ej_dict *ej_dict_new(ej_arena *a);
ember_status ej_dict_set(ej_arena *a, ej_dict *d, ej_str key, ej_value v);
ej_value *ej_dict_get(const ej_dict *d, ej_str key);
static inline ej_value ej_list_value(ej_list *l) { ej_value v = {EJV_LIST, {.list = l}}; return v; }
static inline ej_value ej_dict_value(ej_dict *d) { ej_value v = {EJV_DICT, {.dict = d}}; return v; }

const char *ej_kind_name(ej_value v); /* the reference's type names, for messages */
bool ej_truthy(ej_value v);
bool ej_is_number(ej_value v);
/* The context's JSON as runtime values, the way JavaScript's JSON.parse and
 * Object.entries order them (integer-like keys first, ascending). */
ember_status ej_from_json(ej_arena *a, const cJSON *j, ej_value *out);

typedef struct ej_json_opts {
    int indent;      /* 0: none */
    bool ensure_ascii;
    bool sort_keys;
    const char *item_sep, *key_sep; /* NULL: the defaults for indent */
    bool undefined_as_null; /* tojson: null; printing a list: undefined */
} ej_json_opts;
ember_status ej_to_json(ej_buf *b, ej_value v, const ej_json_opts *o, int depth);
ember_status ej_json_string(ej_buf *b, ej_str s, bool ensure_ascii);
/* How {{ v }} prints v (None and undefined print nothing). */
ember_status ej_print(ej_buf *b, ej_value v);
/* JavaScript's String(v.value), which `~` and string `+` use. */
ember_status ej_js_string(ej_buf *b, ej_value v);
/* Loose (==) and strict (===, used by `in`) equality of the underlying values. */
bool ej_loose_equal(ej_value a, ej_value b);
bool ej_strict_equal(ej_value a, ej_value b);

/* ---- evaluation (jinja_eval.c) and the built-ins it calls (jinja_builtins.c) */
typedef struct ej_rt {
    ej_arena arena;
    const ej_template *t;
    size_t steps;
    int depth, call_depth;
    int control; /* EJ_CTL_* while a break/continue unwinds to its loop */
} ej_rt;
enum { EJ_CTL_NONE, EJ_CTL_BREAK, EJ_CTL_CONTINUE };

/* A runtime error at node n: "template:LINE:COL: message". */
ember_status ej_rt_fail(ej_rt *rt, const ej_node *n, const char *fmt, ...) EMBER_PRINTF(3, 4);
ember_status ej_rt_str(ej_rt *rt, const ej_buf *b, ej_value *out); /* buffer -> string value */

ember_status ej_call_function(ej_rt *rt, ej_scope *env, const ej_node *at, ej_value fn,
                              ej_value *args, size_t n_args, ej_value *out);
ember_status ej_call_builtin(ej_rt *rt, const ej_node *at, ej_str name, ej_value *args,
                             size_t n_args, ej_value *out);
ember_status ej_call_method(ej_rt *rt, const ej_node *at, ej_value self, ej_str name,
                            ej_value *args, size_t n_args, ej_value *out);
/* The attribute `name` of a string, list or dict that is a method or property
 * (length); ok=false when there is none. */
ember_status ej_builtin_attribute(ej_rt *rt, ej_value self, ej_str name, ej_value *out, bool *ok);
/* filter: the filter node (EJN_IDENT, or EJN_CALL whose callee is one);
 * args/kwargs already evaluated for the call form. */
ember_status ej_apply_filter(ej_rt *rt, ej_scope *env, const ej_node *filter, ej_value operand,
                             ej_value *out);
ember_status ej_apply_test(ej_rt *rt, const ej_node *at, ej_str name, ej_value v, bool *out);
/* Evaluates call arguments into positional values plus a trailing kwargs dict
 * when there are keyword arguments (that is how the reference passes them). */
ember_status ej_eval_args(ej_rt *rt, ej_scope *env, ej_node **args, size_t n, ej_value **out,
                          size_t *n_out, ej_dict **kwargs);
ember_status ej_eval(ej_rt *rt, ej_scope *env, const ej_node *n, ej_value *out);
/* String helpers shared by methods and filters (jinja_builtins.c). */
ember_status ej_string_filter(ej_rt *rt, ej_str s, ej_str name, ej_value *out);
ember_status ej_string_replace(ej_rt *rt, const ej_node *at, ej_str s, ej_value *args, size_t n_args,
                               ej_value *out);
/* dict.items(): a list of [key, value] lists (jinja_builtins.c). */
ember_status ej_dict_items(ej_rt *rt, const ej_dict *d, ej_value *out);
/* dict.dictsort(case_sensitive, by, reverse) (jinja_filters.c). */
ember_status ej_dictsort(ej_rt *rt, const ej_node *at, const ej_dict *d, ej_value *args, size_t n_args,
                         ej_value *out);
/* Compares for sort/dictsort: -1, 0, 1. */
ember_status ej_compare(ej_rt *rt, const ej_node *at, ej_value a, ej_value b, bool case_sensitive,
                        int *out);

#endif
