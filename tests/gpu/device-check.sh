#!/usr/bin/env bash
# The one-GPU device check of issue 10: on a machine with one GPU, the CUDA toolkit, PyTorch and a
# pip NCCL, in one run of a few minutes, it
#   1. installs missing build packages (scripts/install-deps.sh, quietly), configures and builds
#      the full kernel set with every core into build-device (nccl, accl-perf, accl-gpu-checks);
#   2. measures the device copy bandwidth (accl-copy-bw, tests/gpu/copy_bandwidth.cu);
#   3. runs accl-perf: 4-rank ring all_reduce (NCCL_ALGO=Ring) and 1-rank all_reduce, then the
#      same 1-rank run through NVIDIA's NCCL (the pip package's libnccl.so.2, LD_PRELOAD);
#   4. runs the 2-process PyTorch job tests/torch/collectives_2proc.py with accl preloaded;
#   5. runs `ctest -L gpu`;
#   6. runs NVIDIA's compute-sanitizer with memcheck, synccheck and racecheck over two small picks
#      of the gpu tests (the device primitives and CUDA Prims alone; two 2-rank readiness tests
#      through the library), each run with its own limit, about 90 s for the step; any error the
#      sanitizer reports fails the check, a missing compute-sanitizer only leaves a note;
#   7. runs accl-perf for every collective with 1, 2, 4, 8 rank threads and 2 processes, all ranks
#      on the one GPU, data checked (-c 1);
#   8. prints one summary table (tests/gpu/device_check_report.py) with the issue's two targets and
#      a line per sanitizer tool.
# Every step has a time limit taken from one overall deadline, and the run goes on past failures.
# Results: build-device/device-check/ (logs, JSON, summary.txt/.json); when $OUT is set, also
# $OUT/device-check.log (live), $OUT/summary.txt, $OUT/summary.json and
# $OUT/device-check-results.tar.gz. Exit 0 when every check and target passed, else 1 (2: usage).
#
#   tests/gpu/device-check.sh               the real run (needs a GPU for steps 2-4, 6 and 7)
#   tests/gpu/device-check.sh --dry-run     no build, no GPU: canned figures through the same
#                                           steps and summary (ACCL_DEVICE_CHECK_DRY_RUN=1)
# Settings (environment):
#   ACCL_DEVICE_CHECK_DEADLINE=450     seconds for the whole run
#   ACCL_DEVICE_CHECK_BUILD_DIR=build-device
#   ACCL_DEVICE_CHECK_NO_BUILD=1       use the build directory as it is (no deps, configure, build)
#   ACCL_DEVICE_CHECK_NO_DEPS=1        do not call scripts/install-deps.sh
#   ACCL_DEVICE_CHECK_DEBS=DIR         .deb files (e.g. libgtest-dev) unpacked into the work folder
#                                      and given to CMake, for a machine with no package registry
#                                      (default: .device-debs in the repository, when present)
#   ACCL_DEVICE_CHECK_MAX_BYTES=256M   largest accl-perf size
#   ACCL_DEVICE_CHECK_HOST_PERF=1      run the accl-perf steps on the host backend when no GPU is
#                                      visible (checks this script's runs on a CPU machine)
#   ACCL_DEVICE_CHECK_PYTHON=PATH      Python with torch (default: python3 if it has torch, else the
#                                      scripts/torch-venv.sh environment)
#   ACCL_DEVICE_CHECK_NCCL=PATH        NVIDIA's libnccl.so.2 (default: that Python's nvidia.nccl)
#   ACCL_DEVICE_CHECK_SANITIZER=PATH   compute-sanitizer for step 6 (default: the one on PATH, else
#                                      $CUDA_HOME/bin, next to nvcc or /usr/local/cuda/bin); 0: skip
#   ACCL_DEVICE_CHECK_BUILD_TYPE=Release, ACCL_DEVICE_CHECK_JOBS=$(nproc)
set -uo pipefail  # no -e: a failed step is recorded and the run goes on

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
DRY_RUN=${ACCL_DEVICE_CHECK_DRY_RUN:-0}
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY_RUN=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "device-check: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 2
DEADLINE_S=${ACCL_DEVICE_CHECK_DEADLINE:-450}
if ! [[ "$DEADLINE_S" =~ ^[0-9]+$ ]] || (( DEADLINE_S < 30 )); then
  echo "device-check: ACCL_DEVICE_CHECK_DEADLINE='$DEADLINE_S' is not a number of seconds >= 30" >&2
  exit 2
fi
MAX_BYTES=${ACCL_DEVICE_CHECK_MAX_BYTES:-256M}
if ! [[ "$MAX_BYTES" =~ ^[0-9]+[KMG]?$ ]]; then
  echo "device-check: ACCL_DEVICE_CHECK_MAX_BYTES='$MAX_BYTES' is not a size (e.g. 256M)" >&2
  exit 2
fi
BUILD_DIR=${ACCL_DEVICE_CHECK_BUILD_DIR:-build-device}
[[ "$BUILD_DIR" == /* ]] || BUILD_DIR="$repo/$BUILD_DIR"
BUILD_TYPE=${ACCL_DEVICE_CHECK_BUILD_TYPE:-Release}
JOBS=${ACCL_DEVICE_CHECK_JOBS:-$(nproc)}
HOST_PERF=${ACCL_DEVICE_CHECK_HOST_PERF:-0}
WORK="$BUILD_DIR/device-check"
BIN="$BUILD_DIR/bin"
REPORT="$repo/tests/gpu/device_check_report.py"
OUT_DIR=${OUT:-}

T0=$(date +%s)
rm -rf "$WORK"
mkdir -p "$WORK/perf" || { echo "device-check: cannot create $WORK" >&2; exit 2; }
if [[ -n "$OUT_DIR" ]]; then
  mkdir -p "$OUT_DIR" && exec > >(tee "$WORK/console.log" "$OUT_DIR/device-check.log") 2>&1
else
  exec > >(tee "$WORK/console.log") 2>&1
fi
TEE_PID=$!

elapsed() { echo $(( $(date +%s) - T0 )); }
remaining() { echo $(( T0 + DEADLINE_S - $(date +%s) )); }
# budget CAP RESERVE: seconds a step may take: at most CAP, leaving RESERVE for the steps after it.
budget() {
  local r=$(( $(remaining) - $2 ))
  (( r > $1 )) && r=$1
  (( r < 0 )) && r=0
  echo "$r"
}
# limited SECONDS CMD...: CMD under `timeout`, its process group killed 5 s after the limit; a
# limit under 1 s runs nothing and returns 124 (timeout's own 0 would mean "no limit").
limited() {
  local t=$1
  shift
  (( t >= 1 )) || return 124
  timeout -k 5 "$t" "$@"
}
say() { printf '[device-check %3ds] %s\n' "$(elapsed)" "$*"; }
put() { printf '%s\t%s\n' "$1" "$(printf '%s' "$2" | tr '\t\n' '  ')" >>"$WORK/steps.tsv"; }
# first_line FILE PATTERN: the first line matching (extended regexp), trimmed
first_line() { grep -m1 -E "$2" "$1" 2>/dev/null | cut -c1-220; }

# Minimum seconds kept for each later step (the summary included).
RESERVE_SUMMARY=10
RESERVE_MATRIX=$(( RESERVE_SUMMARY + 20 ))
RESERVE_SANITIZER=$(( RESERVE_MATRIX + 40 ))
RESERVE_CTEST=$(( RESERVE_SANITIZER + 20 ))
RESERVE_TORCH=$(( RESERVE_CTEST + 40 ))
RESERVE_KEYS=$(( RESERVE_TORCH + 40 ))
RESERVE_COPY=$(( RESERVE_KEYS + 10 ))

put work "$WORK"
put deadline "$DEADLINE_S"
put cores "$(nproc)"
put date "$(date -u '+%Y-%m-%d %H:%M UTC')"
put dry_run "$DRY_RUN"
[[ -n "$OUT_DIR" ]] && put out "$OUT_DIR"
say "accl device check in $repo: deadline ${DEADLINE_S} s, build $BUILD_DIR ($BUILD_TYPE, -j$JOBS), largest size $MAX_BYTES${OUT_DIR:+, results also in \$OUT}"
[[ "$DRY_RUN" == 1 ]] && say "DRY RUN: no build, no GPU; canned figures go through the same steps and the summary"

# ---------------------------------------------------------------- the machine
GPU_SEEN=0
if [[ "$DRY_RUN" != 1 ]]; then
  if command -v nvidia-smi >/dev/null 2>&1; then
    smi=$(timeout 15 nvidia-smi -L 2>&1 | head -4)
    say "nvidia-smi -L: ${smi:-nothing}"
    if grep -q '^GPU [0-9]' <<<"$smi"; then
      GPU_SEEN=1
      put gpu_name "$(sed -n 's/^GPU 0: \([^(]*\) (.*/\1/p' <<<"$smi" | head -1)"
    fi
  else
    say "nvidia-smi: not installed"
  fi
  say "tools: $(command -v nvcc >/dev/null && nvcc --version | tail -1 || echo 'no nvcc'); $(cmake --version 2>/dev/null | head -1 || echo 'no cmake'); $(command -v ninja >/dev/null && echo "ninja $(ninja --version)" || echo 'no ninja'); $(command -v ccache >/dev/null && echo ccache || echo 'no ccache')"
fi

# Python with torch: the one for the PyTorch job and where the pip NCCL lives.
has_torch() { [[ -x "$1" ]] && "$1" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' 2>/dev/null; }
TORCH_PY=""
for candidate in "${ACCL_DEVICE_CHECK_PYTHON:-}" "$(command -v python3 || true)" \
                 "${ACCL_TORCH_VENV:-$HOME/.cache/accl/torch-2.15.0}/bin/python"; do
  if [[ -n "$candidate" ]] && has_torch "$candidate"; then TORCH_PY=$candidate; break; fi
done
REPORT_PY=$(command -v python3 || echo "$TORCH_PY")
# The interpreter itself, not a launcher shim (pyenv's cost a second each under load).
[[ -n "$REPORT_PY" ]] && REPORT_PY=$("$REPORT_PY" -c 'import sys; print(sys.executable)' 2>/dev/null || echo "$REPORT_PY")
if [[ -z "$REPORT_PY" ]]; then
  say "no python3: the summary cannot be made; giving up"
  exit 1
fi

# ---------------------------------------------------------------- 1. dependencies, configure, build
cmake_prefix=""
gtest_present() {
  local d
  for d in /usr/lib/*/cmake/GTest /usr/lib/cmake/GTest /usr/local/lib/cmake/GTest /usr/local/lib/*/cmake/GTest \
           /usr/lib64/cmake/GTest ${cmake_prefix:+"$cmake_prefix"/lib/*/cmake/GTest}; do
    [[ -f "$d/GTestConfig.cmake" ]] && return 0
  done
  [[ -f /usr/include/gtest/gtest.h ]] && ls /usr/lib/*/libgtest.a /usr/lib/libgtest.a /usr/local/lib/libgtest.a >/dev/null 2>&1
}
unpack_debs() {  # DIR: every .deb in it, unpacked under $WORK/debroot (never into /)
  local dir=$1 deb root="$WORK/debroot" n=0
  mkdir -p "$root"
  for deb in "$dir"/*.deb; do
    [[ -f "$deb" ]] || continue
    if command -v dpkg-deb >/dev/null 2>&1; then
      dpkg-deb -x "$deb" "$root" || { say "could not unpack $deb"; continue; }
    else
      (cd "$WORK" && rm -rf debx && mkdir debx && cd debx && ar x "$deb" && tar -xf data.tar.* -C "$root") ||
        { say "could not unpack $deb (no dpkg-deb, ar/tar failed)"; continue; }
    fi
    n=$((n + 1))
  done
  if (( n > 0 )); then
    cmake_prefix="$root/usr"
    say "unpacked $n .deb file(s) from $dir into $root (CMAKE_PREFIX_PATH)"
  fi
}

if [[ "$DRY_RUN" == 1 ]]; then
  put build_note "dry run"
elif [[ "${ACCL_DEVICE_CHECK_NO_BUILD:-0}" == 1 ]]; then
  put build_note "ACCL_DEVICE_CHECK_NO_BUILD=1: $BUILD_DIR used as it is"
  say "no build (ACCL_DEVICE_CHECK_NO_BUILD=1): using $BUILD_DIR as it is"
else
  debs=${ACCL_DEVICE_CHECK_DEBS:-$repo/.device-debs}
  [[ -d "$debs" ]] && unpack_debs "$debs"
  if [[ "${ACCL_DEVICE_CHECK_NO_DEPS:-0}" != 1 ]]; then
    job=main
    gtest_present || job="test"  # GoogleTest (the gpu tests) comes with the 'test' set
    t=$(budget 30 $(( RESERVE_COPY + 150 )))
    if (( t <= 5 )); then
      say "install-deps: skipped, too close to the deadline"
    else
      ACCL_DEPS_LOG="$WORK/install-deps-apt.log" limited "$t" scripts/install-deps.sh "$job" >"$WORK/install-deps.log" 2>&1
      rc=$?
      say "install-deps $job (rc $rc): $(tail -n 3 "$WORK/install-deps.log" | tr '\n' ' ' | cut -c1-300)"
      put deps "$job rc=$rc"
    fi
  fi
  gtest_present || say "GoogleTest is not installed: the gpu tests will not be built (install libgtest-dev, or put its .deb in .device-debs)"
  command -v ccache >/dev/null 2>&1 && export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$repo} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  gen=Ninja
  command -v ninja >/dev/null 2>&1 || gen="Unix Makefiles"
  if [[ -f "$BUILD_DIR/CMakeCache.txt" ]] && ! grep -q "^CMAKE_GENERATOR:INTERNAL=$gen\$" "$BUILD_DIR/CMakeCache.txt"; then
    say "$BUILD_DIR was configured with another generator: starting it afresh"
    find "$BUILD_DIR" -mindepth 1 -maxdepth 1 ! -name device-check -exec rm -rf {} +
  fi
  t=$(budget 90 $(( RESERVE_COPY + 60 )))
  # The kernels for this machine's GPUs (what the default, auto, finds too; asked here so that a
  # device query that fails cannot leave the check without kernels): sm_90 when nvidia-smi cannot say.
  archs=${ACCL_CUDA_ARCHITECTURES:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
                                     tr -d '. ' | grep -E '^[0-9]+$' | sort -u | paste -sd';')}
  archs=${archs:-90}
  say "configure: cmake -G '$gen' -DACCL_WITH_CUDA=ON -DACCL_KERNEL_SUBSET=OFF -DACCL_CUDA_ARCHITECTURES='$archs' -DCMAKE_BUILD_TYPE=$BUILD_TYPE (limit ${t} s)"
  cfg_start=$(date +%s)
  limited "$t" cmake -S "$repo" -B "$BUILD_DIR" -G "$gen" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    -DACCL_WITH_CUDA=ON -DACCL_KERNEL_SUBSET=OFF "-DACCL_CUDA_ARCHITECTURES=$archs" -DACCL_BUILD_TESTS=ON -DACCL_BUILD_BENCH=ON \
    ${cmake_prefix:+-DCMAKE_PREFIX_PATH="$cmake_prefix"} >"$WORK/configure.log" 2>&1
  rc=$?
  put configure_rc "$rc"
  if (( rc != 0 )); then
    say "configure FAILED (rc $rc, $(( $(date +%s) - cfg_start )) s): $(first_line "$WORK/configure.log" 'Error|error|FATAL')"
    tail -n 15 "$WORK/configure.log"
    put build_note "configure failed (rc $rc): $(first_line "$WORK/configure.log" 'Error|error|FATAL')"
  else
    say "configured in $(( $(date +%s) - cfg_start )) s; $(grep -E 'accl: (CUDA|no GPU|GoogleTest)' "$WORK/configure.log" | tr '\n' ';' | cut -c1-200)"
    targets=(nccl accl-perf)
    if cmake --build "$BUILD_DIR" --target help 2>/dev/null | grep -q 'accl-gpu-checks'; then
      targets+=(accl-gpu-checks)
    else
      say "no accl-gpu-checks target (no GoogleTest, or no CUDA): building nccl and accl-perf; accl-copy-bw with nvcc directly"
    fi
    keep_going=(-k 0)
    [[ "$gen" == Ninja ]] || keep_going=(-k)
    t=$(budget 100000 "$RESERVE_COPY")
    say "build: ${targets[*]} with -j$JOBS (limit ${t} s)"
    b_start=$(date +%s)
    limited "$t" cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}" -- "${keep_going[@]}" >"$WORK/build.log" 2>&1
    rc=$?
    if [[ ! -x "$BIN/accl-copy-bw" ]] && command -v nvcc >/dev/null 2>&1; then
      mkdir -p "$BIN"
      limited "$(budget 60 $(( RESERVE_COPY - 20 )))" nvcc -O2 -arch=sm_90 -o "$BIN/accl-copy-bw" tests/gpu/copy_bandwidth.cu >>"$WORK/build.log" 2>&1 ||
        say "nvcc could not build accl-copy-bw (build.log)"
    fi
    b_secs=$(( $(date +%s) - b_start ))
    put build_rc "$rc"
    put build_seconds "$b_secs"
    put build_what "$BUILD_TYPE, ACCL_KERNEL_SUBSET=OFF, -j$JOBS, ${targets[*]}$(command -v ccache >/dev/null && echo ', ccache')"
    if (( rc == 0 )); then
      say "build ok in ${b_secs} s"
    else
      err=$(first_line "$WORK/build.log" '(error|FAILED:|Error [0-9])')
      (( rc == 124 || rc == 137 )) && err="stopped at its time limit (${t} s)${err:+; $err}"
      put build_error "$err"
      say "build FAILED (rc $rc, ${b_secs} s): $err"
      grep -E -A3 'error' "$WORK/build.log" | head -n 20
    fi
  fi
fi

# ---------------------------------------------------------------- 2. copy bandwidth
GPU_OK=0
if [[ "$DRY_RUN" == 1 ]]; then
  echo 'copy_bandwidth: bytes=268435456 iters=20 memcpy_gbps=2101.3 kernel_gbps=2150.2 best_gbps=2150.2 device="NVIDIA H200 (canned)"' >"$WORK/copy.log"
  GPU_OK=1
elif [[ -x "$BIN/accl-copy-bw" ]]; then
  t=$(budget 30 "$RESERVE_KEYS")
  limited "$t" "$BIN/accl-copy-bw" --bytes 268435456 --iters 20 >"$WORK/copy.log" 2>&1
  rc=$?
  say "$(grep -m1 'copy_bandwidth:' "$WORK/copy.log" || tail -n 1 "$WORK/copy.log") (rc $rc)"
  if (( rc == 0 )); then
    GPU_OK=1
  elif (( rc == 77 )); then
    GPU_SEEN=0
  else
    GPU_OK=$GPU_SEEN  # a failed measurement; the GPU steps still run when nvidia-smi saw a GPU
    put copy_note "accl-copy-bw failed (rc $rc)"
  fi
else
  put copy_note "accl-copy-bw was not built"
  say "copy bandwidth: accl-copy-bw was not built"
  GPU_OK=$GPU_SEEN
fi
PERF_OK=$GPU_OK
PERF_WHY=""
if (( GPU_OK == 0 )); then
  PERF_WHY="no GPU is visible"
  if [[ "$HOST_PERF" == 1 ]]; then
    export ACCL_BACKEND=host
    PERF_OK=1
    put host_perf 1
    say "no GPU is visible: ACCL_DEVICE_CHECK_HOST_PERF=1, so accl-perf runs on the host backend (figures are not GPU figures)"
  else
    say "no GPU is visible: the accl-perf, NCCL and PyTorch steps are skipped (ctest still runs; its gpu tests skip themselves)"
  fi
fi
if [[ "$DRY_RUN" != 1 && ! -x "$BIN/accl-perf" ]]; then
  PERF_OK=0
  PERF_WHY="accl-perf was not built"
fi
[[ "$PERF_OK" == 1 ]] || put perf_note "$PERF_WHY"

# ---------------------------------------------------------------- accl-perf runs
printf 'name\tcollective\tranks\tmode\tvariant\trc\tseconds\tjson\tlog\tnote\n' >"$WORK/runs.tsv"
LIB_VERSION=$(sed -n 's/^#define NCCL_VERSION_CODE \([0-9]*\).*/\1/p' include/nccl.h | head -1)
declare -A MODE_TIMEOUTS=()
# perf NAME COLLECTIVE RANKS MODE(threads|procs) VARIANT(key|default|ring|nccl) CAP RESERVE -- ACCL-PERF FLAGS
perf() {
  local name=$1 coll=$2 ranks=$3 mode=$4 variant=$5 cap=$6 reserve=$7
  shift 8
  local json="$WORK/perf/$name.json" log="$WORK/perf/$name.log" note="" rc=0 start secs t
  local launch=(-g "$ranks")
  [[ "$mode" == procs ]] && launch=(-N "$ranks")
  local env_args=(env -u LD_PRELOAD)
  [[ "$variant" == ring ]] && env_args+=(NCCL_ALGO=Ring)
  [[ "$variant" == nccl ]] && env_args=(env LD_PRELOAD="$NCCL_LIB")
  local cmd=("${env_args[@]}" "$BIN/accl-perf" -C "$coll" "${launch[@]}" "$@" -c 1 -d float -o sum -J "$json")
  t=$(budget "$cap" "$reserve")
  start=$(date +%s)
  if (( ${MODE_TIMEOUTS[$mode$ranks]:-0} >= 2 )); then
    note="skipped: 2 runs of this mode timed out"; rc=-1
  elif (( t < 8 )); then
    note="skipped: deadline"; rc=-1
  elif [[ "$DRY_RUN" == 1 ]]; then
    printf 'would run (limit %s s): %s\n' "$t" "${cmd[*]} -T $(( t > 15 ? t - 6 : t - 2 ))" >"$log"
    local fault=none version=$LIB_VERSION
    [[ "$name" == all_gather-t8 ]] && fault=wrong
    [[ "$name" == alltoall-p2 ]] && fault=error
    [[ "$variant" == nccl ]] && version=23007
    "$REPORT_PY" "$REPORT" fake-perf "$json" "$coll" "$ranks" 8 268435456 "$([[ $* == *'-f 2'* ]] && echo 2 || echo 32)" "$version" "$fault"
    rc=$?
  else
    cmd+=(-T "$(( t > 15 ? t - 6 : t - 2 ))")
    echo "# ${cmd[*]}" >"$log"
    limited "$t" "${cmd[@]}" >>"$log" 2>&1
    rc=$?
    if (( rc == 124 || rc == 137 || rc == 4 )); then
      MODE_TIMEOUTS[$mode$ranks]=$(( ${MODE_TIMEOUTS[$mode$ranks]:-0} + 1 ))
      note="timed out (limit $t s)"
    elif (( rc != 0 )); then
      note=$(grep -m1 -E '^(# )?(error|.*failed|.*FAILED|rank [0-9]+:.*(error|fail))' "$log" | cut -c1-200)
      [[ -n "$note" ]] || note=$(grep -v '^#' "$log" | tail -n 1 | cut -c1-200)
    fi
  fi
  secs=$(( $(date +%s) - start ))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$coll" "$ranks" "$mode" "$variant" "$rc" "$secs" \
    "$json" "$log" "$(printf '%s' "$note" | tr '\t\n' '  ')" >>"$WORK/runs.tsv"
  say "accl-perf $name: rc $rc, ${secs} s${note:+; $note}"
}

# The pip NCCL (NVIDIA's libnccl.so.2) for the side-by-side line.
NCCL_LIB=${ACCL_DEVICE_CHECK_NCCL:-}
if [[ -z "$NCCL_LIB" && -n "$TORCH_PY" ]]; then
  NCCL_LIB=$("$TORCH_PY" -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  if [[ ! -f "$NCCL_LIB" ]]; then
    NCCL_LIB=""
    for sp in $("$TORCH_PY" -c 'import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null); do
      [[ -f "$sp/nvidia/nccl/lib/libnccl.so.2" ]] && { NCCL_LIB="$sp/nvidia/nccl/lib/libnccl.so.2"; break; }
    done
  fi
fi
if [[ -n "$NCCL_LIB" && -f "$NCCL_LIB" ]]; then
  put nccl_lib "$NCCL_LIB"
elif [[ -n "$NCCL_LIB" ]]; then
  put nccl_note "ACCL_DEVICE_CHECK_NCCL=$NCCL_LIB does not exist"
  NCCL_LIB=""
else
  put nccl_note "no pip NCCL found (nvidia.nccl in ${TORCH_PY:-no Python with torch})"
fi

# ---------------------------------------------------------------- 3. the target runs
KEY_SIZES=(-b 8 -e "$MAX_BYTES" -f 2 -n 20 -w 5)
if [[ "$PERF_OK" == 1 ]]; then
  say "target runs: 4-rank ring all_reduce, 1-rank all_reduce (accl, then NVIDIA NCCL)"
  perf all_reduce-t4-ring all_reduce 4 threads ring 40 $(( RESERVE_TORCH + 40 )) -- -b 8 -e "$MAX_BYTES" -f 32 -n 20 -w 5
  perf all_reduce-t1 all_reduce 1 threads key 40 $(( RESERVE_TORCH + 20 )) -- "${KEY_SIZES[@]}"
  if [[ -n "$NCCL_LIB" ]]; then
    perf all_reduce-t1-nccl all_reduce 1 threads nccl 40 "$RESERVE_TORCH" -- "${KEY_SIZES[@]}"
  else
    say "NVIDIA NCCL: no pip libnccl.so.2 found (set ACCL_DEVICE_CHECK_NCCL): no side-by-side run"
  fi
fi

# ---------------------------------------------------------------- 4. PyTorch, 2 processes on one GPU
if [[ "$DRY_RUN" == 1 ]]; then
  printf '%s\n' "rank 0: ok, 45 checks, 0 mismatches; libnccl $BUILD_DIR/lib/libnccl.so.2.32.3 (version $LIB_VERSION)" \
    "rank 1: ok, 45 checks, 0 mismatches; libnccl $BUILD_DIR/lib/libnccl.so.2.32.3 (version $LIB_VERSION)" \
    "collectives_2proc: PASS (2 ranks on cuda:0, torch 2.11.0 (canned), 21.0 s)" >"$WORK/torch.log"
elif [[ -z "$TORCH_PY" ]]; then
  put torch_note "no Python with torch (python3, or ACCL_DEVICE_CHECK_PYTHON)"
  say "PyTorch job: skipped, no Python with torch"
elif (( GPU_OK == 0 )); then
  put torch_note "no GPU is visible"
  say "PyTorch job: skipped, no GPU is visible"
elif [[ ! -f "$BUILD_DIR/lib/libnccl.so.2" ]]; then
  put torch_note "libnccl.so.2 was not built"
  say "PyTorch job: skipped, $BUILD_DIR/lib/libnccl.so.2 was not built"
else
  t=$(budget 90 "$RESERVE_CTEST")
  if (( t < 20 )); then
    put torch_note "skipped: deadline"
    say "PyTorch job: skipped, deadline"
  else
    lib=$(readlink -f "$BUILD_DIR/lib/libnccl.so.2")
    say "PyTorch job: $TORCH_PY tests/torch/collectives_2proc.py, LD_PRELOAD=$lib (limit ${t} s)"
    start=$(date +%s)
    limited "$t" env PYTHONUNBUFFERED=1 LD_PRELOAD="$lib" "$TORCH_PY" tests/torch/collectives_2proc.py \
      --timeout "$(( t - 5 ))" --expect-lib "$lib" >"$WORK/torch.log" 2>&1
    rc=$?
    put torch_rc "$rc"
    (( rc == 124 || rc == 137 )) && echo "collectives_2proc: FAIL killed at the step's limit (${t} s)" >>"$WORK/torch.log"
    say "PyTorch job: rc $rc, $(( $(date +%s) - start )) s: $(grep -m1 '^collectives_2proc:' "$WORK/torch.log" || tail -n 1 "$WORK/torch.log")"
  fi
fi

# ---------------------------------------------------------------- 5. ctest -L gpu
if [[ "$DRY_RUN" == 1 ]]; then
  "$REPORT_PY" "$REPORT" fake-ctest "$WORK/ctest.log"
  put ctest_rc 8
  put ctest_seconds 4
elif [[ ! -f "$BUILD_DIR/CTestTestfile.cmake" ]]; then
  put ctest_note "$BUILD_DIR is not configured"
  say "ctest: skipped, $BUILD_DIR is not configured"
else
  t=$(budget 100 "$RESERVE_SANITIZER")
  if (( t < 10 )); then
    put ctest_note "skipped: deadline"
    say "ctest -L gpu: skipped, deadline"
  else
    say "ctest -L gpu (limit ${t} s)"
    start=$(date +%s)
    (cd "$BUILD_DIR" && limited "$t" ctest -L gpu --output-on-failure --timeout "$(( t < 120 ? t : 120 ))" \
       --stop-time "$(date -d "@$(( $(date +%s) + t - 3 ))" +%H:%M:%S)" >"$WORK/ctest.log" 2>&1)
    rc=$?
    put ctest_rc "$rc"
    put ctest_seconds "$(( $(date +%s) - start ))"
    say "ctest -L gpu: rc $rc: $(grep -E 'tests passed|No tests were found' "$WORK/ctest.log" | tail -n 1)"
  fi
fi

# ---------------------------------------------------------------- 6. compute-sanitizer over a few gpu tests
# Every tool over the same two small selections: the device primitives and the CUDA Prims on their
# own (accl_gpu_simt_tests: barriers, warp ops, LL/LL128 lines, ring all-reduce of 2 ranks in one
# kernel) and the library end to end (accl_gpu_readiness_tests: 2-rank all-reduces on one and two
# streams). The cheap selection runs under all three tools first; a selection that hits its limit
# is not tried again under the next tools. Output: $WORK/sanitizer-TOOL.log (each run between two
# '#### run' lines), one row per run in $WORK/sanitizer.tsv.
SAN_TOOLS=(memcheck synccheck racecheck)
SAN_ORDER=(memcheck:prims synccheck:prims racecheck:prims memcheck:readiness synccheck:readiness racecheck:readiness)
declare -A SAN_BIN=([prims]=accl_gpu_simt_tests [readiness]=accl_gpu_readiness_tests)
declare -A SAN_FILTER=([prims]='Primitives/SimtGpu.*:Ranks/CudaPrimsGpuRing.AllReduceMatchesClosedForm/1'
                       [readiness]='GpuReadiness.TwoRanksOnOneStreamAreRefused:GpuReadiness.TwoStreamsAlternateOnOneCommunicator')
declare -A SAN_CAP=([prims]=15 [readiness]=20)  # seconds per run; racecheck, the slowest, 5 more
SAN_MIN=10                                      # the least limit a run is started with
declare -A SAN_TIMED_OUT=()
printf 'tool\trun\tbinary\tfilter\trc\tseconds\tlimit\tnote\n' >"$WORK/sanitizer.tsv"
for tool in "${SAN_TOOLS[@]}"; do : >"$WORK/sanitizer-$tool.log"; done
# sanitize TOOL RUN LIMIT [NOTE]: one run (or, with NOTE, its row only: it was skipped)
sanitize() {
  local tool=$1 run=$2 t=$3 note=${4:-} log="$WORK/sanitizer-$1.log" rc=-1 start secs=0 from="" summary
  local bin="$BIN/${SAN_BIN[$run]}" filter=${SAN_FILTER[$run]}
  local cmd=("$SANITIZER" --tool "$tool" --error-exitcode 1 --print-limit 20 --target-processes all
             "$bin" "--gtest_filter=$filter")
  start=$(date +%s)
  if [[ -z "$note" ]]; then
    from=$(( $(wc -l <"$log") + 1 ))
    echo "#### run $run: ${cmd[*]} (limit $t s)" >>"$log"
    if [[ "$DRY_RUN" == 1 ]]; then
      local fault=none
      [[ "$tool:$run" == racecheck:readiness ]] && fault=race
      "$REPORT_PY" "$REPORT" fake-sanitizer "$log" "$tool" "$filter" "$fault"
      rc=$?
    else
      limited "$t" "${cmd[@]}" >>"$log" 2>&1
      rc=$?
    fi
    secs=$(( $(date +%s) - start ))
    echo "#### run $run: exit $rc after $secs s" >>"$log"
    if (( rc == 124 || rc == 137 )); then
      note="timed out (limit $t s)"
      SAN_TIMED_OUT[$run]=$tool
    fi
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$run" "${SAN_BIN[$run]}" "$filter" "$rc" "$secs" "$t" \
    "$note" >>"$WORK/sanitizer.tsv"
  if [[ -n "$from" ]]; then
    summary=$(tail -n "+$from" "$log" | grep -E '(ERROR|RACECHECK) SUMMARY' | tail -n 1 | sed 's/^=* *//')
    say "compute-sanitizer $tool $run: rc $rc, $secs s${note:+, $note}${summary:+: $summary}"
  else
    say "compute-sanitizer $tool $run: $note"
  fi
}

SANITIZER=""
if [[ "$DRY_RUN" == 1 ]]; then
  SANITIZER=compute-sanitizer
  put sanitizer_path "canned"
elif [[ "${ACCL_DEVICE_CHECK_SANITIZER:-}" == 0 ]]; then
  put sanitizer_note "ACCL_DEVICE_CHECK_SANITIZER=0"
elif [[ -n "${ACCL_DEVICE_CHECK_SANITIZER:-}" ]]; then
  if [[ -x "$ACCL_DEVICE_CHECK_SANITIZER" ]]; then
    SANITIZER=$ACCL_DEVICE_CHECK_SANITIZER
  else
    put sanitizer_note "ACCL_DEVICE_CHECK_SANITIZER=$ACCL_DEVICE_CHECK_SANITIZER is not an executable"
  fi
else
  nvcc_dir=$(dirname "$(command -v nvcc 2>/dev/null || echo /nonexistent/nvcc)")
  for candidate in "$(command -v compute-sanitizer 2>/dev/null)" ${CUDA_HOME:+"$CUDA_HOME/bin/compute-sanitizer"} \
                   ${CUDA_HOME:+"$CUDA_HOME/compute-sanitizer/compute-sanitizer"} "$nvcc_dir/compute-sanitizer" \
                   /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    if [[ -n "$candidate" && -x "$candidate" ]]; then SANITIZER=$candidate; break; fi
  done
  [[ -n "$SANITIZER" ]] || put sanitizer_note "compute-sanitizer not found on PATH, in \$CUDA_HOME/bin, next to nvcc or in /usr/local/cuda/bin"
fi
if [[ -n "$SANITIZER" && "$DRY_RUN" != 1 ]]; then
  put sanitizer_path "$SANITIZER"
  put sanitizer_version "$(timeout 10 "$SANITIZER" --version 2>/dev/null | grep -m1 -iE 'version|release' | cut -c1-120)"
  if (( GPU_OK == 0 )); then
    put sanitizer_note "no GPU is visible"
    SANITIZER=""
  elif [[ ! -x "$BIN/${SAN_BIN[prims]}" && ! -x "$BIN/${SAN_BIN[readiness]}" ]]; then
    put sanitizer_note "the gpu tests were not built"
    SANITIZER=""
  fi
fi
if [[ -z "$SANITIZER" ]]; then
  say "compute-sanitizer: skipped ($(grep '^sanitizer_note' "$WORK/steps.tsv" | tail -n 1 | cut -f2))"
else
  t=$(budget 90 "$RESERVE_MATRIX")
  san_end=$(( $(date +%s) + t ))
  say "compute-sanitizer ($SANITIZER): memcheck, synccheck, racecheck over ${SAN_BIN[prims]} and ${SAN_BIN[readiness]} (limit ${t} s)"
  left_runs=${#SAN_ORDER[@]}
  for item in "${SAN_ORDER[@]}"; do
    tool=${item%%:*}
    run=${item#*:}
    cap=${SAN_CAP[$run]}
    [[ "$tool" == racecheck ]] && cap=$(( cap + 5 ))
    left=$(( san_end - $(date +%s) ))
    t=$(( left - SAN_MIN * (left_runs - 1) ))
    (( t > cap )) && t=$cap
    (( t < SAN_MIN )) && t=$(( left < SAN_MIN ? left : SAN_MIN ))
    left_runs=$(( left_runs - 1 ))
    if [[ "$DRY_RUN" != 1 && ! -x "$BIN/${SAN_BIN[$run]}" ]]; then
      sanitize "$tool" "$run" 0 "skipped: ${SAN_BIN[$run]} was not built"
    elif [[ -n "${SAN_TIMED_OUT[$run]:-}" ]]; then
      sanitize "$tool" "$run" 0 "skipped: timed out under ${SAN_TIMED_OUT[$run]}"
    elif (( t < SAN_MIN )); then
      sanitize "$tool" "$run" 0 "skipped: deadline"
    else
      sanitize "$tool" "$run" "$t"
    fi
  done
fi

# ---------------------------------------------------------------- 7. every collective, every rank layout
MATRIX_SIZES=(-b 8 -e "$MAX_BYTES" -f 32 -n 10 -w 2)
if [[ "$PERF_OK" == 1 ]]; then
  say "accl-perf matrix: 7 collectives x (4, 2, 8, 1 rank threads; 2 processes), all ranks on one GPU, checked"
  for layout in t4 p2 t2 t8 t1; do
    ranks=${layout#?}
    mode=threads
    [[ "$layout" == p* ]] && mode=procs
    for coll in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv; do
      [[ "$coll-$layout" == all_reduce-t1 ]] && continue  # the target run above stands for it
      perf "$coll-$layout" "$coll" "$ranks" "$mode" default 30 "$RESERVE_SUMMARY" -- "${MATRIX_SIZES[@]}"
    done
  done
else
  say "accl-perf: skipped ($PERF_WHY)"
fi

# ---------------------------------------------------------------- 8. summary, results to $OUT
put elapsed "$(elapsed)"
echo
"$REPORT_PY" "$REPORT" summary "$WORK"
status=$?
if [[ -n "$OUT_DIR" ]]; then
  cp "$WORK/summary.txt" "$WORK/summary.json" "$OUT_DIR/" 2>/dev/null
  tar -czf "$OUT_DIR/device-check-results.tar.gz" -C "$BUILD_DIR" device-check 2>/dev/null ||
    say "could not write $OUT_DIR/device-check-results.tar.gz"
fi
exec >&- 2>&-
wait "$TEE_PID" 2>/dev/null  # the last lines reach the terminal and the logs before the exit
exit "$status"
