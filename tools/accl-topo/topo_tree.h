// accl-topo's view of a TopoSystem as a forest: each CPU (NUMA node) is a root, the PCI switches,
// GPUs and NICs reached from it over PCI links hang below it, and NETs below their NIC. Links that
// are not part of that tree (NVLink, C2C, inter-socket, a NIC's second path...) are listed once
// per node pair as "extra" links. Both the text and the DOT renderings are built from this.
#pragma once

#include <string>
#include <vector>

#include "topo/system.h"

namespace accl_topo {

struct TreeEdge {
  int from = -1, to = -1;  // node indices; for tree edges `from` is the parent
  accl::TopoLinkType type = accl::TopoLinkType::Pci;
  double bw = 0;           // GB/s
};

struct TopoTree {
  std::vector<int> parent;                 // -1 for roots
  std::vector<TreeEdge> up;                // the link to the parent (from = parent), for non-roots
  std::vector<std::vector<int>> children;  // in node order
  std::vector<int> socket;                 // the CPU node a node hangs under, -1 for none
  std::vector<int> roots;                  // CPUs first, then nodes no CPU reaches (NVSwitches)
  std::vector<TreeEdge> extra;             // links not in the tree, each (node pair, link type) once
};

TopoTree buildTree(const accl::TopoSystem& sys);

// The link from `from` to `to` (nullptr when none).
const accl::TopoLink* findLink(const accl::TopoSystem& sys, int from, int to);

// "48", "24.5", "370.8": bandwidth without trailing zeros.
std::string fmtBw(double gbps);
// A short name for a node: "GPU0", "NET1 mlx5_1", "CPU0", "PCI 0000:10:00.0", "NIC 0000:12:00.0", "NVS".
std::string nodeName(const accl::TopoSystem& sys, int node);

}  // namespace accl_topo
