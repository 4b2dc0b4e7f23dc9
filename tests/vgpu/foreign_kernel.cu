// A kernel the virtual GPU has no CPU build of: launching it must fail with the real launch error.
#include "foreign_kernel.h"

namespace {
__global__ void foreignKernel(int* out) { out[threadIdx.x] = 1; }
}  // namespace

cudaError_t launchForeignKernel(int* out, cudaStream_t stream) {
  foreignKernel<<<1, 32, 0, stream>>>(out);
  return cudaGetLastError();
}
