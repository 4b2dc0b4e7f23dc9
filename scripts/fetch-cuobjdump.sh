#!/usr/bin/env bash
# Puts NVIDIA's cuobjdump (from the nvidia-cuda-cuobjdump wheel on PyPI, the CUDA major version of
# the nvcc on PATH) at ${ACCL_CUOBJDUMP_DIR:-~/.cache/accl/cuobjdump-cu<major>}/bin/cuobjdump, where
# src/backend/cuda/kernels.cmake looks for it: the test accl_libnccl_has_sm_code then lists
# libnccl.so.2's ELF images with `cuobjdump --list-elf` (without it, a weaker fatbin check runs).
# A toolkit installed from pip has no cuobjdump; one with cuda-cuobjdump needs none of this.
# Also nvdisasm (nvidia-cuda-nvdisasm), which `cuobjdump -sass` runs: the test
# accl_kernel_report_check (scripts/kernel-report.py --check) needs both.
#
# Optional and quick: does nothing without nvcc or when the binary is already there, and never
# fails the caller (no pip, no network: it says so and exits 0).
#   ACCL_CUOBJDUMP_WHEEL=/path/to/nvidia_cuda_cuobjdump-*.whl  use a wheel already on disk
#   ACCL_NVDISASM_WHEEL=/path/to/nvidia_cuda_nvdisasm-*.whl    likewise for nvdisasm
#   ACCL_SKIP_CUOBJDUMP=1                                      do nothing
set -uo pipefail

say() { echo "fetch-cuobjdump: $*" >&2; }

if [[ "${ACCL_SKIP_CUOBJDUMP:-0}" == 1 ]]; then
  say "skipped (ACCL_SKIP_CUOBJDUMP=1)"
  exit 0
fi
nvcc=$(command -v nvcc || true)
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
[[ -z "$nvcc" ]] && exit 0  # no CUDA build, nothing to check
major=$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p' | head -n 1)
if [[ -z "$major" ]]; then
  say "cannot read the CUDA version from $nvcc --version; the sm-code test uses its weaker check"
  exit 0
fi
dest=${ACCL_CUOBJDUMP_DIR:-${HOME}/.cache/accl/cuobjdump-cu${major}}

python=$(command -v python3 || command -v python || true)
if [[ -z "$python" ]]; then
  say "no python; cuobjdump is not available, the sm-code test uses its weaker check"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fetch TOOL PACKAGE WHEEL_OVERRIDE: puts the wheel's nvidia/*/bin/TOOL at $dest/bin/TOOL; returns
# non-zero (having said why) when it cannot.
fetch() {
  local tool=$1 package=$2 wheel=$3
  [[ -x "$dest/bin/$tool" ]] && return 0  # already in place
  if [[ -z "$wheel" ]]; then
    if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: --retries 1 --timeout 30 \
        --dest "$work/$tool" "${package}==${major}.*" >&2; then
      say "pip download of $package failed"
      return 1
    fi
    wheel=$(ls "$work/$tool"/*.whl 2>/dev/null | head -n 1)
  fi
  if [[ ! -f "$wheel" ]]; then
    say "no $package wheel found ($wheel)"
    return 1
  fi
  # Only the binary: nvidia/cu<major>/bin/TOOL (nvidia/cuda_<tool>/bin/ in older wheels).
  if ! "$python" - "$wheel" "$work/out/$tool" "$tool" <<'PYEOF'
import os, stat, sys, zipfile
wheel, target, tool = sys.argv[1], sys.argv[2], sys.argv[3]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith("nvidia/") and n.endswith("/bin/" + tool)]
    if not names:
        sys.exit(1)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with z.open(names[0]) as src, open(target, "wb") as dst:
        dst.write(src.read())
    os.chmod(target, os.stat(target).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
PYEOF
  then
    say "no $tool in $wheel"
    return 1
  fi
  if ! "$work/out/$tool" --version >/dev/null 2>&1; then
    say "the $tool from $wheel does not run here"
    return 1
  fi
  mkdir -p "$dest/bin"
  mv "$work/out/$tool" "$dest/bin/$tool.tmp.$$" && mv "$dest/bin/$tool.tmp.$$" "$dest/bin/$tool"
  say "$tool is in $dest/bin"
}

fetch cuobjdump nvidia-cuda-cuobjdump "${ACCL_CUOBJDUMP_WHEEL:-}" || say "the sm-code test uses its weaker check"
fetch nvdisasm nvidia-cuda-nvdisasm "${ACCL_NVDISASM_WHEEL:-}" || say "the kernel-report check is skipped"
exit 0
