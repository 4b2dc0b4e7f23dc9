// ncclUniqueId: what it contains and how it is made.
//
// Layout (128 bytes, the same positions NCCL uses):
//   bytes  0..7   u64 magic: random (getrandom) for ids made by ncclGetUniqueId, or the fixed
//                 kCommIdMagic when NCCL_COMM_ID names the root;
//   bytes  8..35  the root's socket address (sockaddr_in or sockaddr_in6, 28 bytes);
//   bytes 36..39  u32: 0, except in ids made by ncclCommGetUniqueId, where it is the size of the
//                 communicator being grown (so a joining rank can check its rank and nRanks);
//   bytes 40..71  the job's 32-byte secret: random (getrandom) for ids made by ncclGetUniqueId; with
//                 NCCL_COMM_ID, SHA-256 of ACCL_BOOTSTRAP_SECRET when that is set, else all zeros
//                 (then anyone who can reach the port can join, as with NCCL);
//   bytes 72..127 zero.
// Magic and secret form the communicator's SocketKey: every bootstrap connection (to a root, between
// ranks' listeners) proves it in a challenge-response handshake (util/socket_auth.h) before anything
// else is read. Treat an id like a password.
#pragma once

#include <array>
#include <cstdint>

#include "nccl.h"
#include "util/socket.h"
#include "util/socket_auth.h"

namespace accl {

constexpr uint64_t kCommIdMagic = 0x0280028002800280ull;
constexpr size_t kUniqueIdMagicOffset = 0;
constexpr size_t kUniqueIdAddrOffset = 8;
constexpr size_t kUniqueIdUsedBytes = kUniqueIdAddrOffset + sizeof(SocketAddress);  // 36
constexpr size_t kUniqueIdGrowOffset = kUniqueIdUsedBytes;                            // u32 growFromRanks
constexpr size_t kUniqueIdSecretOffset = 40;                                          // kSecretBytes secret

// The most ranks a communicator may have (the bootstrap's bound on nranks). ncclCommInitRank & co.
// reject more with ncclInvalidArgument.
constexpr int kMaxRanks = 1 << 20;

struct UniqueIdInfo {
  uint64_t magic = 0;
  SocketAddress root;
  uint32_t growFromRanks = 0;  // non-zero only for grow ids (see above)
  std::array<uint8_t, kSecretBytes> secret{};
  SocketKey key() const { return SocketKey{magic, secret}; }
};

// The secret of NCCL_COMM_ID ids: SHA-256 of ACCL_BOOTSTRAP_SECRET, or all zeros when it is unset.
std::array<uint8_t, kSecretBytes> commIdSecret();

// Writes `info` in the layout above (unused bytes zeroed).
void encodeUniqueId(const UniqueIdInfo& info, ncclUniqueId* out);

// Decodes and validates an id: the magic must be non-zero, the family AF_INET/AF_INET6, the port and
// address non-zero and the unused bytes zero (the grow field and the secret are read, not checked). A garbage id (all zeros, random bytes, a truncated copy)
// fails with ncclInvalidArgument and a message that starts with `caller`.
ncclResult_t parseUniqueId(const ncclUniqueId& id, UniqueIdInfo* out,
                           const char* caller = "ncclCommInitRank");

// ncclGetUniqueId's work. Without NCCL_COMM_ID: picks the bootstrap address, opens a listener on an
// ephemeral port, draws a random magic and secret and starts a bootstrap root thread (bootstrap_root.h) that
// serves one communicator creation; it gives up after rootIdleTimeoutMs (< 0: ACCL_BOOTSTRAP_TIMEOUT_MS)
// if no rank ever arrives. With NCCL_COMM_ID=host:port: returns the fixed-magic id for that address
// and starts nothing (rank 0 hosts the root inside Bootstrap::create).
ncclResult_t createUniqueId(ncclUniqueId* out, int64_t rootIdleTimeoutMs = -1);

// Like createUniqueId, but always starts a root in this process and ignores NCCL_COMM_ID. For ids the
// library makes for itself (e.g. the children of ncclCommSplit/ncclCommShrink): several of those can be
// in flight at once and must not all try to host a root on the one NCCL_COMM_ID address.
ncclResult_t createLocalUniqueId(ncclUniqueId* out, int64_t rootIdleTimeoutMs = -1);

// 8 random bytes (getrandom), never 0 and never kCommIdMagic.
ncclResult_t randomMagic(uint64_t* out);

}  // namespace accl
