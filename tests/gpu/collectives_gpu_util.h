// Helpers of the end-to-end GPU collective tests (collectives_gpu_test.cc): the skip check for a
// machine without a visible CUDA device, environment settings scoped to one sub-case, a set of
// communicators on device 0 (ncclCommInitAll with a repeated device), device mirrors of the
// matrix's host buffers (tests/mp/collective_expect.h), and stream waits with a deadline.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "mp/collective_expect.h"
#include "mp/collective_types.h"
#include "nccl.h"

namespace accl::gputest {

// "" when a CUDA device is visible, else why not (the tests skip with that text).
inline std::string noDeviceReason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return std::string("no CUDA device visible (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
  if (count == 0) return "no CUDA device visible (cudaGetDeviceCount returned 0)";
  return "";
}

// Compute capability major of device 0 (0 when unknown).
inline int deviceMajor() {
  cudaDeviceProp prop{};
  return cudaGetDeviceProperties(&prop, 0) == cudaSuccess ? prop.major : 0;
}

// Waits for copies and memsets queued on the legacy default stream (a pageable cudaMemcpy may
// return before its DMA lands, cudaMemset is asynchronous): the collectives run on non-blocking
// streams, which do not wait for it. Never waits for a collective's kernel.
inline bool settleCopies() { return cudaStreamSynchronize(cudaStreamLegacy) == cudaSuccess; }

// Sets environment variables for its lifetime and restores the previous values.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had)
        setenv(it->name.c_str(), it->value.c_str(), 1);
      else
        unsetenv(it->name.c_str());
    }
  }
  void set(const char* name, const std::string& value) {
    const char* old = getenv(name);
    saved_.push_back({name, old != nullptr, old ? old : ""});
    setenv(name, value.c_str(), 1);
  }

 private:
  struct Saved {
    std::string name;
    bool had;
    std::string value;
  };
  std::vector<Saved> saved_;
};

// A test of the CUDA backend: skipped without a device, ACCL_BACKEND=cuda for its duration.
class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = noDeviceReason();
    if (!why.empty()) GTEST_SKIP() << why;
    env_.set("ACCL_BACKEND", "cuda");
  }
  ScopedEnv env_;
};

inline std::string ncclText(ncclResult_t r) {
  return std::to_string(r) + " (" + ncclGetErrorString(r) + "); last error: " + ncclGetLastError(nullptr);
}

// Waits for `stream` until `limit`; "" when it completed without error, else what happened.
inline std::string waitStream(cudaStream_t stream, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return "";
    if (e != cudaErrorNotReady) return std::string("stream error: ") + cudaGetErrorString(e);
    if (std::chrono::steady_clock::now() > deadline) return "stream still busy at the deadline";
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// n communicators on device 0 (one process, one thread drives them in groups), a stream each.
class CommSet {
 public:
  explicit CommSet(int n) : comms_(n, nullptr), streams_(n, nullptr) {
    std::vector<int> devs(n, 0);
    initResult_ = ncclCommInitAll(comms_.data(), n, devs.data());
    if (initResult_ != ncclSuccess) comms_.assign(n, nullptr);
    for (auto& s : streams_) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  }
  CommSet(const CommSet&) = delete;
  CommSet& operator=(const CommSet&) = delete;
  ~CommSet() {
    for (ncclComm_t c : comms_)
      if (c) ncclCommDestroy(c);
    for (cudaStream_t s : streams_)
      if (s) cudaStreamDestroy(s);
  }
  ncclResult_t initResult() const { return initResult_; }
  int size() const { return static_cast<int>(comms_.size()); }
  ncclComm_t comm(int r) const { return comms_[r]; }
  cudaStream_t stream(int r) const { return streams_[r]; }
  // Waits for every stream; on a timeout aborts the communicators (so the kernels stop) and says so.
  std::string waitAll(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (int r = 0; r < size(); ++r) {
      std::string what = waitStream(streams_[r], deadline);
      if (!what.empty()) {
        for (ncclComm_t c : comms_)
          if (c) ncclCommAbort(c);
        comms_.assign(comms_.size(), nullptr);
        return "rank " + std::to_string(r) + ": " + what + " (communicators aborted)";
      }
    }
    return "";
  }
  // The handle was aborted or destroyed by the test: the destructor leaves it alone.
  void forget(int r) { comms_[r] = nullptr; }
  bool alive() const { return comms_.empty() || comms_[0] != nullptr; }

 private:
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  ncclResult_t initResult_ = ncclSuccess;
};

// A device copy of one test::HostBuffer (misalign 0: kGuardElems guard elements on each side).
class DeviceMirror {
 public:
  DeviceMirror() = default;
  DeviceMirror(const DeviceMirror&) = delete;
  DeviceMirror& operator=(const DeviceMirror&) = delete;
  ~DeviceMirror() { cudaFree(dev_); }
  // Copies the prepared host buffer (guards included) to the device.
  bool upload(test::HostBuffer& host, const test::BufferLayout& layout, ncclDataType_t type) {
    ts_ = test::typeSize(type);
    bytes_ = (2 * test::kGuardElems + layout.elems) * ts_;
    if (bytes_ > cap_) {
      cudaFree(dev_);
      dev_ = nullptr;
      cap_ = 0;
      if (cudaMalloc(&dev_, bytes_) != cudaSuccess) return false;
      cap_ = bytes_;
    }
    return cudaMemcpy(dev_, hostBase(host), bytes_, cudaMemcpyHostToDevice) == cudaSuccess && settleCopies();
  }
  bool download(test::HostBuffer& host) const {
    return cudaMemcpy(hostBase(host), dev_, bytes_, cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  void* at(size_t offset) const { return static_cast<char*>(dev_) + (test::kGuardElems + offset) * ts_; }

 private:
  char* hostBase(test::HostBuffer& host) const { return static_cast<char*>(host.at(0)) - test::kGuardElems * ts_; }
  void* dev_ = nullptr;
  size_t cap_ = 0;
  size_t bytes_ = 0;
  size_t ts_ = 1;
};

}  // namespace accl::gputest
