// NCCL's bandwidth figures turned into functions of the XML attributes: NVLink per link by compute
// capability, the inter-socket link by CPU arch / vendor / model, PCIe from link speed and width,
// and PCI bus ids as numbers.
#include <cctype>
#include <cstdlib>
#include <string>

#include "topo/topo_internal.h"

namespace accl {

double topoNvlinkBw(int sm) {
  if (sm >= 100) return topo_bw::kNvlSm100;
  if (sm >= 90) return topo_bw::kNvlSm90;
  if (sm == 86) return topo_bw::kNvlSm86;
  if (sm >= 80) return topo_bw::kNvlSm80;
  if (sm >= 70) return topo_bw::kNvlSm70;
  if (sm >= 60) return topo_bw::kNvlSm60;
  return topo_bw::kNvlSm80;  // unknown: assume a recent part
}

double topoInterCpuBw(const TopoNode& cpu) {
  const std::string& arch = cpu.arch;
  if (arch == "ppc64" || arch == "ppc64le") return topo_bw::kPower9;
  if (arch == "arm64" || arch == "aarch64") return topo_bw::kArm;
  if (arch == "x86_64" || arch.empty()) {
    if (cpu.vendor == "GenuineIntel") {
      // Intel family 6 models, in order of introduction: Broadwell (0x4f), Skylake-SP (0x55),
      // Sapphire Rapids (0x8f), Emerald Rapids (0xcf).
      if (cpu.familyId == 6 && cpu.modelId >= 0xcf) return topo_bw::kIntelEmr;
      if (cpu.familyId == 6 && cpu.modelId >= 0x8f) return topo_bw::kIntelSpr;
      if (cpu.familyId == 6 && cpu.modelId >= 0x55) return topo_bw::kIntelSkl;
      return topo_bw::kIntelBdw;
    }
    if (cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine") return topo_bw::kAmd;
    if (cpu.vendor == "CentaurHauls" || cpu.vendor == "  Shanghai  ") {
      return cpu.familyId == 7 && cpu.modelId == 0x5b ? topo_bw::kZhaoxinYongfeng : topo_bw::kZhaoxin;
    }
  }
  return topo_bw::kLoc;  // unknown CPU: do not make the SMP link the bottleneck
}

double topoPciBw(const std::string* linkSpeed, const std::string* linkWidth) {
  // Per-lane rate in units of 100 Mb/s after encoding overhead, keyed by GT/s.
  double perLane = 60;
  if (linkSpeed && !linkSpeed->empty()) {
    char* end = nullptr;
    double gts = std::strtod(linkSpeed->c_str(), &end);
    if (end != linkSpeed->c_str()) {
      if (gts == 2.5) perLane = 15;
      else if (gts == 5) perLane = 30;
      else if (gts == 8) perLane = 60;
      else if (gts == 16) perLane = 120;
      else if (gts == 32) perLane = 240;
      else if (gts == 64) perLane = 480;
    }
  }
  int width = 16;
  if (linkWidth && !linkWidth->empty()) {
    long w = std::strtol(linkWidth->c_str(), nullptr, 0);
    if (w > 0) width = static_cast<int>(w);
  }
  return width * perLane / 80.0;
}

bool topoBusIdToNumber(const std::string& busId, uint64_t* out) {
  uint64_t v = 0;
  int digits = 0;
  for (char c : busId) {
    if (c == ':' || c == '.') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c)) || ++digits > 16) return false;
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10);
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  if (digits == 0) return false;
  *out = v;
  return true;
}

}  // namespace accl
