// Internals shared by the topology graph files (system_from_xml.cc, paths.cc, topo_policy.cc,
// search*.cc): NCCL's bandwidth constants and the small conversions from XML attribute text to
// numbers. Not part of the interface other layers use (that is topo/system.h and topo/search.h).
#pragma once

#include <cstdint>
#include <string>

#include "topo/system.h"

namespace accl {

namespace topo_bw {
// GB/s. LOC is "infinitely fast": a device to itself, a NIC hanging directly off a CPU.
inline constexpr double kLoc = 5000.0;
// NVLink, per link, by compute capability.
inline constexpr double kNvlSm60 = 18.0, kNvlSm70 = 20.0, kNvlSm80 = 20.0, kNvlSm86 = 12.0, kNvlSm90 = 20.6,
                        kNvlSm100 = 40.1;
// Inter-socket links.
inline constexpr double kAmd = 16.0, kIntelBdw = 6.0, kIntelSkl = 10.0, kIntelSpr = 22.0, kIntelEmr = 40.0,
                        kZhaoxin = 6.0, kZhaoxinYongfeng = 9.0, kPower9 = 32.0, kArm = 6.0;
// A NET whose speed is unknown (<= 0) counts as 10 Gb/s.
inline constexpr double kNetUnknown = 10000.0 / 8000.0;
}  // namespace topo_bw

// NVLink bandwidth of one link for a GPU of compute capability `sm` (x10).
double topoNvlinkBw(int sm);
// Bandwidth of the SMP interconnect leaving `cpu` (a CPU node), by arch / vendor / model.
double topoInterCpuBw(const TopoNode& cpu);
// PCIe link bandwidth from sysfs-style text: "32.0 GT/s PCIe" and a lane count ("16"); an unknown
// speed counts as 8 GT/s, a missing or zero width as x16.
double topoPciBw(const std::string* linkSpeed, const std::string* linkWidth);
// "0000:18:00.0" -> 0x18000 (every hex digit kept, separators dropped); false on other text.
bool topoBusIdToNumber(const std::string& busId, uint64_t* out);

// Computes TopoSystem::paths_ (BFS from every node, then NCCL's fixups). Friend of TopoSystem.
struct TopoPathBuilder {
  static void compute(TopoSystem* system);
  // Whether direct P2P passes the level check, given the BFS path type between the two GPUs.
  static bool p2pLevelOk(const TopoSystem& system, int pathType);
};

}  // namespace accl
