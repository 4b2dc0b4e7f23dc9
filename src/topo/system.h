// TopoSystem: the machine as a graph — GPUs, PCI switches, NVSwitches, CPUs (one per NUMA node),
// NICs and their NET ports as nodes; NVLink, C2C, PCIe, inter-socket and network links as edges
// with bandwidths (GB/s) — plus the path between every pair of interesting nodes, classified with
// NCCL's path types. It is built from NCCL's topology XML (loaded from NCCL_TOPO_FILE or produced
// by discovery), so the same code serves a real machine and a test fixture.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"
#include "topo/xml.h"

namespace accl {

// NCCL's node type numbering.
enum class TopoNodeType : int { Gpu = 0, Pci = 1, Nvs = 2, Cpu = 3, Nic = 4, Net = 5 };
inline constexpr int kTopoNodeTypes = 6;

// NCCL's link type numbering (values shared with path types where they overlap).
enum class TopoLinkType : int { Loc = 0, Nvl = 1, C2c = 3, Pci = 4, Sys = 9, Net = 10 };

// NCCL's path types, worst (largest) hop wins. Ordered: comparisons like `type <= kPathPxb` are
// how P2P / GDR levels are applied.
enum TopoPathType : int {
  kPathLoc = 0,  // same device
  kPathNvl = 1,  // direct NVLink (or through NVSwitches)
  kPathNvb = 2,  // NVLink through one intermediate GPU
  kPathC2c = 3,  // chip-to-chip link to the CPU (Grace)
  kPathPix = 4,  // at most one PCI bridge
  kPathPxb = 5,  // several PCI bridges, no host bridge
  kPathP2c = 6,  // GPU -C2C- CPU -PCI- NIC
  kPathPxn = 7,  // GPU -NVLink- GPU -PCI- NIC (proxy through a peer GPU)
  kPathPhb = 8,  // through a CPU host bridge
  kPathSys = 9,  // across CPU sockets (SMP interconnect)
  kPathNet = 10, // through the network
  kPathDis = 11, // disconnected
};
inline constexpr int kTopoPathTypes = 12;

const char* topoNodeTypeName(TopoNodeType t);  // "GPU", "PCI", "NVS", "CPU", "NIC", "NET"
const char* topoLinkTypeName(TopoLinkType t);  // "LOC", "NVL", "C2C", "PCI", "SYS", "NET"
const char* topoPathTypeName(int t);           // "LOC", "NVL", ..., "DIS"
// Parses a path-type name ("PXB", case-insensitive) or NCCL's legacy number (0..5 → LOC, PIX, PXB,
// PHB, SYS, SYS) as NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL accept; false when neither.
bool topoParsePathLevel(const std::string& text, int* out);

struct TopoLink {
  int remote;         // index in TopoSystem::nodes
  TopoLinkType type;
  double bw;          // GB/s, parallel links summed
};

struct TopoNode {
  TopoNodeType type;
  uint64_t id = 0;       // PCI: bus id as a number; CPU: numa id; NET: dev; NVS: index
  std::string label;     // "0000:18:00.0", "mlx5_0", "numa0", "nvswitch"
  // GPU
  int dev = -1, rank = -1, sm = 0;
  bool gdr = false;
  // CPU
  std::string arch, vendor;  // "x86_64" / "GenuineIntel"
  int familyId = 0, modelId = 0;
  uint64_t hostHash = 0;
  // NET
  double netBw = 0;          // GB/s
  double latencyUs = 0;
  uint64_t guid = 0;
  int port = 0, maxConn = 0;
  bool coll = false;
  // Links sorted by bandwidth, highest first.
  std::vector<TopoLink> links;
};

// The path from one node to another: its classification, its bottleneck bandwidth and the
// nodes it crosses (first = next hop, last = destination).
struct TopoPath {
  int type = kPathDis;
  double bw = 0;
  std::vector<int> hops;
  // Added by the topology implementation: for each hop, the index of the link taken in the
  // previous node's `links` (two nodes may be joined by links of different types, e.g. C2C and PCI).
  std::vector<int> hopLinks;
};

// Policy knobs from the environment (NCCL_P2P_LEVEL, NCCL_P2P_DISABLE, NCCL_SHM_DISABLE,
// NCCL_NET_GDR_LEVEL, NCCL_NVB_DISABLE, NCCL_PXN_DISABLE ...), read once by fromEnv().
struct TopoPolicy {
  int p2pLevel = -1;     // max path type for GPU-GPU P2P; -1 = default (PXB; LOC when P2P disabled)
  bool p2pDisable = false;
  bool shmDisable = false;
  int netGdrLevel = -1;  // max GPU-NIC path type for GPUDirect RDMA; -1 = default (PXB)
  bool nvbDisable = false;
  bool pxnDisable = false;
  bool pxnC2c = true;    // NCCL_PXN_C2C: a PXN relay GPU may reach its NIC over C2C (P2C)
  bool gdrC2c = true;    // NCCL_NET_GDR_C2C: a P2C GPU-NIC path counts as C2C for GDR
  static ncclResult_t fromEnv(TopoPolicy* out);  // bad level names are ncclInvalidUsage
};

class TopoSystem {
 public:
  // Builds the graph from a <system> element (NCCL's format; see docs/topology.md) and computes
  // paths under `policy`. Unknown elements are ignored; malformed required attributes fail with
  // ncclInvalidUsage naming the element path.
  static ncclResult_t fromXml(const XmlNode& system, const TopoPolicy& policy, std::unique_ptr<TopoSystem>* out);

  std::vector<TopoNode> nodes;
  TopoPolicy policy;
  // The XML the graph came from (dumped by NCCL_TOPO_DUMP_FILE and accl-topo --xml).
  std::unique_ptr<XmlNode> xml;

  // Indices of the nodes of one type, in XML document order (GPUs: sorted by dev).
  std::vector<int> nodesOf(TopoNodeType t) const;
  int count(TopoNodeType t) const { return static_cast<int>(nodesOf(t).size()); }
  // Node index of GPU `dev` / NET `dev`, or -1.
  int gpuByDev(int dev) const;
  int netByDev(int dev) const;

  // The precomputed path between two nodes (paths exist from every GPU, NIC, NET and CPU node).
  const TopoPath& path(int from, int to) const;

  // Whether two GPUs may use direct P2P (path ≤ P2P level), and whether a GPU may use GPUDirect
  // RDMA with a NET (both gdr, path ≤ GDR level).
  bool p2pAllowed(int gpuA, int gpuB) const;
  bool gdrAllowed(int gpu, int net) const;
  // (Added) The levels those checks use after defaults: P2P_DISABLE -> LOC; unset -> PXB, or SYS
  // on AMD x86 with at most 2 GPUs. GDR unset -> PXB.
  int effectiveP2pLevel() const;
  int effectiveGdrLevel() const;
  // (Added) The CPU node a GPU / NIC / NET / PCI node hangs off (closest by path), or -1.
  int localCpu(int node) const;

  // Highest compute capability among GPUs (0 without GPUs), and the CPU vendor of node 0's
  // first CPU ("GenuineIntel", "AuthenticAMD", ... or "").
  int maxSm() const;
  std::string cpuVendor() const;

  // Structural equality of two graphs (same nodes with the same attributes, same links with the
  // same bandwidths, same path types); empty string when equal, else the first difference.
  static std::string firstDifference(const TopoSystem& a, const TopoSystem& b);

 private:
  friend struct TopoPathBuilder;
  // paths_[from][to], filled for every node (unused pairs stay kPathDis).
  std::vector<std::vector<TopoPath>> paths_;
};

}  // namespace accl
