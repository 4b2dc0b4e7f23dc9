// The virtual devices: ACCL_VGPU_COUNT H100-like devices (default 2) with ACCL_VGPU_SMS SMs each
// (default 8; a 512-thread block of 128 registers fills one SM, as on an H100), their attributes,
// properties, PCI identities and UUIDs, the calling thread's current device, and peer access
// (every pair of virtual devices can reach each other, as on an NVLink baseboard).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "vgpu/api.h"
#include "vgpu/timeslice.h"
#include "vgpu/vgpu.h"

namespace accl::vgpu {
namespace {

constexpr int kMaxDevices = 16;

int envInt(const char* name, int fallback, int lo, int hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < lo || n > hi) {
    logLine("%s=%s is not a number in [%d, %d]; using %d", name, v, lo, hi, fallback);
    return fallback;
  }
  return int(n);
}

// FNV-1a over the host name, so that UUIDs differ between hosts and stay put between runs.
uint64_t hostHash() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  uint64_t h = 1469598103934665603ull;
  for (const char* c = host; *c; ++c) h = (h ^ uint8_t(*c)) * 1099511628211ull;
  return h;
}

struct Devices {
  std::vector<DeviceInfo> list;
  Devices() {
    const int n = envInt("ACCL_VGPU_COUNT", 2, 0, kMaxDevices);
    const int sms = envInt("ACCL_VGPU_SMS", 8, 1, 132);
    const uint64_t h = hostHash();
    for (int d = 0; d < n; ++d) {
      DeviceInfo info;
      info.ordinal = d;
      info.smCount = sms;
      // Bus numbers no real device of this machine is likely to have (0xe0 upwards).
      std::snprintf(info.busId, sizeof info.busId, "00000000:%02X:00.0", 0xe0 + d);
      for (int i = 0; i < 16; ++i) info.uuid[i] = uint8_t((h >> ((i % 8) * 8)) ^ (d * 0x9d) ^ (i * 0x3b));
      info.uuid[6] = uint8_t((info.uuid[6] & 0x0f) | 0x40);  // an RFC 4122 version-4 shape
      list.push_back(info);
    }
  }
};

const Devices& devices() {
  static const Devices* d = new Devices;  // outlives static destructors (exit paths still query)
  return *d;
}

thread_local int tCurrent = 0;

std::mutex gPeerMu;
std::set<std::pair<int, int>>& enabledPeers() {
  static auto* s = new std::set<std::pair<int, int>>;
  return *s;
}

}  // namespace

int deviceCount() { return int(devices().list.size()); }
const DeviceInfo* device(int ordinal) {
  return ordinal >= 0 && ordinal < deviceCount() ? &devices().list[ordinal] : nullptr;
}
int currentDevice() { return tCurrent; }

cudaError_t deviceAttribute(int ordinal, int attr, int* value) {
  const DeviceInfo* d = device(ordinal);
  if (d == nullptr) return cudaErrorInvalidDevice;
  int v;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: v = 1024; break;
    case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: v = 1024; break;
    case cudaDevAttrMaxBlockDimZ: v = 64; break;
    case cudaDevAttrMaxGridDimX: v = 0x7fffffff; break;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: v = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: v = 48 << 10; break;
    case cudaDevAttrTotalConstantMemory: v = 64 << 10; break;
    case cudaDevAttrWarpSize: v = 32; break;
    case cudaDevAttrMaxRegistersPerBlock: case cudaDevAttrMaxRegistersPerMultiprocessor: v = 65536; break;
    case cudaDevAttrClockRate: v = 1980000; break;
    case cudaDevAttrMultiProcessorCount: v = d->smCount; break;
    case cudaDevAttrIntegrated: v = 0; break;
    case cudaDevAttrCanMapHostMemory: v = 1; break;
    case cudaDevAttrComputeMode: v = cudaComputeModeDefault; break;
    case cudaDevAttrConcurrentKernels: v = 1; break;
    case cudaDevAttrEccEnabled: v = 1; break;
    case cudaDevAttrPciBusId: v = 0xe0 + ordinal; break;
    case cudaDevAttrPciDeviceId: case cudaDevAttrPciDomainId: v = 0; break;
    case cudaDevAttrTccDriver: v = 0; break;
    case cudaDevAttrMemoryClockRate: v = 2619000; break;
    case cudaDevAttrGlobalMemoryBusWidth: v = 5120; break;
    case cudaDevAttrL2CacheSize: v = 50 << 20; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: v = 2048; break;
    case cudaDevAttrAsyncEngineCount: v = 2; break;
    case cudaDevAttrUnifiedAddressing: v = 1; break;
    case cudaDevAttrComputeCapabilityMajor: v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: v = 0; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: v = 228 << 10; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: v = 227 << 10; break;
    case cudaDevAttrManagedMemory: v = 0; break;
    case cudaDevAttrMultiGpuBoardGroupID: v = 0; break;
    case cudaDevAttrHostNativeAtomicSupported: v = 1; break;
    case cudaDevAttrPageableMemoryAccess: case cudaDevAttrConcurrentManagedAccess: v = 0; break;
    case cudaDevAttrCooperativeLaunch: v = 0; break;
    case cudaDevAttrHostRegisterSupported: v = 1; break;
    case cudaDevAttrDirectManagedMemAccessFromHost: v = 0; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: v = 32; break;
    case cudaDevAttrMemoryPoolsSupported: v = 0; break;
    case cudaDevAttrGPUDirectRDMASupported: v = 1; break;
    case cudaDevAttrNumaConfig: v = 0; break;
    case cudaDevAttrMpsEnabled: v = mpsEnabled() ? 1 : 0; break;  // ACCL_VGPU_MPS (timeslice.h)
    case cudaDevAttrHostNumaId: v = -1; break;
    case cudaDevAttrGpuPciDeviceId: v = int(0x233010de); break;  // H100 SXM device id, NVIDIA vendor
    default: return cudaErrorInvalidValue;
  }
  *value = v;
  return cudaSuccess;
}

}  // namespace accl::vgpu

using namespace accl::vgpu;

VGPU_API cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return setError(cudaErrorInvalidValue);
  *count = deviceCount();
  return *count > 0 ? cudaSuccess : setError(cudaErrorNoDevice);
}

VGPU_API cudaError_t cudaSetDevice(int dev) {
  if (device(dev) == nullptr) return failCall("cudaSetDevice", cudaErrorInvalidDevice, "device %d of %d", dev, deviceCount());
  tCurrent = dev;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaGetDevice(int* dev) {
  if (dev == nullptr) return setError(cudaErrorInvalidValue);
  if (deviceCount() == 0) return setError(cudaErrorNoDevice);
  *dev = tCurrent;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaInitDevice(int dev, unsigned int, unsigned int) {
  return device(dev) ? cudaSuccess : setError(cudaErrorInvalidDevice);
}
VGPU_API cudaError_t cudaSetDeviceFlags(unsigned int) { return cudaSuccess; }
VGPU_API cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (flags == nullptr) return setError(cudaErrorInvalidValue);
  *flags = cudaDeviceMapHost;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int dev) {
  if (value == nullptr) return setError(cudaErrorInvalidValue);
  const cudaError_t e = deviceAttribute(dev, attr, value);
  if (e == cudaErrorInvalidValue) return failCall("cudaDeviceGetAttribute", e, "attribute %d is not modelled", int(attr));
  return setError(e);
}

VGPU_API cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int dev) {
  const DeviceInfo* d = device(dev);
  if (p == nullptr) return setError(cudaErrorInvalidValue);
  if (d == nullptr) return setError(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "accl virtual GPU %d (H100-like, %d SMs)", dev, d->smCount);
  std::memcpy(p->uuid.bytes, d->uuid, 16);
  p->totalGlobalMem = d->memoryBytes;
  p->sharedMemPerBlock = 48 << 10;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->memPitch = size_t{1} << 31;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->totalConstMem = 64 << 10;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = d->smCount;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->ECCEnabled = 1;
  p->pciBusID = 0xe0 + dev;
  p->asyncEngineCount = 2;
  p->unifiedAddressing = 1;
  p->memoryBusWidth = 5120;
  p->l2CacheSize = 50 << 20;
  p->maxThreadsPerMultiProcessor = 2048;
  p->sharedMemPerMultiprocessor = 228 << 10;
  p->regsPerMultiprocessor = 65536;
  p->hostNativeAtomicSupported = 1;
  p->sharedMemPerBlockOptin = 227 << 10;
  p->maxBlocksPerMultiProcessor = 32;
  p->hostRegisterSupported = 1;
  p->gpuDirectRDMASupported = 1;
  p->hostNumaId = -1;
  p->gpuPciDeviceID = 0x233010de;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int dev) {
  const DeviceInfo* d = device(dev);
  if (d == nullptr) return setError(cudaErrorInvalidDevice);
  if (pciBusId == nullptr || len <= 0) return setError(cudaErrorInvalidValue);
  // The runtime's form: a 4-digit domain, upper-case hex (the 8-digit domain form is NVML's).
  std::snprintf(pciBusId, size_t(len), "0000:%02X:00.0", 0xe0 + dev);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaDeviceGetByPCIBusId(int* dev, const char* pciBusId) {
  if (dev == nullptr || pciBusId == nullptr) return setError(cudaErrorInvalidValue);
  unsigned domain = 0, bus = 0, slot = 0, fn = 0;
  if (std::sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &slot, &fn) != 4 &&
      (std::sscanf(pciBusId, "%x:%x.%x", &bus, &slot, &fn) != 3))
    return failCall("cudaDeviceGetByPCIBusId", cudaErrorInvalidValue, "\"%s\" is not a PCI bus id", pciBusId);
  for (int d = 0; d < deviceCount(); ++d)
    if (domain == 0 && bus == unsigned(0xe0 + d) && slot == 0 && fn == 0) {
      *dev = d;
      return cudaSuccess;
    }
  return failCall("cudaDeviceGetByPCIBusId", cudaErrorInvalidDevice, "no virtual device at %s", pciBusId);
}

VGPU_API cudaError_t cudaDeviceCanAccessPeer(int* can, int dev, int peer) {
  if (can == nullptr) return setError(cudaErrorInvalidValue);
  if (!device(dev) || !device(peer)) return setError(cudaErrorInvalidDevice);
  *can = dev != peer;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  if (flags != 0) return setError(cudaErrorInvalidValue);
  if (!device(peer) || peer == tCurrent) return setError(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(gPeerMu);
  if (!enabledPeers().insert({tCurrent, peer}).second) return setError(cudaErrorPeerAccessAlreadyEnabled);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  if (!device(peer)) return setError(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(gPeerMu);
  if (enabledPeers().erase({tCurrent, peer}) == 0) return setError(cudaErrorPeerAccessNotEnabled);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaDeviceGetP2PAttribute(int* value, cudaDeviceP2PAttr attr, int src, int dst) {
  if (value == nullptr) return setError(cudaErrorInvalidValue);
  if (!device(src) || !device(dst) || src == dst) return setError(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevP2PAttrPerformanceRank: *value = 0; return cudaSuccess;
    case cudaDevP2PAttrAccessSupported:
    case cudaDevP2PAttrNativeAtomicSupported:
    case cudaDevP2PAttrCudaArrayAccessSupported: *value = 1; return cudaSuccess;
    default: return failCall("cudaDeviceGetP2PAttribute", cudaErrorInvalidValue, "attribute %d", int(attr));
  }
}

VGPU_API cudaError_t cudaRuntimeGetVersion(int* v) {
  if (v == nullptr) return setError(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaDriverGetVersion(int* v) {
  if (v == nullptr) return setError(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  if (value == nullptr) return setError(cudaErrorInvalidValue);
  switch (limit) {
    case cudaLimitStackSize: *value = 1024; return cudaSuccess;
    case cudaLimitPrintfFifoSize: *value = 1 << 20; return cudaSuccess;
    case cudaLimitMallocHeapSize: *value = 8 << 20; return cudaSuccess;
    default: return refuse("cudaDeviceGetLimit");
  }
}

VGPU_API cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}
