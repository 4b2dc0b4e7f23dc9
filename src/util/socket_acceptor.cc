// Concurrent, non-blocking authenticated accepts (see socket_acceptor.h).
#include "util/socket_acceptor.h"

#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "util/log.h"
#include "util/time.h"

namespace accl {

constexpr size_t kMaxSeenNonces = 1 << 16;

void SocketAcceptor::start(const Socket* listener, const SocketKey& key, SocketType type, AuthMode mode,
                           int64_t handshakeMs, std::string owner, size_t maxPending) {
  listener_ = listener;
  key_ = key;
  type_ = type;
  mode_ = mode;
  dest_ = listener->localAddress().toString();
  seen_.clear();
  seenOrder_.clear();
  handshakeMs_ = handshakeMs > 0 ? handshakeMs : 1000;
  owner_ = std::move(owner);
  maxPending_ = maxPending > 0 ? maxPending : 1;
  pending_.clear();
}

void SocketAcceptor::pollFds(std::vector<pollfd>* fds) const {
  if (!listener_ || !listener_->valid()) return;
  fds->push_back(pollfd{listener_->fd(), POLLIN, 0});
  for (const Pending& p : pending_) fds->push_back(pollfd{p.conn.fd(), POLLIN, 0});
}

void SocketAcceptor::reject(const Pending& p, const char* why) {
  ++rejected_;
  ACCL_INFO(ACCL_LOG_BOOTSTRAP, "%s %s: rejected the connection from %s: %s", owner_.c_str(),
            listener_->localAddress().toString().c_str(), p.conn.peerAddress().toString().c_str(), why);
}

bool SocketAcceptor::noteTlsFailure(const Pending& p, int err) {
  if (err != EPROTO || !p.conn.encrypted()) return false;
  lastTlsFailure_ = p.conn.peerAddress().toString() + ": " + p.conn.ioErrorText(err);
  return true;
}

void SocketAcceptor::acceptWaiting(int64_t now) {
  while (true) {
    SocketAddress peer;
    socklen_t len = sizeof(peer);
    int fd = ::accept4(listener_->fd(), &peer.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
      if ((err == EMFILE || err == ENFILE) && !pending_.empty()) {
        reject(pending_.front(), "dropped to free a descriptor (out of file descriptors)");
        pending_.erase(pending_.begin());
        continue;
      }
      return;  // EAGAIN: nothing more waiting (other errors: the owner's poll loop retries later)
    }
    if (pending_.size() >= maxPending_) {
      reject(pending_.front(), "dropped: too many unfinished handshakes at once (the oldest goes)");
      pending_.erase(pending_.begin());
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Pending p;
    p.conn = Socket(fd, listener_->localAddress(), peer);
    p.deadlineNs = now + handshakeMs_ * 1000000;
    if (p.conn.startTls(/*server=*/true, /*quiet=*/true) != ncclSuccess) {
      reject(p, "could not start TLS on it");
      continue;
    }
    if (mode_ == AuthMode::kClientFirst) {
      pending_.push_back(std::move(p));
      continue;
    }
    uint8_t challenge[kServerChallengeBytes];
    if (!secureRandom(p.nonces.server, sizeof(p.nonces.server))) {
      reject(p, "no random bytes for a challenge");
      continue;
    }
    encodeServerChallenge(p.nonces.server, challenge);
    // A fresh socket's send buffer always takes 24 bytes; anything else means the caller is gone.
    ssize_t n = p.conn.sendSome(challenge, sizeof(challenge));
    if (n != static_cast<ssize_t>(sizeof(challenge))) {
      int err = n < 0 ? errno : 0;
      std::string why = "could not send the challenge";
      if (noteTlsFailure(p, err)) why += ": " + p.conn.ioErrorText(err);
      reject(p, why.c_str());
      continue;
    }
    pending_.push_back(std::move(p));
  }
}

bool SocketAcceptor::advance(Pending& p, int64_t now, std::vector<Socket>* ready) {
  while (p.have < sizeof(p.buf)) {
    ssize_t n = p.conn.recvSome(p.buf + p.have, sizeof(p.buf) - p.have);
    if (n > 0) {
      p.have += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      reject(p, p.have ? "closed in the middle of its handshake" : "closed without a handshake");
      return true;
    }
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (now < p.deadlineNs) return false;
      if (p.conn.encrypted() && p.have == 0) {
        p.conn.refuseSilentPeer();
        lastTlsFailure_ = p.conn.peerAddress().toString() + " sent nothing within " + std::to_string(handshakeMs_) +
                          " ms (a process without encryption, waiting for the server to speak?)";
      }
      std::string why = "no valid handshake within " + std::to_string(handshakeMs_) + " ms (" +
                        std::to_string(p.have) + " of " + std::to_string(sizeof(p.buf)) + " bytes)";
      reject(p, why.c_str());
      return true;
    }
    std::string why = std::string("receive failed: ") + p.conn.ioErrorText(err);
    noteTlsFailure(p, err);
    reject(p, why.c_str());
    return true;
  }
  std::string why;
  if (mode_ == AuthMode::kClientFirst) {
    AuthVerdict v = verifyPeerProof(key_, static_cast<int32_t>(type_), dest_, p.buf, p.have, p.nonces.client, &why);
    if (v != AuthVerdict::kOk) {
      reject(p, why.c_str());
      return true;
    }
    std::string nonce(reinterpret_cast<const char*>(p.nonces.client), kAuthNonceBytes);
    if (!seen_.insert(nonce).second) {
      reject(p, "replayed proof (its nonce was used before)");
      return true;
    }
    seenOrder_.push_back(nonce);
    if (seenOrder_.size() > kMaxSeenNonces) {
      seen_.erase(seenOrder_.front());
      seenOrder_.pop_front();
    }
    ready->push_back(std::move(p.conn));
    return true;
  }
  AuthVerdict v = verifyClientProof(key_, static_cast<int32_t>(type_), p.buf, p.have, &p.nonces, &why);
  if (v != AuthVerdict::kOk) {
    reject(p, why.c_str());
    return true;
  }
  uint8_t proof[kServerProofBytes];
  encodeServerProof(key_, static_cast<int32_t>(type_), p.nonces, proof);
  ssize_t n = p.conn.sendSome(proof, sizeof(proof));
  if (n != static_cast<ssize_t>(sizeof(proof))) {
    reject(p, "could not send our proof");
    return true;
  }
  ready->push_back(std::move(p.conn));
  return true;
}

void SocketAcceptor::progress(std::vector<Socket>* ready) {
  if (!listener_ || !listener_->valid()) return;
  int64_t now = nowNs();
  acceptWaiting(now);
  size_t kept = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (advance(pending_[i], now, ready)) continue;
    if (kept != i) pending_[kept] = std::move(pending_[i]);
    ++kept;
  }
  pending_.resize(kept);
}

}  // namespace accl
