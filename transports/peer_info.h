// PeerInfo: what every rank tells every other rank during init (one allGather), and what a
// transport's canConnect decides from. Plain bytes: it travels as raw memory.
#pragma once

#include <cstdint>

#include "util/host_identity.h"

namespace accl {

struct PeerInfo {
  int rank;
  int version;      // NCCL_VERSION_CODE of the library the rank runs
  int cudaDev;      // device the rank was created for (a label on the host backend)
  int backend;      // Backend (device/backend_kind.h) as int: all ranks must agree
  uint64_t hostHash;  // same value <=> same node (NCCL_HOSTID overrides the host identity)
  uint64_t pidHash;   // same value <=> same process
  int pid;            // process id (meaningful between ranks of one node)
  ProcessPlace place;  // kernel, PID namespace and host name: who can share memory (transports/shm)
  int64_t busId;       // PCI bus id of cudaDev as a number (device_probe.h cudaDeviceBusId), -1: no GPU
  int32_t gpuFifos;    // 1: the rank's backend runs kernels on device-reachable FIFOs (GPU transports apply)
  int32_t reserved;
};

}  // namespace accl
