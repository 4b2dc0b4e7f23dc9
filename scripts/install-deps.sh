#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages accl needs for one job, when any is missing:
#   scripts/install-deps.sh main   configure + build the library and tools (scripts/main.sh)
#   scripts/install-deps.sh test   main's + what the tests need (scripts/test.sh)
#   scripts/install-deps.sh all    test's + clang for libFuzzer (the default: sanitize.sh, fuzz.sh)
# Says in one line what it installed and why, or that nothing was missing; apt's own output goes
# to ${ACCL_DEPS_LOG:-/tmp/accl-install-deps.log}. Installing needs root: CI runs as root; on a
# dev machine it runs apt-get through sudo (which may ask for your password).
# --no-install-recommends keeps it to what is listed. No rdma-core: building and testing need
# only libibverbs-dev (headers, libibverbs1); rdma-core would pull udev/systemd upgrades.
set -euo pipefail
job=${1:-all}
log=${ACCL_DEPS_LOG:-/tmp/accl-install-deps.log}

# package|command that shows it is there (empty: ask dpkg)|why
main=("cmake|cmake|configure" "ninja-build|ninja|build" "g++|g++|compile" "pkg-config|pkg-config|find hwloc"
      "libhwloc-dev||topology discovery" "libhwloc-plugins||hwloc's PCI discovery" "ccache|ccache|reuse compiled objects"
      "libssl3||OpenSSL 3, dlopen'd: every bootstrap's HMAC (libcrypto); encryption (libssl)")
test=("libgtest-dev||GoogleTest suites" "libbenchmark-dev||bench/micro" "libibverbs-dev||verbs transport + tests"
      "iproute2|ip|netns tests" "binutils|nm|ABI export tests" "graphviz|dot|accl-topo --png test")
fuzz=("clang|clang++|libFuzzer" "libclang-rt-dev||libFuzzer runtime")
case "$job" in
  main) wanted=("${main[@]}") ;;
  test) wanted=("${main[@]}" "${test[@]}") ;;
  all) wanted=("${main[@]}" "${test[@]}" "${fuzz[@]}") ;;
  *) echo "usage: $0 [main|test|all]" >&2; exit 2 ;;
esac

have() {  # package command
  if [ -n "$2" ]; then command -v "$2" >/dev/null 2>&1 && return 0; fi
  command -v dpkg-query >/dev/null 2>&1 &&
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
missing=() why=()
for entry in "${wanted[@]}"; do
  IFS='|' read -r pkg cmd reason <<<"$entry"
  have "$pkg" "$cmd" || { missing+=("$pkg"); why+=("$pkg ($reason)"); }
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: nothing missing for '$job'"
  exit 0
fi
list=$(IFS=,; echo "${why[*]}" | sed 's/,/, /g')
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: no apt-get here; install these yourself: $list" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: missing $list; run as root (or install sudo): apt-get install --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
if ! { "${sudo[@]}" apt-get update -q &&
       "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
     >"$log" 2>&1; then
  echo "install-deps: apt-get failed installing ${missing[*]} (log: $log); its last lines:" >&2
  tail -n 15 "$log" >&2
  exit 1
fi
echo "install-deps: installed for '$job'${sudo:+ via sudo}: $list (apt log: $log)"
