// The P2P / SHM decision for GPU pairs (see gpu_link.h).
#include "transports/gpu_link.h"

#include "topo/system.h"
#include "util/params.h"

namespace accl {

const char* gpuLinkName(GpuLink link) {
  switch (link) {
    case GpuLink::kP2p: return "P2P";
    case GpuLink::kShm: return "SHM";
    case GpuLink::kNone: break;
  }
  return "none";
}

const char* p2pModeName(P2pMode mode) {
  switch (mode) {
    case P2pMode::kDirect: return "direct pointer";
    case P2pMode::kCumem: return "CUMEM";
    case P2pMode::kIpc: return "IPC";
  }
  return "?";
}

int GpuLinkPolicy::effectiveLevel() const {
  if (p2pDisable) return kPathLoc;
  return p2pLevel >= 0 ? p2pLevel : kPathPxb;
}

bool parseP2pLevel(const std::string& text, int* level) { return topoParsePathLevel(text, level); }

GpuLinkPolicy gpuLinkPolicyFromEnv(std::string* why) {
  GpuLinkPolicy p;
  why->clear();
  const std::string level = paramStr("NCCL_P2P_LEVEL");
  if (!level.empty() && !parseP2pLevel(level, &p.p2pLevel)) {
    p.p2pLevel = -1;
    *why = "NCCL_P2P_LEVEL='" + level + "' is not a path level (LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS or 0-5)";
  }
  p.p2pDisable = paramInt("NCCL_P2P_DISABLE") == 1;
  p.shmDisable = paramInt("NCCL_SHM_DISABLE") == 1;
  return p;
}

int guessPathType(bool sameDevice, bool peerAccess, bool nativeAtomics) {
  if (sameDevice) return kPathLoc;
  if (!peerAccess) return kPathDis;
  return nativeAtomics ? kPathNvl : kPathPxb;
}

GpuLink chooseGpuLink(const GpuPairFacts& f, const GpuLinkPolicy& policy) {
  if (!f.bothGpuFifos) return GpuLink::kNone;
  if (!f.sameNode) return GpuLink::kNone;  // other nodes, virtual ones included: the network
  if (!f.sameProcess && !f.shareMemory) return GpuLink::kNone;  // other machines: the network
  const int path = f.pathType >= 0 ? f.pathType : guessPathType(f.sameDevice, f.peerAccess, false);
  const bool reachable = f.sameDevice || f.peerAccess;
  if (reachable && path != kPathDis && path <= policy.effectiveLevel()) return GpuLink::kP2p;
  if (!policy.shmDisable) return GpuLink::kShm;
  return GpuLink::kNone;
}

P2pMode chooseP2pMode(bool sameProcess, bool cumemUsable) {
  if (sameProcess) return P2pMode::kDirect;
  return cumemUsable ? P2pMode::kCumem : P2pMode::kIpc;
}

}  // namespace accl
