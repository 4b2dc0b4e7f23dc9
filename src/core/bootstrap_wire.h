// Messages exchanged during bootstrap: rank -> root (JoinRequest), block root -> root 0 (RootReport),
// root -> rank and root 0 -> block root (JoinReply), and the framing between ranks afterwards
// (PeerHello on every new peer connection, MessageHeader before each send/recv payload).
// All peers run the same library build, so the structs travel as raw bytes; `kind` and `version`
// catch a stray or mismatched sender.
#pragma once

#include <cstdint>

#include "util/socket.h"

namespace accl {

constexpr uint32_t kWireVersion = 1;
constexpr uint32_t kJoinRequestKind = 0x6a6f696e;  // "join"
constexpr uint32_t kRootReportKind = 0x726f6f74;   // "root"
constexpr size_t kWireMessageBytes = 1024;

struct WireHeader {
  uint32_t kind;
  uint32_t version;
};

struct JoinRequest {
  WireHeader header;
  int32_t rank;
  int32_t nranks;
  int32_t nroots;
  int32_t rootIndex;         // which unique id (block) this rank belongs to
  int64_t timeoutMs;         // the rank's bootstrap timeout; the root adopts the first arrival's
  SocketAddress listenAddr;  // the rank's peer listener
  SocketAddress root0Addr;   // where block roots report (ids[0]); used when nroots > 1
  uint64_t root0Magic;
};

struct RootReport {
  WireHeader header;
  int32_t rootIndex;
  int32_t nroots;
  int32_t nranks;
  int32_t status;  // ncclResult_t of the block's gather
  int64_t timeoutMs;
  SocketAddress firstRankAddr;  // listener of the block's first rank (valid when status == ncclSuccess)
  char message[kWireMessageBytes];
};

struct JoinReply {
  int32_t status;  // ncclResult_t; on failure `message` says why and the rank fails with it
  int32_t reserved;
  SocketAddress nextAddr;  // rank: its ring successor; block root: the first rank of the next block
  char message[kWireMessageBytes];
};

enum class PeerLink : uint32_t { kRing = 1, kP2p = 2 };

struct PeerHello {
  uint32_t link;  // PeerLink
  int32_t fromRank;
};

struct MessageHeader {
  int32_t tag;
  uint32_t reserved;
  uint64_t bytes;
};

// Rank blocks for scalable init with k ids: block i starts at i*floor(n/k) + min(i, n mod k) and has
// floor(n/k) ranks, plus one for the first n mod k blocks.
struct RankBlock {
  int first;
  int count;
};

inline RankBlock rankBlock(int nranks, int nroots, int root) {
  int base = nranks / nroots, extra = nranks % nroots;
  return RankBlock{root * base + (root < extra ? root : extra), base + (root < extra ? 1 : 0)};
}

inline int rootOfRank(int nranks, int nroots, int rank) {
  int base = nranks / nroots, extra = nranks % nroots;
  int bigSpan = extra * (base + 1);  // ranks covered by the larger blocks
  if (rank < bigSpan) return rank / (base + 1);
  return extra + (rank - bigSpan) / base;
}

}  // namespace accl
