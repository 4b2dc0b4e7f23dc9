#!/usr/bin/env bash
# README's main job: build, describe the library, then run the all-reduce benchmark over 4 local
# ranks (forked processes; the host backend when there is no GPU). Extra arguments go to accl-perf.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
"$BUILD_DIR"/bin/accl-info
if [ $# -eq 0 ]; then set -- -b 8 -e 64M -f 4; fi
"$BUILD_DIR"/bin/accl-perf -C all_reduce -N "${RANKS:-4}" "$@"
