// Host shm transport: ranks in different processes of one node share a POSIX shared-memory
// segment created by the receiver; the sender opens it by name. The receiver unlinks the name
// once the sender has mapped it, so nothing is left in /dev/shm after setup.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "core/comm.h"
#include "transports/transport.h"
#include "util/check.h"

namespace accl {
namespace {

class ShmRegion : public ConnRegion {
 public:
  ShmRegion(void* p, size_t bytes, const char* unlinkName) : bytes_(bytes) {
    base_ = p;
    if (unlinkName) std::snprintf(name_, sizeof(name_), "%s", unlinkName);
  }
  ~ShmRegion() override {
    finish();
    munmap(base_, bytes_);
  }
  void finish() override {
    if (name_[0]) shm_unlink(name_);
    name_[0] = '\0';
  }

 private:
  size_t bytes_;
  char name_[64] = "";
};

// Any pair the p2p transport could not serve. Ranks on different *virtual* nodes (NCCL_HOSTID)
// are on one machine and still share memory, which is how multi-node schedules are tested
// before a network transport exists; ranks on really different machines fail at shm_open with
// a clear error instead of hanging.
bool anyPeer(const PeerInfo&, const PeerInfo&) { return true; }

ncclResult_t mapSegment(const char* name, size_t bytes, bool create, void** out) {
  int fd = shm_open(name, create ? (O_CREAT | O_EXCL | O_RDWR) : O_RDWR, 0600);
  if (fd < 0)
    return fail(ncclSystemError, "shm transport: shm_open(%s) failed: %s", name, std::strerror(errno));
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    close(fd);
    shm_unlink(name);
    return fail(ncclSystemError, "shm transport: cannot size %s to %zu bytes: %s (is /dev/shm full?)", name, bytes,
                std::strerror(err));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    if (create) shm_unlink(name);
    return fail(ncclSystemError, "shm transport: mmap of %s (%zu bytes) failed: %s", name, bytes, std::strerror(err));
  }
  *out = p;
  return ncclSuccess;
}

ncclResult_t setupRecv(const FifoLayout& layout, std::unique_ptr<ConnRegion>* region, ConnBlob* blob) {
  static std::atomic<uint64_t> counter{0};
  size_t bytes = layout.totalBytes();
  std::snprintf(blob->name, sizeof(blob->name), "/accl-%d-%lu", getpid(), (unsigned long)counter++);
  void* p = nullptr;
  ACCL_CHECK(mapSegment(blob->name, bytes, true, &p));  // a fresh segment reads as zeros
  region->reset(new ShmRegion(p, bytes, blob->name));
  blob->ownerPid = getpid();
  blob->bytes = bytes;
  return ncclSuccess;
}

ncclResult_t connectSend(const ConnBlob& blob, std::unique_ptr<ConnRegion>* region) {
  void* p = nullptr;
  ACCL_CHECK(mapSegment(blob.name, blob.bytes, false, &p));
  region->reset(new ShmRegion(p, blob.bytes, nullptr));
  return ncclSuccess;
}

}  // namespace

const Transport kHostShmTransport = {"SHM/host", anyPeer, setupRecv, connectSend};

const Transport* const* hostTransports(int* count) {
  static const Transport* const kList[] = {&kHostP2pTransport, &kHostShmTransport};
  *count = 2;
  return kList;
}

}  // namespace accl
