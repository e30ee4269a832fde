#include <stdio.h>
#include <string.h>

#include "calc.h"

/* Reads one expression per line from standard input and prints its value, or "error". */
int main(void) {
    char line[1024];
    token tokens[512];
    int status = 0;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        int ok = 0;
        int count = calc_tokenize(line, tokens, 512);
        long value = count < 0 ? 0 : calc_evaluate(tokens, count, &ok);
        if (ok) printf("%ld\n", value); else { printf("error\n"); status = 1; }
    }
    return status;
}
