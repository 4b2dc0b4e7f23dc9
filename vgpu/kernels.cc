// Kernels: what nvcc-built code registers (__cudaRegisterFatBinary, __cudaRegisterFunction, ...)
// and launches (<<<>>> through __cudaPushCallConfiguration / __cudaLaunchKernel, cudaLaunchKernel),
// matched by name with the CPU builds of cpu_kernels.h, checked as the runtime checks a launch,
// and run on the device's SMs: a block starts only when an SM has room for it (registers,
// threads, blocks), in launch order, and keeps its SM until it ends — so kernels that wait for
// each other deadlock here exactly when their blocks cannot all be resident on a GPU.
#include <cxxabi.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device/simt/cpu_harness.h"
#include "vgpu/api.h"
#include "vgpu/cpu_kernels.h"
#include "vgpu/streams.h"
#include "vgpu/timeslice.h"

namespace accl::vgpu {
namespace {

constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kSmRegisters = 65536;
constexpr int kSmThreads = 2048;
constexpr int kSmBlocks = 32;
constexpr size_t kMaxParamBytes = 32764;   // the kernel parameter limit of Volta and later
constexpr size_t kDefaultSharedLimit = 48 << 10;

// One registered kernel (the handle behind cudaKernel_t).
struct KernelEntry {
  const void* hostFun = nullptr;
  std::string mangled;
  std::string name;  // canonical: demangled, anonymous namespaces removed
  const CpuKernel* cpu = nullptr;
  std::atomic<int> maxDynamicShared{int(kDefaultSharedLimit)};
};

std::mutex gKernelsMu;
std::map<const void*, KernelEntry*>& kernelsByHostFun() {
  static auto* m = new std::map<const void*, KernelEntry*>;
  return *m;
}

// "accl::commKernel(accl::KernelArgs)" from the device name nvcc registers. With relocatable
// device code a kernel of internal linkage is registered as "__nv_static_<n>__<unit>_<_Z name>".
std::string canonicalName(const char* mangled) {
  std::string raw = mangled;
  if (raw.rfind("__nv_static_", 0) == 0)
    if (size_t z = raw.find("_Z", 12); z != std::string::npos) raw.erase(0, z);
  int status = 0;
  char* d = abi::__cxa_demangle(raw.c_str(), nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : raw;
  std::free(d);
  for (size_t at; (at = s.find("(anonymous namespace)::")) != std::string::npos;) s.erase(at, 23);
  return s;
}

KernelEntry* lookup(const void* hostFun) {
  std::lock_guard<std::mutex> lock(gKernelsMu);
  auto it = kernelsByHostFun().find(hostFun);
  return it == kernelsByHostFun().end() ? nullptr : it->second;
}

int kernelTimeoutSeconds() {
  static const int s = [] {
    const char* v = std::getenv("ACCL_VGPU_KERNEL_TIMEOUT_S");
    const int n = v ? std::atoi(v) : 0;
    return n > 0 ? n : 600;
  }();
  return s;
}

// The SMs of one device: what each holds now, handed out in launch order.
class SmPool {
 public:
  explicit SmPool(int sms) : regs_(sms, 0), threads_(sms, 0), blocks_(sms, 0) {}

  // Blocks until some SM can hold a block of `threads` threads using `regs` registers each, and
  // every earlier request was served; returns the SM.
  int acquire(int threads, int regs) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t ticket = next_++;
    int sm = -1;
    cv_.wait(lock, [&] { return ticket == serving_ && (sm = fit(threads, regs)) >= 0; });
    regs_[sm] += threads * regs;
    threads_[sm] += threads;
    blocks_[sm] += 1;
    ++serving_;
    cv_.notify_all();
    return sm;
  }

  void release(int sm, int threads, int regs) {
    std::lock_guard<std::mutex> lock(mu_);
    regs_[sm] -= threads * regs;
    threads_[sm] -= threads;
    blocks_[sm] -= 1;
    cv_.notify_all();
  }

 private:
  int fit(int threads, int regs) const {
    for (size_t i = 0; i < regs_.size(); ++i)
      if (regs_[i] + threads * regs <= kSmRegisters && threads_[i] + threads <= kSmThreads && blocks_[i] < kSmBlocks)
        return int(i);
    return -1;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> regs_, threads_, blocks_;
  uint64_t next_ = 0, serving_ = 0;
};

SmPool& smPool(int device) {
  static std::mutex mu;
  static auto* pools = new std::map<int, std::unique_ptr<SmPool>>;
  std::lock_guard<std::mutex> lock(mu);
  auto& p = (*pools)[device];
  if (!p) p = std::make_unique<SmPool>(vgpu::device(device) ? vgpu::device(device)->smCount : 1);
  return *p;
}

// Runs a whole grid: each block on the harness (fibers: one OS thread per block) once an SM has
// room for it. Returns the launch's outcome as CUDA reports a kernel fault.
cudaError_t runGrid(const KernelEntry* k, std::shared_ptr<const std::vector<char>> params, int device, int grid,
                    int threads, size_t shared) {
  SmPool& pool = smPool(device);
  const int regs = k->cpu->registers;
  std::mutex mu;
  std::string firstError;
  bool timedOut = false;
  std::vector<std::thread> blocks;
  blocks.reserve(size_t(grid));
  for (int b = 0; b < grid; ++b) {
    const int sm = pool.acquire(threads, regs);
    blocks.emplace_back([&, b, sm] {
      simt::cpu::LaunchConfig c;
      c.gridDim = grid;
      c.blockDim = (threads + 31) / 32 * 32;  // the harness runs whole warps; the padding idles
      c.sharedBytes = shared;
      c.fibers = true;
      c.firstBlock = b;
      c.blockCount = 1;
      c.deadline = std::chrono::seconds(kernelTimeoutSeconds());
      c.betweenRounds = [device] { turnCheckpoint(device); };
      const void* p = params->data();
      turnBlockStarted(device);
      turnCheckpoint(device);  // a block starts only on its process's turn
      const simt::cpu::LaunchResult r = simt::cpu::launch(c, [k, p, threads] {
        if (simt::cpu::currentThread().thread < threads) k->cpu->thread(p);
      });
      turnBlockEnded(device);
      pool.release(sm, threads, regs);
      if (!r.ok) {
        std::lock_guard<std::mutex> lock(mu);
        if (firstError.empty()) firstError = r.error;
        timedOut = timedOut || r.timedOut;
      }
    });
  }
  for (std::thread& t : blocks) t.join();
  if (firstError.empty()) return cudaSuccess;
  logLine("kernel %s on device %d failed: %s%s", k->name.c_str(), device, firstError.c_str(),
          timedOut ? " (ACCL_VGPU_KERNEL_TIMEOUT_S bounds a kernel's run)" : "");
  return timedOut ? cudaErrorLaunchTimeout : cudaErrorLaunchFailure;
}

// Checks a launch as the runtime does and hands it to the stream.
cudaError_t launch(KernelEntry* k, dim3 grid, dim3 block, void** args, size_t shared, cudaStream_t stream,
                   const char* call) {
  if (k == nullptr) return failCall(call, cudaErrorInvalidDeviceFunction, "the function was never registered as a kernel");
  if (k->cpu == nullptr)
    return failCall(call, cudaErrorInvalidDeviceFunction, "kernel %s has no CPU build in the virtual GPU (it has: %s)",
                    k->name.c_str(), knownCpuKernels().c_str());
  const long threads = long(block.x) * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 || threads > kMaxThreadsPerBlock ||
      block.z > 64)
    return failCall(call, cudaErrorInvalidConfiguration, "%s: grid %ux%ux%u, block %ux%ux%u", k->name.c_str(), grid.x,
                    grid.y, grid.z, block.x, block.y, block.z);
  if (threads > k->cpu->maxThreadsPerBlock || threads * k->cpu->registers > kSmRegisters)
    return failCall(call, cudaErrorLaunchOutOfResources, "%s: %ld threads, its limit is %d", k->name.c_str(), threads,
                    k->cpu->maxThreadsPerBlock);
  if (grid.y != 1 || grid.z != 1 || block.y != 1 || block.z != 1)
    return failCall(call, cudaErrorNotSupported, "%s: the virtual GPU runs 1-D grids and blocks only", k->name.c_str());
  if (shared > size_t(k->maxDynamicShared.load()))
    return failCall(call, cudaErrorInvalidValue, "%s: %zu bytes of dynamic shared memory (limit %d)", k->name.c_str(),
                    shared, k->maxDynamicShared.load());
  if (k->cpu->paramBytes > kMaxParamBytes)
    return failCall(call, cudaErrorInvalidValue, "%s: %zu bytes of parameters (limit %zu)", k->name.c_str(),
                    k->cpu->paramBytes, kMaxParamBytes);
  if (k->cpu->paramBytes > 0 && (args == nullptr || args[0] == nullptr))
    return failCall(call, cudaErrorInvalidValue, "%s: no parameter values", k->name.c_str());
  const int device = streamDevice(stream);
  if (device < 0) return failCall(call, cudaErrorInvalidResourceHandle, "stream %p", (void*)stream);
  // Parameters are copied when the launch is made, as the driver copies them.
  auto params = std::make_shared<std::vector<char>>(k->cpu->paramBytes);
  if (k->cpu->paramBytes > 0) std::memcpy(params->data(), args[0], k->cpu->paramBytes);
  const int g = int(grid.x), t = int(threads);
  return submit(stream, call, Work{call, [k, params, device, g, t, shared] {
                                     return runGrid(k, params, device, g, t, shared);
                                   }});
}

struct CallConfig {
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
};
thread_local std::vector<CallConfig> tCallConfigs;

}  // namespace
}  // namespace accl::vgpu

using namespace accl::vgpu;

// ---- registration (code nvcc generates calls these at load time) --------------------------------

VGPU_API void** __cudaRegisterFatBinary(void* fatCubin) {
  static void* handles[1];
  (void)fatCubin;
  return handles;  // one module table is enough: kernels are found by host function
}
VGPU_API void __cudaRegisterFatBinaryEnd(void**) {}
VGPU_API void __cudaUnregisterFatBinary(void**) {}
VGPU_API char __cudaInitModule(void**) { return 1; }

VGPU_API void __cudaRegisterFunction(void**, const char* hostFun, char* deviceFun, const char*, int, uint3*, uint3*,
                                     dim3*, dim3*, int*) {
  auto* k = new KernelEntry;
  k->hostFun = hostFun;
  k->mangled = deviceFun ? deviceFun : "";
  k->name = canonicalName(k->mangled.c_str());
  k->cpu = findCpuKernel(k->name);
  std::lock_guard<std::mutex> lock(gKernelsMu);
  kernelsByHostFun()[hostFun] = k;
}

// Device variables live in the CPU build of their kernels: nothing to map.
VGPU_API void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
VGPU_API void __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int, int) {}

VGPU_API unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, struct CUstream_st* stream) {
  tCallConfigs.push_back(CallConfig{grid, block, shared, stream});
  return 0;
}

VGPU_API cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void* stream) {
  if (tCallConfigs.empty()) return setError(cudaErrorMissingConfiguration);
  const CallConfig c = tCallConfigs.back();
  tCallConfigs.pop_back();
  *grid = c.grid;
  *block = c.block;
  *shared = c.shared;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

VGPU_API cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  KernelEntry* k = lookup(hostFun);
  if (kernel == nullptr || k == nullptr) return setError(cudaErrorInvalidDeviceFunction);
  *kernel = reinterpret_cast<cudaKernel_t>(k);
  return cudaSuccess;
}

VGPU_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                                        cudaStream_t stream) {
  return launch(reinterpret_cast<KernelEntry*>(kernel), grid, block, args, shared, stream, "kernel launch");
}

VGPU_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                                             cudaStream_t stream) {
  return launch(reinterpret_cast<KernelEntry*>(kernel), grid, block, args, shared,
                stream == nullptr ? cudaStreamPerThread : stream, "kernel launch");
}

// ---- the runtime's kernel calls -----------------------------------------------------------------

VGPU_API cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                      cudaStream_t stream) {
  return launch(lookup(func), grid, block, args, shared, stream, "cudaLaunchKernel");
}

VGPU_API cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  KernelEntry* k = lookup(func);
  if (attr == nullptr) return setError(cudaErrorInvalidValue);
  if (k == nullptr || k->cpu == nullptr) return failCall("cudaFuncGetAttributes", cudaErrorInvalidDeviceFunction, "%p", func);
  std::memset(attr, 0, sizeof *attr);
  attr->maxThreadsPerBlock = k->cpu->maxThreadsPerBlock;
  attr->numRegs = k->cpu->registers;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  attr->maxDynamicSharedSizeBytes = k->maxDynamicShared.load();
  return cudaSuccess;
}

VGPU_API cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  KernelEntry* k = lookup(func);
  if (k == nullptr) return failCall("cudaFuncSetAttribute", cudaErrorInvalidDeviceFunction, "%p", func);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > (227 << 10)) return setError(cudaErrorInvalidValue);
    k->maxDynamicShared = value;
    return cudaSuccess;
  }
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return cudaSuccess;
  return refuse("cudaFuncSetAttribute (attributes other than the shared-memory ones)");
}

VGPU_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func, int blockSize,
                                                                   size_t) {
  KernelEntry* k = lookup(func);
  if (blocks == nullptr || blockSize <= 0) return setError(cudaErrorInvalidValue);
  if (k == nullptr || k->cpu == nullptr)
    return failCall("cudaOccupancyMaxActiveBlocksPerMultiprocessor", cudaErrorInvalidDeviceFunction, "%p", func);
  if (blockSize > k->cpu->maxThreadsPerBlock) {
    *blocks = 0;
    return cudaSuccess;
  }
  const int warps = (blockSize + 31) / 32 * 32;
  int n = std::min(kSmBlocks, kSmThreads / warps);
  n = std::min(n, kSmRegisters / (warps * k->cpu->registers));
  *blocks = n;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* func,
                                                                            int blockSize, size_t shared,
                                                                            unsigned int flags) {
  if (flags != cudaOccupancyDefault && flags != cudaOccupancyDisableCachingOverride) return setError(cudaErrorInvalidValue);
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, func, blockSize, shared);
}
