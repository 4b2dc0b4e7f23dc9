// The NIC closest to a rank (see nic_match.h).
#include "topo/nic_match.h"

#include <algorithm>
#include <cctype>
#include <tuple>

#include "topo/topo_internal.h"

namespace accl {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The NIC node a NET node hangs off, or -1.
int nicOf(const TopoSystem& sys, int net) {
  for (const TopoLink& l : sys.nodes[net].links)
    if (sys.nodes[l.remote].type == TopoNodeType::Nic) return l.remote;
  return -1;
}

int originNode(const TopoSystem& sys, int gpuDev, int numaId) {
  if (gpuDev >= 0) {
    int g = sys.gpuByDev(gpuDev);
    if (g >= 0) return g;
  }
  std::vector<int> cpus = sys.nodesOf(TopoNodeType::Cpu);
  for (int c : cpus)
    if (numaId >= 0 && sys.nodes[c].id == static_cast<uint64_t>(numaId)) return c;
  return cpus.empty() ? -1 : cpus.front();
}

}  // namespace

std::string pciBusIdOfPath(const std::string& pciPath) {
  std::string p = pciPath;
  while (!p.empty() && p.back() == '/') p.pop_back();
  std::string last = p.substr(p.find_last_of('/') + 1);  // npos + 1 == 0: the whole string
  uint64_t num = 0;
  bool looksLikeBusId = last.find(':') != std::string::npos && last.find('.') != std::string::npos;
  return looksLikeBusId && topoBusIdToNumber(last, &num) ? lower(last) : std::string();
}

NicMatch topoClosestNic(const TopoSystem& sys, int gpuDev, int numaId, int spread,
                        const std::vector<NicCandidate>& devices) {
  NicMatch out;
  int from = originNode(sys, gpuDev, numaId);
  if (from < 0 || devices.empty()) return out;
  std::vector<std::string> busIds;
  for (const NicCandidate& d : devices) busIds.push_back(pciBusIdOfPath(d.pciPath));

  std::vector<int> nets = sys.nodesOf(TopoNodeType::Net);
  auto key = [&](int net) {
    const TopoPath& p = sys.path(from, net);
    return std::make_tuple(p.type, -p.bw, sys.nodes[net].dev);
  };
  std::stable_sort(nets.begin(), nets.end(), [&](int a, int b) { return key(a) < key(b); });
  // Every NET a candidate sits on, closest first, with that candidate.
  std::vector<std::pair<int, int>> matched;
  for (int net : nets) {
    int nic = nicOf(sys, net);
    if (nic < 0) continue;
    std::string nicBus = lower(sys.nodes[nic].label);
    int found = -1;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (busIds[i].empty() || busIds[i] != nicBus) continue;
      // Ports of one multi-port NIC share the bus id: prefer the device named after this NET.
      bool named = devices[i].name.rfind(sys.nodes[net].label, 0) == 0;
      if (found < 0 || named) found = static_cast<int>(i);
      if (named) break;
    }
    if (found >= 0) matched.emplace_back(net, found);
  }
  if (matched.empty()) return out;
  // Equally close NICs (same path type and bandwidth) are shared out by `spread`.
  auto closeness = [&](int net) { return std::make_pair(sys.path(from, net).type, sys.path(from, net).bw); };
  size_t tied = 1;
  while (tied < matched.size() && closeness(matched[tied].first) == closeness(matched[0].first)) ++tied;
  const auto& [net, device] = matched[static_cast<size_t>(std::max(0, spread)) % tied];
  out.device = device;
  out.net = net;
  out.pathType = sys.path(from, net).type;
  out.topoGBps = sys.nodes[net].netBw;
  return out;
}

}  // namespace accl
