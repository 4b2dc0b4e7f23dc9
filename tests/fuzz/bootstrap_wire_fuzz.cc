// Fuzz target: the bootstrap's message decoders (core/bootstrap/bootstrap_wire.h: join requests, block
// reports, join replies, peer hellos, message headers, the root's decodeRootBound entry point) and
// the connection handshake's decoders (util/socket_auth.h). Input: one selector byte, then the bytes
// received. Properties: a decoder that accepts a message leaves every field within its documented
// bounds (so nothing later indexes or allocates with an unchecked value); a refusal says why; a
// client proof built from fuzzed nonces verifies only unaltered and only under the right key.
#include <cstring>
#include <memory>
#include <string>

#include "core/bootstrap/bootstrap_wire.h"
#include "fuzz_target.h"
#include "nccl.h"
#include "util/socket_auth.h"

using namespace accl;

namespace {

void checkJoin(const JoinRequest& r) {
  FUZZ_CHECK(r.nranks >= 1 && r.nranks <= kMaxRanks);
  FUZZ_CHECK(r.rank >= 0 && r.rank < r.nranks);
  FUZZ_CHECK(r.nroots >= 1 && r.nroots <= r.nranks);
  FUZZ_CHECK(r.rootIndex >= 0 && r.rootIndex < r.nroots);
  RankBlock block = rankBlock(r.nranks, r.nroots, r.rootIndex);
  FUZZ_CHECK(block.count >= 1 && block.first >= 0 && block.first + block.count <= r.nranks);
  FUZZ_CHECK(r.rank >= block.first && r.rank < block.first + block.count);
  FUZZ_CHECK(r.timeoutMs >= 0 && r.timeoutMs <= kMaxWireTimeoutMs);
  FUZZ_CHECK(r.listenAddr.isInet() && r.listenAddr.port() != 0);
}

void checkReport(const RootReport& r) {
  FUZZ_CHECK(r.nranks >= 2 && r.nranks <= kMaxRanks);
  FUZZ_CHECK(r.nroots >= 2 && r.nroots <= r.nranks);
  FUZZ_CHECK(r.rootIndex >= 1 && r.rootIndex < r.nroots);
  FUZZ_CHECK(r.status >= 0 && r.status < ncclNumResults);
  FUZZ_CHECK(std::memchr(r.message, '\0', sizeof(r.message)) != nullptr);
  FUZZ_CHECK(r.timeoutMs >= 0 && r.timeoutMs <= kMaxWireTimeoutMs);
}

void checkAuth(const uint8_t* data, size_t size) {
  SocketKey key;
  key.magic = 0x0123456789abcdefull;
  for (size_t i = 0; i < key.secret.size(); ++i) key.secret[i] = static_cast<uint8_t>(i * 7 + 1);
  std::string why;
  // Whatever arrives as a proof: never accepted (forging the HMAC is not a fuzzer's job).
  AuthNonces nonces{};
  AuthVerdict verdict = verifyClientProof(key, 1, data, size, &nonces, &why);
  FUZZ_CHECK(verdict != AuthVerdict::kOk);
  FUZZ_CHECK(!why.empty());
  uint8_t serverNonce[kAuthNonceBytes];
  if (!decodeServerChallenge(data, size, serverNonce, &why)) FUZZ_CHECK(!why.empty());

  // A genuine proof over nonces taken from the input verifies; one flipped byte or another secret
  // does not.
  if (size < 2 * kAuthNonceBytes + 1) return;
  AuthNonces genuine{};
  std::memcpy(genuine.server, data, kAuthNonceBytes);
  std::memcpy(genuine.client, data + kAuthNonceBytes, kAuthNonceBytes);
  uint8_t proof[kClientProofBytes];
  encodeClientProof(key, 1, genuine, proof);
  AuthNonces got{};
  std::memcpy(got.server, genuine.server, kAuthNonceBytes);
  FUZZ_CHECK(verifyClientProof(key, 1, proof, sizeof(proof), &got, &why) == AuthVerdict::kOk);
  FUZZ_CHECK(std::memcmp(got.client, genuine.client, kAuthNonceBytes) == 0);
  uint8_t altered[kClientProofBytes];
  std::memcpy(altered, proof, sizeof(proof));
  altered[data[2 * kAuthNonceBytes] % kClientProofBytes] ^= 0x01;
  FUZZ_CHECK(verifyClientProof(key, 1, altered, sizeof(altered), &got, &why) != AuthVerdict::kOk);
  SocketKey other = key;
  other.secret[data[2 * kAuthNonceBytes] % kSecretBytes] ^= 0x80;
  FUZZ_CHECK(verifyClientProof(other, 1, proof, sizeof(proof), &got, &why) != AuthVerdict::kOk);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  // The decoders get the message at an aligned address, as the library's receive buffers are.
  // (bootstrap_wire.cc once read a field through a misaligned struct pointer: UBSan found it when
  // the message started at data + 1.)
  std::unique_ptr<uint8_t[]> aligned(new uint8_t[size]);
  if (size > 1) std::memcpy(aligned.get(), data + 1, size - 1);
  const uint8_t* msg = aligned.get();
  size_t bytes = size - 1;
  std::string why;
  bool ok = false;
  switch (selector % 7) {
    case 0: {
      RootBoundMessage m;
      ok = decodeRootBound(msg, bytes, &m, &why);
      if (ok && m.kind == kJoinRequestKind) checkJoin(m.join);
      if (ok && m.kind == kRootReportKind) checkReport(m.report);
      if (ok) FUZZ_CHECK(m.kind == kJoinRequestKind || m.kind == kRootReportKind);
      break;
    }
    case 1: {
      JoinRequest r;
      if ((ok = decodeJoinRequest(msg, bytes, &r, &why))) checkJoin(r);
      break;
    }
    case 2: {
      RootReport r;
      if ((ok = decodeRootReport(msg, bytes, &r, &why))) checkReport(r);
      break;
    }
    case 3: {
      JoinReply r;
      if ((ok = decodeJoinReply(msg, bytes, &r, &why))) {
        FUZZ_CHECK(r.status >= 0 && r.status < ncclNumResults && r.status != ncclInProgress);
        FUZZ_CHECK(std::memchr(r.message, '\0', sizeof(r.message)) != nullptr);
      }
      break;
    }
    case 4: {
      // The selector's high bits pick the communicator size the hello is checked against.
      int nranks = 1 + (selector >> 3);
      PeerHello h;
      if ((ok = decodePeerHello(msg, bytes, nranks, &h, &why))) FUZZ_CHECK(h.fromRank >= 0 && h.fromRank < nranks);
      break;
    }
    case 5: {
      MessageHeader h;
      if ((ok = decodeMessageHeader(msg, bytes, &h, &why))) FUZZ_CHECK(h.bytes <= kMaxPeerMessageBytes);
      break;
    }
    default:
      checkAuth(msg, bytes);
      return 0;
  }
  if (!ok) FUZZ_CHECK(!why.empty());
  return 0;
}
