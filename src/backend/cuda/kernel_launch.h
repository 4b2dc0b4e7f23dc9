// The host entry points of the CUDA kernel library (src/backend/cuda/kernels, compiled by nvcc
// with relocatable device code, or no_kernels.cc in a build without kernels): what CudaBackend
// calls to prepare, size and launch the kernel. CUDA builds only.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/kernel_args.h"

namespace accl {

// Threads of one block (one channel): 16 warps.
constexpr int kKernelThreads = 512;

// Fills the device function table of the current device (once per device and process; call
// outside stream capture, e.g. at communicator init).
cudaError_t acclInitKernelTable();
// Blocks of the kernel one SM can hold at kKernelThreads threads.
cudaError_t acclKernelBlocksPerSm(int* blocks);
// Launches the communicator kernel: args.header.nChannels blocks on `stream`.
cudaError_t acclLaunchKernel(const KernelArgs& args, cudaStream_t stream);
// The GPU architectures the kernels were compiled for ("90", "80 90"); "" for a build without
// kernels (no_kernels.cc), which runs no communicator on a GPU.
const char* acclKernelArchitectures();

}  // namespace accl
