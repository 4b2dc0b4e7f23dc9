#!/usr/bin/env bash
# README's main job: build the library and the two tools it runs (nothing else: scripts/test.sh
# builds the tests), describe the library, then run the all-reduce benchmark over 4 local ranks
# (forked processes; the host backend when there is no GPU) from 16 B to 64 MiB. Extra arguments
# go to accl-perf instead of the default sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
ACCL_DEPS=main scripts/build.sh nccl accl-info accl-perf
BUILD_DIR=${BUILD_DIR:-build}
echo "main: build $(($(date +%s) - start)) s"
"$BUILD_DIR"/bin/accl-info
# 16 * 4^11 = 64 MiB: the last row is the -e size (accl-perf, like nccl-tests, stops at the last
# step that does not pass -e).
if [ $# -eq 0 ]; then set -- -b 16 -e 64M -f 4; fi
"$BUILD_DIR"/bin/accl-perf -C all_reduce -N "${RANKS:-4}" "$@"
