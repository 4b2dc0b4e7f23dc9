// Pinned, device-mapped host memory (cuda_memory.h: pinnedHostAlloc / pinnedHostFree). Built
// only with CUDA.
#include <cuda_runtime.h>

#include <cstring>

#include "device/cuda/cuda_memory.h"
#include "device/cuda/deferred_free.h"
#include "util/check.h"

namespace accl::cuda {

ncclResult_t pinnedHostAlloc(size_t bytes, int dev, PinnedHostMemory* out) {
  *out = PinnedHostMemory{};
  if (bytes == 0) return fail(ncclInvalidArgument, "pinnedHostAlloc: bytes = 0");
  DeviceGuard guard(dev);
  void* host = nullptr;
  cudaError_t ce = cudaHostAlloc(&host, bytes, cudaHostAllocPortable | cudaHostAllocMapped);
  if (ce != cudaSuccess) {
    cudaGetLastError();
    return fail(ncclUnhandledCudaError, "cudaHostAlloc of %zu bytes (mapped, for device %d) failed: %s", bytes, dev,
                cudaGetErrorString(ce));
  }
  void* device = nullptr;
  ce = cudaHostGetDevicePointer(&device, host, 0);
  if (ce != cudaSuccess) {
    cudaGetLastError();
    PinnedHostMemory m{host, nullptr, bytes};
    pinnedHostFree(&m);
    return fail(ncclUnhandledCudaError, "cudaHostGetDevicePointer(%p) on device %d failed: %s", host, dev,
                cudaGetErrorString(ce));
  }
  std::memset(host, 0, bytes);
  out->host = host;
  out->device = device;
  out->bytes = bytes;
  return ncclSuccess;
}

void pinnedHostFree(PinnedHostMemory* m) {
  if (m->host) {
    // cudaFreeHost waits for every kernel of the process: not while accl kernels may run.
    void* host = m->host;
    releaseWhenIdle("pinned host memory", m->bytes, [host] {
      if (cudaFreeHost(host) != cudaSuccess) cudaGetLastError();
    });
  }
  *m = PinnedHostMemory{};
}

}  // namespace accl::cuda
