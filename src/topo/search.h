// Channel search: on a TopoSystem, find the rings and trees (as per-channel orders of the node's
// GPUs, plus the NIC each channel enters and leaves by when there are several nodes) that give
// the highest bandwidth, and how many channels to run. The result is what the tuner's bandwidth
// model and the engine's channel setup consume.
#pragma once

#include <string>
#include <vector>

#include "nccl.h"
#include "topo/system.h"

namespace accl {

// NCCL's graph patterns.
enum class GraphPattern : int { BalancedTree = 1, SplitTree = 2, Tree = 3, Ring = 4 };
const char* graphPatternName(GraphPattern p);  // "BALANCED_TREE", "SPLIT_TREE", "TREE", "RING"

struct TopoGraphChannel {
  std::vector<int> gpuRanks;  // the node's GPUs in channel order, by their `rank` attribute
  int netIn = -1;             // NET dev the channel enters by (multi-node), else -1
  int netOut = -1;            // NET dev it leaves by
};

struct TopoGraph {
  GraphPattern pattern = GraphPattern::Ring;
  int nChannels = 0;
  double bwIntra = 0;      // GB/s per channel inside the node
  double bwInter = 0;      // GB/s per channel across nodes (0 on one node)
  double latencyInter = 0; // us, from the NETs' latency attribute
  int typeIntra = kPathLoc;  // worst path type used inside the node
  int typeInter = kPathLoc;  // worst GPU-NET path type (kPathLoc on one node)
  bool sameChannels = true;  // every channel uses the same GPU order
  int crossNic = 0;          // channels may enter and leave by different NICs
  std::vector<TopoGraphChannel> channels;
};

struct SearchRequest {
  GraphPattern pattern = GraphPattern::Ring;
  bool multiNode = false;   // include NETs (rings/trees leave the node)
  int minChannels = 1;
  int maxChannels = 32;     // NCCL_MIN/MAX_NCHANNELS are applied by the caller
  int crossNic = 2;         // NCCL_CROSS_NIC: 0 off, 1 on, 2 try both
};

// Finds the best graph for `req`; never fails on a valid system (the fallback is one channel in
// PCI order at a tiny bandwidth, type SYS). A system with no GPU yields one channel over the
// CPU, with bandwidths from the CPU / NIC links.
ncclResult_t searchGraph(const TopoSystem& system, const SearchRequest& req, TopoGraph* out);

// One line per channel, e.g. "RING 0 : NET/0 GPU/0 GPU/1 ... GPU/7 NET/0", plus a header with
// pattern, channels, bandwidths and types (logged at INFO GRAPH and printed by accl-topo).
std::string describeGraph(const TopoGraph& g);

// (Added) NCCL's topology condition for LL128 on a searched ring graph: typeIntra <= NVB, and
// typeInter <= PXB, or <= PXN on sm90+ when NCCL_LL128_C2C is on. (The caller also checks that
// all ranks share one compute capability >= 70.)
bool graphSupportsLl128(const TopoGraph& ring, int sm, bool ll128C2c = true);

}  // namespace accl
