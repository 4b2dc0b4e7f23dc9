#!/bin/sh
# expect_exit.sh CODE REGEX MAX_SECONDS -- COMMAND...
# Runs COMMAND, passes when it exits with CODE within MAX_SECONDS and its output matches the extended
# regular expression REGEX (empty: no output check). Used by accl-perf's fault-injection tests.
code=$1; regex=$2; limit=$3; shift 3
[ "$1" = "--" ] && shift
out=$(mktemp)
start=$(date +%s)
timeout -s KILL "$((limit + 30))" "$@" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
fail=0
if [ "$rc" -ne "$code" ]; then echo "expect_exit: exit status $rc, expected $code"; fail=1; fi
if [ "$elapsed" -gt "$limit" ]; then echo "expect_exit: took ${elapsed}s, limit ${limit}s"; fail=1; fi
if [ -n "$regex" ] && ! grep -Eq "$regex" "$out"; then echo "expect_exit: output does not match /$regex/"; fail=1; fi
rm -f "$out"
exit $fail
