// Where one rank's buffers live and how its work is waited for: host memory from ncclMemAlloc with
// calls that complete before they return (host backend), or CUDA memory, a stream and
// cudaStreamSynchronize-style waits (CUDA backend; compiled only when ACCL_BENCH_CUDA is defined).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "nccl.h"

namespace accl::bench {

class RankDevice {
 public:
  virtual ~RankDevice() = default;

  virtual bool isHost() const = 0;
  virtual int deviceIndex() const = 0;  // -1 on the host backend
  virtual std::string busId() const = 0;
  virtual std::string name() const = 0;

  virtual bool alloc(void** ptr, size_t bytes, std::string* err) = 0;
  virtual void release(void* ptr) = 0;
  // Copies between host staging memory and a buffer from alloc().
  virtual bool upload(void* dst, const void* src, size_t bytes, std::string* err) = 0;
  virtual bool download(void* dst, const void* src, size_t bytes, std::string* err) = 0;

  virtual cudaStream_t stream() const = 0;
  // Waits for every call queued so far and reports asynchronous communicator errors. On failure
  // *exitCode is set (2: CUDA error, 3: library error).
  virtual bool synchronize(ncclComm_t comm, std::string* err, int* exitCode) = 0;

  // CUDA-graph capture of the timed loop (-G); the host backend has none.
  virtual bool supportsGraphs() const { return false; }
  virtual bool beginCapture(std::string* err) { return false; }
  virtual bool endCapture(std::string* err) { return false; }
  virtual bool launchGraph(std::string* err) { return false; }
  virtual void destroyGraph() {}
};

std::unique_ptr<RankDevice> makeHostDevice();

// CUDA device (NCCL_TESTS_DEVICE + localIndex) modulo the number of devices; null with *err when this
// build has no CUDA support or no device can be used.
std::unique_ptr<RankDevice> makeCudaDevice(int localIndex, bool streamNull, std::string* err);

// Number of CUDA devices, probed in a short-lived child process so that the caller's process never
// initializes CUDA before it forks ranks. 0 without CUDA support.
int probeCudaDeviceCount();

bool benchHasCuda();

// "<ncclGetErrorString> / <ncclGetLastError>" for a failed library call.
std::string ncclErrorText(ncclResult_t res);

// Why the library refuses the CUDA backend on this machine, in its own words (ncclGetErrorString
// and ncclGetLastError of a 1-rank ncclCommInitRank), or "" when it accepts it. Asked when the
// CUDA runtime fails to open a device, so the user reads the library's explanation ("ACCL_BACKEND=cuda
// but no CUDA device is visible") rather than only a raw runtime code (cudaErrorInsufficientDriver).
std::string libraryCudaRefusal();

}  // namespace accl::bench
