// Which transport two GPU ranks of one machine use, decided from facts both ends share (their
// PeerInfos, the topology path between their devices) and the P2P policy (NCCL_P2P_LEVEL,
// NCCL_P2P_DISABLE, NCCL_SHM_DISABLE):
//   P2P  the receiver's FIFO in device memory that the sender's device stores into directly
//        (same device, NVLink, or PCIe up to NCCL_P2P_LEVEL, default PXB); how the other end
//        reaches it is the P2pMode: same process: the pointer; other process: a cuMem allocation
//        passed as a POSIX fd (NCCL_CUMEM_ENABLE), else a legacy cudaIpc handle;
//   SHM  the FIFO in pinned host memory both devices reach (GPU pairs with no P2P path);
//   none neither (the host transports or the network decide).
// The decision itself is CUDA-free and pure, so it is unit-tested without a GPU. It sits at the
// transports' root because both GPU transports follow it: P2P/cuda (p2p/cuda_p2p.cc, which also
// fills the facts from the driver) and SHM/cuda (shm/cuda_shm.cc), both built with CUDA.
#pragma once

#include <cstdint>
#include <string>

#include "transports/peer_info.h"

namespace accl {

enum class GpuLink { kNone, kP2p, kShm };
enum class P2pMode { kDirect, kCumem, kIpc };

const char* gpuLinkName(GpuLink link);  // "none", "P2P", "SHM"
const char* p2pModeName(P2pMode mode);  // "direct pointer", "CUMEM", "IPC" (as NCCL's log lines)

// What both ends know about a pair of GPU ranks.
struct GpuPairFacts {
  bool bothGpuFifos = false;  // both ranks run kernels on device FIFOs (a CUDA backend)
  bool sameNode = true;       // same host identity (hostHash: NCCL_HOSTID's virtual nodes differ)
  bool sameProcess = false;
  bool shareMemory = false;   // same kernel and PID namespace (host_identity.h canShareMemory)
  bool sameDevice = false;    // same PCI bus id: several ranks on one GPU
  bool peerAccess = false;    // the two devices can access each other (true for the same device)
  int pathType = -1;          // topology path type between them (topo/system.h TopoPathType), -1 unknown
};

// NCCL_P2P_LEVEL / NCCL_P2P_DISABLE / NCCL_SHM_DISABLE, as the decision uses them.
struct GpuLinkPolicy {
  int p2pLevel = -1;  // max path type for P2P; -1: the default (PXB)
  bool p2pDisable = false;
  bool shmDisable = false;
  // The level after defaults: NCCL_P2P_DISABLE -> LOC (ranks of one device keep P2P), unset -> PXB.
  int effectiveLevel() const;
};

// Reads the policy from the environment. A bad NCCL_P2P_LEVEL is ncclInvalidUsage-worthy: *why
// gets the message and the default is kept (the caller decides whether to fail or warn).
GpuLinkPolicy gpuLinkPolicyFromEnv(std::string* why);
// Parses an NCCL_P2P_LEVEL value ("NVL", "pxb", legacy "0".."5"); false when it is neither.
bool parseP2pLevel(const std::string& text, int* level);

// The path type assumed between two distinct devices when no topology is at hand: NVLink when
// they have native peer atomics (an NVLink or NVSwitch connection), PXB when they have peer access
// over PCIe only, disconnected otherwise.
int guessPathType(bool sameDevice, bool peerAccess, bool nativeAtomics);

GpuLink chooseGpuLink(const GpuPairFacts& facts, const GpuLinkPolicy& policy);

// How the sender's device reaches the receiver's device memory once P2P was chosen.
P2pMode chooseP2pMode(bool sameProcess, bool cumemUsable);

#ifdef ACCL_HAVE_CUDA
// The facts the decision is made from, for two ranks as this process sees them (asks the driver).
GpuPairFacts gpuPairFacts(const PeerInfo& self, const PeerInfo& peer);
// The decision for two ranks under the environment's policy (read once per process).
GpuLink gpuLinkFor(const PeerInfo& self, const PeerInfo& peer);
#endif

}  // namespace accl
