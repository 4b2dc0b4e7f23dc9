// The transport registry: every transport accl can use, in order of preference (see transport.h).
#include "transports/transport.h"

namespace accl {
namespace {

const Transport* const kRegistry[] = {
#ifdef ACCL_HAVE_CUDA
    &kCudaP2pTransport,  // GPU ranks of one machine with a P2P path (transports/gpu_link.h)
    &kCudaShmTransport,  // GPU ranks of one machine without one: pinned host memory
#endif
    &kHostP2pTransport,  // same process: plain memory
    &kHostShmTransport,  // same kernel and PID namespace: a memfd both processes map
    &kNetTransport,      // different hosts (or p2p and shm disabled): a NetDevice and a proxy thread
};
constexpr int kRegistrySize = static_cast<int>(sizeof(kRegistry) / sizeof(kRegistry[0]));

}  // namespace

int transportCount() { return kRegistrySize; }

const Transport* transportAt(int index) { return index >= 0 && index < kRegistrySize ? kRegistry[index] : nullptr; }

int pickTransport(const PeerInfo& self, const PeerInfo& peer) {
  for (int t = 0; t < kRegistrySize; ++t)
    if (kRegistry[t]->canConnect(self, peer)) return t;
  return -1;
}

}  // namespace accl
