// GPU discovery: every visible CUDA device as <pci class=0x03..><gpu dev sm gdr/></pci> (bus id,
// compute capability and GPUDirect RDMA support from the CUDA runtime), plus its active NVLinks
// from NVML, grouped by the remote end as <nvlink target count tclass/>. NVML is opened with
// dlopen so the library neither links nor requires it; only the handful of entry points used are
// declared here, with the NVML ABI's types.
#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <string>

#include "device/device_probe.h"
#include "topo/discover_internal.h"
#include "util/log.h"

#ifdef ACCL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace accl {

#ifdef ACCL_HAVE_CUDA
namespace {

// --- The NVML ABI subset (stable since NVML 9; see nvml.h in the driver's development package) ---
using nvmlReturn = int;  // 0 = NVML_SUCCESS
using nvmlDevice = struct nvmlDeviceOpaque*;
struct NvmlPciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr int kNvmlFeatureEnabled = 1;    // NVML_FEATURE_ENABLED
constexpr int kNvmlCapP2pSupported = 0;   // NVML_NVLINK_CAP_P2P_SUPPORTED
constexpr uint32_t kNvSwitchClass = 0x068000;

struct Nvml {
  void* lib = nullptr;
  nvmlReturn (*init)() = nullptr;
  nvmlReturn (*shutdown)() = nullptr;
  nvmlReturn (*handleByBusId)(const char*, nvmlDevice*) = nullptr;
  nvmlReturn (*linkState)(nvmlDevice, unsigned, int*) = nullptr;
  nvmlReturn (*linkRemotePci)(nvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
  nvmlReturn (*linkCapability)(nvmlDevice, unsigned, int, unsigned*) = nullptr;

  // Empty on success, else why NVML cannot be used.
  std::string open() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return std::string("cannot load libnvidia-ml.so.1: ") + dlerror();
    bool ok = sym(&init, "nvmlInit_v2") && sym(&shutdown, "nvmlShutdown") &&
              sym(&handleByBusId, "nvmlDeviceGetHandleByPciBusId_v2") && sym(&linkState, "nvmlDeviceGetNvLinkState") &&
              sym(&linkRemotePci, "nvmlDeviceGetNvLinkRemotePciInfo_v2") &&
              sym(&linkCapability, "nvmlDeviceGetNvLinkCapability");
    if (!ok) return "libnvidia-ml.so.1 lacks an NVLink query entry point (driver too old)";
    nvmlReturn r = init();
    if (r != 0) {
      init = nullptr;
      return "nvmlInit_v2 failed (error " + std::to_string(r) + ")";
    }
    return {};
  }
  ~Nvml() {
    if (init && shutdown) shutdown();
    if (lib) dlclose(lib);
  }

 private:
  template <typename F>
  bool sym(F* f, const char* name) {
    *f = reinterpret_cast<F>(dlsym(lib, name));
    return *f != nullptr;
  }
};

// NVLinks a GPU of compute capability `sm` (×10) may have.
unsigned maxNvLinks(int sm) { return sm < 60 ? 0 : sm < 70 ? 4 : sm < 80 ? 6 : sm < 90 ? 12 : 18; }

// Adds <nvlink> children to `gpu`; returns the number of active links.
int addNvLinks(Nvml& nvml, const std::string& busId, int sm, const HostTopology& host, XmlNode* gpu,
               DiscoverOptions* opts) {
  nvmlDevice dev = nullptr;
  if (nvml.handleByBusId(busId.c_str(), &dev) != 0) {
    discoverNote(opts, "topology: NVML does not know GPU %s; its NVLinks are not shown", busId.c_str());
    return 0;
  }
  std::map<std::string, int> countByTarget;
  int links = 0;
  for (unsigned l = 0; l < maxNvLinks(sm); ++l) {
    int active = 0;
    unsigned p2p = 0;
    NvmlPciInfo remote{};
    if (nvml.linkState(dev, l, &active) != 0 || active != kNvmlFeatureEnabled) continue;
    if (nvml.linkCapability(dev, l, kNvmlCapP2pSupported, &p2p) != 0 || !p2p) continue;
    if (nvml.linkRemotePci(dev, l, &remote) != 0) continue;
    std::string target = normalizeBusId(remote.busId);
    if (target.empty()) target = remote.busId;
    ++countByTarget[target];
    ++links;
  }
  for (const auto& [target, count] : countByTarget) {
    XmlNode& link = gpu->addChild("nvlink");
    link.setAttr("target", target);
    link.setAttrInt("count", count);
    auto it = host.pci.find(target);
    char cls[16];
    // A remote the host cannot see on PCI is an NVSwitch (HGX baseboards hide them).
    std::snprintf(cls, sizeof(cls), "0x%06x", it != host.pci.end() ? it->second.classCode : kNvSwitchClass);
    link.setAttr("tclass", cls);
  }
  return links;
}

}  // namespace
#endif  // ACCL_HAVE_CUDA

int probeGpus(XmlNode* system, const HostTopology& host, DiscoverOptions* opts) {
#ifndef ACCL_HAVE_CUDA
  (void)system;
  (void)host;
  discoverNote(opts, "topology: accl was built without CUDA; no GPUs probed");
  return 0;
#else
  int n = cudaDeviceCount();
  if (n == 0) {
    discoverNote(opts, "topology: no CUDA device is visible; no GPUs probed");
    return 0;
  }
  Nvml nvml;
  std::string nvmlError = nvml.open();
  if (!nvmlError.empty()) discoverNote(opts, "topology: %s; NVLinks are not shown", nvmlError.c_str());
  int added = 0;
  for (int dev = 0; dev < n; ++dev) {
    char raw[64] = {};
    if (cudaDeviceGetPCIBusId(raw, sizeof(raw), dev) != cudaSuccess) {
      cudaGetLastError();
      discoverNote(opts, "topology: cudaDeviceGetPCIBusId failed for GPU %d; skipped", dev);
      continue;
    }
    std::string busId = normalizeBusId(raw);
    int major = 0, minor = 0, sms = 0, gdr = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
#if CUDART_VERSION >= 11030
    if (cudaDeviceGetAttribute(&gdr, cudaDevAttrGPUDirectRDMASupported, dev) != cudaSuccess) gdr = 0;
#endif
    cudaGetLastError();
    int sm = major * 10 + minor;
    XmlNode* pci = pciNodeFor(system, host, busId, 0x030200);
    XmlNode& gpu = pci->addChild("gpu");
    gpu.setAttrInt("dev", dev);
    gpu.setAttrInt("sm", sm);
    gpu.setAttrInt("gdr", gdr ? 1 : 0);
    int links = nvmlError.empty() ? addNvLinks(nvml, busId, sm, host, &gpu, opts) : 0;
    ACCL_INFO(ACCL_LOG_GRAPH, "topology: GPU %d at %s: sm %d, %d SMs, gdr %d, %d active NVLinks", dev, busId.c_str(),
              sm, sms, gdr, links);
    ++added;
  }
  return added;
#endif
}

}  // namespace accl
