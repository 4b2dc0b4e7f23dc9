// This machine's topology as NCCL topology XML: loaded from NCCL_TOPO_FILE when set, otherwise
// probed — hwloc for packages / NUMA nodes / caches / the PCI tree and NICs, the CUDA runtime for
// each GPU's bus id, compute capability and SM count, NVML (dlopen) for NVLink peers and
// NVSwitches, verbs / sysfs for IB and RoCE ports, sysfs for Ethernet speed. Any probe that is
// missing (no GPU, no NVML, a container without /sys/bus/pci) is skipped with an INFO line
// saying what was left out, so discovery never fails on a working machine.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nccl.h"
#include "topo/system.h"
#include "topo/xml.h"

namespace accl {

struct DiscoverOptions {
  bool probeGpus = true;   // CUDA + NVML
  bool probeNics = true;   // verbs / sysfs
  std::vector<std::string> notes;  // filled by discovery: one line per fallback taken
};

// The <system> tree: NCCL_TOPO_FILE if set (a missing or malformed file is ncclInvalidUsage
// naming it), else probed. Every <cpu> gets this host's host_hash.
ncclResult_t topoDiscoverXml(DiscoverOptions* opts, std::unique_ptr<XmlNode>* out);

// Discovery + graph + paths in one call (policy from the environment). Writes
// NCCL_TOPO_DUMP_FILE when set and `rank` equals NCCL_TOPO_DUMP_FILE_RANK (rank < 0: never).
ncclResult_t topoGetSystem(int rank, std::unique_ptr<TopoSystem>* out);

}  // namespace accl
