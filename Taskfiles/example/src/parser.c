#include "calc.h"

/* Recursive descent: expression := term (('+'|'-') term)*, term := factor (('*'|'/') factor)*. */
typedef struct {
    const token *tokens;
    int position;
    int ok;
} parser;

static long expression(parser *p);

static long factor(parser *p) {
    token t = p->tokens[p->position];
    if (t.kind == TOKEN_NUMBER) { p->position++; return t.value; }
    if (t.kind == TOKEN_MINUS) { p->position++; return -factor(p); }
    if (t.kind == TOKEN_OPEN) {
        p->position++;
        long value = expression(p);
        if (p->tokens[p->position].kind != TOKEN_CLOSE) { p->ok = 0; return 0; }
        p->position++;
        return value;
    }
    p->ok = 0;
    return 0;
}

static long term(parser *p) {
    long value = factor(p);
    for (;;) {
        token_kind kind = p->tokens[p->position].kind;
        if (kind != TOKEN_TIMES && kind != TOKEN_DIVIDE) return value;
        p->position++;
        long right = factor(p);
        if (kind == TOKEN_TIMES) value *= right;
        else if (right == 0) { p->ok = 0; return 0; }
        else value /= right;
    }
}

static long expression(parser *p) {
    long value = term(p);
    for (;;) {
        token_kind kind = p->tokens[p->position].kind;
        if (kind != TOKEN_PLUS && kind != TOKEN_MINUS) return value;
        p->position++;
        long right = term(p);
        value = kind == TOKEN_PLUS ? value + right : value - right;
    }
}

long calc_evaluate(const token *tokens, int count, int *ok) {
    parser p = {tokens, 0, 1};
    long value = count > 0 ? expression(&p) : (p.ok = 0);
    if (p.tokens[p.position].kind != TOKEN_END) p.ok = 0;
    *ok = p.ok;
    return value;
}
