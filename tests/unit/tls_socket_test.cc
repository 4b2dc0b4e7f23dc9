// Unit tests for encrypted sockets (util/tls_config, util/tls_session, the TLS branch of
// util/socket): a loopback pair exchanges awkward sizes both ways and in one direction while the
// other side has not yet accepted; different keys, and a plaintext end against an encrypted one,
// fail on both ends with a message that says so; libcrypto's digests match the FIPS vectors.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <future>
#include <numeric>
#include <string>
#include <vector>

#include "util/last_error.h"
#include "util/openssl_lib.h"
#include "util/socket.h"
#include "util/tls_config.h"

namespace accl {
namespace {

constexpr uint64_t kMagic = 0x7e57c0de7e57c0deull;
const char kKeyA[] = "an encryption key of more than thirty-two bytes, A";
const char kKeyB[] = "an encryption key of more than thirty-two bytes, B";

// Leaves the process plaintext whatever the test did.
struct PlaintextAfter {
  ~PlaintextAfter() { EXPECT_EQ(setEncryptionNone(), ncclSuccess); }
};

SocketAddress loopback() {
  SocketAddress a;
  EXPECT_EQ(SocketAddress::parse("127.0.0.1:0", &a), ncclSuccess);
  return a;
}

std::vector<char> pattern(size_t bytes, int seed) {
  std::vector<char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<char>((i * 131 + seed) % 251);
  return v;
}

TEST(TlsSocket, LibcryptoDigestsMatchTheStandardVectors) {
  const char* why = nullptr;
  ASSERT_NE(cryptoLib(&why), nullptr) << why;
  Sha256Digest d = sha256("abc", 3);
  EXPECT_EQ(d[0], 0xba);
  EXPECT_EQ(d[31], 0xad);
  // RFC 4231 case 2.
  const char* msg = "what do ya want for nothing?";
  Sha256Digest h = hmacSha256(reinterpret_cast<const uint8_t*>("Jefe"), 4, msg, strlen(msg));
  EXPECT_EQ(h[0], 0x5b);
  EXPECT_EQ(h[31], 0x43);
}

TEST(TlsSocket, EncryptedPairMovesAwkwardSizesBothWays) {
  PlaintextAfter reset;
  ASSERT_EQ(setEncryptionPsk(kKeyA, strlen(kKeyA)), ncclSuccess) << lastErrorText();
  Socket listener;
  ASSERT_EQ(Socket::listen(loopback(), &listener), ncclSuccess);
  SocketWait w = SocketWait::in(10000, nullptr, "test data");
  // The client connects and writes before the server accepts: writes queue behind the handshake.
  Socket client;
  ASSERT_EQ(Socket::connect(listener.localAddress(), kMagic, SocketType::kBootstrap, w, &client), ncclSuccess);
  EXPECT_TRUE(client.encrypted());
  std::vector<char> early = pattern(70001, 1);
  ASSERT_EQ(client.sendAll(early.data(), early.size(), w), ncclSuccess);
  Socket server;
  ASSERT_EQ(listener.accept(kMagic, SocketType::kBootstrap, w, &server), ncclSuccess) << lastErrorText();
  EXPECT_TRUE(server.encrypted());
  std::vector<char> got(early.size());
  ASSERT_EQ(server.recvAll(got.data(), got.size(), w), ncclSuccess) << lastErrorText();
  EXPECT_EQ(got, early);
  // Both directions at once, larger than any socket buffer, odd sizes.
  std::vector<char> a = pattern(3 * 1024 * 1024 + 7, 2), b = pattern(2 * 1024 * 1024 + 13, 3);
  std::vector<char> gotA(a.size()), gotB(b.size());
  auto peer = std::async(std::launch::async, [&] {
    return Socket::sendRecv(server, b.data(), b.size(), server, gotA.data(), gotA.size(), w);
  });
  ASSERT_EQ(Socket::sendRecv(client, a.data(), a.size(), client, gotB.data(), gotB.size(), w), ncclSuccess);
  ASSERT_EQ(peer.get(), ncclSuccess);
  EXPECT_EQ(gotA, a);
  EXPECT_EQ(gotB, b);
  // The peer's close reads as a close, not as a TLS failure.
  client.close();
  char c;
  SocketWait quick = SocketWait::in(5000, nullptr, "the close", /*quiet=*/true);
  EXPECT_EQ(server.recvAll(&c, 1, quick), ncclRemoteError);
  EXPECT_NE(std::string(lastSocketErrorText()).find("closed by the peer"), std::string::npos) << lastSocketErrorText();
}

// A listener and a connected client whose session was made under `clientKey` (null: plaintext),
// and the accepted end made under `serverKey`: each end keeps the setting it was made with.
struct Pair {
  Socket listener, client, server;
  Pair(const char* clientKey, const char* serverKey) {
    EXPECT_EQ(Socket::listen(loopback(), &listener), ncclSuccess);
    use(clientKey);
    SocketWait w = SocketWait::in(5000, nullptr, "test data", /*quiet=*/true);
    EXPECT_EQ(Socket::connect(listener.localAddress(), kMagic, SocketType::kBootstrap, w, &client), ncclSuccess);
    use(serverKey);
    EXPECT_EQ(listener.acceptRaw(w, &server), ncclSuccess);
  }
  static void use(const char* key) {
    EXPECT_EQ(key ? setEncryptionPsk(key, strlen(key)) : setEncryptionNone(), ncclSuccess);
  }
};

// What a plaintext client reads where the root's challenge would be: the notice, in clear.
void expectEncryptionRequiredNotice(Socket& client) {
  SocketWait w = SocketWait::in(5000, nullptr, "the notice", /*quiet=*/true);
  uint8_t notice[kServerChallengeBytes];
  ASSERT_EQ(client.recvAll(notice, sizeof(notice), w), ncclSuccess) << lastSocketErrorText();
  uint8_t nonce[kAuthNonceBytes];
  std::string why;
  EXPECT_FALSE(decodeServerChallenge(notice, sizeof(notice), nonce, &why));
  EXPECT_NE(why.find("requires encryption"), std::string::npos) << why;
}

TEST(TlsSocket, DifferentKeysFailOnBothEndsSayingSo) {
  PlaintextAfter reset;
  Pair p(kKeyA, kKeyB);
  SocketWait w = SocketWait::in(5000, nullptr, "test data", /*quiet=*/true);
  auto serverSide = std::async(std::launch::async, [&] {
    char buf[12];
    ncclResult_t res = p.server.recvAll(buf, sizeof(buf), w);
    return std::make_pair(res, std::string(lastSocketErrorText()));
  });
  char answer[4];
  EXPECT_EQ(p.client.recvAll(answer, sizeof(answer), w), ncclRemoteError);
  std::string clientText = lastSocketErrorText();
  auto [serverRes, serverText] = serverSide.get();
  EXPECT_EQ(serverRes, ncclRemoteError);
  EXPECT_NE(serverText.find("key differs"), std::string::npos) << serverText;
  EXPECT_NE(clientText.find("key differs"), std::string::npos) << clientText;
}

TEST(TlsSocket, PlaintextClientOfAnEncryptedServerIsToldSo) {
  PlaintextAfter reset;
  Pair p(nullptr, kKeyA);
  SocketWait w = SocketWait::in(5000, nullptr, "test data", /*quiet=*/true);
  // The plaintext client speaks first (a client-first proof, say): the server names the problem...
  uint8_t proof[kClientProofBytes] = {1, 2, 3};
  ASSERT_EQ(p.client.sendAll(proof, sizeof(proof), w), ncclSuccess);
  char buf[8];
  EXPECT_EQ(p.server.recvAll(buf, sizeof(buf), w), ncclRemoteError);
  EXPECT_NE(std::string(lastSocketErrorText()).find("does not speak TLS"), std::string::npos) << lastSocketErrorText();
  // ... and the client reads, in clear where a challenge would be, that encryption is required.
  expectEncryptionRequiredNotice(p.client);
}

TEST(TlsSocket, SilentPlaintextClientIsToldEncryptionIsRequired) {
  PlaintextAfter reset;
  Pair p(nullptr, kKeyA);
  // A client that waits for the server to speak (the bootstrap root's challenge) gets the notice.
  p.server.refuseSilentPeer();
  expectEncryptionRequiredNotice(p.client);
}

// A session that failed without a byte arriving (here: refused as silent; in a run, a failure its
// helper thread met) shows nothing on the fd: a reader waiting for it wakes at once, not at its
// deadline, and reads the error.
TEST(TlsSocket, AFailedSessionWakesItsReaderAtOnce) {
  PlaintextAfter reset;
  Pair p(nullptr, kKeyA);
  p.server.refuseSilentPeer();
  ASSERT_TRUE(p.server.tlsFailed());
  // The client's connect hello is all that ever arrives: taken off the fd, nothing is left to see.
  char junk[256];
  while (::recv(p.server.fd(), junk, sizeof(junk), MSG_DONTWAIT) > 0) {
  }
  SocketWait w = SocketWait::in(3000, nullptr, "test data", /*quiet=*/true);
  const auto t0 = std::chrono::steady_clock::now();
  bool ready = false;
  ASSERT_EQ(p.server.waitReadable(w, &ready), ncclSuccess);
  const auto waitedMs =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(ready) << "waited " << waitedMs << " ms for a fd that shows nothing";
  EXPECT_LT(waitedMs, 1000);
  char c;
  EXPECT_LT(p.server.recvSome(&c, 1), 0);
}

TEST(TlsSocket, EncryptedClientOfAPlaintextServerIsNamed) {
  PlaintextAfter reset;
  Pair p(kKeyA, nullptr);
  SocketWait w = SocketWait::in(5000, nullptr, "test data", /*quiet=*/true);
  // The plaintext server speaks first, as the bootstrap root does.
  uint8_t challenge[kServerChallengeBytes];
  uint8_t nonce[kAuthNonceBytes] = {};
  encodeServerChallenge(nonce, challenge);
  ASSERT_EQ(p.server.sendAll(challenge, sizeof(challenge), w), ncclSuccess);
  char answer[4];
  EXPECT_EQ(p.client.recvAll(answer, sizeof(answer), w), ncclRemoteError);
  EXPECT_NE(std::string(lastSocketErrorText()).find("does not speak TLS"), std::string::npos) << lastSocketErrorText();
}

}  // namespace
}  // namespace accl
