#!/bin/sh
# ctest helper for accl-topo: check_output.sh EXIT_CODE PATTERN... -- COMMAND [ARGS...]
# Runs COMMAND, then requires its exit status to be EXIT_CODE and every PATTERN (grep -E, one line
# each) to occur in its combined stdout and stderr. Prints the output on failure.
want_rc=$1
shift
patterns=""
n=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  n=$((n + 1))
  eval "pat_$n=\$1"
  shift
done
[ "$1" = "--" ] || { echo "check_output.sh: missing -- before the command" >&2; exit 2; }
shift
out=$("$@" 2>&1)
rc=$?
fail=0
if [ "$rc" != "$want_rc" ]; then
  echo "check_output.sh: exit status $rc, expected $want_rc" >&2
  fail=1
fi
i=1
while [ $i -le $n ]; do
  eval "p=\$pat_$i"
  if ! printf '%s\n' "$out" | grep -Eq -- "$p"; then
    echo "check_output.sh: output lacks /$p/" >&2
    fail=1
  fi
  i=$((i + 1))
done
if [ $fail -ne 0 ]; then
  printf '%s\n' "$out" | head -100 >&2
  exit 1
fi
exit 0
