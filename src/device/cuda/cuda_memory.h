// Device memory that other processes and devices can reach: cuMem (CUDA virtual memory
// management) allocations at the recommended granularity with POSIX-fd shareable handles (plus
// fabric handles where the device supports them), mapped read/write for every device that can
// access the owner peer-to-peer; cudaMalloc when cuMem is unusable (NCCL_CUMEM_ENABLE=0, an old
// driver, a device without VMM). Also the import side (an fd from another process, or a legacy
// cudaIpc handle) and the allocation table behind ncclMemAlloc / ncclMemFree.
//
// The driver API is reached through cudart's cudaGetDriverEntryPointByVersion: libnccl has no link
// dependency on libcuda.so and loads on machines without a driver (every call here then fails
// cleanly). The header is CUDA-free; the implementation (cuda_memory.cc) is built only with CUDA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace accl::cuda {

// Makes `dev` the calling thread's current device for its lifetime (-1: leaves it), then restores it.
class DeviceGuard {
 public:
  explicit DeviceGuard(int dev);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int saved_ = -1;
};

// Whether cuMem with POSIX-fd export is usable on device `dev` (NCCL_CUMEM_ENABLE: 0 never, 1 or
// the default -2: when the driver and the device support it). Cheap after the first call per device.
bool cuMemUsable(int dev);

// One device allocation.
struct DeviceMemory {
  void* ptr = nullptr;
  size_t bytes = 0;      // as mapped (cuMem: rounded up to the recommended granularity)
  int dev = -1;
  bool cumem = false;    // cuMem (exportable as an fd) or cudaMalloc (cudaIpc handles)
  bool fabric = false;   // also exportable as a fabric handle
  uint64_t handle = 0;   // CUmemGenericAllocationHandle (cuMem only)
};

// Allocates `bytes` (> 0) on device `dev`: cuMem when `preferCumem` and cuMemUsable(dev), else
// cudaMalloc. The memory is zeroed. The calling thread's current device is left unchanged.
ncclResult_t deviceAlloc(size_t bytes, int dev, bool preferCumem, DeviceMemory* out);
// Idempotent. The memory goes back to CUDA once no accl kernel of the process may run
// (deferred_free.h): at once, or later; *m is cleared either way.
void deviceFree(DeviceMemory* m);

// The allocation as a POSIX fd (cuMem only); the caller closes it.
ncclResult_t exportFd(const DeviceMemory& m, int* fd);

// Another process's allocation, mapped here.
struct ImportedMemory {
  void* ptr = nullptr;
  size_t bytes = 0;
  bool cumem = false;   // cuMem mapping (unmap + release) or cudaIpc (close)
  uint64_t handle = 0;
};

// Maps the cuMem allocation behind `fd` (not consumed) of `bytes` for device `dev`.
ncclResult_t importFd(int fd, size_t bytes, int dev, ImportedMemory* out);

// Legacy CUDA IPC: a cudaMalloc allocation's handle (64 bytes), and its mapping in another process.
constexpr size_t kIpcHandleBytes = 64;
ncclResult_t ipcExport(const DeviceMemory& m, unsigned char handle[kIpcHandleBytes]);
ncclResult_t ipcImport(const unsigned char handle[kIpcHandleBytes], size_t bytes, int dev, ImportedMemory* out);

void releaseImported(ImportedMemory* m);  // idempotent; deferred like deviceFree

// Makes `dev` able to reach `peerDev`'s memory (cudaDeviceEnablePeerAccess; already enabled is
// fine). False when the pair has no peer access.
bool enablePeerAccess(int dev, int peerDev);

// Synchronous copy / fill on a private non-blocking stream: never waits for kernels running on
// other streams (a legacy-stream cudaMemcpy would wait for a kernel that may itself be waiting for
// this connection).
ncclResult_t copySync(void* dst, const void* src, size_t bytes);
ncclResult_t zeroSync(void* dst, size_t bytes);

// --- Pinned host memory (cuda_pinned_memory.cc) ---
// Host memory that device `dev` reaches (cudaHostAlloc, portable and mapped), zeroed and page
// aligned: the host uses `host`, kernels `device` (cudaHostGetDevicePointer). For FIFOs that a
// host thread (a proxy) and a kernel share.
struct PinnedHostMemory {
  void* host = nullptr;
  void* device = nullptr;
  size_t bytes = 0;
};
ncclResult_t pinnedHostAlloc(size_t bytes, int dev, PinnedHostMemory* out);
void pinnedHostFree(PinnedHostMemory* m);  // idempotent; deferred like deviceFree

// --- ncclMemAlloc / ncclMemFree ---
// Allocates on the calling thread's current device and records the allocation.
ncclResult_t memAlloc(void** ptr, size_t size);
// Frees an allocation memAlloc made; *known = false (and nothing done) for any other pointer.
ncclResult_t memFree(void* ptr, bool* known);
// Live memAlloc allocations (tests).
size_t liveMemAllocs();

}  // namespace accl::cuda
