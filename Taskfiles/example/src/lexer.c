#include <ctype.h>
#include <stdlib.h>

#include "calc.h"

int calc_tokenize(const char *text, token *tokens, int capacity) {
    int count = 0;
    while (*text && count < capacity - 1) {
        if (isspace((unsigned char)*text)) { text++; continue; }
        token t = {TOKEN_ERROR, 0};
        if (isdigit((unsigned char)*text)) {
            char *end;
            t.kind = TOKEN_NUMBER;
            t.value = strtol(text, &end, 10);
            text = end;
        } else {
            switch (*text++) {
            case '+': t.kind = TOKEN_PLUS; break;
            case '-': t.kind = TOKEN_MINUS; break;
            case '*': t.kind = TOKEN_TIMES; break;
            case '/': t.kind = TOKEN_DIVIDE; break;
            case '(': t.kind = TOKEN_OPEN; break;
            case ')': t.kind = TOKEN_CLOSE; break;
            default: return -1;
            }
        }
        tokens[count++] = t;
    }
    tokens[count].kind = TOKEN_END;
    return count;
}
