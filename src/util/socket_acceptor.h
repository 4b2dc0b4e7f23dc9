// SocketAcceptor: the server side of the authenticated handshake (util/socket_auth.h) for a listener
// that strangers can reach. It handshakes with every caller at once, without blocking: each accepted
// connection gets a challenge and a short deadline; nothing the caller sends is read beyond its proof,
// and a connection that is silent, slow, malformed, or proves the wrong secret is logged at INFO
// level with its address and closed. So strangers cannot delay a genuine caller, whatever their number
// (at most maxPending handshakes are kept; beyond that the oldest is dropped).
//
// Two modes (util/socket_auth.h): kChallenge (the acceptor sends a challenge and answers with its own
// proof) and kClientFirst (the client's proof covers this listener's address; replays are refused).
//
// Use: add pollFds() to the owner's poll set, call progress() whenever it wakes (or periodically);
// authenticated connections come out of progress(), ready for the owner's protocol.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "util/socket.h"
#include "util/socket_auth.h"

namespace accl {

class SocketAcceptor {
 public:
  SocketAcceptor() = default;
  SocketAcceptor(const SocketAcceptor&) = delete;
  SocketAcceptor& operator=(const SocketAcceptor&) = delete;

  // `listener` is borrowed and must outlive the acceptor's use. `owner` names it in log lines
  // ("bootstrap root", "rank 3's peer listener").
  void start(const Socket* listener, const SocketKey& key, SocketType type, AuthMode mode, int64_t handshakeMs,
             std::string owner, size_t maxPending = 256);
  bool started() const { return listener_ != nullptr; }

  // Appends the listener and every pending handshake (POLLIN).
  void pollFds(std::vector<pollfd>* fds) const;

  // Non-blocking: accepts whatever is waiting, advances the handshakes, drops the expired ones, and
  // appends the connections that proved the secret to *ready.
  void progress(std::vector<Socket>* ready);

  size_t pending() const { return pending_.size(); }
  // Connections rejected so far (wrong magic, wrong secret, junk, silence, eviction).
  uint64_t rejected() const { return rejected_; }
  // Why the last connection that failed its TLS handshake failed (its address first); "" if none.
  // The bootstrap root adds it to its timeout message: a rank with another key never arrives.
  const std::string& lastTlsFailure() const { return lastTlsFailure_; }
  // Closes every pending handshake.
  void clear() { pending_.clear(); }

 private:
  struct Pending {
    Socket conn;
    int64_t deadlineNs = 0;
    AuthNonces nonces{};
    uint8_t buf[kClientProofBytes] = {};
    size_t have = 0;
  };
  void acceptWaiting(int64_t now);
  // Returns true when the handshake is over (ready or rejected); the entry is then discarded.
  bool advance(Pending& p, int64_t now, std::vector<Socket>* ready);
  // A TLS failure (err EPROTO on an encrypted connection) becomes lastTlsFailure(); true if it was one.
  bool noteTlsFailure(const Pending& p, int err);
  void reject(const Pending& p, const char* why);

  const Socket* listener_ = nullptr;
  SocketKey key_;
  SocketType type_ = SocketType::kBootstrap;
  AuthMode mode_ = AuthMode::kChallenge;
  std::string dest_;  // the listener's address as clients dial it (kClientFirst proofs cover it)
  // Client nonces already accepted (kClientFirst): a replayed proof is refused. Bounded, oldest out.
  std::set<std::string> seen_;
  std::deque<std::string> seenOrder_;
  int64_t handshakeMs_ = 1000;
  size_t maxPending_ = 256;
  std::string owner_;
  std::vector<Pending> pending_;
  uint64_t rejected_ = 0;
  std::string lastTlsFailure_;
};

}  // namespace accl
