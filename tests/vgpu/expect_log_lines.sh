#!/bin/sh
# Runs a command that must succeed and print exactly COUNT lines matching PATTERN (a grep regex),
# on stdout or stderr; echoes its output either way.
#   expect_log_lines.sh COUNT PATTERN command [args...]
count=$1
pattern=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
  echo "expect_log_lines: the command failed (exit $rc)"
  exit 1
fi
seen=$(printf '%s\n' "$out" | grep -c -- "$pattern")
if [ "$seen" -ne "$count" ]; then
  echo "expect_log_lines: $seen lines match '$pattern', expected $count"
  exit 1
fi
echo "expect_log_lines: $seen lines match '$pattern', as expected"
