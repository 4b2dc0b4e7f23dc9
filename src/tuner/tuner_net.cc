// The tuner's network figure (see tuner_net.h).
#include "tuner/tuner_net.h"

#include <algorithm>

#include "topo/nic_match.h"

namespace accl {

double tunerNetGBps(int speedMbps, double topoGBps) {
  double dev = speedMbps > 0 ? speedMbps / 8000.0 : 0.0;
  if (dev > 0 && topoGBps > 0) return std::min(dev, topoGBps);
  return dev > 0 ? dev : std::max(0.0, topoGBps);
}

TunerNetInfo tunerNetAgreed(const std::vector<TunerNetInfo>& perRank) {
  TunerNetInfo out;
  for (const TunerNetInfo& r : perRank) {
    if (r.speedMbps > 0 && (out.speedMbps == 0 || r.speedMbps < out.speedMbps)) out.speedMbps = r.speedMbps;
    out.latencyUs = std::max(out.latencyUs, r.latencyUs);
  }
  return out;
}

void tunerTopoSetNet(const TunerNetInfo& agreed, TunerTopo* topo) {
  if (topo->nNodes <= 1) return;
  topo->netGBps = agreed.speedMbps > 0 ? agreed.speedMbps / 8000.0 : 0.0;
  topo->netLatencyUs = std::max(0.0f, agreed.latencyUs);
}

std::string tunerTopoSetNetFromSystem(const TopoSystem& system, TunerTopo* topo) {
  if (topo->nNodes <= 1) return "";
  std::vector<int> nets = system.nodesOf(TopoNodeType::Net);
  std::vector<NicCandidate> candidates;
  for (int net : nets) {
    std::string bus;
    for (const TopoLink& l : system.nodes[net].links)
      if (system.nodes[l.remote].type == TopoNodeType::Nic) bus = system.nodes[l.remote].label;
    candidates.push_back({system.nodes[net].label, bus});
  }
  NicMatch m = topoClosestNic(system, 0, -1, 0, candidates);
  if (m.device < 0) return "";
  const TopoNode& net = system.nodes[nets[m.device]];
  TunerNetInfo info;
  info.speedMbps = static_cast<int32_t>(net.netBw * 8000.0 + 0.5);
  info.latencyUs = static_cast<float>(net.latencyUs);
  tunerTopoSetNet(info, topo);
  return net.label;
}

}  // namespace accl
