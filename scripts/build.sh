#!/usr/bin/env bash
# Configures and builds accl into ${BUILD_DIR:-build} with Ninja (CUDA backend when nvcc is found).
#   scripts/build.sh                 every target (what scripts/test.sh needs)
#   scripts/build.sh nccl accl-perf  only those targets (scripts/main.sh)
# ACCL_DEPS (main|test|all, default test) picks what scripts/install-deps.sh installs first.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# Let ccache reuse objects across checkouts and build folders (a CI clone, build-<name> folders):
# paths below the checkout are hashed relative to it, and the working directory is left out of the
# hash (debug info then may name another checkout's folder; the code is the same).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
scripts/install-deps.sh "${ACCL_DEPS:-test}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" ${1:+--target "$@"}
