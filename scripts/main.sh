#!/usr/bin/env bash
# README's main job: build, describe the library, then run a multi-rank job over local ranks
# (forked processes on the host backend when there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
"$BUILD_DIR"/bin/accl-info
"$BUILD_DIR"/bin/accl-comm-demo -N "${RANKS:-4}"
