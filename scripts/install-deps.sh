#!/usr/bin/env bash
# Installs the Debian packages accl builds and tests with, when any is missing.
# Used by README's commands and by .ci/run. Needs root (or sudo) only when something is missing.
set -euo pipefail
packages=(cmake ninja-build ccache g++ pkg-config libhwloc-dev libibverbs-dev rdma-core libnuma-dev
          libgtest-dev libbenchmark-dev iproute2 binutils graphviz
          clang libclang-rt-dev)  # clang + its runtimes: libFuzzer for scripts/fuzz.sh
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
