// Names of topology node, link and path types, and the parser for NCCL_P2P_LEVEL /
// NCCL_NET_GDR_LEVEL values (a path-type name or NCCL's legacy 0..5 numbers).
#include <cctype>
#include <string>

#include "topo/system.h"

namespace accl {

namespace {
const char* const kPathNames[kTopoPathTypes] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                                "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
}  // namespace

const char* topoNodeTypeName(TopoNodeType t) {
  switch (t) {
    case TopoNodeType::Gpu: return "GPU";
    case TopoNodeType::Pci: return "PCI";
    case TopoNodeType::Nvs: return "NVS";
    case TopoNodeType::Cpu: return "CPU";
    case TopoNodeType::Nic: return "NIC";
    case TopoNodeType::Net: return "NET";
  }
  return "?";
}

const char* topoLinkTypeName(TopoLinkType t) {
  switch (t) {
    case TopoLinkType::Loc: return "LOC";
    case TopoLinkType::Nvl: return "NVL";
    case TopoLinkType::C2c: return "C2C";
    case TopoLinkType::Pci: return "PCI";
    case TopoLinkType::Sys: return "SYS";
    case TopoLinkType::Net: return "NET";
  }
  return "?";
}

const char* topoPathTypeName(int t) { return t >= 0 && t < kTopoPathTypes ? kPathNames[t] : "?"; }

bool topoParsePathLevel(const std::string& text, int* out) {
  size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) b++;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) e--;
  std::string s = text.substr(b, e - b);
  if (s.empty()) return false;
  if (s.size() == 1 && s[0] >= '0' && s[0] <= '5') {
    // Legacy numbering predates NVLink levels: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and 5 SYS.
    static const int kLegacy[6] = {kPathLoc, kPathPix, kPathPxb, kPathPhb, kPathSys, kPathSys};
    *out = kLegacy[s[0] - '0'];
    return true;
  }
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (int t = 0; t < kTopoPathTypes; t++) {
    if (s == kPathNames[t]) {
      *out = t;
      return true;
    }
  }
  return false;
}

}  // namespace accl
