// Small CUDA runtime helpers shared by the .cu files of the device-primitives and CUDA Prims
// checks: a zeroed device allocation owned by an object, a mapped host abort flag, and a wait
// that stops a kernel through that flag instead of hanging the test.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace accl::gputest {

struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) {
    if (cudaMalloc(&ptr, bytes ? bytes : 16) == cudaSuccess) cudaMemset(ptr, 0, bytes ? bytes : 16);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(ptr); }
  void* ptr = nullptr;
};

// A flag in mapped pinned memory: the host sets it, the kernel's spin loops read it.
struct AbortFlag {
  AbortFlag() {
    if (cudaHostAlloc(&host, sizeof(uint32_t), cudaHostAllocMapped) == cudaSuccess) {
      *host = 0;
      if (cudaHostGetDevicePointer(&device, host, 0) != cudaSuccess) device = nullptr;
    }
  }
  ~AbortFlag() { cudaFreeHost(host); }
  AbortFlag(const AbortFlag&) = delete;
  AbortFlag& operator=(const AbortFlag&) = delete;
  bool ok() const { return device != nullptr; }
  uint32_t* host = nullptr;
  uint32_t* device = nullptr;
};

// Waits for the work queued on the default stream; after `limit` sets the abort flag and
// reports a timeout. Returns "" on success, else what went wrong.
inline std::string finishOrAbort(AbortFlag& abort, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (cudaStreamQuery(0) == cudaErrorNotReady) {
    if (std::chrono::steady_clock::now() > deadline) {
      *reinterpret_cast<volatile uint32_t*>(abort.host) = 1;
      cudaDeviceSynchronize();
      return "kernel still spinning after " + std::to_string(limit.count()) + " s; aborted through its flag";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

}  // namespace accl::gputest
