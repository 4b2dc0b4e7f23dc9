// TopoSystem::fromXml: NCCL topology XML -> graph. One node per <cpu> (a NUMA node), per PCI
// bridge, per GPU and NIC (the <pci> element that holds the <gpu> / <nic>), per <net> port, plus
// one NVSwitch node shared by every NVLink whose far end is an NVSwitch. Links carry NCCL's
// bandwidths (topo_internal.h); parallel links of one type between two nodes are summed, and each
// node's links are sorted by bandwidth, highest first. Paths are computed at the end (paths.cc).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "topo/topo_internal.h"
#include "util/check.h"

namespace accl {
namespace {

// PCI class prefixes, checked in order; anything else is a plain PCI device / bridge.
enum class PciKind { Bridge, Nvswitch, Cpu, Gpu, Nic };
PciKind pciKindOf(const std::string& cls) {
  auto starts = [&](const char* p) { return cls.compare(0, std::strlen(p), p) == 0; };
  if (starts("0x060400")) return PciKind::Bridge;
  if (starts("0x068000")) return PciKind::Nvswitch;
  if (starts("0x068001")) return PciKind::Cpu;
  if (starts("0x03")) return PciKind::Gpu;
  if (starts("0x02")) return PciKind::Nic;
  return PciKind::Bridge;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Builder {
  TopoSystem* sys;
  struct GpuXml {
    const XmlNode* el;
    int node;
    int cpu;
  };
  std::vector<GpuXml> gpus;
  std::map<std::string, int> gpuByBus;  // lower-case bus id -> node
  int nvs = -1;

  int add(TopoNode n) {
    sys->nodes.push_back(std::move(n));
    return static_cast<int>(sys->nodes.size()) - 1;
  }
  void connect(int a, int b, TopoLinkType type, double bw) {
    for (TopoLink& l : sys->nodes[a].links) {
      if (l.remote == b && l.type == type) {
        l.bw += bw;
        return;
      }
    }
    sys->nodes[a].links.push_back(TopoLink{b, type, bw});
  }
  void connectBoth(int a, int b, TopoLinkType type, double bw) {
    connect(a, b, type, bw);
    connect(b, a, type, bw);
  }

  ncclResult_t cpu(const XmlNode& el) {
    TopoNode n;
    n.type = TopoNodeType::Cpu;
    int64_t v = 0;
    ACCL_CHECK(el.getInt("numaid", &v));
    n.id = static_cast<uint64_t>(v);
    n.label = "numa" + std::to_string(v);
    n.arch = el.attrOr("arch", "");
    n.vendor = el.attrOr("vendor", "");
    ACCL_CHECK(el.getIntOr("familyid", 0, &v));
    n.familyId = static_cast<int>(v);
    ACCL_CHECK(el.getIntOr("modelid", 0, &v));
    n.modelId = static_cast<int>(v);
    if (el.hasAttr("host_hash")) ACCL_CHECK(el.getUint("host_hash", &n.hostHash));
    int idx = add(std::move(n));
    for (const auto& c : el.children()) {
      if (c->name() == "pci") {
        ACCL_CHECK(pci(*c, idx, idx));
      } else if (c->name() == "nic") {
        // A NIC without a PCI device (virtual / merged NICs) hangs directly off the CPU.
        TopoNode nic;
        nic.type = TopoNodeType::Nic;
        nic.label = "nic";
        int nicIdx = add(std::move(nic));
        connectBoth(nicIdx, idx, TopoLinkType::Pci, topo_bw::kLoc);
        ACCL_CHECK(nets(*c, nicIdx));
      }
    }
    return ncclSuccess;
  }

  ncclResult_t pci(const XmlNode& el, int parent, int cpuIdx) {
    std::string busId;
    ACCL_CHECK(el.getStr("busid", &busId));
    uint64_t busNum = 0;
    if (!topoBusIdToNumber(busId, &busNum)) {
      return fail(ncclInvalidUsage, "topology XML: %s: busid is not a PCI bus id (%s)", el.path().c_str(),
                  busId.c_str());
    }
    PciKind kind = pciKindOf(el.attrOr("class", ""));
    const XmlNode* gpuEl = el.firstChild("gpu");
    const XmlNode* nicEl = el.firstChild("nic");
    if (gpuEl) kind = PciKind::Gpu;
    else if (nicEl) kind = PciKind::Nic;
    double bw = topoPciBw(el.attr("link_speed"), el.attr("link_width"));

    TopoNode n;
    n.id = busNum;
    n.label = busId;
    if (kind == PciKind::Gpu) {
      if (!gpuEl) return ncclSuccess;  // a display device CUDA does not use
      n.type = TopoNodeType::Gpu;
      int64_t v = 0;
      ACCL_CHECK(gpuEl->getInt("dev", &v));
      n.dev = static_cast<int>(v);
      ACCL_CHECK(gpuEl->getInt("sm", &v));
      n.sm = static_cast<int>(v);
      ACCL_CHECK(gpuEl->getIntOr("rank", n.dev, &v));
      n.rank = static_cast<int>(v);
      ACCL_CHECK(gpuEl->getIntOr("gdr", 0, &v));
      n.gdr = v != 0;
      int idx = add(std::move(n));
      connectBoth(idx, parent, TopoLinkType::Pci, bw);
      gpus.push_back(GpuXml{gpuEl, idx, cpuIdx});
      gpuByBus[lower(busId)] = idx;
      return ncclSuccess;
    }
    if (kind == PciKind::Nic) {
      if (!nicEl) return ncclSuccess;
      n.type = TopoNodeType::Nic;
      int idx = add(std::move(n));
      connectBoth(idx, parent, TopoLinkType::Pci, bw);
      return nets(*nicEl, idx);
    }
    if (kind == PciKind::Nvswitch || kind == PciKind::Cpu) return ncclSuccess;  // reached through NVLink
    n.type = TopoNodeType::Pci;
    int idx = add(std::move(n));
    connectBoth(idx, parent, TopoLinkType::Pci, bw);
    for (const auto& c : el.children()) {
      if (c->name() == "pci") ACCL_CHECK(pci(*c, idx, cpuIdx));
    }
    return ncclSuccess;
  }

  ncclResult_t nets(const XmlNode& nicEl, int nicIdx) {
    for (const XmlNode* el : nicEl.childrenNamed("net")) {
      TopoNode n;
      n.type = TopoNodeType::Net;
      int64_t v = 0;
      ACCL_CHECK(el->getInt("dev", &v));
      n.id = static_cast<uint64_t>(v);
      n.dev = static_cast<int>(v);
      n.label = el->attrOr("name", "net" + std::to_string(v));
      double speed = 0;
      ACCL_CHECK(el->getDoubleOr("speed", 0, &speed));
      n.netBw = speed > 0 ? speed / 8000.0 : topo_bw::kNetUnknown;
      ACCL_CHECK(el->getDoubleOr("latency", 0, &n.latencyUs));
      if (el->hasAttr("guid")) ACCL_CHECK(el->getUint("guid", &n.guid));
      ACCL_CHECK(el->getIntOr("port", 0, &v));
      n.port = static_cast<int>(v);
      ACCL_CHECK(el->getIntOr("maxconn", 0, &v));
      n.maxConn = static_cast<int>(v);
      ACCL_CHECK(el->getIntOr("gdr", 0, &v));
      n.gdr = v != 0;
      ACCL_CHECK(el->getIntOr("coll", 0, &v));
      n.coll = v != 0;
      double bw = n.netBw;
      int idx = add(std::move(n));
      connectBoth(nicIdx, idx, TopoLinkType::Net, bw);
    }
    return ncclSuccess;
  }

  // NVLink and C2C, once every GPU exists (an NVLink may name a GPU later in the file).
  ncclResult_t gpuLinks() {
    for (const GpuXml& g : gpus) {
      const int sm = sys->nodes[g.node].sm;
      for (const XmlNode* l : g.el->childrenNamed("nvlink")) {
        std::string target;
        ACCL_CHECK(l->getStr("target", &target));
        int64_t count = 0;
        ACCL_CHECK(l->getInt("count", &count));
        const double bw = static_cast<double>(count) * topoNvlinkBw(sm);
        const std::string* tclass = l->attr("tclass");
        auto it = gpuByBus.find(lower(target));
        PciKind kind = tclass ? pciKindOf(*tclass) : (it != gpuByBus.end() ? PciKind::Gpu : PciKind::Nvswitch);
        if (kind == PciKind::Gpu) {
          if (it == gpuByBus.end()) {
            ACCL_INFO(ACCL_LOG_GRAPH, "topology: %s: NVLink to GPU %s, which is not in the topology; ignored",
                      l->path().c_str(), target.c_str());
            continue;
          }
          connect(g.node, it->second, TopoLinkType::Nvl, bw);  // the peer's own <nvlink> adds the reverse
        } else if (kind == PciKind::Cpu) {
          connectBoth(g.node, g.cpu, TopoLinkType::Nvl, bw);
        } else if (kind == PciKind::Nvswitch) {
          if (nvs < 0) {
            TopoNode n;
            n.type = TopoNodeType::Nvs;
            n.id = 0;
            n.label = "nvswitch";
            nvs = add(std::move(n));
          }
          connectBoth(g.node, nvs, TopoLinkType::Nvl, bw);
        }
      }
      for (const XmlNode* c : g.el->childrenNamed("c2c")) {
        double bw = 0;
        int64_t count = 0;
        ACCL_CHECK(c->getDouble("bw", &bw));
        ACCL_CHECK(c->getInt("count", &count));
        connectBoth(g.node, g.cpu, TopoLinkType::C2c, bw * static_cast<double>(count) / 1000.0);
      }
    }
    return ncclSuccess;
  }

  void cpuLinks() {
    std::vector<int> cpus = sys->nodesOf(TopoNodeType::Cpu);
    for (int a : cpus) {
      for (int b : cpus) {
        if (a != b) connect(a, b, TopoLinkType::Sys, topoInterCpuBw(sys->nodes[a]));
      }
    }
  }
};

}  // namespace

ncclResult_t TopoSystem::fromXml(const XmlNode& system, const TopoPolicy& policy, std::unique_ptr<TopoSystem>* out) {
  if (system.name() != "system") {
    return fail(ncclInvalidUsage, "topology XML: the root element is <%s>, expected <system>", system.name().c_str());
  }
  auto sys = std::make_unique<TopoSystem>();
  sys->policy = policy;
  sys->xml = system.clone();
  Builder b{sys.get(), {}, {}, -1};
  for (const auto& c : system.children()) {
    if (c->name() == "cpu") ACCL_CHECK(b.cpu(*c));
  }
  ACCL_CHECK(b.gpuLinks());
  b.cpuLinks();
  for (TopoNode& n : sys->nodes) {
    std::stable_sort(n.links.begin(), n.links.end(), [](const TopoLink& x, const TopoLink& y) { return x.bw > y.bw; });
  }
  TopoPathBuilder::compute(sys.get());
  ACCL_INFO(ACCL_LOG_GRAPH, "topology: %d GPUs, %d PCI, %d NVS, %d CPUs, %d NICs, %d NETs", sys->count(TopoNodeType::Gpu),
            sys->count(TopoNodeType::Pci), sys->count(TopoNodeType::Nvs), sys->count(TopoNodeType::Cpu),
            sys->count(TopoNodeType::Nic), sys->count(TopoNodeType::Net));
  *out = std::move(sys);
  return ncclSuccess;
}

}  // namespace accl
