// Host p2p transport: both ranks live in one process (threads), so the receiver's region is
// ordinary heap memory and the sender uses its address directly.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/comm.h"
#include "transports/transport.h"
#include "util/check.h"

namespace accl {
namespace {

// Heap memory shared by the two ends: whichever end lets go last frees it (FifoCtrl::refs), so a
// rank that destroys or aborts its communicator early never pulls memory from under its peer,
// which instead sees FifoCtrl::closed and fails cleanly.
class SharedHeapRegion : public ConnRegion {
 public:
  explicit SharedHeapRegion(void* p) { base_ = p; }
  ~SharedHeapRegion() override {
    auto* ctrl = static_cast<FifoCtrl*>(base_);
    if (std::atomic_ref<uint32_t>(ctrl->refs).fetch_sub(1, std::memory_order_acq_rel) == 1) std::free(base_);
  }
};

bool sameProcess(const PeerInfo& self, const PeerInfo& peer) { return self.pidHash == peer.pidHash; }

ncclResult_t setupRecv(const FifoLayout& layout, std::unique_ptr<ConnRegion>* region, ConnBlob* blob) {
  size_t bytes = layout.totalBytes();
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0)
    return fail(ncclSystemError, "p2p transport: cannot allocate a %zu-byte connection buffer", bytes);
  std::memset(p, 0, bytes);
  static_cast<FifoCtrl*>(p)->refs = 2;  // receiver and sender
  region->reset(new SharedHeapRegion(p));
  blob->ownerPid = getpid();
  blob->bytes = bytes;
  blob->address = reinterpret_cast<uint64_t>(p);
  return ncclSuccess;
}

ncclResult_t connectSend(const ConnBlob& blob, std::unique_ptr<ConnRegion>* region) {
  if (blob.ownerPid != getpid())
    return fail(ncclInternalError, "p2p transport: connection owned by pid %d is not in this process (%d)",
                blob.ownerPid, getpid());
  region->reset(new SharedHeapRegion(reinterpret_cast<void*>(blob.address)));
  return ncclSuccess;
}

}  // namespace

const Transport kHostP2pTransport = {"P2P/host", sameProcess, setupRecv, connectSend};

}  // namespace accl
