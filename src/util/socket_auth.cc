// SHA-256 and HMAC-SHA-256 (libcrypto's, util/openssl_lib.h), the kernel random source, and the
// handshake steps (see socket_auth.h).
#include "util/socket_auth.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "util/check.h"
#include "util/openssl_lib.h"

namespace accl {
namespace {

void putU64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
void putI32(uint8_t* p, int32_t v) { std::memcpy(p, &v, 4); }

// The bytes a proof covers: label | magic | type | server nonce | client nonce.
Sha256Digest proofMac(const SocketKey& key, const char* label, int32_t type, const AuthNonces& n) {
  uint8_t msg[16 + 8 + 4 + 2 * kAuthNonceBytes] = {};
  std::strncpy(reinterpret_cast<char*>(msg), label, 16);
  putU64(msg + 16, key.magic);
  putI32(msg + 24, type);
  std::memcpy(msg + 28, n.server, kAuthNonceBytes);
  std::memcpy(msg + 28 + kAuthNonceBytes, n.client, kAuthNonceBytes);
  return hmacSha256(key.secret.data(), key.secret.size(), msg, sizeof(msg));
}

Sha256Digest peerMac(const SocketKey& key, int32_t type, const std::string& dest,
                     const uint8_t (&clientNonce)[kAuthNonceBytes]) {
  std::string msg(16 + 8 + 4 + 2 * kAuthNonceBytes, '\0');
  std::memcpy(&msg[0], "accl-peer", 9);
  std::memcpy(&msg[16], &key.magic, 8);
  std::memcpy(&msg[24], &type, 4);
  std::memcpy(&msg[28 + kAuthNonceBytes], clientNonce, kAuthNonceBytes);
  msg += dest;
  return hmacSha256(key.secret.data(), key.secret.size(), msg.data(), msg.size());
}

// Magic, type and reserved field of a proof (both variants).
AuthVerdict checkProofHeader(const SocketKey& key, int32_t type, const uint8_t* in, size_t bytes,
                             std::string* why) {
  if (bytes != kClientProofBytes) {
    *why = "proof has " + std::to_string(bytes) + " bytes, expected " + std::to_string(kClientProofBytes);
    return AuthVerdict::kMalformed;
  }
  uint64_t magic;
  int32_t gotType;
  uint32_t reserved;
  std::memcpy(&magic, in, 8);
  std::memcpy(&gotType, in + 8, 4);
  std::memcpy(&reserved, in + 12, 4);
  char buf[128];
  if (magic != key.magic) {
    snprintf(buf, sizeof(buf), "wrong magic 0x%llx (another job or a stray client on this port)",
             static_cast<unsigned long long>(magic));
    *why = buf;
    return AuthVerdict::kWrongMagic;
  }
  if (gotType != type || reserved != 0) {
    snprintf(buf, sizeof(buf), "connection type %d (reserved 0x%x), expected %d", gotType, reserved, type);
    *why = buf;
    return AuthVerdict::kWrongType;
  }
  return AuthVerdict::kOk;
}

}  // namespace

void encodePeerProof(const SocketKey& key, int32_t type, const std::string& dest,
                     const uint8_t (&clientNonce)[kAuthNonceBytes], uint8_t* out) {
  std::memset(out, 0, kClientProofBytes);
  putU64(out, key.magic);
  putI32(out + 8, type);
  std::memcpy(out + 16, clientNonce, kAuthNonceBytes);
  Sha256Digest mac = peerMac(key, type, dest, clientNonce);
  std::memcpy(out + 16 + kAuthNonceBytes, mac.data(), mac.size());
}

AuthVerdict verifyPeerProof(const SocketKey& key, int32_t type, const std::string& dest, const uint8_t* in,
                            size_t bytes, uint8_t (&clientNonce)[kAuthNonceBytes], std::string* why) {
  AuthVerdict v = checkProofHeader(key, type, in, bytes, why);
  if (v != AuthVerdict::kOk) return v;
  std::memcpy(clientNonce, in + 16, kAuthNonceBytes);
  Sha256Digest want = peerMac(key, type, dest, clientNonce);
  if (!equalBytes(want.data(), in + 16 + kAuthNonceBytes, want.size())) {
    *why = "right magic but no valid proof of the job's secret";
    return AuthVerdict::kWrongSecret;
  }
  return AuthVerdict::kOk;
}

// Without libcrypto no digest can be made: the result is random, so no proof made or checked with it
// ever verifies (the bootstrap reports the missing library before it gets here; see cryptoLib).
static Sha256Digest unverifiable() {
  Sha256Digest out{};
  (void)secureRandom(out.data(), out.size());
  return out;
}

ncclResult_t requireLibcrypto(const char* who) {
  const char* why = nullptr;
  if (cryptoLib(&why)) return ncclSuccess;
  return fail(ncclSystemError, "%s: the bootstrap's HMAC-SHA-256 needs OpenSSL 3's libcrypto: %s", who, why);
}

Sha256Digest sha256(const void* data, size_t bytes) {
  const CryptoLib* c = cryptoLib(nullptr);
  if (!c) return unverifiable();
  Sha256Digest out;
  c->SHA256(static_cast<const unsigned char*>(data), bytes, out.data());
  return out;
}

Sha256Digest hmacSha256(const uint8_t* key, size_t keyBytes, const void* data, size_t bytes) {
  const CryptoLib* c = cryptoLib(nullptr);
  if (!c) return unverifiable();
  Sha256Digest out;
  unsigned int len = 0;
  static const uint8_t kEmpty = 0;
  if (!c->HMAC(c->EVP_sha256(), keyBytes ? key : &kEmpty, static_cast<int>(keyBytes),
               bytes ? static_cast<const unsigned char*>(data) : &kEmpty, bytes, out.data(), &len) ||
      len != out.size())
    return unverifiable();
  return out;
}

bool equalBytes(const void* a, const void* b, size_t bytes) {
  const volatile uint8_t* x = static_cast<const uint8_t*>(a);
  const volatile uint8_t* y = static_cast<const uint8_t*>(b);
  uint8_t diff = 0;
  for (size_t i = 0; i < bytes; ++i) diff |= x[i] ^ y[i];
  return diff == 0;
}

bool secureRandom(void* out, size_t bytes) {
  uint8_t* p = static_cast<uint8_t*>(out);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::getrandom(p + got, bytes - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // ENOSYS (old kernel) or similar: fall back to /dev/urandom
    }
  }
  if (got == bytes) return true;
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  while (got < bytes) {
    ssize_t n = ::read(fd, p + got, bytes - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (!(n < 0 && errno == EINTR)) {
      break;
    }
  }
  ::close(fd);
  return got == bytes;
}

void encodeServerChallenge(const uint8_t (&serverNonce)[kAuthNonceBytes], uint8_t* out) {
  putU64(out, kAuthGreeting);
  std::memcpy(out + 8, serverNonce, kAuthNonceBytes);
}

bool decodeServerChallenge(const uint8_t* in, size_t bytes, uint8_t (&serverNonce)[kAuthNonceBytes],
                           std::string* why) {
  uint64_t greeting = 0;
  if (bytes != kServerChallengeBytes) {
    *why = "challenge has " + std::to_string(bytes) + " bytes, expected " + std::to_string(kServerChallengeBytes);
    return false;
  }
  std::memcpy(&greeting, in, 8);
  if (greeting == kTlsRequiredGreeting) {
    *why = "the server requires encryption (TLS with a pre-shared key) and this process does not encrypt: every "
           "rank must call ncclSetEncryption with the same mode and key (or set ACCL_ENCRYPTION_PSK_FILE alike)";
    return false;
  }
  if (greeting != kAuthGreeting) {
    char buf[96];
    snprintf(buf, sizeof(buf), "the server's greeting 0x%llx is not accl's (0x%llx)",
             static_cast<unsigned long long>(greeting), static_cast<unsigned long long>(kAuthGreeting));
    *why = buf;
    return false;
  }
  std::memcpy(serverNonce, in + 8, kAuthNonceBytes);
  return true;
}

void encodeTlsRequiredNotice(uint8_t* out) {
  std::memset(out, 0, kServerChallengeBytes);
  putU64(out, kTlsRequiredGreeting);
  std::memcpy(out + 8, "encrypt: use PSK", 16);
}

void encodeClientProof(const SocketKey& key, int32_t type, const AuthNonces& nonces, uint8_t* out) {
  std::memset(out, 0, kClientProofBytes);
  putU64(out, key.magic);
  putI32(out + 8, type);
  std::memcpy(out + 16, nonces.client, kAuthNonceBytes);
  Sha256Digest mac = proofMac(key, "accl-client", type, nonces);
  std::memcpy(out + 16 + kAuthNonceBytes, mac.data(), mac.size());
}

AuthVerdict verifyClientProof(const SocketKey& key, int32_t type, const uint8_t* in, size_t bytes,
                              AuthNonces* nonces, std::string* why) {
  AuthVerdict v = checkProofHeader(key, type, in, bytes, why);
  if (v != AuthVerdict::kOk) return v;
  std::memcpy(nonces->client, in + 16, kAuthNonceBytes);
  Sha256Digest want = proofMac(key, "accl-client", type, *nonces);
  if (!equalBytes(want.data(), in + 16 + kAuthNonceBytes, want.size())) {
    *why = "right magic but no valid proof of the job's secret";
    return AuthVerdict::kWrongSecret;
  }
  return AuthVerdict::kOk;
}

void encodeServerProof(const SocketKey& key, int32_t type, const AuthNonces& nonces, uint8_t* out) {
  Sha256Digest mac = proofMac(key, "accl-server", type, nonces);
  std::memcpy(out, mac.data(), mac.size());
}

bool verifyServerProof(const SocketKey& key, int32_t type, const AuthNonces& nonces, const uint8_t* in,
                       size_t bytes) {
  if (bytes != kServerProofBytes) return false;
  Sha256Digest want = proofMac(key, "accl-server", type, nonces);
  return equalBytes(want.data(), in, want.size());
}

}  // namespace accl
