// NIC discovery from sysfs: active InfiniBand / RoCE ports (/sys/class/infiniband) and, when there
// are none (or NCCL_NET=Socket), Ethernet interfaces backed by a PCI device (/sys/class/net),
// each as <pci><nic><net name dev speed port latency guid maxconn gdr coll/></nic></pci> under the
// CPU its PCI device is local to. NET dev numbers follow the order the network would list them
// (devices and interfaces sorted by name).
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "topo/discover_internal.h"
#include "util/log.h"
#include "util/net_interfaces.h"
#include "util/params.h"

namespace accl {
namespace {

constexpr int kIbMaxConn = 131072;
constexpr int kSocketMaxConn = 65536;
constexpr int kDefaultEthMbps = 10000;

std::vector<std::string> listDir(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0;
}

// GPUDirect RDMA needs the NVIDIA peer-memory module (nv_peer_mem or nvidia_peermem).
bool peerMemLoaded() {
  return exists("/sys/kernel/mm/memory_peers/nv_mem/version") || exists("/sys/module/nvidia_peermem") ||
         exists("/sys/module/nv_peer_mem");
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

XmlNode* addNet(XmlNode* system, const HostTopology& host, const std::string& busId, uint32_t cls) {
  XmlNode* pci = pciNodeFor(system, host, busId, cls);
  XmlNode* nic = pci->firstChild("nic");
  if (!nic) nic = &pci->addChild("nic");
  return &nic->addChild("net");
}

void setNetAttrs(XmlNode* net, const std::string& name, int dev, long speedMbps, int port, uint64_t guid, int maxConn,
                 bool gdr) {
  net->setAttr("name", name);
  net->setAttrInt("dev", dev);
  net->setAttrInt("speed", speedMbps);
  net->setAttrInt("port", port);
  net->setAttr("latency", "0.000000");
  net->setAttrHex("guid", guid);
  net->setAttrInt("maxconn", maxConn);
  net->setAttrInt("gdr", gdr ? 1 : 0);
  net->setAttrInt("coll", 0);
}

int probeIb(XmlNode* system, const HostTopology& host, bool haveGpu, int firstDev, DiscoverOptions* opts) {
  std::vector<std::string> devices = listDir("/sys/class/infiniband");
  if (devices.empty()) {
    discoverNote(opts, "topology: no InfiniBand/RoCE devices in /sys/class/infiniband");
    return 0;
  }
  bool gdr = haveGpu && peerMemLoaded();
  if (haveGpu && !gdr)
    discoverNote(opts, "topology: NVIDIA peer-memory module not loaded; NICs are shown without GPUDirect RDMA");
  int dev = firstDev;
  for (const std::string& name : devices) {
    std::string base = "/sys/class/infiniband/" + name;
    std::string busId = sysfsPciAncestor(base + "/device");
    if (busId.empty()) {
      discoverNote(opts, "topology: RDMA device %s has no PCI device (software RDMA?); skipped", name.c_str());
      continue;
    }
    std::string guidText = readLine(base + "/node_guid");
    guidText.erase(std::remove(guidText.begin(), guidText.end(), ':'), guidText.end());
    uint64_t guid = std::strtoull(guidText.c_str(), nullptr, 16);
    for (const std::string& port : listDir(base + "/ports")) {
      std::string pbase = base + "/ports/" + port + "/";
      std::string state = readLine(pbase + "state");  // "4: ACTIVE"
      if (state.find("ACTIVE") == std::string::npos) {
        discoverNote(opts, "topology: %s port %s is not active (%s); skipped", name.c_str(), port.c_str(),
                     state.empty() ? "state unknown" : state.c_str());
        continue;
      }
      double gbps = std::strtod(readLine(pbase + "rate").c_str(), nullptr);  // "400 Gb/sec (4X NDR)"
      std::string layer = readLine(pbase + "link_layer");                     // InfiniBand / Ethernet
      XmlNode* net = addNet(system, host, busId, 0x020700);
      setNetAttrs(net, name, dev++, static_cast<long>(gbps * 1000), std::atoi(port.c_str()), guid, kIbMaxConn, gdr);
      ACCL_INFO(ACCL_LOG_GRAPH, "topology: NET %s port %s (%s) at %s, %.0f Gb/s", name.c_str(), port.c_str(),
                layer.c_str(), busId.c_str(), gbps);
    }
  }
  return dev - firstDev;
}

int probeEthernet(XmlNode* system, const HostTopology& host, int firstDev, DiscoverOptions* opts) {
  // Topology's policy on top of the setting: report every PCI-backed interface whose name the
  // NCCL_SOCKET_IFNAME list allows (all when unset). sysfs names carry no address, so
  // NCCL_SOCKET_FAMILY does not apply, and NCCL's automatic order does not either: this reports which
  // NICs exist, it does not pick one.
  SocketIfSetting setting = readSocketIfSetting();
  int dev = firstDev;
  std::vector<std::string> virtualIfs;
  for (const std::string& name : listDir("/sys/class/net")) {
    if (name == "lo") continue;
    if (!setting.allowsName(name)) continue;
    std::string base = "/sys/class/net/" + name;
    std::string busId = sysfsPciAncestor(base + "/device");
    if (busId.empty()) {
      virtualIfs.push_back(name);
      continue;
    }
    std::string oper = readLine(base + "/operstate");
    if (oper == "down") {
      discoverNote(opts, "topology: interface %s is down; skipped", name.c_str());
      continue;
    }
    long speed = std::atol(readLine(base + "/speed").c_str());
    if (speed <= 0) {
      discoverNote(opts, "topology: interface %s reports no link speed; assuming %d Mb/s", name.c_str(),
                   kDefaultEthMbps);
      speed = kDefaultEthMbps;
    }
    XmlNode* net = addNet(system, host, busId, 0x020000);
    setNetAttrs(net, name, dev, speed, 0, static_cast<uint64_t>(dev), kSocketMaxConn, false);
    ++dev;
  }
  if (!virtualIfs.empty()) {
    std::string list;
    for (const std::string& n : virtualIfs) list += (list.empty() ? "" : ", ") + n;
    discoverNote(opts, "topology: interfaces without a PCI device not shown: %s", list.c_str());
  }
  if (dev == firstDev) discoverNote(opts, "topology: no Ethernet interface with a PCI device found");
  return dev - firstDev;
}

}  // namespace

int probeNics(XmlNode* system, const HostTopology& host, bool haveGpu, DiscoverOptions* opts) {
  std::string want = lower(paramStr("NCCL_NET"));
  int n = 0;
  if (want.empty() || want == "ib") n = probeIb(system, host, haveGpu, 0, opts);
  if (n == 0 && (want.empty() || want == "socket")) {
    n = probeEthernet(system, host, 0, opts);
  } else if (n > 0) {
    discoverNote(opts, "topology: Ethernet interfaces not shown (the IB network is used; NCCL_NET=Socket shows them)");
  }
  return n;
}

}  // namespace accl
