// Decoders of the bootstrap's messages (see bootstrap_wire.h): sizes first, then every field's bounds.
#include "core/bootstrap/bootstrap_wire.h"

#include <cstring>
#include <memory>

#include "nccl.h"

namespace accl {
namespace {

std::string str(long long v) { return std::to_string(v); }

bool bad(std::string* why, const std::string& text) {
  if (why) *why = text;
  return false;
}

bool exactSize(size_t bytes, size_t want, const char* what, std::string* why) {
  if (bytes == want) return true;
  return bad(why, std::string(what) + " has " + str(static_cast<long long>(bytes)) + " bytes, expected " +
                      str(static_cast<long long>(want)));
}

bool validStatus(int32_t status) { return status >= 0 && status < ncclNumResults && status != ncclInProgress; }

bool connectable(const SocketAddress& a) { return a.isInet() && a.port() != 0; }

size_t sizeOfKind(uint32_t kind) {
  switch (kind) {
    case kJoinRequestKind:
      return sizeof(JoinRequest);
    case kRootReportKind:
      return sizeof(RootReport);
    case kJoinReplyKind:
      return sizeof(JoinReply);
    default:
      return 0;
  }
}

bool checkHeader(const void* data, size_t bytes, uint32_t kind, const char* what, WireHeader* h, std::string* why) {
  if (!decodeWireHeader(data, bytes, h, why)) return false;
  if (h->kind != kind) return bad(why, std::string(what) + " expected, got another kind of message");
  return exactSize(bytes, sizeOfKind(kind), what, why);
}

}  // namespace

bool decodeWireHeader(const void* data, size_t bytes, WireHeader* out, std::string* why) {
  if (!data || bytes < sizeof(WireHeader))
    return bad(why, "message header has " + str(static_cast<long long>(bytes)) + " bytes, expected at least " +
                        str(sizeof(WireHeader)));
  WireHeader h;
  std::memcpy(&h, data, sizeof(h));
  size_t want = sizeOfKind(h.kind);
  char buf[160];
  if (want == 0) {
    snprintf(buf, sizeof(buf), "unknown message kind 0x%08x", h.kind);
    return bad(why, buf);
  }
  if (h.version != kWireVersion)
    return bad(why, "bootstrap protocol version " + str(h.version) + ", this library speaks " + str(kWireVersion) +
                        " (mixed library versions?)");
  if (h.bytes != want)
    return bad(why, "length field " + str(h.bytes) + " does not match the message's size " +
                        str(static_cast<long long>(want)));
  if (h.reserved != 0) return bad(why, "reserved header field is " + str(h.reserved) + ", expected 0");
  *out = h;
  return true;
}

bool decodeJoinRequest(const void* data, size_t bytes, JoinRequest* out, std::string* why) {
  WireHeader h;
  if (!checkHeader(data, bytes, kJoinRequestKind, "join request", &h, why)) return false;
  JoinRequest r;
  std::memcpy(static_cast<void*>(&r), data, sizeof(r));
  if (r.nranks < 1 || r.nranks > kMaxRanks)
    return bad(why, "join: nranks " + str(r.nranks) + " is outside [1, " + str(kMaxRanks) + "]");
  if (r.rank < 0 || r.rank >= r.nranks)
    return bad(why, "join: rank " + str(r.rank) + " is outside [0, nranks=" + str(r.nranks) + ")");
  if (r.nroots < 1 || r.nroots > r.nranks)
    return bad(why, "join: " + str(r.nroots) + " ids for " + str(r.nranks) + " ranks");
  if (r.rootIndex < 0 || r.rootIndex >= r.nroots || r.rootIndex != rootOfRank(r.nranks, r.nroots, r.rank))
    return bad(why, "join: id index " + str(r.rootIndex) + " is not the block of rank " + str(r.rank) + " (" +
                        str(r.nranks) + " ranks, " + str(r.nroots) + " ids)");
  if (r.timeoutMs < 0 || r.timeoutMs > kMaxWireTimeoutMs)
    return bad(why, "join: timeout " + str(r.timeoutMs) + " ms is outside [0, " + str(kMaxWireTimeoutMs) + "]");
  if (!connectable(r.listenAddr)) return bad(why, "join: the rank's listener address is not connectable");
  if (r.nroots > 1 && !connectable(r.root0Addr)) return bad(why, "join: the address of root 0 is not connectable");
  *out = r;
  return true;
}

bool decodeRootReport(const void* data, size_t bytes, RootReport* out, std::string* why) {
  WireHeader h;
  if (!checkHeader(data, bytes, kRootReportKind, "block report", &h, why)) return false;
  // Copied out first: `data` may be unaligned, so no field is read through a RootReport pointer.
  auto r = std::make_unique<RootReport>();
  std::memcpy(static_cast<void*>(r.get()), data, sizeof(RootReport));
  const int32_t rootIndex = r->rootIndex, nroots = r->nroots, nranks = r->nranks, status = r->status;
  if (nranks < 2 || nranks > kMaxRanks)
    return bad(why, "block report: nranks " + str(nranks) + " is outside [2, " + str(kMaxRanks) + "]");
  if (nroots < 2 || nroots > nranks)
    return bad(why, "block report: " + str(nroots) + " ids for " + str(nranks) + " ranks");
  if (rootIndex < 1 || rootIndex >= nroots)
    return bad(why, "block report: id index " + str(rootIndex) + " is outside [1, " + str(nroots) + ")");
  if (!validStatus(status)) return bad(why, "block report: status " + str(status) + " is not an ncclResult_t");
  r->message[kWireMessageBytes - 1] = '\0';
  if (r->timeoutMs < 0 || r->timeoutMs > kMaxWireTimeoutMs)
    return bad(why, "block report: timeout " + str(r->timeoutMs) + " ms is out of range");
  if (status == ncclSuccess && !connectable(r->firstRankAddr))
    return bad(why, "block report: the first rank's address is not connectable");
  std::memcpy(static_cast<void*>(out), r.get(), sizeof(RootReport));
  return true;
}

bool decodeJoinReply(const void* data, size_t bytes, JoinReply* out, std::string* why) {
  WireHeader h;
  if (!checkHeader(data, bytes, kJoinReplyKind, "join reply", &h, why)) return false;
  std::memcpy(static_cast<void*>(out), data, sizeof(JoinReply));
  out->message[kWireMessageBytes - 1] = '\0';
  if (!validStatus(out->status)) return bad(why, "join reply: status " + str(out->status) + " is not an ncclResult_t");
  if (out->status == ncclSuccess && !connectable(out->nextAddr))
    return bad(why, "join reply: the successor's address is not connectable");
  return true;
}

bool decodePeerHello(const void* data, size_t bytes, int nranks, PeerHello* out, std::string* why) {
  if (!data || !exactSize(bytes, sizeof(PeerHello), "peer hello", why)) return false;
  PeerHello h;
  std::memcpy(&h, data, sizeof(h));
  if (h.link != static_cast<uint32_t>(PeerLink::kRing) && h.link != static_cast<uint32_t>(PeerLink::kP2p))
    return bad(why, "peer hello: unknown link kind " + str(h.link));
  if (h.fromRank < 0 || h.fromRank >= nranks)
    return bad(why, "peer hello: rank " + str(h.fromRank) + " is outside [0, " + str(nranks) + ")");
  *out = h;
  return true;
}

bool decodeMessageHeader(const void* data, size_t bytes, MessageHeader* out, std::string* why) {
  if (!data || !exactSize(bytes, sizeof(MessageHeader), "message header", why)) return false;
  MessageHeader h;
  std::memcpy(&h, data, sizeof(h));
  if (h.bytes > kMaxPeerMessageBytes)
    return bad(why, "message length " + std::to_string(h.bytes) + " exceeds the bootstrap's limit of " +
                        std::to_string(kMaxPeerMessageBytes) + " bytes");
  if (h.reserved != 0) return bad(why, "message header: reserved field is " + str(h.reserved) + ", expected 0");
  *out = h;
  return true;
}

bool decodeRootBound(const void* data, size_t bytes, RootBoundMessage* out, std::string* why) {
  WireHeader h;
  if (!decodeWireHeader(data, bytes, &h, why)) return false;
  out->kind = h.kind;
  if (h.kind == kJoinRequestKind) return decodeJoinRequest(data, bytes, &out->join, why);
  if (h.kind == kRootReportKind) return decodeRootReport(data, bytes, &out->report, why);
  return bad(why, "a join reply is not a message for a root");
}

}  // namespace accl
