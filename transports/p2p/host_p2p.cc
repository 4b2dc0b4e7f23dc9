// Host p2p transport: both ranks live in one process (threads), so the receiver's region is
// ordinary heap memory and the sender uses its address directly.
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "core/comm.h"
#include "transports/transport.h"
#include "util/check.h"

namespace accl {
namespace {

class HeapRegion : public ConnRegion {
 public:
  explicit HeapRegion(void* p) { base_ = p; }
  ~HeapRegion() override { std::free(base_); }
};

class BorrowedRegion : public ConnRegion {
 public:
  explicit BorrowedRegion(void* p) { base_ = p; }
};

bool sameProcess(const PeerInfo& self, const PeerInfo& peer) { return self.pidHash == peer.pidHash; }

ncclResult_t setupRecv(const FifoLayout& layout, std::unique_ptr<ConnRegion>* region, ConnBlob* blob) {
  size_t bytes = layout.totalBytes();
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0)
    return fail(ncclSystemError, "p2p transport: cannot allocate a %zu-byte connection buffer", bytes);
  std::memset(p, 0, bytes);
  region->reset(new HeapRegion(p));
  blob->ownerPid = getpid();
  blob->bytes = bytes;
  blob->address = reinterpret_cast<uint64_t>(p);
  return ncclSuccess;
}

ncclResult_t connectSend(const ConnBlob& blob, std::unique_ptr<ConnRegion>* region) {
  if (blob.ownerPid != getpid())
    return fail(ncclInternalError, "p2p transport: connection owned by pid %d is not in this process (%d)",
                blob.ownerPid, getpid());
  region->reset(new BorrowedRegion(reinterpret_cast<void*>(blob.address)));
  return ncclSuccess;
}

}  // namespace

const Transport kHostP2pTransport = {"P2P/host", sameProcess, setupRecv, connectSend};

}  // namespace accl
