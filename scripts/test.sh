#!/usr/bin/env bash
# Builds accl and runs every test that this machine can run (all labels but gpu — vgpu included:
# the CUDA backend on the virtual GPU; gpu too when a GPU is visible). The same command runs in CI (.ci/run).
# Before the build it fetches, when it can (all optional, all cached under ~/.cache/accl):
# NVIDIA's NCCL 2.32.3 headers and library for the ABI comparisons, torch 2.15.0 for the
# PyTorch smoke test, and (CUDA builds) cuobjdump for the sm-code test. Without network the
# tests that need them skip (the sm-code test falls back to a weaker check).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-nccl-reference.sh
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then scripts/fetch-cuobjdump.sh; fi
scripts/torch-venv.sh
# CUDA builds link the CUDA runtime shared here (the shipped default is static, see CMakeLists.txt):
# the vgpu tests run accl's CUDA backend on the virtual GPU, which stands in for libcudart.so.13.
# The kernels: the visible GPUs' architectures (auto); with no GPU, sm_90, the architecture the
# virtual GPU presents (a build without kernels cannot run the vgpu tests).
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  archs=${ACCL_CUDA_ARCHITECTURES:-$( ((gpu)) && echo auto || echo 90)}
  export CMAKE_ARGS="${CMAKE_ARGS:-} -DACCL_CUDA_RUNTIME=${ACCL_CUDA_RUNTIME:-shared} -DACCL_CUDA_ARCHITECTURES=$archs"
fi
scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
exclude="^gpu$"  # a regex: the label gpu, not vgpu
if ((gpu)); then exclude="__none__"; fi
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-$(nproc)}" -LE "$exclude" "$@"
