// ncclUniqueId encoding, validation and creation (see unique_id.h).
#include "core/unique_id.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/bootstrap_net.h"
#include "core/bootstrap_root.h"
#include "util/check.h"
#include "util/log.h"

namespace accl {

void encodeUniqueId(const UniqueIdInfo& info, ncclUniqueId* out) {
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out->internal + kUniqueIdMagicOffset, &info.magic, sizeof(info.magic));
  std::memcpy(out->internal + kUniqueIdAddrOffset, &info.root, sizeof(info.root));
  std::memcpy(out->internal + kUniqueIdGrowOffset, &info.growFromRanks, sizeof(info.growFromRanks));
}

ncclResult_t parseUniqueId(const ncclUniqueId& id, UniqueIdInfo* out, const char* caller) {
  static const char* kHint = "pass the id produced by ncclGetUniqueId, copied unchanged to every rank";
  UniqueIdInfo info;
  std::memcpy(&info.magic, id.internal + kUniqueIdMagicOffset, sizeof(info.magic));
  std::memcpy(&info.root, id.internal + kUniqueIdAddrOffset, sizeof(info.root));
  std::memcpy(&info.growFromRanks, id.internal + kUniqueIdGrowOffset, sizeof(info.growFromRanks));
  bool allZero = true;
  for (size_t i = 0; i < sizeof(id.internal); ++i) allZero = allZero && id.internal[i] == 0;
  if (allZero)
    return fail(ncclInvalidArgument, "%s: invalid ncclUniqueId: it is all zeros (%s)", caller, kHint);
  if (info.magic == 0)
    return fail(ncclInvalidArgument, "%s: invalid ncclUniqueId: magic is 0 (%s)", caller, kHint);
  if (!info.root.isInet())
    return fail(ncclInvalidArgument,
                "%s: invalid ncclUniqueId: root address family %d is neither AF_INET nor AF_INET6 (%s)",
                caller, info.root.family(), kHint);
  if (info.root.port() == 0)
    return fail(ncclInvalidArgument, "%s: invalid ncclUniqueId: root port is 0 (%s)", caller, kHint);
  bool unspecified = info.root.family() == AF_INET ? info.root.in4.sin_addr.s_addr == 0
                                                   : IN6_IS_ADDR_UNSPECIFIED(&info.root.in6.sin6_addr);
  if (unspecified)
    return fail(ncclInvalidArgument, "%s: invalid ncclUniqueId: root address %s is unspecified (%s)", caller,
                info.root.toString().c_str(), kHint);
  // Bytes the encoder always zeroes: the sockaddr_in padding and everything after the address,
  // except the grow field.
  size_t usedAddr = info.root.length();
  for (size_t i = kUniqueIdAddrOffset + usedAddr; i < sizeof(id.internal); ++i) {
    if (i >= kUniqueIdGrowOffset && i < kUniqueIdGrowOffset + sizeof(info.growFromRanks)) continue;
    if (id.internal[i] != 0)
      return fail(ncclInvalidArgument,
                  "%s: invalid ncclUniqueId: byte %zu is 0x%02x where 0 was expected (%s)", caller, i,
                  static_cast<unsigned char>(id.internal[i]), kHint);
  }
  *out = info;
  return ncclSuccess;
}

ncclResult_t randomMagic(uint64_t* out) {
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return fail(ncclSystemError, "ncclGetUniqueId: cannot open /dev/urandom: %s", strerror(err));
  }
  uint64_t magic = 0;
  while (magic == 0 || magic == kCommIdMagic) {
    size_t got = 0;
    while (got < sizeof(magic)) {
      ssize_t n = ::read(fd, reinterpret_cast<char*>(&magic) + got, sizeof(magic) - got);
      if (n > 0) {
        got += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        int err = n < 0 ? errno : EIO;
        ::close(fd);
        return fail(ncclSystemError, "ncclGetUniqueId: reading /dev/urandom failed: %s", strerror(err));
      }
    }
  }
  ::close(fd);
  *out = magic;
  return ncclSuccess;
}

ncclResult_t createUniqueId(ncclUniqueId* out, int64_t rootIdleTimeoutMs) {
  if (!out) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId argument is NULL");
  SocketAddress commId;
  bool haveCommId = false;
  ACCL_CHECK(commIdFromEnv(&commId, &haveCommId));
  UniqueIdInfo info;
  if (haveCommId) {
    info.magic = kCommIdMagic;
    info.root = commId;
    encodeUniqueId(info, out);
    ACCL_INFO(ACCL_LOG_BOOTSTRAP, "ncclGetUniqueId: NCCL_COMM_ID set, root will be hosted by rank 0 at %s",
              commId.toString().c_str());
    return ncclSuccess;
  }
  return createLocalUniqueId(out, rootIdleTimeoutMs);
}

ncclResult_t createLocalUniqueId(ncclUniqueId* out, int64_t rootIdleTimeoutMs) {
  if (!out) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId argument is NULL");
  UniqueIdInfo info;
  SocketAddress local;
  ACCL_CHECK(bootstrapNetAddress(&local));
  Socket listener;
  ACCL_CHECK(Socket::listen(local, &listener));
  ACCL_CHECK(randomMagic(&info.magic));
  info.root = listener.localAddress();
  ACCL_CHECK(startBootstrapRoot(std::move(listener), info.magic, rootIdleTimeoutMs));
  encodeUniqueId(info, out);
  ACCL_INFO(ACCL_LOG_BOOTSTRAP, "ncclGetUniqueId: bootstrap root listening on %s",
            info.root.toString().c_str());
  return ncclSuccess;
}

}  // namespace accl
