/* Tokens -> AST, with the grammar and operator precedence of
 * @huggingface/jinja (lowest first): `a if b else c`, or, and, not,
 * comparisons and (not) in, + - ~, * / // %, **, `is` tests, | filters,
 * unary signs, calls/members/subscripts, primaries. Statements: set (also
 * block set), if/elif/else, for (else, filter `if`), macro, call, filter,
 * break, continue. Anything else fails here with "template:LINE:COL: ...". */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/jinja_internal.h"

typedef struct parser {
    ej_arena *a;
    const char *src;
    size_t len;
    const ej_token *t;
    size_t cur;
    int depth;
    unsigned special_reads; /* identifiers `varargs` / `kwargs` seen (bits 1, 2) */
} parser;

typedef struct node_vec {
    ej_node **p;
    size_t n, cap;
} node_vec;

static ember_status fail_tok(parser *P, const ej_token *t, const char *fmt, ...) EMBER_PRINTF(3, 4);
static ember_status fail_tok(parser *P, const ej_token *t, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ej_fail_at(EMBER_ERR_FORMAT, P->src, P->len, t->pos, "%s", msg);
}

static ember_status fail_here(parser *P, const char *what)
{
    const ej_token *t = &P->t[P->cur];
    if (t->type == EJT_EOF) return fail_tok(P, t, "unexpected end of template: expected %s", what);
    char msg[128];
    size_t n = t->text.n < 40 ? t->text.n : 40;
    snprintf(msg, sizeof msg, "expected %s, got '%.*s'", what, (int)n, t->text.s);
    return ej_fail_at(EMBER_ERR_FORMAT, P->src, P->len, t->pos, "%s", msg);
}

static ember_status vec_push(parser *P, node_vec *v, ej_node *node)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        ej_node **grown = ej_alloc(P->a, cap * sizeof *grown);
        if (!grown) return EMBER_ERR_NO_MEMORY;
        if (v->n) memcpy(grown, v->p, v->n * sizeof *grown);
        v->p = grown;
        v->cap = cap;
    }
    v->p[v->n++] = node;
    return EMBER_OK;
}

static ej_node *new_node(parser *P, ej_node_kind kind, uint32_t pos)
{
    ej_node *n = ej_alloc(P->a, sizeof *n);
    if (n) {
        n->kind = kind;
        n->pos = pos;
    }
    return n;
}

static const ej_token *tok(const parser *P) { return &P->t[P->cur]; }
static bool is(const parser *P, ej_tok_type type) { return P->t[P->cur].type == type; }

static bool is_ident(const parser *P, const char *name)
{
    return tok(P)->type == EJT_IDENT && ej_str_eqz(tok(P)->text, name);
}

static bool is_ident2(const parser *P, const char *a, const char *b)
{
    return is_ident(P, a) && P->t[P->cur + 1].type == EJT_IDENT && ej_str_eqz(P->t[P->cur + 1].text, b);
}

/* {% name ... where name is one of the NULL-terminated list */
static bool is_statement(const parser *P, const char *const *names)
{
    if (!is(P, EJT_OPEN_STMT) || P->t[P->cur + 1].type != EJT_IDENT) return false;
    for (; *names; names++)
        if (ej_str_eqz(P->t[P->cur + 1].text, *names)) return true;
    return false;
}

static ember_status expect(parser *P, ej_tok_type type, const char *what)
{
    if (!is(P, type)) return fail_here(P, what);
    P->cur++;
    return EMBER_OK;
}

static ember_status expect_ident(parser *P, const char *name, const char *what)
{
    if (!is_ident(P, name)) return fail_here(P, what);
    P->cur++;
    return EMBER_OK;
}

#define TRY(x)                                                                                \
    do {                                                                                      \
        ember_status st_ = (x);                                                               \
        if (st_) return st_;                                                                  \
    } while (0)
#define NEW(var, kind, pos)                                                                   \
    do {                                                                                      \
        if (!((var) = new_node(P, (kind), (pos)))) return EMBER_ERR_NO_MEMORY;                \
    } while (0)

static ember_status parse_expression(parser *P, ej_node **out);
static ember_status parse_primary(parser *P, ej_node **out);
static ember_status parse_any(parser *P, ej_node **out);

static ember_status enter(parser *P)
{
    if (++P->depth > EJ_MAX_PARSE_DEPTH)
        return fail_tok(P, tok(P), "nesting deeper than %d levels", EJ_MAX_PARSE_DEPTH);
    return EMBER_OK;
}

/* Statements until one of `ends` ({% endfor %} ...) stands next. */
static ember_status parse_body(parser *P, const char *const *ends, const char *what, node_vec *v)
{
    while (!is_statement(P, ends)) {
        if (is(P, EJT_EOF)) return fail_here(P, what);
        ej_node *n = NULL;
        TRY(parse_any(P, &n));
        if (n) TRY(vec_push(P, v, n));
    }
    return EMBER_OK;
}

static ember_status parse_args(parser *P, bool parameters, node_vec *args);

static ember_status parse_call(parser *P, ej_node *callee, ej_node **out);

static ember_status parse_member(parser *P, ej_node *object, ej_node **out)
{
    while (is(P, EJT_DOT) || is(P, EJT_LBRACKET)) {
        const ej_token *op = tok(P);
        P->cur++;
        ej_node *m;
        NEW(m, EJN_MEMBER, op->pos);
        m->a = object;
        if (op->type == EJT_LBRACKET) {
            m->flag = true;
            /* [a], or a slice [a:b:c] where each part may be missing */
            ej_node *parts[3] = {NULL, NULL, NULL};
            size_t k = 0, seen = 0;
            bool slice = false;
            while (!is(P, EJT_RBRACKET)) {
                if (is(P, EJT_EOF)) return fail_here(P, "']'");
                ej_node *e = NULL;
                if (is(P, EJT_COLON)) {
                    P->cur++;
                    slice = true;
                } else {
                    TRY(parse_expression(P, &e));
                    if (is(P, EJT_COLON)) {
                        P->cur++;
                        slice = true;
                    }
                }
                if (k < 3) parts[k] = e;
                k++;
                seen++;
            }
            if (seen == 0) return fail_here(P, "an index or slice");
            if (slice && k > 3) return fail_tok(P, op, "a slice takes at most 3 parts");
            TRY(expect(P, EJT_RBRACKET, "']'"));
            if (slice) {
                ej_node *s;
                NEW(s, EJN_SLICE, op->pos);
                s->a = parts[0], s->b = parts[1], s->c = parts[2];
                m->b = s;
            } else {
                m->b = parts[0];
            }
        } else {
            ej_node *prop;
            const ej_token *pt = tok(P);
            TRY(parse_primary(P, &prop));
            if (prop->kind != EJN_IDENT && prop->kind != EJN_INT)
                return fail_tok(P, pt, "expected a name or integer after '.'");
            m->b = prop;
        }
        object = m;
    }
    *out = object;
    return EMBER_OK;
}

static ember_status parse_call(parser *P, ej_node *callee, ej_node **out)
{
    ej_node *call;
    NEW(call, EJN_CALL, tok(P)->pos);
    call->a = callee;
    node_vec args = {0};
    TRY(parse_args(P, false, &args));
    call->list = args.p, call->n = args.n;
    TRY(parse_member(P, call, out));
    if (is(P, EJT_LPAREN)) TRY(parse_call(P, *out, out));
    return EMBER_OK;
}

static ember_status parse_call_member(parser *P, ej_node **out)
{
    ej_node *prim;
    TRY(parse_primary(P, &prim));
    TRY(parse_member(P, prim, out));
    if (is(P, EJT_LPAREN)) TRY(parse_call(P, *out, out));
    return EMBER_OK;
}

static ember_status parse_unary_sign(parser *P, ej_node **out)
{
    const ej_token *t = tok(P);
    if ((t->type == EJT_UNARY || t->type == EJT_ADD) &&
        (ej_str_eqz(t->text, "-") || ej_str_eqz(t->text, "+"))) {
        P->cur++;
        TRY(enter(P));
        ej_node *u;
        NEW(u, EJN_UNARY, t->pos);
        u->op = t->text.s[0] == '-' ? EJO_NEG : EJO_POS;
        TRY(parse_unary_sign(P, &u->a));
        P->depth--;
        *out = u;
        return EMBER_OK;
    }
    return parse_call_member(P, out);
}

static ember_status parse_filter(parser *P, ej_node **out)
{
    TRY(parse_unary_sign(P, out));
    while (is(P, EJT_PIPE)) {
        P->cur++;
        const ej_token *ft = tok(P);
        ej_node *filter;
        TRY(parse_primary(P, &filter));
        if (filter->kind != EJN_IDENT) return fail_tok(P, ft, "expected a filter name");
        if (!ej_filter_known(filter->str)) return fail_tok(P, ft, "unsupported filter '%.*s'", (int)filter->str.n, filter->str.s);
        if (is(P, EJT_LPAREN)) TRY(parse_call(P, filter, &filter));
        ej_node *f;
        NEW(f, EJN_FILTER, ft->pos);
        f->a = *out;
        f->b = filter;
        *out = f;
    }
    return EMBER_OK;
}

static ember_status parse_test(parser *P, ej_node **out)
{
    TRY(parse_filter(P, out));
    while (is_ident(P, "is")) {
        P->cur++;
        bool negate = is_ident(P, "not");
        if (negate) P->cur++;
        const ej_token *tt = tok(P);
        ej_node *name;
        TRY(parse_primary(P, &name));
        if (name->kind != EJN_IDENT) return fail_tok(P, tt, "expected a test name");
        if (!ej_test_known(name->str)) return fail_tok(P, tt, "unsupported test '%.*s'", (int)name->str.n, name->str.s);
        ej_node *t;
        NEW(t, EJN_TEST, tt->pos);
        t->a = *out;
        t->str = name->str;
        t->flag = negate;
        *out = t;
    }
    return EMBER_OK;
}

static ej_op binary_op(ej_str s)
{
    static const struct {
        const char *text;
        ej_op op;
    } ops[] = {{"+", EJO_ADD}, {"-", EJO_SUB}, {"~", EJO_CONCAT}, {"*", EJO_MUL}, {"/", EJO_DIV},
               {"//", EJO_FLOORDIV}, {"%", EJO_MOD}, {"**", EJO_POW}, {"==", EJO_EQ},
               {"!=", EJO_NE}, {"<", EJO_LT}, {">", EJO_GT}, {"<=", EJO_LE}, {">=", EJO_GE},
               {"and", EJO_AND}, {"or", EJO_OR}, {"in", EJO_IN}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ej_str_eqz(s, ops[i].text)) return ops[i].op;
    return EJO_NONE;
}

static ember_status make_binary(parser *P, const ej_token *op, ej_op code, ej_node *l, ej_node *r,
                                ej_node **out)
{
    ej_node *b;
    NEW(b, EJN_BINARY, op->pos);
    b->op = code;
    b->a = l;
    b->b = r;
    *out = b;
    return EMBER_OK;
}

/* One precedence level of left-associative binary operators. */
typedef ember_status (*level_fn)(parser *P, ej_node **out);

/* Operators are tokens of one type, or (word != NULL) that keyword. */
static ember_status parse_level(parser *P, ej_tok_type type, const char *word, level_fn next, ej_node **out)
{
    TRY(next(P, out));
    while (word ? is_ident(P, word) : is(P, type)) {
        const ej_token *op = tok(P);
        P->cur++;
        ej_node *r;
        TRY(next(P, &r));
        TRY(make_binary(P, op, binary_op(op->text), *out, r, out));
    }
    return EMBER_OK;
}

static ember_status parse_power(parser *P, ej_node **out) { return parse_level(P, EJT_POW, NULL, parse_test, out); }
static ember_status parse_mul(parser *P, ej_node **out) { return parse_level(P, EJT_MUL, NULL, parse_power, out); }
static ember_status parse_add(parser *P, ej_node **out) { return parse_level(P, EJT_ADD, NULL, parse_mul, out); }

static ember_status parse_comparison(parser *P, ej_node **out)
{
    TRY(parse_add(P, out));
    for (;;) {
        const ej_token *op = tok(P);
        ej_op code;
        if (is_ident2(P, "not", "in")) {
            code = EJO_NOT_IN;
            P->cur += 2;
        } else if (is_ident(P, "in") || is(P, EJT_CMP)) {
            code = binary_op(op->text);
            P->cur++;
        } else {
            return EMBER_OK;
        }
        ej_node *r;
        TRY(parse_add(P, &r));
        TRY(make_binary(P, op, code, *out, r, out));
    }
}

static ember_status parse_not(parser *P, ej_node **out)
{
    ej_node *result = NULL;
    while (is_ident(P, "not")) {
        const ej_token *op = tok(P);
        P->cur++;
        TRY(enter(P));
        ej_node *u;
        NEW(u, EJN_UNARY, op->pos);
        u->op = EJO_NOT;
        TRY(parse_not(P, &u->a));
        P->depth--;
        result = u;
    }
    if (result) {
        *out = result;
        return EMBER_OK;
    }
    return parse_comparison(P, out);
}

static ember_status parse_and(parser *P, ej_node **out) { return parse_level(P, EJT_IDENT, "and", parse_not, out); }
static ember_status parse_or(parser *P, ej_node **out) { return parse_level(P, EJT_IDENT, "or", parse_and, out); }

static ember_status parse_if_expression(parser *P, ej_node **out)
{
    TRY(parse_or(P, out));
    if (is_ident(P, "if")) {
        const ej_token *t = tok(P);
        P->cur++;
        ej_node *test;
        TRY(parse_or(P, &test));
        ej_node *e;
        if (is_ident(P, "else")) {
            P->cur++;
            NEW(e, EJN_TERNARY, t->pos);
            e->a = test;
            e->b = *out;
            TRY(parse_if_expression(P, &e->c));
        } else {
            NEW(e, EJN_SELECT, t->pos);
            e->a = *out;
            e->b = test;
        }
        *out = e;
    }
    return EMBER_OK;
}

static ember_status parse_expression(parser *P, ej_node **out)
{
    TRY(enter(P));
    TRY(parse_if_expression(P, out));
    P->depth--;
    return EMBER_OK;
}

/* a or a, b, c (a tuple); `primary` restricts items to primaries (for targets) */
static ember_status parse_sequence(parser *P, bool primary, ej_node **out)
{
    uint32_t pos = tok(P)->pos;
    ej_node *first;
    TRY(primary ? parse_primary(P, &first) : parse_expression(P, &first));
    if (!is(P, EJT_COMMA)) {
        *out = first;
        return EMBER_OK;
    }
    node_vec items = {0};
    TRY(vec_push(P, &items, first));
    while (is(P, EJT_COMMA)) {
        P->cur++;
        ej_node *e;
        TRY(primary ? parse_primary(P, &e) : parse_expression(P, &e));
        TRY(vec_push(P, &items, e));
    }
    ej_node *t;
    NEW(t, EJN_TUPLE, pos);
    t->list = items.p, t->n = items.n;
    *out = t;
    return EMBER_OK;
}

static ember_status parse_args(parser *P, bool parameters, node_vec *args)
{
    TRY(expect(P, EJT_LPAREN, "'('"));
    bool saw_keyword = false, saw_spread = false;
    while (!is(P, EJT_RPAREN)) {
        if (is(P, EJT_EOF)) return fail_here(P, "')'");
        const ej_token *t = tok(P);
        bool kw_spread = is(P, EJT_POW);
        bool spread = is(P, EJT_MUL) && ej_str_eqz(t->text, "*");
        if (parameters && (kw_spread || spread))
            return fail_tok(P, t, "argument unpacking is not allowed in parameters");
        ej_node *arg;
        if (kw_spread || spread) {
            if (spread && saw_spread) return fail_tok(P, t, "only one '*' argument is allowed");
            P->cur++;
            NEW(arg, kw_spread ? EJN_KWSPREAD : EJN_SPREAD, t->pos);
            TRY(parse_expression(P, &arg->a));
            TRY(vec_push(P, args, arg));
            if (spread) saw_spread = true;
            if (is(P, EJT_COMMA)) P->cur++;
            if (kw_spread) {
                if (!is(P, EJT_RPAREN)) return fail_here(P, "')' after the '**' argument");
                break;
            }
            continue;
        }
        TRY(parse_expression(P, &arg));
        if (is(P, EJT_EQUALS)) {
            P->cur++;
            if (arg->kind != EJN_IDENT) return fail_tok(P, t, "expected a name before '='");
            ej_node *kw;
            NEW(kw, EJN_KWARG, t->pos);
            kw->str = arg->str;
            TRY(parse_expression(P, &kw->a));
            arg = kw;
        }
        if (parameters) {
            if (arg->kind != EJN_IDENT && arg->kind != EJN_KWARG)
                return fail_tok(P, t, "expected a parameter name");
            for (size_t i = 0; i < args->n; i++)
                if (ej_str_eq(args->p[i]->str, arg->str))
                    return fail_tok(P, t, "duplicate parameter '%.*s'", (int)arg->str.n, arg->str.s);
        }
        if (arg->kind == EJN_KWARG)
            saw_keyword = true;
        else if (saw_keyword)
            return fail_tok(P, t, parameters ? "a parameter without default follows one with a default"
                                             : "a positional argument follows a keyword argument");
        else if (saw_spread)
            return fail_tok(P, t, "a positional argument follows '*' unpacking");
        TRY(vec_push(P, args, arg));
        if (is(P, EJT_COMMA)) P->cur++;
    }
    return expect(P, EJT_RPAREN, "')'");
}

static ember_status parse_primary(parser *P, ej_node **out)
{
    const ej_token *t = tok(P);
    ej_node *n;
    switch (t->type) {
    case EJT_NUMBER: {
        P->cur++;
        bool is_float = memchr(t->text.s, '.', t->text.n) != NULL;
        NEW(n, is_float ? EJN_FLOAT : EJN_INT, t->pos);
        char buf[64];
        size_t k = t->text.n < sizeof buf - 1 ? t->text.n : sizeof buf - 1;
        memcpy(buf, t->text.s, k);
        buf[k] = 0;
        n->num = strtod(buf, NULL);
        if (t->text.n >= sizeof buf) n->num = t->text.s[0] == '-' ? -HUGE_VAL : HUGE_VAL;
        break;
    }
    case EJT_STRING: {
        P->cur++;
        NEW(n, EJN_STR, t->pos);
        n->str = t->text;
        if (is(P, EJT_STRING)) { /* adjacent literals concatenate */
            size_t total = t->text.n;
            for (size_t k = P->cur; P->t[k].type == EJT_STRING; k++) total += P->t[k].text.n;
            char *s = ej_alloc(P->a, total + 1);
            if (!s) return EMBER_ERR_NO_MEMORY;
            size_t o = 0;
            memcpy(s, t->text.s, t->text.n), o = t->text.n;
            for (; is(P, EJT_STRING); P->cur++) {
                memcpy(s + o, tok(P)->text.s, tok(P)->text.n);
                o += tok(P)->text.n;
            }
            n->str = (ej_str){s, o};
        }
        break;
    }
    case EJT_IDENT:
        P->cur++;
        NEW(n, EJN_IDENT, t->pos);
        n->str = t->text;
        if (ej_str_eqz(t->text, "varargs")) P->special_reads |= 1;
        if (ej_str_eqz(t->text, "kwargs")) P->special_reads |= 2;
        break;
    case EJT_LPAREN:
        P->cur++;
        TRY(enter(P));
        TRY(parse_sequence(P, false, &n));
        P->depth--;
        TRY(expect(P, EJT_RPAREN, "')'"));
        break;
    case EJT_LBRACKET: {
        P->cur++;
        node_vec items = {0};
        while (!is(P, EJT_RBRACKET)) {
            if (is(P, EJT_EOF)) return fail_here(P, "']'");
            ej_node *e;
            TRY(parse_expression(P, &e));
            TRY(vec_push(P, &items, e));
            if (is(P, EJT_COMMA)) P->cur++;
        }
        P->cur++;
        NEW(n, EJN_LIST, t->pos);
        n->list = items.p, n->n = items.n;
        break;
    }
    case EJT_LBRACE: {
        P->cur++;
        node_vec keys = {0}, vals = {0};
        while (!is(P, EJT_RBRACE)) {
            if (is(P, EJT_EOF)) return fail_here(P, "'}'");
            ej_node *k, *v;
            TRY(parse_expression(P, &k));
            TRY(expect(P, EJT_COLON, "':' in a dict literal"));
            TRY(parse_expression(P, &v));
            TRY(vec_push(P, &keys, k));
            TRY(vec_push(P, &vals, v));
            if (is(P, EJT_COMMA)) P->cur++;
        }
        P->cur++;
        NEW(n, EJN_DICT, t->pos);
        n->list = keys.p, n->n = keys.n;
        n->list2 = vals.p, n->n2 = vals.n;
        break;
    }
    default:
        return fail_here(P, "an expression");
    }
    *out = n;
    return EMBER_OK;
}

static const char *const END_IF[] = {"elif", "else", "endif", NULL};
static const char *const ENDIF[] = {"endif", NULL};
static const char *const END_FOR[] = {"endfor", "else", NULL};
static const char *const ENDFOR[] = {"endfor", NULL};
static const char *const ENDSET[] = {"endset", NULL};
static const char *const ENDMACRO[] = {"endmacro", NULL};
static const char *const ENDCALL[] = {"endcall", NULL};
static const char *const ENDFILTER[] = {"endfilter", NULL};

/* {% if %} after the keyword; an elif becomes a nested if in the else part. */
static ember_status parse_if(parser *P, uint32_t pos, ej_node **out)
{
    ej_node *n;
    NEW(n, EJN_IF, pos);
    TRY(parse_expression(P, &n->a));
    TRY(expect(P, EJT_CLOSE_STMT, "'%}'"));
    node_vec body = {0}, alt = {0};
    TRY(parse_body(P, END_IF, "{% endif %}", &body));
    if (is_statement(P, (const char *const[]){"elif", NULL})) {
        uint32_t epos = P->t[P->cur + 1].pos;
        P->cur += 2;
        TRY(enter(P));
        ej_node *elif;
        TRY(parse_if(P, epos, &elif));
        P->depth--;
        TRY(vec_push(P, &alt, elif));
    } else if (is_statement(P, (const char *const[]){"else", NULL})) {
        P->cur += 2;
        TRY(expect(P, EJT_CLOSE_STMT, "'%}'"));
        TRY(parse_body(P, ENDIF, "{% endif %}", &alt));
    }
    n->list = body.p, n->n = body.n;
    n->list2 = alt.p, n->n2 = alt.n;
    *out = n;
    return EMBER_OK;
}

static ember_status parse_end(parser *P, const char *name, const char *what)
{
    TRY(expect(P, EJT_OPEN_STMT, what));
    TRY(expect_ident(P, name, what));
    return expect(P, EJT_CLOSE_STMT, "'%}'");
}

static ember_status parse_for(parser *P, uint32_t pos, ej_node **out)
{
    ej_node *n;
    NEW(n, EJN_FOR, pos);
    const ej_token *tt = tok(P);
    TRY(parse_sequence(P, true, &n->a));
    if (n->a->kind != EJN_IDENT && n->a->kind != EJN_TUPLE)
        return fail_tok(P, tt, "expected a name or tuple as the loop variable");
    TRY(expect_ident(P, "in", "'in'"));
    TRY(parse_expression(P, &n->b));
    TRY(expect(P, EJT_CLOSE_STMT, "'%}'"));
    node_vec body = {0}, alt = {0};
    TRY(parse_body(P, END_FOR, "{% endfor %}", &body));
    if (is_statement(P, (const char *const[]){"else", NULL})) {
        P->cur += 2;
        TRY(expect(P, EJT_CLOSE_STMT, "'%}'"));
        TRY(parse_body(P, ENDFOR, "{% endfor %}", &alt));
    }
    n->list = body.p, n->n = body.n;
    n->list2 = alt.p, n->n2 = alt.n;
    *out = n;
    return parse_end(P, "endfor", "{% endfor %}");
}

static ember_status parse_set(parser *P, uint32_t pos, ej_node **out)
{
    ej_node *n;
    NEW(n, EJN_SET, pos);
    TRY(parse_sequence(P, false, &n->a));
    if (n->a->kind != EJN_IDENT && n->a->kind != EJN_TUPLE && n->a->kind != EJN_MEMBER)
        return fail_tok(P, &P->t[P->cur], "cannot assign to this expression");
    if (is(P, EJT_EQUALS)) {
        P->cur++;
        TRY(parse_sequence(P, false, &n->b));
    } else {
        TRY(expect(P, EJT_CLOSE_STMT, "'=' or '%}'"));
        node_vec body = {0};
        TRY(parse_body(P, ENDSET, "{% endset %}", &body));
        n->list = body.p, n->n = body.n;
        TRY(expect(P, EJT_OPEN_STMT, "{% endset %}"));
        TRY(expect_ident(P, "endset", "{% endset %}"));
    }
    *out = n;
    return expect(P, EJT_CLOSE_STMT, "'%}'");
}

/* The body of a macro or call block; n->num records whether it reads
 * varargs (1) or kwargs (2), which decides whether extra arguments are
 * accepted. */
static ember_status parse_callable_body(parser *P, ej_node *n, const char *const *ends, const char *what)
{
    node_vec body = {0};
    unsigned saved = P->special_reads;
    P->special_reads = 0;
    TRY(parse_body(P, ends, what, &body));
    n->num = P->special_reads;
    P->special_reads |= saved;
    n->list2 = body.p, n->n2 = body.n;
    return EMBER_OK;
}

static ember_status parse_macro(parser *P, uint32_t pos, ej_node **out)
{
    ej_node *n;
    NEW(n, EJN_MACRO, pos);
    const ej_token *nt = tok(P);
    if (nt->type != EJT_IDENT) return fail_here(P, "a macro name");
    n->str = nt->text;
    P->cur++;
    node_vec params = {0};
    TRY(parse_args(P, true, &params));
    TRY(expect(P, EJT_CLOSE_STMT, "'%}'"));
    TRY(parse_callable_body(P, n, ENDMACRO, "{% endmacro %}"));
    n->list = params.p, n->n = params.n;
    *out = n;
    return parse_end(P, "endmacro", "{% endmacro %}");
}

static ember_status parse_call_block(parser *P, uint32_t pos, ej_node **out)
{
    ej_node *n;
    NEW(n, EJN_CALL_BLOCK, pos);
    node_vec params = {0};
    if (is(P, EJT_LPAREN)) TRY(parse_args(P, true, &params));
    const ej_token *ct = tok(P);
    ej_node *callee;
    TRY(parse_primary(P, &callee));
    if (callee->kind != EJN_IDENT) return fail_tok(P, ct, "expected a macro name after 'call'");
    ej_node *call;
    NEW(call, EJN_CALL, ct->pos);
    call->a = callee;
    node_vec args = {0};
    TRY(parse_args(P, false, &args));
    call->list = args.p, call->n = args.n;
    TRY(expect(P, EJT_CLOSE_STMT, "'%}'"));
    TRY(parse_callable_body(P, n, ENDCALL, "{% endcall %}"));
    n->a = call;
    n->list = params.p, n->n = params.n;
    *out = n;
    return parse_end(P, "endcall", "{% endcall %}");
}

static ember_status parse_filter_block(parser *P, uint32_t pos, ej_node **out)
{
    ej_node *n;
    NEW(n, EJN_FILTER_BLOCK, pos);
    const ej_token *ft = tok(P);
    TRY(parse_primary(P, &n->a));
    if (n->a->kind != EJN_IDENT) return fail_tok(P, ft, "expected a filter name");
    if (!ej_filter_known(n->a->str)) return fail_tok(P, ft, "unsupported filter '%.*s'", (int)n->a->str.n, n->a->str.s);
    if (is(P, EJT_LPAREN)) TRY(parse_call(P, n->a, &n->a));
    TRY(expect(P, EJT_CLOSE_STMT, "'%}'"));
    node_vec body = {0};
    TRY(parse_body(P, ENDFILTER, "{% endfilter %}", &body));
    n->list = body.p, n->n = body.n;
    *out = n;
    return parse_end(P, "endfilter", "{% endfilter %}");
}

static ember_status parse_statement(parser *P, ej_node **out)
{
    P->cur++; /* {% */
    const ej_token *kw = tok(P);
    if (kw->type != EJT_IDENT) return fail_here(P, "a statement name");
    P->cur++;
    if (ej_str_eqz(kw->text, "set")) return parse_set(P, kw->pos, out);
    if (ej_str_eqz(kw->text, "if")) {
        TRY(parse_if(P, kw->pos, out));
        return parse_end(P, "endif", "{% endif %}");
    }
    if (ej_str_eqz(kw->text, "for")) return parse_for(P, kw->pos, out);
    if (ej_str_eqz(kw->text, "macro")) return parse_macro(P, kw->pos, out);
    if (ej_str_eqz(kw->text, "call")) return parse_call_block(P, kw->pos, out);
    if (ej_str_eqz(kw->text, "filter")) return parse_filter_block(P, kw->pos, out);
    if (ej_str_eqz(kw->text, "break") || ej_str_eqz(kw->text, "continue")) {
        NEW(*out, kw->text.s[0] == 'b' ? EJN_BREAK : EJN_CONTINUE, kw->pos);
        return expect(P, EJT_CLOSE_STMT, "'%}'");
    }
    return fail_tok(P, kw, "unsupported statement '%.*s'", (int)kw->text.n, kw->text.s);
}

/* One top-level piece; *out stays NULL for a comment. */
static ember_status parse_any(parser *P, ej_node **out)
{
    const ej_token *t = tok(P);
    TRY(enter(P));
    switch (t->type) {
    case EJT_COMMENT:
        P->cur++;
        *out = NULL;
        break;
    case EJT_TEXT:
        P->cur++;
        NEW(*out, EJN_TEXT, t->pos);
        (*out)->str = t->text;
        break;
    case EJT_OPEN_STMT:
        TRY(parse_statement(P, out));
        break;
    case EJT_OPEN_EXPR: {
        P->cur++;
        NEW(*out, EJN_OUTPUT, t->pos);
        TRY(parse_expression(P, &(*out)->a));
        TRY(expect(P, EJT_CLOSE_EXPR, "'}}'"));
        break;
    }
    default:
        return fail_here(P, "text, '{{' or '{%'");
    }
    P->depth--;
    return EMBER_OK;
}

ember_status ej_parse_tokens(ej_arena *a, const char *src, size_t len, const ej_token *toks,
                             ej_node ***body, size_t *n_body)
{
    parser P = {.a = a, .src = src, .len = len, .t = toks};
    node_vec v = {0};
    while (!is(&P, EJT_EOF)) {
        ej_node *n = NULL;
        TRY(parse_any(&P, &n));
        if (n) TRY(vec_push(&P, &v, n));
    }
    *body = v.p;
    *n_body = v.n;
    return EMBER_OK;
}
