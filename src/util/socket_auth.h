// Authentication of control connections by a shared secret (the bootstrap's, from the ncclUniqueId):
// SHA-256 / HMAC-SHA-256 (libcrypto's; without libcrypto.so.3 they return random bytes, so nothing
// verifies: the bootstrap checks cryptoLib() first to report it), the key a connection proves, and
// the pure encode/verify steps of the challenge-response handshake that Socket::connect(SocketKey) and SocketAcceptor run.
//
// Handshake (the server speaks first; nothing from the client is read before its proof):
//   server -> client  ServerChallenge  u64 kAuthGreeting, u8 nonce[16]                    (24 bytes)
//   client -> server  ClientProof      u64 magic, i32 type, u32 0, u8 nonce[16],
//                                      u8 mac[32] = HMAC(secret, "accl-client" | magic | type | Ns | Nc)
//                                                                                         (64 bytes)
//   server -> client  ServerProof      u8 mac[32] = HMAC(secret, "accl-server" | magic | type | Ns | Nc)
// Both sides prove the secret without sending it, so a process squatting on a port learns nothing it
// can replay; fresh nonces on both sides defeat replays. Used where the server always serves (the
// bootstrap roots), so the client can wait for the server's proof before it says anything else.
//
// Client-first variant, for ranks' peer listeners (two ranks may dial each other at the same moment,
// neither serving its listener, so a client must not wait for the server):
//   client -> server  ClientProof with mac = HMAC(secret, "accl-peer" | magic | type | 0s | Nc | dest)
// where dest is the listener address the client dialed (so a proof cannot be relayed to another
// listener), followed at once by the client's own protocol. The server checks the proof before it
// reads anything else and refuses a client nonce it has already seen (replays).
// The magic travels in clear only to tell "another job" (wrong magic) from "this job, wrong secret".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"

namespace accl {

using Sha256Digest = std::array<uint8_t, 32>;

// ncclSuccess when libcrypto is there; else ncclSystemError naming the library and `who`.
ncclResult_t requireLibcrypto(const char* who);

Sha256Digest sha256(const void* data, size_t bytes);
Sha256Digest hmacSha256(const uint8_t* key, size_t keyBytes, const void* data, size_t bytes);

// Constant-time equality of two byte strings of the same length.
bool equalBytes(const void* a, const void* b, size_t bytes);

// Fills `bytes` from the kernel's random source (getrandom, else /dev/urandom). False on failure.
bool secureRandom(void* out, size_t bytes);

constexpr size_t kSecretBytes = 32;

// What a connection must prove: the job's magic and secret.
struct SocketKey {
  uint64_t magic = 0;
  std::array<uint8_t, kSecretBytes> secret{};
};

constexpr uint64_t kAuthGreeting = 0x31687475616c6363ull;  // "cclauth1"
// What an encrypted server sends, in clear and in place of a challenge, to a client that does not
// speak TLS before it closes: decodeServerChallenge turns it into "the server requires encryption".
constexpr uint64_t kTlsRequiredGreeting = 0x2173736c74636361ull;  // "accltls!"
void encodeTlsRequiredNotice(uint8_t* out);  // kServerChallengeBytes bytes
constexpr size_t kAuthNonceBytes = 16;
constexpr size_t kServerChallengeBytes = 8 + kAuthNonceBytes;            // 24
constexpr size_t kClientProofBytes = 8 + 4 + 4 + kAuthNonceBytes + 32;   // 64
constexpr size_t kServerProofBytes = 32;

struct AuthNonces {
  uint8_t server[kAuthNonceBytes];
  uint8_t client[kAuthNonceBytes];
};

// Pure steps of the handshake. The verify functions return false and say why in *why.
void encodeServerChallenge(const uint8_t (&serverNonce)[kAuthNonceBytes], uint8_t* out);
bool decodeServerChallenge(const uint8_t* in, size_t bytes, uint8_t (&serverNonce)[kAuthNonceBytes],
                           std::string* why);
void encodeClientProof(const SocketKey& key, int32_t type, const AuthNonces& nonces, uint8_t* out);

enum class AuthMode { kChallenge, kClientFirst };

// Client-first proof for the listener at `dest` (its SocketAddress::toString()).
void encodePeerProof(const SocketKey& key, int32_t type, const std::string& dest,
                     const uint8_t (&clientNonce)[kAuthNonceBytes], uint8_t* out);

enum class AuthVerdict { kOk, kMalformed, kWrongMagic, kWrongType, kWrongSecret };
// Checks a client-first proof; on kOk fills *clientNonce (the caller refuses nonces seen before).
AuthVerdict verifyPeerProof(const SocketKey& key, int32_t type, const std::string& dest, const uint8_t* in,
                            size_t bytes, uint8_t (&clientNonce)[kAuthNonceBytes], std::string* why);
// Checks a client proof against the server's key, type and nonce; on kOk fills nonces->client.
AuthVerdict verifyClientProof(const SocketKey& key, int32_t type, const uint8_t* in, size_t bytes,
                              AuthNonces* nonces, std::string* why);
void encodeServerProof(const SocketKey& key, int32_t type, const AuthNonces& nonces, uint8_t* out);
bool verifyServerProof(const SocketKey& key, int32_t type, const AuthNonces& nonces, const uint8_t* in,
                       size_t bytes);

}  // namespace accl
