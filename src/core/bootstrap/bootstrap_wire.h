// Messages exchanged during bootstrap, and their decoders.
//   rank -> root          JoinRequest   (on a connection authenticated with the id's secret)
//   block root -> root 0  RootReport    (authenticated with ids[0]'s secret)
//   root -> rank / block root  JoinReply
//   between ranks, after the authenticated handshake: PeerHello on every new connection, then
//   MessageHeader before each send/recv payload.
// All peers run the same library build, so the structs travel as raw bytes. Every root-bound message
// starts with a WireHeader {kind, version, total bytes}. Nothing received is used before it passed
// the matching decode function below, which checks sizes and every field's bounds (ranks in range,
// nranks <= kMaxRanks, lengths bounded) before anything is allocated or indexed with it. The decoders
// are pure (bytes in, parsed message or a reason out): tests and fuzzers call them directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/bootstrap/unique_id.h"  // kMaxRanks
#include "util/socket.h"
#include "util/socket_auth.h"

namespace accl {

// Longest bootstrap timeout a join may carry (one week), and the largest peer message payload.
constexpr int64_t kMaxWireTimeoutMs = 7LL * 24 * 3600 * 1000;
constexpr uint64_t kMaxPeerMessageBytes = 1ull << 30;

constexpr uint32_t kWireVersion = 2;
constexpr uint32_t kJoinRequestKind = 0x6a6f696e;  // "join"
constexpr uint32_t kRootReportKind = 0x726f6f74;   // "root"
constexpr uint32_t kJoinReplyKind = 0x7265706c;    // "repl"
constexpr size_t kWireMessageBytes = 1024;

struct WireHeader {
  uint32_t kind;
  uint32_t version;
  uint32_t bytes;  // size of the whole message, header included
  uint32_t reserved;
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
  uint8_t root0Secret[kSecretBytes];
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
  WireHeader header;
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

inline WireHeader wireHeader(uint32_t kind, size_t bytes) {
  return WireHeader{kind, kWireVersion, static_cast<uint32_t>(bytes), 0};
}

// ---- Decoders: false with the reason in *why for anything short, long or out of bounds. ----

// The leading header of a root-bound or root-sent message (`bytes` may be just the header): known kind,
// this version, and a total size equal to that kind's struct.
bool decodeWireHeader(const void* data, size_t bytes, WireHeader* out, std::string* why);
bool decodeJoinRequest(const void* data, size_t bytes, JoinRequest* out, std::string* why);
bool decodeRootReport(const void* data, size_t bytes, RootReport* out, std::string* why);
bool decodeJoinReply(const void* data, size_t bytes, JoinReply* out, std::string* why);
bool decodePeerHello(const void* data, size_t bytes, int nranks, PeerHello* out, std::string* why);
bool decodeMessageHeader(const void* data, size_t bytes, MessageHeader* out, std::string* why);

// What a bootstrap root reads from an authenticated connection: a join or a block report.
struct RootBoundMessage {
  uint32_t kind = 0;  // kJoinRequestKind or kRootReportKind
  JoinRequest join{};
  RootReport report{};
};
// The whole message (header and body) in one buffer. The fuzzing entry point for the root's input.
bool decodeRootBound(const void* data, size_t bytes, RootBoundMessage* out, std::string* why);

// Rank blocks for scalable init with k ids: block i starts at i*floor(n/k) + min(i, n mod k) and has
// floor(n/k) ranks, plus one for the first n mod k blocks. Requires 1 <= nroots <= nranks.
struct RankBlock {
  int first;
  int count;
};

inline RankBlock rankBlock(int nranks, int nroots, int root) {
  int64_t base = nranks / nroots, extra = nranks % nroots;
  return RankBlock{static_cast<int>(root * base + (root < extra ? root : extra)),
                   static_cast<int>(base + (root < extra ? 1 : 0))};
}

inline int rootOfRank(int nranks, int nroots, int rank) {
  int64_t base = nranks / nroots, extra = nranks % nroots;
  int64_t bigSpan = extra * (base + 1);  // ranks covered by the larger blocks
  if (rank < bigSpan) return static_cast<int>(rank / (base + 1));
  return static_cast<int>(extra + (rank - bigSpan) / base);
}

}  // namespace accl
