#!/bin/sh
# ctest smoke run of one micro benchmark binary (label micro): smoke.sh OUT.json BINARY [ARGS...]
# Runs every benchmark once, briefly, with JSON output to OUT.json, and fails when the binary
# fails, writes no benchmark, or a benchmark reported an error (Google Benchmark's own exit
# status stays 0 after SkipWithError). Timings are never judged.
out=$1
shift
rm -f "$out"
"$@" --benchmark_min_time=0.001 --benchmark_format=console --benchmark_out_format=json --benchmark_out="$out" || {
  echo "smoke.sh: $1 exited with status $?" >&2
  exit 1
}
if ! grep -q '"name": ' "$out"; then
  echo "smoke.sh: no benchmark results in $out" >&2
  exit 1
fi
if grep -q '"error_occurred": true' "$out"; then
  echo "smoke.sh: a benchmark reported an error:" >&2
  grep -A1 '"error_occurred": true' "$out" >&2
  exit 1
fi
exit 0
