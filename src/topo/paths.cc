// Paths between every pair of nodes: a breadth-first search from each node (fewest hops, then the
// widest bottleneck), typed with NCCL's path classes, followed by NCCL's fixups:
//   1. GPU pairs that may not use P2P are routed through the destination GPU's CPU (and become NET
//      when SHM is disabled too);
//   2. a GPU joined to its CPU by C2C reaches that CPU's NICs over C2C (P2C) instead of PCIe;
//   3. a GPU reaches a NIC through an NVLink peer that sits close to it (PXN), when that peer is
//      faster or our own path would cross a CPU;
//   4. GPU <-> NIC paths that may not use GPUDirect RDMA are routed through the GPU's CPU.
// Fixups 2-4 apply to NIC and NET destinations alike (the NIC -> NET hop is LOC).
#include <algorithm>

#include "topo/topo_internal.h"

namespace accl {
namespace {

void bfs(const TopoSystem& s, int src, std::vector<TopoPath>* out) {
  std::vector<TopoPath>& P = *out;
  P[src].type = kPathLoc;
  P[src].bw = topo_bw::kLoc;
  std::vector<int> frontier{src};
  while (!frontier.empty()) {
    std::vector<int> next;
    for (int u : frontier) {
      const TopoNode& nu = s.nodes[u];
      const TopoPath pu = P[u];
      for (size_t li = 0; li < nu.links.size(); li++) {
        const TopoLink& link = nu.links[li];
        const int v = link.remote;
        const TopoNode& nv = s.nodes[v];
        // A GPU relays traffic only as the single NVLink hop in the middle of an NVB path.
        if (u != src && nu.type == TopoNodeType::Gpu) {
          bool relay = !s.policy.nvbDisable && link.type == TopoLinkType::Nvl && nv.type == TopoNodeType::Gpu &&
                       pu.hops.size() == 1;
          if (!relay) continue;
        }
        const double bw = std::min(pu.bw, link.bw);
        TopoPath& pv = P[v];
        if (!((pv.bw == 0 || pv.hops.size() > pu.hops.size()) && pv.bw < bw)) continue;
        int t = link.type == TopoLinkType::Net ? kPathLoc : static_cast<int>(link.type);
        if (nu.type == TopoNodeType::Pci && nv.type == TopoNodeType::Pci) t = kPathPxb;
        if (link.type == TopoLinkType::Pci && (nu.type == TopoNodeType::Cpu || nv.type == TopoNodeType::Cpu)) {
          t = kPathPhb;
        }
        if (u != src && nu.type == TopoNodeType::Gpu && pu.type == kPathNvl && t == kPathNvl) t = kPathNvb;
        pv.type = std::max(pu.type, t);
        pv.bw = bw;
        pv.hops = pu.hops;
        pv.hops.push_back(v);
        pv.hopLinks = pu.hopLinks;
        pv.hopLinks.push_back(static_cast<int>(li));
        if (std::find(next.begin(), next.end(), v) == next.end()) next.push_back(v);
      }
    }
    frontier.swap(next);
  }
}

TopoPath concat(const TopoPath& a, const TopoPath& b) {
  TopoPath p;
  p.type = std::max(a.type, b.type);
  p.bw = std::min(a.bw, b.bw);
  p.hops = a.hops;
  p.hops.insert(p.hops.end(), b.hops.begin(), b.hops.end());
  p.hopLinks = a.hopLinks;
  p.hopLinks.insert(p.hopLinks.end(), b.hopLinks.begin(), b.hopLinks.end());
  return p;
}

}  // namespace

bool TopoPathBuilder::p2pLevelOk(const TopoSystem& system, int pathType) {
  return pathType <= system.effectiveP2pLevel();
}

void TopoPathBuilder::compute(TopoSystem* s) {
  const int n = static_cast<int>(s->nodes.size());
  s->paths_.assign(n, std::vector<TopoPath>(n));
  for (int src = 0; src < n; src++) bfs(*s, src, &s->paths_[src]);
  auto& P = s->paths_;
  const std::vector<int> gpus = s->nodesOf(TopoNodeType::Gpu);
  std::vector<int> nets = s->nodesOf(TopoNodeType::Nic);
  for (int x : s->nodesOf(TopoNodeType::Net)) nets.push_back(x);

  // 1. P2P level.
  for (int g : gpus) {
    const int cpu = s->localCpu(g);
    for (int p : gpus) {
      if (p == g || p2pLevelOk(*s, P[p][g].type) || cpu < 0) continue;
      P[p][g] = concat(P[p][cpu], P[cpu][g]);
      if (s->policy.shmDisable) P[p][g].type = kPathNet;
    }
  }
  // 2. C2C to the local CPU, then PCIe to its NICs.
  for (int g : gpus) {
    const int cpu = s->localCpu(g);
    if (cpu < 0 || P[g][cpu].type != kPathC2c) continue;
    for (int t : nets) {
      if (P[cpu][t].type > kPathPhb || P[g][t].type <= kPathP2c) continue;
      P[g][t] = concat(P[g][cpu], P[cpu][t]);
      P[g][t].type = kPathP2c;
      P[t][g] = concat(P[t][cpu], P[cpu][g]);
      P[t][g].type = kPathP2c;
    }
  }
  // 3. PXN: through the NIC's own GPU, over NVLink.
  if (!s->policy.pxnDisable) {
    const int peerMax = s->policy.pxnC2c ? kPathP2c : kPathPxb;
    for (int t : nets) {
      int peer = -1;  // the GPU closest to the NIC: best type, then widest, then lowest dev
      for (int g : gpus) {
        if (peer < 0 || P[t][g].type < P[t][peer].type ||
            (P[t][g].type == P[t][peer].type && P[t][g].bw > P[t][peer].bw)) {
          peer = g;
        }
      }
      if (peer < 0 || P[peer][t].type > peerMax) continue;
      for (int g : gpus) {
        if (g == peer || P[peer][g].type > kPathNvl) continue;
        if (P[peer][t].bw > P[g][t].bw || P[g][t].type > kPathPxb) {
          P[g][t] = concat(P[g][peer], P[peer][t]);
          P[g][t].type = kPathPxn;
        }
      }
    }
  }
  // 4. No GPUDirect RDMA: bounce through the GPU's CPU.
  for (int g : gpus) {
    const int cpu = s->localCpu(g);
    if (cpu < 0) continue;
    for (int t : nets) {
      if (P[g][t].type >= kPathPhb || s->gdrAllowed(g, t)) continue;
      P[g][t] = concat(P[g][cpu], P[cpu][t]);
      P[t][g] = concat(P[t][cpu], P[cpu][g]);
    }
  }
}

}  // namespace accl
