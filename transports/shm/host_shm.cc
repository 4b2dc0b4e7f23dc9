// Host shm transport: ranks in different processes of one node share a memory region the
// receiver creates with memfd_create; the sender opens it through /proc/<receiver pid>/fd/<fd>
// (allowed between processes of the same user) and maps it. The region has no name in
// /dev/shm, so nothing is ever left behind, even when a rank is killed mid-setup: the memory
// goes away with the last mapping.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/comm.h"
#include "transports/transport.h"
#include "util/check.h"

namespace accl {
namespace {

class MemfdRegion : public ConnRegion {
 public:
  MemfdRegion(void* p, size_t bytes, int keepFd) : bytes_(bytes), fd_(keepFd) { base_ = p; }
  ~MemfdRegion() override {
    finish();
    munmap(base_, bytes_);
  }
  // The receiver keeps its descriptor open until the sender has opened its own.
  void finish() override {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  size_t bytes_;
  int fd_;
};

// Any pair the p2p transport could not serve. Ranks on different *virtual* nodes (NCCL_HOSTID)
// are on one machine and still share memory, which is how multi-node schedules are tested
// before a network transport exists; ranks on really different machines fail to open the
// region with a clear error instead of hanging.
bool anyPeer(const PeerInfo&, const PeerInfo&) { return true; }

ncclResult_t mapFd(int fd, size_t bytes, const char* what, void** out) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return fail(ncclSystemError, "shm transport: mmap of %s (%zu bytes) failed: %s", what, bytes, std::strerror(errno));
  *out = p;
  return ncclSuccess;
}

ncclResult_t setupRecv(const FifoLayout& layout, std::unique_ptr<ConnRegion>* region, ConnBlob* blob) {
  size_t bytes = layout.totalBytes();
  int fd = memfd_create("accl-fifo", MFD_CLOEXEC);
  if (fd < 0) return fail(ncclSystemError, "shm transport: memfd_create failed: %s", std::strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    close(fd);
    return fail(ncclSystemError, "shm transport: cannot size a %zu-byte region: %s", bytes, std::strerror(err));
  }
  void* p = nullptr;
  ncclResult_t res = mapFd(fd, bytes, "a new region", &p);  // a fresh region reads as zeros
  if (res != ncclSuccess) {
    close(fd);
    return res;
  }
  region->reset(new MemfdRegion(p, bytes, fd));
  blob->ownerPid = getpid();
  blob->bytes = bytes;
  blob->address = static_cast<uint64_t>(fd);
  std::snprintf(blob->name, sizeof(blob->name), "/proc/%d/fd/%d", getpid(), fd);
  return ncclSuccess;
}

ncclResult_t connectSend(const ConnBlob& blob, std::unique_ptr<ConnRegion>* region) {
  int fd = open(blob.name, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return fail(ncclSystemError, "shm transport: cannot open the peer's region %s: %s (peer on another machine, or "
                "another user?)", blob.name, std::strerror(errno));
  void* p = nullptr;
  ncclResult_t res = mapFd(fd, blob.bytes, blob.name, &p);
  close(fd);
  ACCL_CHECK(res);
  region->reset(new MemfdRegion(p, blob.bytes, -1));
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
