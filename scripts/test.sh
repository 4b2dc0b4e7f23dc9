#!/usr/bin/env bash
# Builds accl and runs every test that this machine can run (all labels but gpu; gpu too when a
# GPU is visible). The same command runs in CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
exclude="gpu"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then exclude="__none__"; fi
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-$(nproc)}" -LE "$exclude" "$@"
