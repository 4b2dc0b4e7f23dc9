// accl-topo --text: the machine as an indented tree (CPU > PCI > GPU/NIC > NET) with each node's
// attributes and the type and bandwidth of the link to its parent, the links outside the tree
// (NVLink, C2C, inter-socket), then GPU x GPU and GPU x NET path-type matrices in the style of
// `nvidia-smi topo -m`, then the notes discovery left.
#pragma once

#include <string>
#include <vector>

#include "topo/system.h"

namespace accl_topo {

std::string renderText(const accl::TopoSystem& sys, const std::vector<std::string>& notes);

}  // namespace accl_topo
