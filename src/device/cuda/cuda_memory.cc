// Shareable device memory through cuMem, reached via cudart's driver entry points (see
// cuda_memory.h). Built only with CUDA.
#include "device/cuda/cuda_memory.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "device/cuda/deferred_free.h"
#include "util/check.h"
#include "util/last_error.h"
#include "util/log.h"
#include "util/params.h"

namespace accl::cuda {
namespace {

// The driver entry points used here, resolved once per process. Any missing one disables cuMem.
struct Driver {
  decltype(&cuGetErrorString) getErrorString = nullptr;
  decltype(&cuDeviceGet) deviceGet = nullptr;
  decltype(&cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) addressFree = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) setAccess = nullptr;
  decltype(&cuMemExportToShareableHandle) exportHandle = nullptr;
  decltype(&cuMemImportFromShareableHandle) importHandle = nullptr;
  bool ok = false;
};

template <class F>
bool entry(const char* name, F* out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status) != cudaSuccess ||
      status != cudaDriverEntryPointSuccess || fn == nullptr) {
    cudaGetLastError();
    return false;
  }
  *out = reinterpret_cast<F>(fn);
  return true;
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    r.ok = entry("cuGetErrorString", &r.getErrorString) && entry("cuDeviceGet", &r.deviceGet) &&
           entry("cuDeviceGetAttribute", &r.deviceGetAttribute) &&
           entry("cuMemGetAllocationGranularity", &r.granularity) && entry("cuMemCreate", &r.create) &&
           entry("cuMemRelease", &r.release) && entry("cuMemAddressReserve", &r.reserve) &&
           entry("cuMemAddressFree", &r.addressFree) && entry("cuMemMap", &r.map) && entry("cuMemUnmap", &r.unmap) &&
           entry("cuMemSetAccess", &r.setAccess) && entry("cuMemExportToShareableHandle", &r.exportHandle) &&
           entry("cuMemImportFromShareableHandle", &r.importHandle);
    return r;
  }();
  return d;
}

const char* cuText(CUresult r) {
  const char* s = nullptr;
  if (driver().getErrorString == nullptr || driver().getErrorString(r, &s) != CUDA_SUCCESS || s == nullptr)
    return "unknown driver error";
  return s;
}

#define CU_TRY(call, what)                                                                                   \
  do {                                                                                                       \
    CUresult cuRes_ = (call);                                                                                \
    if (cuRes_ != CUDA_SUCCESS)                                                                              \
      return fail(ncclUnhandledCudaError, "%s failed: %s (CUresult %d)", what, cuText(cuRes_), (int)cuRes_); \
  } while (0)

#define CUDA_TRY(call, what)                                                                           \
  do {                                                                                                 \
    cudaError_t cudaRes_ = (call);                                                                     \
    if (cudaRes_ != cudaSuccess) {                                                                     \
      cudaGetLastError();                                                                              \
      return fail(ncclUnhandledCudaError, "%s failed: %s", what, cudaGetErrorString(cudaRes_));        \
    }                                                                                                  \
  } while (0)

int attribute(CUdevice dev, CUdevice_attribute a) {
  int v = 0;
  if (driver().deviceGetAttribute(&v, a, dev) != CUDA_SUCCESS) return 0;
  return v;
}

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// Every device that may access `owner`'s memory (itself included), as access descriptors.
int accessList(int owner, CUmemAccessDesc* out, int cap) {
  int n = 0;
  const int devices = deviceCount();
  for (int d = 0; d < devices && n < cap; ++d) {
    int can = d == owner;
    if (!can && cudaDeviceCanAccessPeer(&can, d, owner) != cudaSuccess) {
      cudaGetLastError();
      can = 0;
    }
    if (!can) continue;
    out[n] = CUmemAccessDesc{};
    out[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    out[n].location.id = d;
    out[n].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ++n;
  }
  return n;
}


// Reserves an address range for `handle`, maps it and grants `access`; on failure undoes what it
// did (the handle itself stays the caller's to release).
CUresult mapWithAccess(const Driver& drv, CUmemGenericAllocationHandle handle, size_t size, size_t align,
                       const CUmemAccessDesc* access, size_t nAccess, CUdeviceptr* va) {
  CUresult r = drv.reserve(va, size, align, 0, 0);
  if (r != CUDA_SUCCESS) return r;
  r = drv.map(*va, size, 0, handle, 0);
  if (r == CUDA_SUCCESS) {
    r = drv.setAccess(*va, size, access, nAccess);
    if (r != CUDA_SUCCESS) drv.unmap(*va, size);
  }
  if (r != CUDA_SUCCESS) drv.addressFree(*va, size);
  return r;
}

// The reverse of mapWithAccess plus the handle's release: what freeing an allocation and closing
// an imported one both end with.
void unmapAndRelease(void* ptr, size_t bytes, uint64_t handle) {
  const Driver& drv = driver();
  CUdeviceptr va = reinterpret_cast<CUdeviceptr>(ptr);
  drv.unmap(va, bytes);
  drv.addressFree(va, bytes);
  drv.release(static_cast<CUmemGenericAllocationHandle>(handle));
}

ncclResult_t cumemAlloc(size_t bytes, int dev, DeviceMemory* out) {
  const Driver& drv = driver();
  CUdevice cuDev;
  CU_TRY(drv.deviceGet(&cuDev, dev), "cuDeviceGet");
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = cuDev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  const bool fabric = attribute(cuDev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED) != 0;
  if (fabric)
    prop.requestedHandleTypes =
        static_cast<CUmemAllocationHandleType>(prop.requestedHandleTypes | CU_MEM_HANDLE_TYPE_FABRIC);
  if (attribute(cuDev, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)) prop.allocFlags.gpuDirectRDMACapable = 1;
  size_t gran = 0;
  CU_TRY(drv.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "cuMemGetAllocationGranularity");
  if (gran == 0) gran = 2u << 20;
  const size_t size = (bytes + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle handle;
  CUresult r = drv.create(&handle, size, &prop, 0);
  bool haveFabric = fabric;
  if (r != CUDA_SUCCESS && fabric) {  // fabric handles need an IMEX channel; fall back to fds only
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    haveFabric = false;
    r = drv.create(&handle, size, &prop, 0);
  }
  CU_TRY(r, "cuMemCreate");
  CUdeviceptr va = 0;
  CUmemAccessDesc access[64];
  const int n = accessList(dev, access, 64);
  r = mapWithAccess(drv, handle, size, gran, access, static_cast<size_t>(n), &va);
  if (r != CUDA_SUCCESS) {
    drv.release(handle);
    CU_TRY(r, "cuMemAddressReserve / cuMemMap / cuMemSetAccess");
  }
  out->ptr = reinterpret_cast<void*>(va);
  out->bytes = size;
  out->dev = dev;
  out->cumem = true;
  out->fabric = haveFabric;
  out->handle = static_cast<uint64_t>(handle);
  return ncclSuccess;
}

struct MemTable {
  std::mutex mu;
  std::unordered_map<void*, DeviceMemory> live;
};
MemTable& memTable() {
  static MemTable* t = new MemTable;  // never destroyed: ncclMemFree may run after static teardown
  return *t;
}

}  // namespace

DeviceGuard::DeviceGuard(int dev) {
  if (cudaGetDevice(&saved_) != cudaSuccess) {
    cudaGetLastError();
    saved_ = -1;
  }
  if (dev >= 0 && dev != saved_ && cudaSetDevice(dev) != cudaSuccess) cudaGetLastError();
}

DeviceGuard::~DeviceGuard() {
  if (saved_ >= 0) cudaSetDevice(saved_);
}

bool cuMemUsable(int dev) {
  const int64_t enable = paramInt("NCCL_CUMEM_ENABLE");
  if (enable == 0 || dev < 0 || !driver().ok) return false;
  static std::mutex mu;
  static std::unordered_map<int, bool> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(dev);
  if (it != known.end()) return it->second;
  CUdevice cuDev;
  bool ok = driver().deviceGet(&cuDev, dev) == CUDA_SUCCESS &&
            attribute(cuDev, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) != 0 &&
            attribute(cuDev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) != 0;
  known[dev] = ok;
  if (!ok && enable == 1)
    ACCL_WARN("NCCL_CUMEM_ENABLE=1 but device %d (or its driver) has no cuMem with POSIX-fd handles; using "
              "cudaMalloc and cudaIpc handles", dev);
  return ok;
}

ncclResult_t deviceAlloc(size_t bytes, int dev, bool preferCumem, DeviceMemory* out) {
  *out = DeviceMemory{};
  if (bytes == 0) return fail(ncclInvalidArgument, "device allocation of 0 bytes on device %d", dev);
  DeviceGuard guard(dev);
  CUDA_TRY(cudaFree(nullptr), "cudaFree(0) (device context)");
  if (preferCumem && cuMemUsable(dev)) {
    ACCL_CHECK(cumemAlloc(bytes, dev, out));
  } else {
    void* p = nullptr;
    CUDA_TRY(cudaMalloc(&p, bytes), "cudaMalloc");
    out->ptr = p;
    out->bytes = bytes;
    out->dev = dev;
  }
  if (zeroSync(out->ptr, out->bytes) != ncclSuccess) {
    deviceFree(out);
    return fail(ncclUnhandledCudaError, "zeroing %zu bytes of device %d memory failed: %s", bytes, dev,
                lastErrorText());
  }
  ACCL_INFO(ACCL_LOG_ALLOC, "device %d: allocated %zu bytes at %p (%s%s)", dev, out->bytes, out->ptr,
            out->cumem ? "cuMem" : "cudaMalloc", out->fabric ? ", fabric handle" : "");
  return ncclSuccess;
}

void deviceFree(DeviceMemory* m) {
  if (m->ptr == nullptr) return;
  // cudaFree and cuMemUnmap wait for every kernel of the process on the device: not while accl
  // kernels may run (deferred_free.h).
  const DeviceMemory mem = *m;
  releaseWhenIdle(mem.cumem ? "device memory (cuMem)" : "device memory (cudaMalloc)", mem.bytes, [mem] {
    if (mem.cumem) {
      unmapAndRelease(mem.ptr, mem.bytes, mem.handle);
    } else {
      DeviceGuard guard(mem.dev);
      if (cudaFree(mem.ptr) != cudaSuccess) cudaGetLastError();
    }
  });
  *m = DeviceMemory{};
}

ncclResult_t exportFd(const DeviceMemory& m, int* fd) {
  *fd = -1;
  if (!m.cumem) return fail(ncclInternalError, "exportFd: the allocation at %p is not a cuMem allocation", m.ptr);
  int out = -1;
  CU_TRY(driver().exportHandle(&out, static_cast<CUmemGenericAllocationHandle>(m.handle),
                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
         "cuMemExportToShareableHandle(POSIX fd)");
  *fd = out;
  return ncclSuccess;
}

ncclResult_t importFd(int fd, size_t bytes, int dev, ImportedMemory* out) {
  *out = ImportedMemory{};
  const Driver& drv = driver();
  if (!drv.ok) return fail(ncclUnhandledCudaError, "importFd: the CUDA driver has no cuMem entry points");
  DeviceGuard guard(dev);
  CUmemGenericAllocationHandle handle;
  CU_TRY(drv.importHandle(&handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
         "cuMemImportFromShareableHandle(POSIX fd)");
  CUdeviceptr va = 0;
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = dev;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUresult r = mapWithAccess(drv, handle, bytes, 0, &access, 1, &va);
  if (r != CUDA_SUCCESS) {
    drv.release(handle);
    CU_TRY(r, "mapping an imported cuMem allocation (reserve / map / set access)");
  }
  out->ptr = reinterpret_cast<void*>(va);
  out->bytes = bytes;
  out->cumem = true;
  out->handle = static_cast<uint64_t>(handle);
  return ncclSuccess;
}

ncclResult_t ipcExport(const DeviceMemory& m, unsigned char handle[kIpcHandleBytes]) {
  static_assert(sizeof(cudaIpcMemHandle_t) == kIpcHandleBytes, "cudaIpcMemHandle_t is 64 bytes");
  if (m.cumem) return fail(ncclInternalError, "ipcExport: %p is a cuMem allocation (share it as an fd)", m.ptr);
  DeviceGuard guard(m.dev);
  cudaIpcMemHandle_t h;
  CUDA_TRY(cudaIpcGetMemHandle(&h, m.ptr), "cudaIpcGetMemHandle");
  std::memcpy(handle, &h, kIpcHandleBytes);
  return ncclSuccess;
}

ncclResult_t ipcImport(const unsigned char handle[kIpcHandleBytes], size_t bytes, int dev, ImportedMemory* out) {
  *out = ImportedMemory{};
  DeviceGuard guard(dev);
  cudaIpcMemHandle_t h;
  std::memcpy(&h, handle, kIpcHandleBytes);
  void* p = nullptr;
  CUDA_TRY(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
  out->ptr = p;
  out->bytes = bytes;
  return ncclSuccess;
}

void releaseImported(ImportedMemory* m) {
  if (m->ptr == nullptr) return;
  // Unmapping and closing synchronise like a free (deferred_free.h).
  const ImportedMemory mem = *m;
  releaseWhenIdle(mem.cumem ? "a peer's mapped memory (cuMem)" : "a peer's mapped memory (CUDA IPC)", mem.bytes, [mem] {
    if (mem.cumem) {
      unmapAndRelease(mem.ptr, mem.bytes, mem.handle);
    } else if (cudaIpcCloseMemHandle(mem.ptr) != cudaSuccess) {
      cudaGetLastError();
    }
  });
  *m = ImportedMemory{};
}

bool enablePeerAccess(int dev, int peerDev) {
  if (dev == peerDev) return true;
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, dev, peerDev) != cudaSuccess || !can) {
    cudaGetLastError();
    return false;
  }
  DeviceGuard guard(dev);
  cudaError_t e = cudaDeviceEnablePeerAccess(peerDev, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) e = cudaSuccess;
  cudaGetLastError();
  return e == cudaSuccess;
}

namespace {

// Runs `op` on a fresh non-blocking stream and waits for it.
template <class Op>
ncclResult_t onPrivateStream(const char* what, Op op) {
  cudaStream_t stream;
  CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaError_t e = op(stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fail(ncclUnhandledCudaError, "%s failed: %s", what, cudaGetErrorString(e));
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t copySync(void* dst, const void* src, size_t bytes) {
  return onPrivateStream("cudaMemcpyAsync", [&](cudaStream_t s) {
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s);
  });
}

ncclResult_t zeroSync(void* dst, size_t bytes) {
  return onPrivateStream("cudaMemsetAsync", [&](cudaStream_t s) { return cudaMemsetAsync(dst, 0, bytes, s); });
}

ncclResult_t memAlloc(void** ptr, size_t size) {
  int dev = 0;
  CUDA_TRY(cudaGetDevice(&dev), "ncclMemAlloc: cudaGetDevice");
  DeviceMemory m;
  ACCL_CHECK(deviceAlloc(size, dev, /*preferCumem=*/true, &m));
  {
    MemTable& t = memTable();
    std::lock_guard<std::mutex> lock(t.mu);
    t.live[m.ptr] = m;
  }
  *ptr = m.ptr;
  return ncclSuccess;
}

ncclResult_t memFree(void* ptr, bool* known) {
  DeviceMemory m;
  {
    MemTable& t = memTable();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.live.find(ptr);
    *known = it != t.live.end();
    if (!*known) return ncclSuccess;
    m = it->second;
    t.live.erase(it);
  }
  // No device synchronisation (issue 18 fault 5): ncclMemFree after the buffer's last use is the
  // user's promise, as with NCCL, and a synchronisation would also wait for kernels of other
  // ranks on this GPU that may be waiting for this thread. For the same reason the free itself
  // (cudaFree, cuMemUnmap) waits until no accl kernel runs (deferred_free.h).
  deviceFree(&m);
  return ncclSuccess;
}

size_t liveMemAllocs() {
  MemTable& t = memTable();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.live.size();
}

}  // namespace accl::cuda
