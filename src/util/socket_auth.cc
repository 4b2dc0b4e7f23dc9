// SHA-256 (FIPS 180-4), HMAC-SHA-256 (RFC 2104), the kernel random source, and the handshake steps
// (see socket_auth.h).
#include "util/socket_auth.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace accl {
namespace {

constexpr uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress(uint32_t (&h)[8], const uint8_t* block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t(block[4 * i]) << 24) | (uint32_t(block[4 * i + 1]) << 16) | (uint32_t(block[4 * i + 2]) << 8) |
           uint32_t(block[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = k + s1 + ch + kRoundConstants[i] + w[i];
    uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = s0 + maj;
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += k;
}

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

Sha256Digest sha256(const void* data, size_t bytes) {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const uint8_t* p = static_cast<const uint8_t*>(data);
  size_t full = bytes / 64;
  for (size_t i = 0; i < full; ++i) compress(h, p + 64 * i);
  uint8_t tail[128] = {};
  size_t rest = bytes - full * 64;
  if (rest) std::memcpy(tail, p + full * 64, rest);
  tail[rest] = 0x80;
  size_t tailBlocks = rest + 1 + 8 <= 64 ? 1 : 2;
  uint64_t bits = static_cast<uint64_t>(bytes) * 8;
  for (int i = 0; i < 8; ++i) tail[tailBlocks * 64 - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  for (size_t i = 0; i < tailBlocks; ++i) compress(h, tail + 64 * i);
  Sha256Digest out;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(h[i] >> (24 - 8 * j));
  return out;
}

Sha256Digest hmacSha256(const uint8_t* key, size_t keyBytes, const void* data, size_t bytes) {
  uint8_t k[64] = {};
  if (keyBytes > 64) {
    Sha256Digest kh = sha256(key, keyBytes);
    std::memcpy(k, kh.data(), kh.size());
  } else if (keyBytes) {
    std::memcpy(k, key, keyBytes);
  }
  std::vector<uint8_t> inner(64 + bytes);
  for (int i = 0; i < 64; ++i) inner[i] = k[i] ^ 0x36;
  if (bytes) std::memcpy(inner.data() + 64, data, bytes);
  Sha256Digest ih = sha256(inner.data(), inner.size());
  uint8_t outer[64 + 32];
  for (int i = 0; i < 64; ++i) outer[i] = k[i] ^ 0x5c;
  std::memcpy(outer + 64, ih.data(), ih.size());
  return sha256(outer, sizeof(outer));
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
