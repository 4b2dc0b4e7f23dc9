// ncclUniqueId encoding, validation and creation (see unique_id.h).
#include "core/bootstrap/unique_id.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "core/bootstrap/bootstrap_net.h"
#include "core/bootstrap/bootstrap_root.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {

void encodeUniqueId(const UniqueIdInfo& info, ncclUniqueId* out) {
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out->internal + kUniqueIdMagicOffset, &info.magic, sizeof(info.magic));
  std::memcpy(out->internal + kUniqueIdAddrOffset, &info.root, sizeof(info.root));
  std::memcpy(out->internal + kUniqueIdGrowOffset, &info.growFromRanks, sizeof(info.growFromRanks));
  std::memcpy(out->internal + kUniqueIdSecretOffset, info.secret.data(), info.secret.size());
}

std::array<uint8_t, kSecretBytes> commIdSecret() {
  std::array<uint8_t, kSecretBytes> secret{};
  std::string text = paramStr("ACCL_BOOTSTRAP_SECRET");
  if (text.empty()) return secret;
  std::string salted = "accl bootstrap secret v1:" + text;
  Sha256Digest d = sha256(salted.data(), salted.size());
  std::memcpy(secret.data(), d.data(), secret.size());
  return secret;
}

ncclResult_t parseUniqueId(const ncclUniqueId& id, UniqueIdInfo* out, const char* caller) {
  static const char* kHint = "pass the id produced by ncclGetUniqueId, copied unchanged to every rank";
  UniqueIdInfo info;
  std::memcpy(&info.magic, id.internal + kUniqueIdMagicOffset, sizeof(info.magic));
  std::memcpy(&info.root, id.internal + kUniqueIdAddrOffset, sizeof(info.root));
  std::memcpy(&info.growFromRanks, id.internal + kUniqueIdGrowOffset, sizeof(info.growFromRanks));
  std::memcpy(info.secret.data(), id.internal + kUniqueIdSecretOffset, info.secret.size());
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
  // except the grow field and the secret.
  size_t usedAddr = info.root.length();
  for (size_t i = kUniqueIdAddrOffset + usedAddr; i < sizeof(id.internal); ++i) {
    if (i >= kUniqueIdGrowOffset && i < kUniqueIdSecretOffset + kSecretBytes) continue;
    if (id.internal[i] != 0)
      return fail(ncclInvalidArgument,
                  "%s: invalid ncclUniqueId: byte %zu is 0x%02x where 0 was expected (%s)", caller, i,
                  static_cast<unsigned char>(id.internal[i]), kHint);
  }
  *out = info;
  return ncclSuccess;
}

ncclResult_t randomMagic(uint64_t* out) {
  uint64_t magic = 0;
  while (magic == 0 || magic == kCommIdMagic)
    if (!secureRandom(&magic, sizeof(magic)))
      return fail(ncclSystemError, "ncclGetUniqueId: no random bytes from getrandom or /dev/urandom: %s",
                  strerror(errno));
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
    info.secret = commIdSecret();
    encodeUniqueId(info, out);
    ACCL_INFO(ACCL_LOG_BOOTSTRAP, "ncclGetUniqueId: NCCL_COMM_ID set, root will be hosted by rank 0 at %s (%s)",
              commId.toString().c_str(),
              paramStr("ACCL_BOOTSTRAP_SECRET").empty()
                  ? "no ACCL_BOOTSTRAP_SECRET: anyone who can reach that port can join"
                  : "connections must prove ACCL_BOOTSTRAP_SECRET");
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
  if (!secureRandom(info.secret.data(), info.secret.size()))
    return fail(ncclSystemError, "ncclGetUniqueId: no random bytes for the id's secret: %s", strerror(errno));
  info.root = listener.localAddress();
  ACCL_CHECK(startBootstrapRoot(std::move(listener), info.key(), rootIdleTimeoutMs));
  encodeUniqueId(info, out);
  ACCL_INFO(ACCL_LOG_BOOTSTRAP, "ncclGetUniqueId: bootstrap root listening on %s",
            info.root.toString().c_str());
  return ncclSuccess;
}

}  // namespace accl
