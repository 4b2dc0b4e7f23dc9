// Host shm transport: ranks in different processes of one kernel and one PID namespace share
// memory regions that each end creates with memfd_create (the receiver: tail and slots; the
// sender: head); the peer opens it through /proc/<owner pid>/fd/<fd> (allowed between processes
// of the same user) and maps it. A region has no name in /dev/shm, so nothing is ever left
// behind, even when a rank is killed mid-setup: the memory goes away with the last mapping.
//
// /proc/<pid> means the owner only inside the owner's PID namespace, so canConnect requires the
// same kernel (boot id), the same PID namespace (PeerInfo::place) and the same node (hostHash):
// NCCL_HOSTID's virtual nodes of one machine talk through the network, as in NCCL. Before mapping, the peer checks that what it opened is an accl
// memfd of the announced size; after mapping, the owner's token is checked (mapped_ends.cc).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "transports/mapped_ends.h"
#include "transports/shm/host_shm.h"
#include "util/check.h"
#include "util/host_identity.h"
#include "util/params.h"

namespace accl {
namespace {

constexpr char kMemfdName[] = "accl-fifo";

class MemfdRegion : public ConnRegion {
 public:
  MemfdRegion(void* p, size_t bytes, int keepFd) : bytes_(bytes), fd_(keepFd) { start_ = p; }
  ~MemfdRegion() override {
    finish();
    munmap(start_, bytes_);
  }
  // The owner keeps its descriptor open until the peer has opened its own.
  void finish() override {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  size_t bytes_;
  int fd_;
};

// Same node (hostHash: NCCL_HOSTID's virtual nodes are different nodes, as in NCCL, and talk
// through the network) and able to map each other's memory; NCCL_SHM_DISABLE=1 turns shm off.
bool canShare(const PeerInfo& self, const PeerInfo& peer) {
  return self.hostHash == peer.hostHash && paramInt("NCCL_SHM_DISABLE") != 1 &&
         canShareMemory(self.place, peer.place, nullptr);
}

ncclResult_t mapFd(int fd, size_t bytes, const char* what, void** out) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return fail(ncclSystemError, "shm transport: mmap of %s (%zu bytes) failed: %s", what, bytes, std::strerror(errno));
  *out = p;
  return ncclSuccess;
}

ncclResult_t create(size_t bytes, std::unique_ptr<ConnRegion>* region, ConnBlob* blob) {
  int fd = memfd_create(kMemfdName, MFD_CLOEXEC);
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
  ShmBlob mine{};
  std::snprintf(mine.path, sizeof(mine.path), "/proc/%d/fd/%d", getpid(), fd);
  putBlobPayload(blob, mine);
  return ncclSuccess;
}

// What the peer opened must be one of our memfds, of exactly the announced size: anything
// else (a file, a socket, a smaller region whose mapping would fault past its end) is refused
// before it is mapped.
ncclResult_t checkOpened(int fd, const std::string& name, uint64_t bytes) {
  char self[64], target[128] = {};
  std::snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);  // what was really opened
  ssize_t n = readlink(self, target, sizeof(target) - 1);
  const std::string expect = std::string("/memfd:") + kMemfdName;
  if (n <= 0 || std::string(target, static_cast<size_t>(n)).rfind(expect, 0) != 0)
    return fail(ncclSystemError, "shm transport: %s is \"%s\", not an accl region (%s)", name.c_str(),
                n > 0 ? target : "?", expect.c_str());
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != bytes)
    return fail(ncclSystemError, "shm transport: %s holds %lld bytes, the owner announced %llu", name.c_str(),
                (long long)st.st_size, (unsigned long long)bytes);
  return ncclSuccess;
}

std::string pathOf(const ShmBlob& b) { return std::string(b.path, strnlen(b.path, sizeof(b.path))); }

ncclResult_t map(const ConnBlob& blob, const RegionRef& ref, std::unique_ptr<ConnRegion>* region) {
  const std::string name = pathOf(blobPayload<ShmBlob>(blob));
  if (name.rfind("/proc/", 0) != 0 || ref.bytes < kRegionHeaderBytes)
    return fail(ncclSystemError, "shm transport: malformed region name \"%s\" or size %llu", name.c_str(),
                (unsigned long long)ref.bytes);
  int fd = open(name.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return fail(ncclSystemError, "shm transport: cannot open the peer's region %s: %s (peer on another machine, or "
                "another user?)", name.c_str(), std::strerror(errno));
  ncclResult_t res = checkOpened(fd, name, ref.bytes);
  void* p = nullptr;
  if (res == ncclSuccess) res = mapFd(fd, ref.bytes, name.c_str(), &p);
  close(fd);
  ACCL_CHECK(res);
  region->reset(new MemfdRegion(p, ref.bytes, -1));
  return ncclSuccess;
}

std::string where(const ConnBlob& blob) { return pathOf(blobPayload<ShmBlob>(blob)); }

constexpr MappedRegionOps kShmOps = {"SHM/host", &create, &map, &where};

}  // namespace

const Transport kHostShmTransport = mappedRegionTransport<kShmOps>(&canShare);

}  // namespace accl
