// The kernel library of a CUDA build without kernels (ACCL_CUDA_ARCHITECTURES=auto on a machine
// with no GPU, or none; cmake/CudaArchitectures.cmake): the host entry points of kernel_launch.h,
// compiled by the host compiler. There is nothing to launch, so every entry that would touch a
// kernel fails with cudaErrorNoKernelImageForDevice, and CudaBackend::start refuses first with a
// message that says how to build the kernels.
#include "backend/cuda/kernel_launch.h"

namespace accl {

cudaError_t acclInitKernelTable() { return cudaErrorNoKernelImageForDevice; }

cudaError_t acclKernelBlocksPerSm(int* blocks) {
  *blocks = 0;
  return cudaErrorNoKernelImageForDevice;
}

cudaError_t acclLaunchKernel(const KernelArgs&, cudaStream_t) { return cudaErrorNoKernelImageForDevice; }

const char* acclKernelArchitectures() { return ""; }

}  // namespace accl
