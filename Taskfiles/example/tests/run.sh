#!/bin/sh
# Runs every case of tests/cases.txt ("expression<TAB>expected") through the calculator.
calc="$1"
failures=0
while IFS='	' read -r expression expected; do
    actual=$(printf '%s\n' "$expression" | "$calc")
    if [ "$actual" != "$expected" ]; then
        echo "FAIL: $expression: expected $expected, got $actual"
        failures=$((failures + 1))
    fi
done < tests/cases.txt
echo "$(wc -l < tests/cases.txt) cases, $failures failures"
[ "$failures" -eq 0 ]
