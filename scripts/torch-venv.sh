#!/usr/bin/env bash
# Makes the Python environment of the PyTorch smoke test (tests/torch): torch 2.15.0 from PyPI in a
# virtual environment at ${ACCL_TORCH_VENV:-~/.cache/accl/torch-2.15.0}. torch 2.15.0 is the release
# whose libtorch_cuda.so imports NCCL 2.30's functions; importing it with accl preloaded is the
# first thing a PyTorch user does.
#
# Optional: does nothing when the environment is already there, and never fails the caller (no
# python, no network, no disk: it says so and exits 0; the smoke test then skips).
#   ACCL_SKIP_TORCH=1   do nothing
set -uo pipefail

version=2.15.0
venv=${ACCL_TORCH_VENV:-${HOME}/.cache/accl/torch-${version}}

say() { echo "torch-venv: $*" >&2; }

if [[ "${ACCL_SKIP_TORCH:-0}" == 1 ]]; then
  say "skipped (ACCL_SKIP_TORCH=1)"
  exit 0
fi
# A venv records its own path, so it is built in place; the marker says the install finished.
if [[ -f "$venv/.accl-complete" ]]; then
  exit 0
fi
python=$(command -v python3 || true)
if [[ -z "$python" ]]; then
  say "no python3; the PyTorch smoke test will skip"
  exit 0
fi
say "installing torch==$version into $venv (about 4 GB with its CUDA libraries) ..."
rm -rf "$venv"
if "$python" -m venv "$venv" && "$venv/bin/pip" install --quiet --disable-pip-version-check "torch==$version" >&2; then
  touch "$venv/.accl-complete"
else
  say "pip install failed; the PyTorch smoke test will skip"
  rm -rf "$venv"
fi
exit 0
