// Host p2p transport: both ranks live in one process (threads), so the receiver's region is
// ordinary heap memory and the sender uses its address directly. "One process" is proven, not
// assumed: the blob carries a random token of the owner process, and the sender touches the
// address only when that token is its own process's.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "core/comm.h"
#include "transports/transport.h"
#include "util/check.h"
#include "util/host_identity.h"

namespace accl {
namespace {

// Regions a sender may still attach to: from setupRecv until the receiver's finish() (the sender
// acked) or release. A sender takes its reference only while the region is listed, under the same
// lock the receiver takes to unlist it before dropping its own, so the memory is alive whenever it
// is attached, and a region whose sender never attached (a failed or one-sided connect) is freed
// by the receiver alone instead of waiting forever for a second release.
struct OpenRegions {
  std::mutex mu;
  std::unordered_set<uintptr_t> open;
};
OpenRegions& openRegions() {
  static OpenRegions* regions = new OpenRegions;  // never destroyed: regions may outlive statics
  return *regions;
}

// Heap memory shared by the two ends: whichever end lets go last frees it (FifoCtrl::refs), so a
// rank that destroys or aborts its communicator early never pulls memory from under its peer,
// which instead sees FifoCtrl::closed and fails cleanly.
class SharedHeapRegion : public ConnRegion {
 public:
  SharedHeapRegion(void* start, bool owner) : owner_(owner) { start_ = start; }
  ~SharedHeapRegion() override {
    if (start_ == nullptr) return;
    if (owner_) unlist();
    auto* ctrl = static_cast<FifoCtrl*>(base());
    if (std::atomic_ref<uint32_t>(ctrl->refs).fetch_sub(1, std::memory_order_acq_rel) == 1) std::free(start_);
  }
  // The sender acked: it holds its reference, and nobody else may attach.
  void finish() override {
    if (owner_) unlist();
  }
  // The region failed the sender's proof. connectSend only attaches to a listed (live) region of
  // this process, and took a reference on it, so the destructor still drops that reference.
  void abandon() override {}

 private:
  void unlist() {
    OpenRegions& r = openRegions();
    std::lock_guard<std::mutex> lock(r.mu);
    r.open.erase(reinterpret_cast<uintptr_t>(start_));
  }
  bool owner_;
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
  static_cast<FifoCtrl*>(static_cast<void*>(static_cast<char*>(p) + kRegionHeaderBytes))->refs = 1;  // receiver
  {
    OpenRegions& r = openRegions();
    std::lock_guard<std::mutex> lock(r.mu);
    r.open.insert(reinterpret_cast<uintptr_t>(p));
  }
  region->reset(new SharedHeapRegion(p, /*owner=*/true));
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
  void* start = reinterpret_cast<void*>(blob.address);
  {
    OpenRegions& r = openRegions();
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.open.count(reinterpret_cast<uintptr_t>(start)) == 0)
      return fail(ncclSystemError,
                  "p2p transport: the connection region of rank %d is gone: its owner released it before this "
                  "rank attached",
                  blob.ownerRank);
    auto* ctrl = static_cast<FifoCtrl*>(static_cast<void*>(static_cast<char*>(start) + kRegionHeaderBytes));
    std::atomic_ref<uint32_t>(ctrl->refs).fetch_add(1, std::memory_order_acq_rel);
  }
  region->reset(new SharedHeapRegion(start, /*owner=*/false));
  return ncclSuccess;
}

}  // namespace

const Transport kHostP2pTransport = {"P2P/host", sameProcess, setupRecv, connectSend};

}  // namespace accl
