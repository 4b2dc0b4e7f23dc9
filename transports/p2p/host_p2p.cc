// Host p2p transport: both ranks live in one process (threads), so each end's region is ordinary
// heap memory and the peer uses its address directly. "One process" is proven, not assumed: the
// blob carries a random token of the owner process, and the peer touches the address only when
// that token is its own process's.
#include "transports/p2p/host_p2p.h"

#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

#include "transports/mapped_ends.h"
#include "util/check.h"
#include "util/host_identity.h"
#include "util/params.h"

namespace accl {
namespace {

// Every p2p allocation starts with one cache line holding the number of ends that hold it; the
// region (header, then FIFO memory) follows.
constexpr size_t kHoldersBytes = 64;

std::atomic_ref<uint32_t> holders(void* regionStart) {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(static_cast<char*>(regionStart) - kHoldersBytes));
}

// Regions a peer may still attach to: from creation until the owner's finish() (the peer acked)
// or release. A peer takes its hold only while the region is listed, under the same lock the
// owner takes to unlist it before dropping its own, so the memory is alive whenever it is
// attached, and a region nobody attached to (a failed or one-sided connect) is freed by its owner
// alone instead of waiting forever for a second release.
struct OpenRegions {
  std::mutex mu;
  std::unordered_set<uintptr_t> open;
};
OpenRegions& openRegions() {
  static OpenRegions* regions = new OpenRegions;  // never destroyed: regions may outlive statics
  return *regions;
}

// Heap memory shared by the two ends: whichever end lets go last frees it, so a rank that
// destroys or aborts its communicator early never pulls memory from under its peer, which
// instead sees the connection closed and fails cleanly.
class SharedHeapRegion : public ConnRegion {
 public:
  SharedHeapRegion(void* start, bool owner) : owner_(owner) { start_ = start; }
  ~SharedHeapRegion() override {
    if (start_ == nullptr) return;
    if (owner_) unlist();
    if (holders(start_).fetch_sub(1, std::memory_order_acq_rel) == 1) std::free(static_cast<char*>(start_) - kHoldersBytes);
  }
  // The peer acked: it holds its reference, and nobody else may attach.
  void finish() override {
    if (owner_) unlist();
  }
  // The region failed the peer's proof. map() only attaches to a listed (live) region of this
  // process, and took a hold on it, so the destructor still drops that hold.
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
  if (paramInt("NCCL_P2P_DISABLE") == 1) return false;  // as NCCL: local pairs then use shm (or net)
  return self.pidHash == peer.pidHash && self.hostHash == peer.hostHash && self.place.bootHash == peer.place.bootHash &&
         self.place.pidNsInode == peer.place.pidNsInode && self.place.pidNsDev == peer.place.pidNsDev &&
         self.pid == peer.pid;
}

ncclResult_t create(size_t bytes, std::unique_ptr<ConnRegion>* region, ConnBlob* blob) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, kHoldersBytes + bytes) != 0)
    return fail(ncclSystemError, "p2p transport: cannot allocate a %zu-byte connection buffer", bytes);
  std::memset(p, 0, kHoldersBytes + bytes);
  void* start = static_cast<char*>(p) + kHoldersBytes;
  holders(start).store(1, std::memory_order_relaxed);  // the owner
  {
    OpenRegions& r = openRegions();
    std::lock_guard<std::mutex> lock(r.mu);
    r.open.insert(reinterpret_cast<uintptr_t>(start));
  }
  region->reset(new SharedHeapRegion(start, /*owner=*/true));
  P2pBlob mine{};
  mine.address = reinterpret_cast<uint64_t>(start);
  mine.processToken = processToken();
  putBlobPayload(blob, mine);
  return ncclSuccess;
}

ncclResult_t map(const ConnBlob& blob, const RegionRef& ref, std::unique_ptr<ConnRegion>* region) {
  const P2pBlob theirs = blobPayload<P2pBlob>(blob);
  if (theirs.processToken != processToken() || ref.ownerPid != getpid())
    return fail(ncclSystemError,
                "p2p transport: the connection (owner pid %d) was not made in this process (pid %d): its process "
                "token differs",
                ref.ownerPid, getpid());
  void* start = reinterpret_cast<void*>(theirs.address);
  {
    OpenRegions& r = openRegions();
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.open.count(reinterpret_cast<uintptr_t>(start)) == 0)
      return fail(ncclSystemError,
                  "p2p transport: the connection region of rank %d is gone: its owner released it before this "
                  "rank attached",
                  ref.ownerRank);
    holders(start).fetch_add(1, std::memory_order_acq_rel);
  }
  region->reset(new SharedHeapRegion(start, /*owner=*/false));
  return ncclSuccess;
}

std::string where(const ConnBlob&) { return "in-process"; }

constexpr MappedRegionOps kP2pOps = {"P2P/host", &create, &map, &where};

}  // namespace

uint32_t p2pRegionHolders(const P2pBlob& blob) {
  return holders(reinterpret_cast<void*>(blob.address)).load(std::memory_order_acquire);
}

const Transport kHostP2pTransport = mappedRegionTransport<kP2pOps>(&sameProcess);

}  // namespace accl
