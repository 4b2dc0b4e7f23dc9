#!/usr/bin/env bash
# Builds the fuzz targets of tests/fuzz with clang's libFuzzer + ASan + UBSan (build-fuzz) and runs
# each for FUZZ_SECONDS (default 30) from its checked-in seed corpus. New inputs go to a scratch
# corpus under the build folder (the checked-in seeds are never modified); a crash, a sanitizer
# report or a failed property fails the script, and the input that triggered it is kept as
# BUILD_DIR/fuzz/crash-<target>-* (replay: BUILD_DIR/bin/accl_fuzz_<target> FILE).
# Without clang the targets build with gcc and the standalone driver (random mutations, no coverage).
#   scripts/fuzz.sh [target...]     targets: bootstrap_wire topo_xml algo_proto conf_file
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
BUILD_DIR=${BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-30}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(bootstrap_wire topo_xml algo_proto conf_file)
scripts/install-deps.sh
compilers=()
if command -v clang++ >/dev/null 2>&1; then compilers=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++); fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${compilers[@]}" -DACCL_WITH_CUDA=OFF \
      -DACCL_SANITIZE=address,undefined -DACCL_FUZZ=ON -DACCL_BUILD_BENCH=OFF >/dev/null
start=$(date +%s)
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target "${targets[@]/#/accl_fuzz_}"
echo "fuzz: build $(($(date +%s) - start)) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
out=$BUILD_DIR/fuzz
mkdir -p "$out"
corpusStats() { echo "$(find "$@" -type f | wc -l) files, $(find "$@" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}') bytes"; }
status=0
for t in "${targets[@]}"; do
  seeds=tests/fuzz/corpus/$t
  work=$out/corpus-$t
  mkdir -p "$work"
  echo "fuzz $t: start from seeds: $(corpusStats "$seeds"), scratch corpus: $(corpusStats "$work")"
  t0=$(date +%s)
  if "$BUILD_DIR/bin/accl_fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
       -print_final_stats=1 -artifact_prefix="$out/crash-$t-" "$work" "$seeds" >"$out/$t.log" 2>&1; then
    echo "fuzz $t: ok after $(($(date +%s) - t0)) s; corpus now $(corpusStats "$work" "$seeds"); $(grep -E '^stat::number_of_executed_units' "$out/$t.log" | awk '{print $2}') runs"
  else
    status=1
    echo "fuzz $t: FAILED after $(($(date +%s) - t0)) s (log $out/$t.log):"
    grep -E 'ERROR|SUMMARY|fuzz property failed|runtime error|Test unit written' "$out/$t.log" | head -20
  fi
done
exit $status
