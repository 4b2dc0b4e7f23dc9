// The driver API the virtual GPU answers through cudaGetDriverEntryPoint (table in vgpu/cumem.h):
// cuInit, device queries, error names and strings, and the cuMem virtual memory management family.
// A physical allocation (cuMemCreate) is a memfd of its own, shareable as a POSIX fd; cuMemMap maps
// it into a cuMemAddressReserve'd range, and cuMemSetAccess makes the mapping reachable, which is
// when it joins the memory registry as device memory (memory_registry.h).
//
// These symbols are hidden: libcudart exports no cu* names, a program reaches them only by asking.
#include "vgpu/cumem.h"

#include <cuda.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "vgpu/memory_registry.h"
#include "vgpu/vgpu.h"

#define VGPU_DRIVER extern "C" __attribute__((visibility("hidden")))

namespace accl::vgpu {
namespace {

constexpr size_t kGranularity = size_t{2} << 20;  // minimum and recommended, as on an H100
constexpr int kDriverVersion = 13000;
constexpr const char* kCuMemFdPrefix = "accl-vgpu-cumem-dev";  // memfd name: tells importers the device

// One physical allocation: cuMemCreate's or an imported fd's.
struct Allocation {
  int fd = -1;
  size_t bytes = 0;
  int device = 0;
  unsigned handleTypes = 0;  // requestedHandleTypes
  int userRefs = 1;          // create / import / retain, less releases
  int mapRefs = 0;           // live mappings (they keep it, as CUDA's do, after its release)
  bool charged = false;      // counts against this process's device budget (created here)
};

struct Mapping {
  size_t bytes = 0;
  CUmemGenericAllocationHandle handle = 0;
  int device = 0;
  uintptr_t reservation = 0;
  std::map<int, unsigned long long> access;  // device -> CUmemAccess_flags (cuMemSetAccess)
  bool registered = false;                   // in the memory registry
  bool readOnly = false;
};

struct State {
  std::mutex mu;
  std::map<CUmemGenericAllocationHandle, Allocation> allocations;
  std::map<uintptr_t, size_t> reservations;  // base -> bytes
  std::map<uintptr_t, Mapping> mappings;     // base -> mapping
  CUmemGenericAllocationHandle nextHandle = 0xacc1000000000001ull;
  State() {
    // Held across fork() so a child never inherits it locked. The registry's own handlers must be
    // registered first: prepare handlers run in reverse, so this lock is then taken before the
    // registry's, the order in which cuMem calls take them.
    (void)chargedBytes(0);
    pthread_atfork([] { state().mu.lock(); }, [] { state().mu.unlock(); }, [] { state().mu.unlock(); });
  }
  static State& state() {
    static State* s = new State;  // never destroyed: releases may run during static teardown
    return *s;
  }
};

State& state() { return State::state(); }

template <class F>
CUresult guarded(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

CUresult fromRuntime(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return CUDA_SUCCESS;
    case cudaErrorInvalidDevice: return CUDA_ERROR_INVALID_DEVICE;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

// ---- error names and strings --------------------------------------------------------------------

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;  // null: the driver's text is not known here; the name stands in
};

#define E(code, text) {code, #code, text}
constexpr ErrorText kErrors[] = {
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled while using external profiling tool"),
    E(CUDA_ERROR_PROFILER_NOT_INITIALIZED, nullptr),
    E(CUDA_ERROR_PROFILER_ALREADY_STARTED, "profiler already started"),
    E(CUDA_ERROR_PROFILER_ALREADY_STOPPED, "profiler already stopped"),
    E(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    E(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, nullptr),
    E(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_DEVICE_NOT_LICENSED, nullptr),
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    E(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    E(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"),
    E(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
    E(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
    E(CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired"),
    E(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    E(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "resource not mapped as array"),
    E(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "resource not mapped as pointer"),
    E(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered"),
    E(CUDA_ERROR_UNSUPPORTED_LIMIT, "limit is not supported on this architecture"),
    E(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "exclusive-thread device already in use by a different thread"),
    E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices"),
    E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    E(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid OpenGL or DirectX context"),
    E(CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error detected during the execution"),
    E(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found"),
    E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain."),
    E(CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX JIT compilation was disabled"),
    E(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, nullptr),
    E(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, nullptr),
    E(CUDA_ERROR_CONTAINED, nullptr),
    E(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    E(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found"),
    E(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed"),
    E(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    E(CUDA_ERROR_LOSSY_QUERY, nullptr),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    E(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    E(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "launch uses incompatible texturing mode"),
    E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
    E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
    E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cannot set while device is active in this process"),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    E(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    E(CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted"),
    E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
    E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
    E(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
    E(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
    E(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    E(CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space"),
    E(CUDA_ERROR_INVALID_PC, "invalid program counter"),
    E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    E(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch"),
    E(CUDA_ERROR_TENSOR_MEMORY_LEAK, nullptr),
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
    E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination"),
    E(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward compatibility was attempted on non supported HW"),
    E(CUDA_ERROR_MPS_CONNECTION_FAILED, nullptr),
    E(CUDA_ERROR_MPS_RPC_FAILURE, nullptr),
    E(CUDA_ERROR_MPS_SERVER_NOT_READY, nullptr),
    E(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, nullptr),
    E(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, nullptr),
    E(CUDA_ERROR_MPS_CLIENT_TERMINATED, nullptr),
    E(CUDA_ERROR_CDP_NOT_SUPPORTED, nullptr),
    E(CUDA_ERROR_CDP_VERSION_MISMATCH, nullptr),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
    E(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not initiated in this stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"),
    E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
      "operation would make the legacy stream depend on a capturing blocking stream"),
    E(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
      "attempt to terminate a thread-local capture sequence from another thread"),
    E(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    E(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, nullptr),
    E(CUDA_ERROR_EXTERNAL_DEVICE, nullptr),
    E(CUDA_ERROR_INVALID_CLUSTER_SIZE, nullptr),
    E(CUDA_ERROR_FUNCTION_NOT_LOADED, nullptr),
    E(CUDA_ERROR_INVALID_RESOURCE_TYPE, nullptr),
    E(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, nullptr),
    E(CUDA_ERROR_KEY_ROTATION, nullptr),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef E

const ErrorText* errorText(CUresult code) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

// ---- cuMem helpers (caller holds State::mu) -----------------------------------------------------

// Checks the parts of an allocation property every cuMem call that takes one checks.
CUresult checkProp(const CUmemAllocationProp& p, const char* call) {
  if (p.type != CU_MEM_ALLOCATION_TYPE_PINNED || p.win32HandleMetaData != nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (p.location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return device(p.location.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA: return refuseDriver(call);  // host-located cuMem memory
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult checkHandleTypes(unsigned types, const char* call) {
  constexpr unsigned kKnown =
      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT | CU_MEM_HANDLE_TYPE_FABRIC;
  if (types & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
  if (types & (CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT)) return CUDA_ERROR_NOT_SUPPORTED;  // not on Linux
  if (types & CU_MEM_HANDLE_TYPE_FABRIC) return refuseDriver(call);  // no IMEX fabric here
  return CUDA_SUCCESS;
}

// Drops the allocation when neither a handle nor a mapping keeps it.
void destroyIfUnused(State& s, std::map<CUmemGenericAllocationHandle, Allocation>::iterator it) {
  const Allocation& a = it->second;
  if (a.userRefs > 0 || a.mapRefs > 0) return;
  close(a.fd);
  if (a.charged) unchargeDevice(a.device, a.bytes);
  s.allocations.erase(it);
}

template <class Map>
typename Map::iterator containing(Map& m, uintptr_t addr, size_t (*bytesOf)(const typename Map::mapped_type&)) {
  auto it = m.upper_bound(addr);
  if (it == m.begin()) return m.end();
  --it;
  return addr - it->first < bytesOf(it->second) ? it : m.end();
}

size_t reservationBytes(const size_t& b) { return b; }
size_t mappingBytes(const Mapping& m) { return m.bytes; }

std::map<uintptr_t, size_t>::iterator reservationContaining(State& s, uintptr_t addr) {
  return containing(s.reservations, addr, reservationBytes);
}
std::map<uintptr_t, Mapping>::iterator mappingContaining(State& s, uintptr_t addr) {
  return containing(s.mappings, addr, mappingBytes);
}

// The mappings that tile [ptr, ptr + size) exactly (whole mappings, no gaps); empty when they do not.
std::vector<std::map<uintptr_t, Mapping>::iterator> tiling(State& s, uintptr_t ptr, size_t size) {
  std::vector<std::map<uintptr_t, Mapping>::iterator> out;
  if (size == 0 || ptr + size < ptr) return out;
  for (uintptr_t at = ptr; at < ptr + size;) {
    auto it = s.mappings.find(at);
    if (it == s.mappings.end()) return {};
    out.push_back(it);
    at += it->second.bytes;
    if (at > ptr + size) return {};
  }
  return out;
}

// A PROT_NONE reservation of `size` bytes at `align` (at `hint` when that is free and aligned).
void* reserveVa(size_t size, size_t align, uintptr_t hint) {
  constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (hint != 0 && hint % align == 0) {
    void* p = mmap(reinterpret_cast<void*>(hint), size, PROT_NONE, kFlags | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED && reinterpret_cast<uintptr_t>(p) == hint) return p;
    if (p != MAP_FAILED) munmap(p, size);  // an old kernel took the flag as a mere hint
  }
  if (size > SIZE_MAX - align) return nullptr;
  void* raw = mmap(nullptr, size + align, PROT_NONE, kFlags, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t r = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (r + align - 1) & ~(uintptr_t(align) - 1);
  if (start > r) munmap(raw, start - r);
  if (r + align > start) munmap(reinterpret_cast<void*>(start + size), r + align - start);
  return reinterpret_cast<void*>(start);
}

// Puts the reservation's PROT_NONE placeholder back where a mapping was.
void restoreReservation(uintptr_t base, size_t bytes) {
  mmap(reinterpret_cast<void*>(base), bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

// The device ordinal a cuMem memfd was made for (its name says); -1 when it is not one of ours.
int deviceOfCuMemFd(int fd) {
  char link[64], target[256];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return -1;
  target[n] = '\0';
  const char* name = std::strstr(target, kCuMemFdPrefix);
  int dev = -1;
  if (name == nullptr || std::sscanf(name + std::strlen(kCuMemFdPrefix), "%d", &dev) != 1) return -1;
  return dev;
}

// Applies the access of every device to one mapping: page protection and registry membership.
CUresult applyAccess(uintptr_t base, Mapping& m) {
  unsigned long long most = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  for (const auto& [dev, flags] : m.access) most = std::max(most, flags);
  const int prot = most == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
                   : most == CU_MEM_ACCESS_FLAGS_PROT_READ    ? PROT_READ
                                                              : PROT_NONE;
  const bool readOnly = prot == PROT_READ;
  if (m.registered && (prot == PROT_NONE || readOnly != m.readOnly)) {
    removeRange(reinterpret_cast<const void*>(base));
    m.registered = false;
  }
  if (mprotect(reinterpret_cast<void*>(base), m.bytes, prot) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (prot != PROT_NONE && !m.registered) {
    const MemRange r{reinterpret_cast<const char*>(base), m.bytes, MemKind::kDevice, m.device};
    if (!addRange(r, m.reservation, readOnly)) return CUDA_ERROR_INVALID_VALUE;
    m.registered = true;
    m.readOnly = readOnly;
  }
  return CUDA_SUCCESS;
}

// The devices whose work may still use the mappings tiling [ptr, ptr + size).
std::vector<int> devicesUsing(State& s, uintptr_t ptr, size_t size, bool* tiled) {
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<int> devs;
  auto tiles = tiling(s, ptr, size);
  *tiled = !tiles.empty();
  for (auto& it : tiles)
    for (const auto& [dev, flags] : it->second.access)
      if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && std::find(devs.begin(), devs.end(), dev) == devs.end())
        devs.push_back(dev);
  return devs;
}

}  // namespace
}  // namespace accl::vgpu

using namespace accl::vgpu;

// ---- errors, init, devices ----------------------------------------------------------------------

VGPU_DRIVER CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = errorText(error);
  *pStr = e == nullptr ? nullptr : e->text != nullptr ? e->text : e->name;
  return e == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = errorText(error);
  *pStr = e == nullptr ? nullptr : e->name;
  return e == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return deviceCount() > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

VGPU_DRIVER CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (device(ordinal) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = deviceCount();
  return CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {  // the cuMem family's attributes, which the runtime's table does not carry
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: *pi = 1; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: *pi = 0; return CUDA_SUCCESS;
    default: return fromRuntime(deviceAttribute(dev, int(attrib), pi));
  }
}

VGPU_DRIVER CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {  // cuda.h names it cuDeviceGetUuid_v2
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* d = device(dev);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  std::memcpy(uuid->bytes, d->uuid, sizeof uuid->bytes);
  return CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  const DeviceInfo* d = device(dev);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  // The driver's form has a 4-digit domain ("0000:E0:00.0"); DeviceInfo keeps NVML's 8-digit one.
  unsigned domain = 0, bus = 0, slot = 0, fn = 0;
  if (std::sscanf(d->busId, "%x:%x:%x.%x", &domain, &bus, &slot, &fn) != 4) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(pciBusId, size_t(len), "%04X:%02X:%02X.%X", domain, bus, slot, fn);
  return CUDA_SUCCESS;
}

// ---- cuMem: physical allocations ----------------------------------------------------------------

VGPU_DRIVER CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                                   CUmemAllocationGranularity_flags option) {
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = checkProp(*prop, "cuMemGetAllocationGranularity (host location)")) return r;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                                 unsigned long long flags) {
  return guarded([&] {
    if (handle == nullptr || prop == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = checkProp(*prop, "cuMemCreate (host location)")) return r;
    if (CUresult r = checkHandleTypes(prop->requestedHandleTypes, "cuMemCreate (CU_MEM_HANDLE_TYPE_FABRIC)")) return r;
    if (size == 0 || size % kGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
    const int dev = prop->location.id;
    if (!chargeDevice(dev, size)) return CUDA_ERROR_OUT_OF_MEMORY;
    char name[48];
    std::snprintf(name, sizeof name, "%s%d", kCuMemFdPrefix, dev);
    const int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, off_t(size)) != 0) {
      if (fd >= 0) close(fd);
      unchargeDevice(dev, size);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    Allocation a;
    a.fd = fd;
    a.bytes = size;
    a.device = dev;
    a.handleTypes = prop->requestedHandleTypes;
    a.charged = true;
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    const CUmemGenericAllocationHandle h = s.nextHandle++;
    s.allocations.emplace(h, a);
    *handle = h;
    return CUDA_SUCCESS;
  });
}

VGPU_DRIVER CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.find(handle);
  if (it == s.allocations.end() || it->second.userRefs <= 0) return CUDA_ERROR_INVALID_VALUE;
  --it->second.userRefs;
  destroyIfUnused(s, it);
  return CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                                  CUmemAllocationHandleType handleType, unsigned long long flags) {
  if (shareableHandle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    const CUresult r = checkHandleTypes(unsigned(handleType), "cuMemExportToShareableHandle (CU_MEM_HANDLE_TYPE_FABRIC)");
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
  }
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.find(handle);
  if (it == s.allocations.end() || it->second.userRefs <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!(it->second.handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_INVALID_VALUE;
  const int fd = fcntl(it->second.fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int*>(shareableHandle) = fd;
  return CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                                    CUmemAllocationHandleType shHandleType) {
  return guarded([&] {
    if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
      const CUresult r = checkHandleTypes(unsigned(shHandleType), "cuMemImportFromShareableHandle (CU_MEM_HANDLE_TYPE_FABRIC)");
      return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
    }
    const int theirs = int(reinterpret_cast<intptr_t>(osHandle));  // a POSIX fd travels as the pointer's value
    struct stat st;
    if (theirs < 0 || fstat(theirs, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        size_t(st.st_size) % kGranularity != 0)
      return CUDA_ERROR_INVALID_VALUE;
    const int dev = deviceOfCuMemFd(theirs);
    if (dev < 0) return CUDA_ERROR_INVALID_VALUE;  // not memory cuMemExportToShareableHandle gave out
    const int fd = fcntl(theirs, F_DUPFD_CLOEXEC, 0);  // the caller keeps (and closes) theirs
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    Allocation a;
    a.fd = fd;
    a.bytes = size_t(st.st_size);
    a.device = dev;
    a.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    State& s = state();
    try {
      std::lock_guard<std::mutex> lock(s.mu);
      const CUmemGenericAllocationHandle h = s.nextHandle++;
      s.allocations.emplace(h, a);
      *handle = h;
    } catch (...) {
      close(fd);
      throw;
    }
    return CUDA_SUCCESS;
  });
}

VGPU_DRIVER CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                            CUmemGenericAllocationHandle handle) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.find(handle);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  std::memset(prop, 0, sizeof *prop);
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->requestedHandleTypes = CUmemAllocationHandleType(it->second.handleTypes);
  prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop->location.id = it->second.device;
  return CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto m = mappingContaining(s, reinterpret_cast<uintptr_t>(addr));
  if (m == s.mappings.end()) return CUDA_ERROR_INVALID_VALUE;
  ++s.allocations.at(m->second.handle).userRefs;
  *handle = m->second.handle;
  return CUDA_SUCCESS;
}

// ---- cuMem: address ranges and mappings ---------------------------------------------------------

VGPU_DRIVER CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                         unsigned long long flags) {
  return guarded([&] {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    if (ptr == nullptr || size == 0 || flags != 0 || size % page != 0 || addr % page != 0) return CUDA_ERROR_INVALID_VALUE;
    if (alignment & (alignment - 1)) return CUDA_ERROR_INVALID_VALUE;  // a power of two, or 0
    const size_t align = std::max(alignment, kGranularity);  // mappings need granularity-aligned addresses
    void* p = reserveVa(size, align, uintptr_t(addr));
    if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    State& s = state();
    try {
      std::lock_guard<std::mutex> lock(s.mu);
      s.reservations.emplace(reinterpret_cast<uintptr_t>(p), size);
    } catch (...) {
      munmap(p, size);
      throw;
    }
    *ptr = CUdeviceptr(reinterpret_cast<uintptr_t>(p));
    return CUDA_SUCCESS;
  });
}

VGPU_DRIVER CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.reservations.find(uintptr_t(ptr));
  if (it == s.reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  auto m = s.mappings.lower_bound(uintptr_t(ptr));
  if (m != s.mappings.end() && m->first < uintptr_t(ptr) + size) return CUDA_ERROR_INVALID_VALUE;  // still mapped
  munmap(reinterpret_cast<void*>(uintptr_t(ptr)), size);
  s.reservations.erase(it);
  return CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                              unsigned long long flags) {
  return guarded([&] {
    const uintptr_t base = uintptr_t(ptr);
    if (flags != 0 || size == 0 || base % kGranularity || size % kGranularity || offset % kGranularity)
      return CUDA_ERROR_INVALID_VALUE;
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    auto a = s.allocations.find(handle);
    if (a == s.allocations.end() || a->second.userRefs <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (offset > a->second.bytes || size > a->second.bytes - offset) return CUDA_ERROR_INVALID_VALUE;
    auto r = reservationContaining(s, base);
    if (r == s.reservations.end() || size > r->first + r->second - base) return CUDA_ERROR_INVALID_VALUE;
    auto next = s.mappings.lower_bound(base + size);  // refuse to map over a live mapping
    if (next != s.mappings.begin() && std::prev(next)->first + std::prev(next)->second.bytes > base)
      return CUDA_ERROR_INVALID_VALUE;
    // PROT_NONE until cuMemSetAccess, as a fresh CUDA mapping has no access.
    void* p = mmap(reinterpret_cast<void*>(base), size, PROT_NONE, MAP_SHARED | MAP_FIXED, a->second.fd, off_t(offset));
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    Mapping m;
    m.bytes = size;
    m.handle = handle;
    m.device = a->second.device;
    m.reservation = r->first;
    try {
      s.mappings.emplace(base, m);
    } catch (...) {
      restoreReservation(base, size);
      throw;
    }
    ++a->second.mapRefs;
    return CUDA_SUCCESS;
  });
}

VGPU_DRIVER CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  State& s = state();
  bool tiled = false;
  // Like cudaFree: the memory may not vanish under work still queued on its devices.
  for (int dev : devicesUsing(s, uintptr_t(ptr), size, &tiled)) syncDeviceImplicit(dev);
  if (!tiled) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(s.mu);
  auto tiles = tiling(s, uintptr_t(ptr), size);
  if (tiles.empty()) return CUDA_ERROR_INVALID_VALUE;  // unmapped by another thread meanwhile
  for (auto it : tiles) {
    const uintptr_t base = it->first;
    const Mapping m = it->second;
    if (m.registered) removeRange(reinterpret_cast<const void*>(base));
    restoreReservation(base, m.bytes);
    s.mappings.erase(it);
    auto a = s.allocations.find(m.handle);
    if (a != s.allocations.end()) {
      --a->second.mapRefs;
      destroyIfUnused(s, a);
    }
  }
  return CUDA_SUCCESS;
}

VGPU_DRIVER CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  return guarded([&] {
    if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {
      if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
      if (device(desc[i].location.id) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
      const auto f = desc[i].flags;
      if (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ && f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        return CUDA_ERROR_INVALID_VALUE;
    }
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    auto tiles = tiling(s, uintptr_t(ptr), size);
    if (tiles.empty()) return CUDA_ERROR_INVALID_VALUE;  // the range must be fully mapped, whole mappings
    for (auto it : tiles) {
      for (size_t i = 0; i < count; ++i) it->second.access[desc[i].location.id] = desc[i].flags;
      if (CUresult r = applyAccess(it->first, it->second)) return r;
    }
    return CUDA_SUCCESS;
  });
}

VGPU_DRIVER CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  if (flags == nullptr || location == nullptr || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (device(location->id) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto m = mappingContaining(s, uintptr_t(ptr));
  if (m == s.mappings.end()) return CUDA_ERROR_INVALID_VALUE;
  auto a = m->second.access.find(location->id);
  *flags = a == m->second.access.end() ? (unsigned long long)CU_MEM_ACCESS_FLAGS_PROT_NONE : a->second;
  return CUDA_SUCCESS;
}

// ---- pointer queries ----------------------------------------------------------------------------

namespace {

// What a pointer query needs to know about `p`.
struct PointerInfo {
  MemRange range;             // the allocation (a cuMem mapping: the mapping)
  uintptr_t rangeStart = 0;   // the mappable address range (a cuMem mapping: its reservation)
  size_t rangeSize = 0;
};

bool pointerInfo(uintptr_t p, PointerInfo* out) {
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    auto m = mappingContaining(s, p);
    if (m != s.mappings.end()) {
      out->range = MemRange{reinterpret_cast<const char*>(m->first), m->second.bytes, MemKind::kDevice, m->second.device};
      out->rangeStart = m->second.reservation;
      out->rangeSize = s.reservations.at(m->second.reservation);
      return true;
    }
  }
  if (!rangeAt(reinterpret_cast<const void*>(p), &out->range)) return false;
  out->rangeStart = reinterpret_cast<uintptr_t>(out->range.base);
  out->rangeSize = out->range.bytes;
  return true;
}

bool isHostKind(MemKind k) { return k == MemKind::kHostPinned || k == MemKind::kHostRegistered; }

}  // namespace

VGPU_DRIVER CUresult cuMemGetAddressRange(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {  // _v2
  return guarded([&] {
    PointerInfo info;
    if (!pointerInfo(uintptr_t(dptr), &info)) return CUDA_ERROR_NOT_FOUND;
    if (pbase != nullptr) *pbase = CUdeviceptr(reinterpret_cast<uintptr_t>(info.range.base));
    if (psize != nullptr) *psize = info.range.bytes;
    return CUDA_SUCCESS;
  });
}

VGPU_DRIVER CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: break;
    default: return refuseDriver("cuPointerGetAttribute (an attribute other than memory type, device pointer, "
                                 "host pointer, device ordinal, range start and range size)");
  }
  return guarded([&] {
    PointerInfo info;
    if (!pointerInfo(uintptr_t(ptr), &info)) return CUDA_ERROR_INVALID_VALUE;  // memory CUDA does not know
    const bool host = isHostKind(info.range.kind);
    switch (attribute) {
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *static_cast<unsigned int*>(data) = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
      case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr*>(data) = ptr; break;
      case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!host) return CUDA_ERROR_INVALID_VALUE;  // device memory has no host alias on a GPU
        *static_cast<void**>(data) = reinterpret_cast<void*>(uintptr_t(ptr));
        break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = info.range.device; break;
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data) = CUdeviceptr(info.rangeStart); break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data) = info.rangeSize; break;
      default: break;
    }
    return CUDA_SUCCESS;
  });
}

// ---- the table cudaGetDriverEntryPoint looks names up in ----------------------------------------

namespace accl::vgpu {

#define FN(name, symbol) {name, reinterpret_cast<void*>(&symbol)}
const DriverFn kCuMemDriverFns[] = {
    FN("cuGetErrorString", cuGetErrorString),
    FN("cuGetErrorName", cuGetErrorName),
    FN("cuInit", cuInit),
    FN("cuDriverGetVersion", cuDriverGetVersion),
    FN("cuDeviceGet", cuDeviceGet),
    FN("cuDeviceGetCount", cuDeviceGetCount),
    FN("cuDeviceGetAttribute", cuDeviceGetAttribute),
    FN("cuDeviceGetUuid", cuDeviceGetUuid_v2),
    FN("cuDeviceGetPCIBusId", cuDeviceGetPCIBusId),
    FN("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity),
    FN("cuMemCreate", cuMemCreate),
    FN("cuMemRelease", cuMemRelease),
    FN("cuMemExportToShareableHandle", cuMemExportToShareableHandle),
    FN("cuMemImportFromShareableHandle", cuMemImportFromShareableHandle),
    FN("cuMemGetAllocationPropertiesFromHandle", cuMemGetAllocationPropertiesFromHandle),
    FN("cuMemRetainAllocationHandle", cuMemRetainAllocationHandle),
    FN("cuMemAddressReserve", cuMemAddressReserve),
    FN("cuMemAddressFree", cuMemAddressFree),
    FN("cuMemMap", cuMemMap),
    FN("cuMemUnmap", cuMemUnmap),
    FN("cuMemSetAccess", cuMemSetAccess),
    FN("cuMemGetAccess", cuMemGetAccess),
    FN("cuMemGetAddressRange", cuMemGetAddressRange_v2),
    FN("cuPointerGetAttribute", cuPointerGetAttribute),
};
#undef FN
const int kCuMemDriverFnCount = int(sizeof kCuMemDriverFns / sizeof kCuMemDriverFns[0]);

}  // namespace accl::vgpu
