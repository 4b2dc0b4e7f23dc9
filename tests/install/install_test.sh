#!/usr/bin/env bash
# ctest install.consumers: installs the build tree into a temporary prefix (cmake --install --prefix),
# checks what is there, then uses it as a user of NVIDIA's packages would:
#   1. consumer.c built with `pkg-config --cflags --libs nccl`, and `... nccl_static`, run;
#   2. consumer/ (a CMake project: find_package(NCCL), find_package(accl)) configured, built, run;
#   3. all_reduce_perf from the prefix's bin/ (2 ranks as threads, host backend, small sizes): exit
#      0, a result table, and libnccl.so.2 loaded from the prefix (the tools' RUNPATH).
# Usage: install_test.sh BUILD_DIR CMAKE C_COMPILER GENERATOR MAKE_PROGRAM LIBDIR HAVE_PERF(0|1)
set -uo pipefail
build=$1 cmake=$2 cc=$3 generator=$4 make_program=$5 libdir=$6 have_perf=$7
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/accl-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
failures=0
fail() { echo "install test: FAILED: $*"; failures=$((failures + 1)); }
step() { echo "install test: $*"; }
# runs a command, output to $work/<name>.log; on failure shows its end
logged() {
  local name=$1; shift
  if "$@" >"$work/$name.log" 2>&1; then return 0; fi
  local rc=$?
  fail "$name (exit $rc): $*"; tail -n 30 "$work/$name.log"; return $rc
}
t0=$(date +%s)

step "cmake --install $build --prefix $prefix"
logged install "$cmake" --install "$build" --prefix "$prefix" || exit 1
grep -q '^/etc/' "$build/install_manifest.txt" 2>/dev/null && fail "a plain install wrote under /etc"

expect=(include/nccl.h "$libdir/libnccl.so" "$libdir/libnccl.so.2" "$libdir/libnccl_static.a"
        "$libdir/pkgconfig/nccl.pc" "$libdir/pkgconfig/nccl_static.pc"
        "$libdir/cmake/NCCL/NCCLConfig.cmake" "$libdir/cmake/NCCL/NCCLConfigVersion.cmake"
        "$libdir/cmake/accl/acclConfig.cmake" "$libdir/cmake/accl/acclConfigVersion.cmake"
        bin/accl-info bin/accl-topo bin/accl-tune bin/accl-comm-demo bin/accl-ras)
perf_names=(all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter)
if [ "$have_perf" = 1 ]; then
  expect+=(bin/accl-perf)
  for n in "${perf_names[@]}"; do expect+=("bin/${n}_perf"); done
fi
for f in "${expect[@]}"; do [ -e "$prefix/$f" ] || fail "not installed: $f"; done
for n in "${perf_names[@]}"; do
  [ "$have_perf" = 1 ] || break
  [ "$(readlink "$prefix/bin/${n}_perf")" = accl-perf ] || fail "bin/${n}_perf is not a symlink to accl-perf"
done
logged accl-info env -u LD_LIBRARY_PATH ACCL_BACKEND=host "$prefix/bin/accl-info"

export ACCL_BACKEND=host LD_LIBRARY_PATH=$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
for pc in nccl nccl_static; do
  step "pkg-config: $cc consumer.c \$(pkg-config --cflags --libs $pc)"
  if flags=$(pkg-config --cflags --libs "$pc" 2>"$work/pkgconfig-$pc.log"); then
    # shellcheck disable=SC2086  # pkg-config's flags are words
    logged "cc-$pc" "$cc" -std=c99 -Wall -Werror "$here/consumer.c" -o "$work/consumer_$pc" $flags &&
      logged "run-$pc" "$work/consumer_$pc" && grep -h "consumer ok" "$work/run-$pc.log"
  else
    fail "pkg-config $pc: $(cat "$work/pkgconfig-$pc.log")"
  fi
done
deps=$(ldd "$work/consumer_nccl" 2>&1)  # whole output first: grep -q would cut ldd's pipe (pipefail)
if ! grep -q "=> $prefix/$libdir/libnccl.so.2 " <<<"$deps"; then
  fail "consumer_nccl does not load $prefix/$libdir/libnccl.so.2: $(grep nccl <<<"$deps")"
fi

step "CMake: find_package(NCCL) + find_package(accl) with CMAKE_PREFIX_PATH=$prefix"
gen_args=(-G "$generator")
[ -n "$make_program" ] && gen_args+=(-DCMAKE_MAKE_PROGRAM="$make_program")
if logged cmake-configure env -u CMAKE_C_COMPILER_LAUNCHER "$cmake" -S "$here/consumer" -B "$work/consumer-build" \
       "${gen_args[@]}" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" &&
   logged cmake-build "$cmake" --build "$work/consumer-build"; then
  for exe in consumer_nccl consumer_accl_static; do
    logged "run-$exe" "$work/consumer-build/$exe" && grep -h "consumer ok" "$work/run-$exe.log"
  done
fi

if [ "$have_perf" = 1 ]; then
  step "all_reduce_perf -g 2 -b 16 -e 1K -f 4 from $prefix/bin"
  perf=$prefix/bin/all_reduce_perf
  if logged all_reduce_perf env -u LD_LIBRARY_PATH "$perf" -g 2 -b 16 -e 1K -f 4 -n 2 -w 1 -T 60; then
    grep -Eq '^ +1024 +256 +float +sum ' "$work/all_reduce_perf.log" || fail "all_reduce_perf: no 1024-byte row"
    grep -q '^# Avg bus bandwidth' "$work/all_reduce_perf.log" || fail "all_reduce_perf: no summary line"
    grep -E '^ +(16|64|256|1024) ' "$work/all_reduce_perf.log"
  fi
  loaded=$(env -u LD_LIBRARY_PATH ldd "$prefix/bin/accl-perf" | awk '/libnccl\.so\.2/ { print $3 }')
  [ -n "$loaded" ] && [ "$(realpath "$loaded")" = "$(realpath "$prefix/$libdir/libnccl.so.2")" ] ||
    fail "installed accl-perf loads libnccl.so.2 from '$loaded', not from $prefix/$libdir (RUNPATH)"
fi

echo "install test: $failures failure(s) in $(($(date +%s) - t0)) s"
[ "$failures" -eq 0 ]
