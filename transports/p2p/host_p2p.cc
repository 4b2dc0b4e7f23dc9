// Host p2p transport: both ranks live in one process (threads), so the receiver's region is
// ordinary heap memory and the sender uses its address directly. "One process" is proven, not
// assumed: the blob carries a random token of the owner process, and the sender touches the
// address only when that token is its own process's.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/comm.h"
#include "transports/transport.h"
#include "util/check.h"
#include "util/host_identity.h"

namespace accl {
namespace {

// Heap memory shared by the two ends: whichever end lets go last frees it (FifoCtrl::refs), so a
// rank that destroys or aborts its communicator early never pulls memory from under its peer,
// which instead sees FifoCtrl::closed and fails cleanly.
class SharedHeapRegion : public ConnRegion {
 public:
  explicit SharedHeapRegion(void* start) { start_ = start; }
  ~SharedHeapRegion() override {
    if (start_ == nullptr) return;
    auto* ctrl = static_cast<FifoCtrl*>(base());
    if (std::atomic_ref<uint32_t>(ctrl->refs).fetch_sub(1, std::memory_order_acq_rel) == 1) std::free(start_);
  }
  void abandon() override { start_ = nullptr; }
};

// Random per process; a forked child draws its own.
uint64_t processToken() {
  static std::mutex mu;
  static pid_t owner = 0;
  static uint64_t token = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (owner != getpid()) {
    owner = getpid();
    token = randomU64();
  }
  return token;
}

bool sameProcess(const PeerInfo& self, const PeerInfo& peer) {
  return self.pidHash == peer.pidHash && self.place.bootHash == peer.place.bootHash &&
         self.place.pidNsInode == peer.place.pidNsInode && self.place.pidNsDev == peer.place.pidNsDev &&
         self.pid == peer.pid;
}

ncclResult_t setupRecv(const FifoLayout& layout, std::unique_ptr<ConnRegion>* region, ConnBlob* blob) {
  size_t bytes = kRegionHeaderBytes + layout.totalBytes();
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0)
    return fail(ncclSystemError, "p2p transport: cannot allocate a %zu-byte connection buffer", bytes);
  std::memset(p, 0, bytes);
  region->reset(new SharedHeapRegion(p));
  static_cast<FifoCtrl*>((*region)->base())->refs = 2;  // receiver and sender
  blob->ownerPid = getpid();
  blob->bytes = bytes;
  blob->address = reinterpret_cast<uint64_t>(p);
  blob->processToken = processToken();
  return ncclSuccess;
}

ncclResult_t connectSend(const ConnBlob& blob, std::unique_ptr<ConnRegion>* region) {
  if (blob.processToken != processToken() || blob.ownerPid != getpid())
    return fail(ncclSystemError,
                "p2p transport: the connection (owner pid %d) was not made in this process (pid %d): its process "
                "token differs",
                blob.ownerPid, getpid());
  region->reset(new SharedHeapRegion(reinterpret_cast<void*>(blob.address)));
  return ncclSuccess;
}

}  // namespace

const Transport kHostP2pTransport = {"P2P/host", sameProcess, setupRecv, connectSend};

}  // namespace accl
