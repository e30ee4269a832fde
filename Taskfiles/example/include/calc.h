/* calc: a tiny integer calculator — the C project Kiln's example Taskfile builds. */
#ifndef CALC_H
#define CALC_H

/* A token of an expression. */
typedef enum { TOKEN_NUMBER, TOKEN_PLUS, TOKEN_MINUS, TOKEN_TIMES, TOKEN_DIVIDE, TOKEN_OPEN, TOKEN_CLOSE, TOKEN_END, TOKEN_ERROR } token_kind;

typedef struct {
    token_kind kind;
    long value;
} token;

/* Splits `text` into at most `capacity` tokens; returns the count, or -1 on a bad character. */
int calc_tokenize(const char *text, token *tokens, int capacity);

/* Evaluates tokens; sets *ok to 0 on a syntax error or division by zero. */
long calc_evaluate(const token *tokens, int count, int *ok);

#endif
