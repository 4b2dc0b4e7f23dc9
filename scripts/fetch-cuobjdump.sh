#!/usr/bin/env bash
# Puts NVIDIA's cuobjdump (from the nvidia-cuda-cuobjdump wheel on PyPI, the CUDA major version of
# the nvcc on PATH) at ${ACCL_CUOBJDUMP_DIR:-~/.cache/accl/cuobjdump-cu<major>}/bin/cuobjdump, where
# src/backend/cuda/kernels.cmake looks for it: the test accl_libnccl_has_sm_code then lists
# libnccl.so.2's ELF images with `cuobjdump --list-elf` (without it, a weaker fatbin check runs).
# A toolkit installed from pip has no cuobjdump; one with cuda-cuobjdump needs none of this.
#
# Optional and quick: does nothing without nvcc or when the binary is already there, and never
# fails the caller (no pip, no network: it says so and exits 0).
#   ACCL_CUOBJDUMP_WHEEL=/path/to/nvidia_cuda_cuobjdump-*.whl  use a wheel already on disk
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
[[ -x "$dest/bin/cuobjdump" ]] && exit 0  # already in place

python=$(command -v python3 || command -v python || true)
if [[ -z "$python" ]]; then
  say "no python; cuobjdump is not available, the sm-code test uses its weaker check"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

wheel=${ACCL_CUOBJDUMP_WHEEL:-}
if [[ -z "$wheel" ]]; then
  if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: --retries 1 --timeout 30 --dest "$work" \
      "nvidia-cuda-cuobjdump==${major}.*" >&2; then
    say "pip download failed; the sm-code test uses its weaker check"
    exit 0
  fi
  wheel=$(ls "$work"/nvidia_cuda_cuobjdump-*.whl 2>/dev/null | head -n 1)
fi
if [[ ! -f "$wheel" ]]; then
  say "no wheel found ($wheel); the sm-code test uses its weaker check"
  exit 0
fi

# Only the binary: nvidia/cu<major>/bin/cuobjdump (nvidia/cuda_cuobjdump/bin/ in older wheels).
if ! "$python" - "$wheel" "$work/out/bin/cuobjdump" <<'PYEOF'
import os, stat, sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith("nvidia/") and n.endswith("/bin/cuobjdump")]
    if not names:
        sys.exit(1)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with z.open(names[0]) as src, open(target, "wb") as dst:
        dst.write(src.read())
    os.chmod(target, os.stat(target).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
PYEOF
then
  say "no cuobjdump in $wheel; the sm-code test uses its weaker check"
  exit 0
fi
if ! "$work/out/bin/cuobjdump" --version >/dev/null 2>&1; then
  say "the cuobjdump from $wheel does not run here; the sm-code test uses its weaker check"
  exit 0
fi

mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp.$$"
mv "$work/out" "$dest.tmp.$$" && rm -rf "$dest" && mv "$dest.tmp.$$" "$dest"
say "cuobjdump is in $dest/bin"
