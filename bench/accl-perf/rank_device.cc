// Host and CUDA implementations of RankDevice.
#include "rank_device.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "options.h"

#ifdef ACCL_BENCH_CUDA
#include <cuda_runtime.h>
#endif

namespace accl::bench {

std::string ncclErrorText(ncclResult_t res) {
  const char* last = ncclGetLastError(nullptr);
  std::string text = ncclGetErrorString(res);
  text += " / ";
  text += (last && *last) ? last : "(no detail)";
  return text;
}

std::string libraryCudaRefusal() {
  ncclUniqueId id;
  ncclResult_t res = ncclGetUniqueId(&id);
  if (res != ncclSuccess) return "ncclGetUniqueId: " + ncclErrorText(res);
  ncclComm_t comm = nullptr;
  res = ncclCommInitRank(&comm, 1, id, 0);  // a 1-rank communicator: no peer to wait for
  if (res == ncclSuccess) {
    ncclCommDestroy(comm);
    return "";
  }
  return ncclErrorText(res);
}

namespace {

class HostDevice final : public RankDevice {
 public:
  bool isHost() const override { return true; }
  int deviceIndex() const override { return -1; }
  std::string busId() const override { return "0000:00:00"; }
  std::string name() const override { return "host memory (ACCL_BACKEND=host)"; }

  bool alloc(void** ptr, size_t bytes, std::string* err) override {
    *ptr = nullptr;
    if (bytes == 0) return true;
    ncclResult_t res = ncclMemAlloc(ptr, bytes);
    if (res != ncclSuccess) {
      *err = "ncclMemAlloc(" + std::to_string(bytes) + ") failed: " + ncclErrorText(res);
      return false;
    }
    return true;
  }
  void release(void* ptr) override {
    if (ptr) ncclMemFree(ptr);
  }
  bool upload(void* dst, const void* src, size_t bytes, std::string*) override {
    if (bytes && dst != src) std::memmove(dst, src, bytes);
    return true;
  }
  bool download(void* dst, const void* src, size_t bytes, std::string*) override {
    if (bytes && dst != src) std::memmove(dst, src, bytes);
    return true;
  }
  cudaStream_t stream() const override { return nullptr; }
  bool synchronize(ncclComm_t comm, std::string* err, int* exitCode) override {
    // Host-backend calls finish before returning; only an asynchronous error can still be pending.
    ncclResult_t async = ncclSuccess;
    ncclResult_t res = ncclCommGetAsyncError(comm, &async);
    if (res != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
      *err = "ncclCommGetAsyncError reported: " + ncclErrorText(res != ncclSuccess ? res : async);
      *exitCode = kExitNcclError;
      return false;
    }
    return true;
  }
};

#ifdef ACCL_BENCH_CUDA

std::string cudaText(const char* what, cudaError_t e) {
  return std::string(what) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

class CudaDevice final : public RankDevice {
 public:
  ~CudaDevice() override {
    destroyGraph();
    if (stream_) cudaStreamDestroy(stream_);
  }

  bool open(int localIndex, bool streamNull, std::string* err) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count <= 0) {
      *err = e != cudaSuccess ? cudaText("cudaGetDeviceCount", e) : "no CUDA device found";
      return false;
    }
    int first = 0;
    if (const char* env = std::getenv("NCCL_TESTS_DEVICE")) first = std::atoi(env);
    dev_ = (first + localIndex) % count;
    if ((e = cudaSetDevice(dev_)) != cudaSuccess) {
      *err = cudaText("cudaSetDevice", e);
      return false;
    }
    cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, dev_)) != cudaSuccess) {
      *err = cudaText("cudaGetDeviceProperties", e);
      return false;
    }
    char bus[32];
    std::snprintf(bus, sizeof(bus), "%04x:%02x:%02x", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    busId_ = bus;
    name_ = prop.name;
    if (!streamNull && (e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)) != cudaSuccess) {
      *err = cudaText("cudaStreamCreateWithFlags", e);
      return false;
    }
    return true;
  }

  bool isHost() const override { return false; }
  int deviceIndex() const override { return dev_; }
  std::string busId() const override { return busId_; }
  std::string name() const override { return name_; }

  bool alloc(void** ptr, size_t bytes, std::string* err) override {
    *ptr = nullptr;
    if (bytes == 0) return true;
    cudaError_t e = cudaMalloc(ptr, bytes);
    if (e != cudaSuccess) {
      *err = cudaText(("cudaMalloc(" + std::to_string(bytes) + ")").c_str(), e);
      return false;
    }
    return true;
  }
  void release(void* ptr) override {
    if (ptr) cudaFree(ptr);
  }
  bool upload(void* dst, const void* src, size_t bytes, std::string* err) override {
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) *err = cudaText("cudaMemcpy (to device)", e);
    return e == cudaSuccess;
  }
  bool download(void* dst, const void* src, size_t bytes, std::string* err) override {
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) *err = cudaText("cudaMemcpy (to host)", e);
    return e == cudaSuccess;
  }
  cudaStream_t stream() const override { return stream_; }

  bool synchronize(ncclComm_t comm, std::string* err, int* exitCode) override {
    // Poll like nccl-tests: the stream, and between polls the communicator's asynchronous error, so a
    // failed peer shows up as an error instead of a hang.
    for (;;) {
      cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) {
        *err = cudaText("cudaStreamQuery", e);
        *exitCode = kExitCudaError;
        return false;
      }
      ncclResult_t async = ncclSuccess;
      ncclResult_t res = ncclCommGetAsyncError(comm, &async);
      if (res != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
        *err = "ncclCommGetAsyncError reported: " + ncclErrorText(res != ncclSuccess ? res : async);
        *exitCode = kExitNcclError;
        return false;
      }
      usleep(10);
    }
    return true;
  }

  bool supportsGraphs() const override { return true; }
  bool beginCapture(std::string* err) override {
    cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) *err = cudaText("cudaStreamBeginCapture", e);
    return e == cudaSuccess;
  }
  bool endCapture(std::string* err) override {
    cudaError_t e = cudaStreamEndCapture(stream_, &graph_);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec_, graph_, 0);
    if (e != cudaSuccess) *err = cudaText("cudaStreamEndCapture/cudaGraphInstantiate", e);
    return e == cudaSuccess;
  }
  bool launchGraph(std::string* err) override {
    cudaError_t e = cudaGraphLaunch(exec_, stream_);
    if (e != cudaSuccess) *err = cudaText("cudaGraphLaunch", e);
    return e == cudaSuccess;
  }
  void destroyGraph() override {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
    exec_ = nullptr;
    graph_ = nullptr;
  }

 private:
  int dev_ = -1;
  std::string busId_, name_;
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

#endif  // ACCL_BENCH_CUDA

}  // namespace

std::unique_ptr<RankDevice> makeHostDevice() { return std::make_unique<HostDevice>(); }

std::unique_ptr<RankDevice> makeCudaDevice(int localIndex, bool streamNull, std::string* err) {
#ifdef ACCL_BENCH_CUDA
  auto dev = std::make_unique<CudaDevice>();
  if (!dev->open(localIndex, streamNull, err)) return nullptr;
  return dev;
#else
  (void)localIndex;
  (void)streamNull;
  *err = "this accl-perf was built without CUDA support (ACCL_BENCH_CUDA)";
  return nullptr;
#endif
}

bool benchHasCuda() {
#ifdef ACCL_BENCH_CUDA
  return true;
#else
  return false;
#endif
}

int probeCudaDeviceCount() {
#ifdef ACCL_BENCH_CUDA
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    _exit(count > 100 ? 100 : count);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 0;
  return WEXITSTATUS(status);
#else
  return 0;
#endif
}

}  // namespace accl::bench
