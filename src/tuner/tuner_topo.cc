// tunerTopoFromSystem: the tuner's summary of a node's topology and the communicator's shape —
// the searched ring and tree graphs, ranks per node, compute capability, CPU vendor, and whether
// NCCL would enable LL128 by default.
#include "tuner/cost_model.h"

#include <algorithm>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {

ncclResult_t tunerTopoFromSystem(const TopoSystem& system, int nRanks, int nNodes, bool host, TunerTopo* out) {
  if (nRanks < 1 || nNodes < 1 || nNodes > nRanks)
    return fail(ncclInvalidArgument, "tunerTopoFromSystem: %d ranks on %d nodes is not a valid shape", nRanks, nNodes);
  TunerTopo t;
  t.nRanks = nRanks;
  t.nNodes = nNodes;
  t.ppn = (nRanks + nNodes - 1) / nNodes;
  std::vector<int> gpus = system.nodesOf(TopoNodeType::Gpu);
  t.host = host || gpus.empty();
  t.sm = t.host ? 0 : system.maxSm();
  t.cpuVendor = system.cpuVendor();

  SearchRequest ring;
  ring.pattern = GraphPattern::Ring;
  ring.multiNode = nNodes > 1;
  int64_t crossNic = paramInt("NCCL_CROSS_NIC");
  ring.crossNic = crossNic >= 0 && crossNic <= 2 ? static_cast<int>(crossNic) : 2;
  ACCL_CHECK(searchGraph(system, ring, &t.ring));
  // The tree runs on the ring's channels (NCCL searches it with the ring's channel count).
  SearchRequest tree = ring;
  tree.pattern = GraphPattern::BalancedTree;
  tree.maxChannels = std::max(1, t.ring.nChannels);
  tree.minChannels = tree.maxChannels;
  ACCL_CHECK(searchGraph(system, tree, &t.tree));

  // LL128: every GPU the same compute capability, at least Volta, and both graphs within reach.
  bool sameSm = true;
  for (int g : gpus) sameSm = sameSm && system.nodes[g].sm == t.sm;
  t.ll128Supported = !t.host && sameSm && t.sm >= 70 && graphSupportsLl128(t.ring, t.sm) && graphSupportsLl128(t.tree, t.sm);

  ACCL_INFO(ACCL_LOG_TUNING,
            "tuner topology: %d ranks, %d nodes, %d per node, %s, sm %d, CPU %s; ring %d ch %.1f/%.1f GB/s %s/%s; "
            "tree %d ch %.1f/%.1f GB/s %s/%s; LL128 %s",
            nRanks, nNodes, t.ppn, t.host ? "host" : "GPU", t.sm, t.cpuVendor.empty() ? "?" : t.cpuVendor.c_str(),
            t.ring.nChannels, t.ring.bwIntra, t.ring.bwInter, topoPathTypeName(t.ring.typeIntra),
            topoPathTypeName(t.ring.typeInter), t.tree.nChannels, t.tree.bwIntra, t.tree.bwInter,
            topoPathTypeName(t.tree.typeIntra), topoPathTypeName(t.tree.typeInter),
            t.ll128Supported ? "on" : "off by default");
  *out = std::move(t);
  return ncclSuccess;
}

}  // namespace accl
