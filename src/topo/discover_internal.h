// Shared pieces of topology discovery (src/topo/discover*.cc): the host description the CPU/PCI
// probe produces (hwloc or sysfs), the step that turns one PCI device into a <cpu> > <pci> chain in
// the XML, and the note helper that logs a skipped probe and records it in DiscoverOptions::notes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nccl.h"
#include "topo/discover.h"
#include "topo/xml.h"

namespace accl {

// One NUMA node, shown as one <cpu>.
struct HostCpu {
  int numaId = 0;
  std::string affinity;  // cpumap format: 32-bit hex groups, most significant first, comma separated
  std::string arch;      // "x86_64", "arm64", "ppc64"
  std::string vendor;    // "GenuineIntel", "AuthenticAMD", ... (x86 only)
  int familyId = -1, modelId = -1;
};

// One PCI function as the host sees it.
struct HostPciDevice {
  std::string busId;     // "0000:17:00.0", lower case
  std::string parent;    // bus id of the upstream bridge; "" when attached to a root complex
  int numaId = -1;       // -1: unknown (the first CPU is used)
  uint32_t classCode = 0;  // 24 bits: class, subclass, programming interface
  uint32_t vendor = 0, device = 0, subVendor = 0, subDevice = 0;
  std::string linkSpeed;  // "16.0 GT/s PCIe"; empty when unknown
  int linkWidth = 0;      // 0 when unknown
  bool isBridge() const { return (classCode >> 8) == 0x0604; }
};

struct HostTopology {
  std::vector<HostCpu> cpus;                  // sorted by numaId, never empty after probeHost
  std::map<std::string, HostPciDevice> pci;  // by bus id
  std::string source;                         // "hwloc 2.9.0" or "sysfs"
};

// Logs `fmt` at INFO (GRAPH) and appends it to opts->notes.
void discoverNote(DiscoverOptions* opts, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// "0000:17:00.0" from any spelling NCCL tools use: upper case hex, an 8-digit domain
// ("00000000:17:00.0", as NVML writes it) or no domain ("17:00.0"). Empty when not a bus id.
std::string normalizeBusId(const std::string& text);
// True for a sysfs directory name that is a PCI function ("0000:17:00.0"; not "pci0000:00").
bool isSysfsBusId(const std::string& name);

// Fills cpus and pci: hwloc when the library was built with it, else sysfs. Never fails: a missing
// source leaves one CPU (numa 0) and an empty PCI map, with a note.
void probeHost(HostTopology* host, DiscoverOptions* opts);
// Sysfs-only probes, also used to complete what hwloc reports.
void probeHostSysfs(HostTopology* host, DiscoverOptions* opts);
void readSysfsPciLink(HostPciDevice* dev);  // link_speed / link_width from current_link_*
uint32_t readSysfsPciClass(const std::string& busId);  // 0 when unknown
// The bus id of the PCI device a sysfs device directory belongs to (walks up the real path:
// /sys/class/net/eth0/device → .../0000:00:03.0/virtio2 → "0000:00:03.0"); empty when none.
std::string sysfsPciAncestor(const std::string& sysfsPath);

// Reads a small sysfs/proc file's first line (trailing whitespace trimmed); empty when unreadable.
std::string readLine(const std::string& path);

// The <pci> element for `busId` under the right <cpu>, creating the chain of PCI switches above it.
// Root ports are not shown (their link is the CPU's), and a PCIe switch's upstream and downstream
// ports become one switch node (class 0x060400), so devices behind one switch are one hop apart as
// nvidia-smi and NCCL show them. A device the host probe does not know goes straight under the
// first CPU, with class `classIfUnknown`.
XmlNode* pciNodeFor(XmlNode* system, const HostTopology& host, const std::string& busId, uint32_t classIfUnknown);
// Removes every <pci> whose subtree holds no <gpu> and no <nic> (CPUs are always kept).
void trimPciWithoutDevices(XmlNode* system);

// GPUs (CUDA runtime + NVML) and NICs (IB/RoCE + Ethernet), each hung under its PCI node.
// Return how many were added.
int probeGpus(XmlNode* system, const HostTopology& host, DiscoverOptions* opts);
int probeNics(XmlNode* system, const HostTopology& host, bool haveGpu, DiscoverOptions* opts);

}  // namespace accl
