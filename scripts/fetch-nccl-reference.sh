#!/usr/bin/env bash
# Puts NVIDIA's NCCL 2.32.3 (headers and libnccl.so.2, from the nvidia-nccl-cu13 wheel on PyPI)
# where the ABI tests look for it: ${ACCL_NCCL_REFERENCE_DIR:-~/.cache/accl/nccl-2.32.3}/{include,lib}.
# The ABI tests compare our nccl.h, nccl_device declarations and exports against these files.
#
# Optional and quick: does nothing when the files are already there, and never fails the caller
# (no pip, no network: it says so and exits 0; the tests then skip the NVIDIA comparisons).
#   ACCL_NCCL_WHEEL=/path/to/nvidia_nccl_cu13-2.32.3-*.whl  use a wheel already on disk
#   ACCL_SKIP_NCCL_REFERENCE=1                              do nothing
set -uo pipefail

version=2.32.3
dest=${ACCL_NCCL_REFERENCE_DIR:-${HOME}/.cache/accl/nccl-${version}}

say() { echo "fetch-nccl-reference: $*" >&2; }

if [[ "${ACCL_SKIP_NCCL_REFERENCE:-0}" == 1 ]]; then
  say "skipped (ACCL_SKIP_NCCL_REFERENCE=1)"
  exit 0
fi
if grep -qs '^#define NCCL_VERSION_CODE 23203' "$dest/include/nccl.h" && [[ -f "$dest/lib/libnccl.so.2" ]]; then
  exit 0  # already in place
fi

python=$(command -v python3 || command -v python || true)
if [[ -z "$python" ]]; then
  say "no python; NVIDIA's NCCL $version is not available, ABI comparisons against it will skip"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

wheel=${ACCL_NCCL_WHEEL:-}
if [[ -z "$wheel" ]]; then
  say "downloading nvidia-nccl-cu13==$version (about 300 MB) ..."
  if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: --retries 1 --timeout 30 --dest "$work" \
      "nvidia-nccl-cu13==$version" >&2; then
    say "pip download failed; ABI comparisons against NVIDIA's NCCL $version will skip"
    exit 0
  fi
  wheel=$(ls "$work"/nvidia_nccl_cu13-"$version"-*.whl 2>/dev/null | head -n 1)
fi
if [[ ! -f "$wheel" ]]; then
  say "no wheel found ($wheel); ABI comparisons against NVIDIA's NCCL $version will skip"
  exit 0
fi

# Only the headers and the library: nvidia/nccl/include/** and nvidia/nccl/lib/libnccl.so.2.
if ! "$python" - "$wheel" "$work/out" <<'EOF'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
prefix = "nvidia/nccl/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if not name.startswith(prefix) or name.endswith("/"):
            continue
        rel = name[len(prefix):]
        if not (rel.startswith("include/") or rel == "lib/libnccl.so.2"):
            continue
        target = os.path.join(out, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(name) as src, open(target, "wb") as dst:
            dst.write(src.read())
EOF
then
  say "cannot unpack $wheel; ABI comparisons against NVIDIA's NCCL $version will skip"
  exit 0
fi
if ! grep -qs '^#define NCCL_VERSION_CODE 23203' "$work/out/include/nccl.h"; then
  say "$wheel does not hold NCCL $version's nccl.h; ABI comparisons will skip"
  exit 0
fi

mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp.$$"
mv "$work/out" "$dest.tmp.$$" && rm -rf "$dest" && mv "$dest.tmp.$$" "$dest"
say "NVIDIA's NCCL $version headers and library are in $dest"
