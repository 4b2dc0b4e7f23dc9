// Placing one PCI device in the topology XML: its <cpu> (by NUMA node) and the chain of PCIe
// switches between that CPU and the device, created on demand, so only branches that lead to a
// GPU or NIC ever appear (the trim pass removes any that ended up empty).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "topo/discover_internal.h"

namespace accl {
namespace {

void setPciAttrs(XmlNode* node, const HostPciDevice& d) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%06x", d.classCode);
  node->setAttr("class", buf);
  std::snprintf(buf, sizeof(buf), "0x%04x", d.vendor);
  node->setAttr("vendor", buf);
  std::snprintf(buf, sizeof(buf), "0x%04x", d.device);
  node->setAttr("device", buf);
  std::snprintf(buf, sizeof(buf), "0x%04x", d.subVendor);
  node->setAttr("subsystem_vendor", buf);
  std::snprintf(buf, sizeof(buf), "0x%04x", d.subDevice);
  node->setAttr("subsystem_device", buf);
  if (!d.linkSpeed.empty()) node->setAttr("link_speed", d.linkSpeed);
  if (d.linkWidth > 0) node->setAttrInt("link_width", d.linkWidth);
}

XmlNode* childPci(XmlNode* parent, const HostPciDevice& d) {
  if (XmlNode* n = parent->firstChild("pci", "busid", d.busId)) return n;
  XmlNode& n = parent->addChild("pci");
  n.setAttr("busid", d.busId);
  setPciAttrs(&n, d);
  return &n;
}

XmlNode* cpuFor(XmlNode* system, int numaId) {
  if (numaId >= 0)
    if (XmlNode* cpu = system->firstChild("cpu", "numaid", std::to_string(numaId))) return cpu;
  if (XmlNode* cpu = system->firstChild("cpu")) return cpu;
  XmlNode& cpu = system->addChild("cpu");
  cpu.setAttrInt("numaid", 0);
  return &cpu;
}

bool holdsDevice(const XmlNode& n) {
  for (const auto& c : n.children()) {
    if (c->name() == "gpu" || c->name() == "nic") return true;
    if (c->name() == "pci" && holdsDevice(*c)) return true;
  }
  return false;
}

void trimBelow(XmlNode* n) {
  std::vector<const XmlNode*> drop;
  for (const auto& c : n->children()) {
    if (c->name() != "pci") continue;
    if (holdsDevice(*c))
      trimBelow(c.get());
    else
      drop.push_back(c.get());
  }
  for (const XmlNode* c : drop) n->removeChild(c);
}

}  // namespace

XmlNode* pciNodeFor(XmlNode* system, const HostTopology& host, const std::string& busId, uint32_t classIfUnknown) {
  auto it = host.pci.find(busId);
  if (it == host.pci.end()) {
    HostPciDevice d;
    d.busId = busId;
    d.classCode = classIfUnknown;
    return childPci(cpuFor(system, -1), d);
  }
  // Bridges above the device, root first.
  std::vector<const HostPciDevice*> chain;
  for (auto up = host.pci.find(it->second.parent); up != host.pci.end() && chain.size() < 64;
       up = host.pci.find(up->second.parent))
    chain.push_back(&up->second);
  std::reverse(chain.begin(), chain.end());

  int numa = it->second.numaId;
  if (numa < 0 && !chain.empty()) numa = chain.front()->numaId;
  XmlNode* node = cpuFor(system, numa);
  // chain[0] is the root port (its link is the CPU's own); after it, bridges come in
  // (upstream port, downstream port) pairs, one pair per PCIe switch: keep the upstream port.
  for (size_t i = 1; i < chain.size(); i += 2) {
    HostPciDevice sw = *chain[i];
    sw.classCode = 0x060400;
    node = childPci(node, sw);
  }
  return childPci(node, it->second);
}

void trimPciWithoutDevices(XmlNode* system) {
  for (const auto& cpu : system->children())
    if (cpu->name() == "cpu") trimBelow(cpu.get());
}

}  // namespace accl
