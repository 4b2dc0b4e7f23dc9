// accl-topo --dot: the topology as a Graphviz graph. One cluster per CPU socket (NUMA node) holds
// its PCI switches, GPUs, NICs and NETs; NVSwitches sit below the clusters. Nodes are coloured by
// type; edges carry the link type and GB/s: NVLink thick green, C2C purple, PCIe grey, NIC-NET
// blue, inter-socket (SYS) dashed red. Also runs `dot` to produce PNG / SVG files.
#pragma once

#include <string>

#include "topo/system.h"

namespace accl_topo {

// `title` is shown at the top of the drawing (e.g. the fixture name).
std::string renderDot(const accl::TopoSystem& sys, const std::string& title);

// Runs `dot -T<format> -o <outPath>` on `dot`. Returns an empty string on success, else what went
// wrong (Graphviz missing, dot failed).
std::string runGraphviz(const std::string& dot, const std::string& format, const std::string& outPath);

}  // namespace accl_topo
