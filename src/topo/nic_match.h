// Which of a network's devices a rank should use: the one whose PCI device is the NIC closest to
// the rank in the discovered topology (its GPU's, or else its CPU's), as NCCL places each rank on
// its nearest NIC. Devices are matched to the topology's NICs by PCI bus id (the last component
// of the device's sysfs pciPath), and by name among the ports of one multi-port NIC.
#pragma once

#include <string>
#include <vector>

#include "topo/system.h"

namespace accl {

// What the matcher needs to know of one network device (NetProperties' name and pciPath).
struct NicCandidate {
  std::string name;     // "mlx5_0:1", "eth0"
  std::string pciPath;  // "/sys/devices/pci0000:10/0000:10:00.0/0000:12:00.0", "" when unknown
};

struct NicMatch {
  int device = -1;       // index into the candidates; -1: none matches a NIC of the topology
  int net = -1;          // the matched NET node (index in TopoSystem::nodes)
  int pathType = kPathDis;
  double topoGBps = 0;   // that NET node's bandwidth in the topology
};

// From the rank's GPU `gpuDev` (>= 0 and present in `system`), else from the CPU of NUMA node
// `numaId` (else the first CPU): the NET nodes ordered by path type, then path bandwidth, then
// NET dev; the closest ones a candidate sits on win. When several are equally close (same path
// type and bandwidth: two GPUs and two NICs under one PCIe switch), the `spread`-th of them
// modulo their count, in NET dev order — the GPU's dev, or the rank's index on its node — so that
// neighbours share them out, as NCCL does. Deterministic; no I/O.
NicMatch topoClosestNic(const TopoSystem& system, int gpuDev, int numaId, int spread,
                        const std::vector<NicCandidate>& devices);

// "0000:12:00.0" from a sysfs PCI path (lower case), "" when the path ends in no bus id.
std::string pciBusIdOfPath(const std::string& pciPath);

}  // namespace accl
