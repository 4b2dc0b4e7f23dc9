// The RAII Socket and its deadline-bounded I/O (see socket.h for the contract).
// All fds are non-blocking and close-on-exec; every wait is a poll() in slices of at most
// kPollSliceMs so the abort flag is noticed promptly.
#include "util/socket.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/socket_retry.h"
#include "util/time.h"

namespace accl {
namespace {

constexpr int kPollSliceMs = 100;
constexpr size_t kHandshakeBytes = sizeof(uint64_t) + sizeof(int32_t);

thread_local char tLastSocketError[1024];

// Raises an error: through fail() (WARN + ncclGetLastError) or, for quiet waits, as an INFO line only.
ncclResult_t report(bool quiet, ncclResult_t code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
ncclResult_t report(bool quiet, ncclResult_t code, const char* fmt, ...) {
  char* msg = tLastSocketError;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(tLastSocketError), fmt, ap);
  va_end(ap);
  if (quiet) {
    ACCL_INFO(ACCL_LOG_BOOTSTRAP, "%s", msg);
    return code;
  }
  return fail(code, "%s", msg);
}

// NCCL's list, plus ECONNRESET: a listener that closes with connections still in its backlog resets them,
// which is the same "nobody is serving this port right now" as a refusal.
bool isRetryableConnectError(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == EHOSTUNREACH || err == EAGAIN || err == EINTR ||
         err == ECONNRESET;
}

// EPROTO: a failed TLS session (keys differ, the peer does not encrypt, a forged record).
bool isPeerGoneError(int err) {
  return err == EPROTO || err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ETIMEDOUT ||
         err == EHOSTUNREACH ||
         err == ENETUNREACH || err == ECONNABORTED;
}

// Poll timeout for one slice of a wait.
int sliceMs(const SocketWait& wait) {
  int64_t left = wait.remainingMs();
  if (left < 0) return kPollSliceMs;
  return static_cast<int>(std::min<int64_t>(left, kPollSliceMs));
}

ncclResult_t timedOut(const SocketWait& wait, const char* op, const SocketAddress& peer) {
  return report(wait.quiet, ncclRemoteError, "%s %s: timed out after %lld ms waiting for %s", op,
                peer.toString().c_str(), static_cast<long long>(wait.timeoutMs), wait.what);
}

ncclResult_t aborted(const SocketWait& wait, const char* op, const SocketAddress& peer) {
  // Aborts are requested by the user (ncclCommAbort): note it, but do not overwrite the real error.
  snprintf(tLastSocketError, sizeof(tLastSocketError), "%s %s: aborted while waiting for %s", op,
           peer.toString().c_str(), wait.what);
  ACCL_INFO(ACCL_LOG_BOOTSTRAP, "%s", tLastSocketError);
  return ncclInternalError;
}

// Checks abort and deadline; returns ncclSuccess when the wait may go on.
ncclResult_t checkWait(const SocketWait& wait, const char* op, const SocketAddress& peer) {
  if (wait.aborted()) return aborted(wait, op, peer);
  if (wait.expired()) return timedOut(wait, op, peer);
  return ncclSuccess;
}

void setNoDelay(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

const char* lastSocketErrorText() { return tLastSocketError; }

// ---- SocketWait ---------------------------------------------------------------------------------

SocketWait SocketWait::in(int64_t ms, const std::atomic<int>* abortFlag, const char* what, bool quiet) {
  SocketWait w;
  w.deadlineNs = ms > 0 ? nowNs() + ms * 1000000 : 0;
  w.timeoutMs = ms > 0 ? ms : 0;
  w.abortFlag = abortFlag;
  w.what = what;
  w.quiet = quiet;
  return w;
}

int64_t SocketWait::remainingMs() const {
  if (deadlineNs == 0) return -1;
  int64_t left = deadlineNs - nowNs();
  return left <= 0 ? 0 : (left + 999999) / 1000000;
}

bool SocketWait::expired() const { return deadlineNs != 0 && nowNs() >= deadlineNs; }

bool SocketWait::aborted() const { return abortFlag && abortFlag->load(std::memory_order_acquire) != 0; }

// ---- Socket -------------------------------------------------------------------------------------

Socket::~Socket() { close(); }

Socket::Socket(Socket&& other) noexcept
    : fd_(other.fd_), tls_(std::move(other.tls_)), local_(other.local_), peer_(other.peer_) {
  other.fd_ = -1;
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    tls_ = std::move(other.tls_);
    local_ = other.local_;
    peer_ = other.peer_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (tls_) tls_->detach();  // before the fd number can be reused
  tls_.reset();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

ncclResult_t Socket::listen(const SocketAddress& addr, Socket* out, bool quiet) {
  if (!addr.isInet())
    return report(quiet, ncclInvalidArgument, "socket listen: address family %d is not AF_INET/AF_INET6",
                  addr.family());
  int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    int err = errno;
    return report(quiet, ncclSystemError, "socket listen on %s: socket() failed: %s", addr.toString().c_str(),
                  strerror(err));
  }
  if (addr.port() != 0) {
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  }
  if (::bind(fd, &addr.sa, addr.length()) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    ::close(fd);
    return report(quiet, ncclSystemError, "socket listen on %s: bind/listen failed: %s",
                  addr.toString().c_str(), strerror(err));
  }
  SocketAddress bound;
  socklen_t len = sizeof(bound);
  if (getsockname(fd, &bound.sa, &len) != 0) {
    int err = errno;
    ::close(fd);
    return report(quiet, ncclSystemError, "socket listen on %s: getsockname failed: %s",
                  addr.toString().c_str(), strerror(err));
  }
  *out = Socket(fd, bound, SocketAddress());
  ACCL_TRACE(ACCL_LOG_BOOTSTRAP, "listening on %s", bound.toString().c_str());
  return ncclSuccess;
}

ncclResult_t Socket::connect(const SocketAddress& peer, uint64_t magic, SocketType type,
                             const SocketWait& wait, Socket* out) {
  Socket s;
  ACCL_CHECK(connectTcp(peer, wait, &s));
  unsigned char hello[kHandshakeBytes];
  int32_t t = static_cast<int32_t>(type);
  std::memcpy(hello, &magic, sizeof(magic));
  std::memcpy(hello + sizeof(magic), &t, sizeof(t));
  ACCL_CHECK(s.sendAll(hello, sizeof(hello), wait));
  *out = std::move(s);
  return ncclSuccess;
}

ncclResult_t Socket::connect(const SocketAddress& peer, const SocketKey& key, SocketType type,
                             const SocketWait& wait, Socket* out, AuthMode mode) {
  Socket s;
  ACCL_CHECK(connectTcp(peer, wait, &s));
  const int32_t t = static_cast<int32_t>(type);
  if (mode == AuthMode::kClientFirst) {
    uint8_t nonce[kAuthNonceBytes];
    if (!secureRandom(nonce, sizeof(nonce)))
      return report(wait.quiet, ncclSystemError, "socket connect to %s: no random bytes for the handshake",
                    peer.toString().c_str());
    uint8_t proof[kClientProofBytes];
    encodePeerProof(key, t, peer.toString(), nonce, proof);
    ACCL_CHECK(s.sendAll(proof, sizeof(proof), wait));
    *out = std::move(s);
    return ncclSuccess;
  }
  uint8_t challenge[kServerChallengeBytes];
  ACCL_CHECK(s.recvAll(challenge, sizeof(challenge), wait));
  AuthNonces nonces;
  std::string why;
  if (!decodeServerChallenge(challenge, sizeof(challenge), nonces.server, &why))
    return report(wait.quiet, ncclRemoteError, "socket connect to %s: %s (while connecting for %s)",
                  peer.toString().c_str(), why.c_str(), wait.what);
  if (!secureRandom(nonces.client, sizeof(nonces.client)))
    return report(wait.quiet, ncclSystemError, "socket connect to %s: no random bytes for the handshake",
                  peer.toString().c_str());
  uint8_t proof[kClientProofBytes];
  encodeClientProof(key, t, nonces, proof);
  ACCL_CHECK(s.sendAll(proof, sizeof(proof), wait));
  uint8_t serverProof[kServerProofBytes];
  SocketWait quietWait = wait;
  quietWait.quiet = true;
  if (s.recvAll(serverProof, sizeof(serverProof), quietWait) != ncclSuccess) {
    if (wait.aborted()) return aborted(wait, "socket connect to", peer);
    return report(wait.quiet, ncclRemoteError,
                  "socket connect to %s: the server closed the connection after our proof of the secret: it "
                  "serves another job or its ncclUniqueId secret differs (NCCL_COMM_ID jobs: is "
                  "ACCL_BOOTSTRAP_SECRET the same everywhere?) (while connecting for %s: %s)",
                  peer.toString().c_str(), wait.what, lastSocketErrorText());
  }
  if (!verifyServerProof(key, t, nonces, serverProof, sizeof(serverProof)))
    return report(wait.quiet, ncclRemoteError,
                  "socket connect to %s: the server could not prove the job's secret (an impostor on that "
                  "port?) (while connecting for %s)",
                  peer.toString().c_str(), wait.what);
  *out = std::move(s);
  return ncclSuccess;
}

ncclResult_t Socket::connectTcp(const SocketAddress& peer, const SocketWait& wait, Socket* out) {
  if (!peer.isInet() || peer.port() == 0)
    return report(wait.quiet, ncclInvalidArgument, "socket connect to %s: not a connectable address",
                  peer.toString().c_str());
  const SocketRetryPolicy retry = socketRetryPolicy();
  const int64_t maxRetries = retry.retries;
  int lastErr = 0;
  for (int64_t attempt = 0;; ++attempt) {
    ACCL_CHECK(checkWait(wait, "socket connect to", peer));
    int fd = ::socket(peer.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      int err = errno;
      return report(wait.quiet, ncclSystemError, "socket connect to %s: socket() failed: %s",
                    peer.toString().c_str(), strerror(err));
    }
    int err = 0;
    if (::connect(fd, &peer.sa, peer.length()) != 0) err = errno;
    if (err == EINPROGRESS) {
      // Wait for the outcome of the non-blocking connect.
      err = ETIMEDOUT;
      while (true) {
        if (wait.aborted() || wait.expired()) break;
        pollfd p{fd, POLLOUT, 0};
        int n = ::poll(&p, 1, sliceMs(wait));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          err = errno;
          break;
        }
        if (n == 0) continue;
        int soErr = 0;
        socklen_t len = sizeof(soErr);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soErr, &len) != 0) soErr = errno;
        err = soErr;
        break;
      }
      if (wait.aborted() || wait.expired()) {
        ::close(fd);
        ACCL_CHECK(checkWait(wait, "socket connect to", peer));
      }
    }
    if (err == 0) {
      setNoDelay(fd);
      SocketAddress local;
      socklen_t len = sizeof(local);
      (void)getsockname(fd, &local.sa, &len);
      *out = Socket(fd, local, peer);
      return out->startTls(/*server=*/false, wait.quiet);
    }
    ::close(fd);
    lastErr = err;
    if (!isRetryableConnectError(err)) {
      ncclResult_t code = isPeerGoneError(err) || err == ENETUNREACH ? ncclRemoteError : ncclSystemError;
      return report(wait.quiet, code, "socket connect to %s failed: %s (while connecting for %s)",
                    peer.toString().c_str(), strerror(err), wait.what);
    }
    if (attempt >= maxRetries) break;
    // Back off: attempt N sleeps N * sleepMs, in abortable slices, never past the deadline.
    int64_t napEnd = nowNs() + retry.backoffMs(attempt) * 1000000;
    while (nowNs() < napEnd && !wait.aborted() && !wait.expired()) {
      int64_t leftMs = (napEnd - nowNs()) / 1000000 + 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(leftMs, kPollSliceMs)));
    }
  }
  return report(wait.quiet, ncclRemoteError,
                "socket connect to %s failed after %lld attempts: %s (while connecting for %s)",
                peer.toString().c_str(), static_cast<long long>(maxRetries + 1), strerror(lastErr),
                wait.what);
}

ncclResult_t Socket::waitReadable(const SocketWait& wait, bool* ready) {
  *ready = false;
  while (true) {
    if (wait.aborted()) return aborted(wait, "socket wait on", valid() ? peer_ : local_);
    if (wait.expired()) return ncclSuccess;
    if (readyWithoutFd()) {  // decrypted bytes, or a TLS failure the fd will never show
      *ready = true;
      return ncclSuccess;
    }
    pollfd p{fd_, pollEvents(POLLIN), 0};
    int n = ::poll(&p, 1, sliceMs(wait));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      return report(wait.quiet, ncclSystemError, "socket poll on %s failed: %s (waiting for %s)",
                    peer_.toString().c_str(), strerror(err), wait.what);
    }
    if (n > 0) {
      *ready = true;
      return ncclSuccess;
    }
  }
}

bool Socket::peerClosed() const {
  if (fd_ < 0) return true;
  if (hasBuffered()) return false;
  char c;
  ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;
  return false;
}

Socket Socket::adopt(int fd, const SocketAddress& peer) {
  SocketAddress local;
  socklen_t len = sizeof(local);
  (void)getsockname(fd, &local.sa, &len);
  setNoDelay(fd);
  return Socket(fd, local, peer);
}

void Socket::forgetInChild() {
  if (tls_) new std::shared_ptr<TlsSession>(std::move(tls_));  // leaked on purpose: never touched again
  tls_.reset();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

ncclResult_t Socket::acceptRaw(const SocketWait& wait, Socket* out) {
  while (true) {
    ACCL_CHECK(checkWait(wait, "socket accept on", local_));
    SocketAddress peer;
    socklen_t len = sizeof(peer);
    int fd = ::accept4(fd_, &peer.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      setNoDelay(fd);
      *out = Socket(fd, local_, peer);
      return out->startTls(/*server=*/true, wait.quiet);
    }
    int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED || err == EPROTO) {
      pollfd p{fd_, POLLIN, 0};
      int n = ::poll(&p, 1, sliceMs(wait));
      if (n < 0 && errno != EINTR) {
        int perr = errno;
        return report(wait.quiet, ncclSystemError, "socket accept on %s: poll failed: %s",
                      local_.toString().c_str(), strerror(perr));
      }
      continue;
    }
    return report(wait.quiet, ncclSystemError, "socket accept on %s failed: %s (waiting for %s)",
                  local_.toString().c_str(), strerror(err), wait.what);
  }
}

ncclResult_t Socket::accept(uint64_t magic, SocketType type, const SocketWait& wait, Socket* out,
                            int64_t perConnectionMs) {
  while (true) {
    Socket conn;
    ACCL_CHECK(acceptRaw(wait, &conn));
    // The handshake must arrive within perConnectionMs (and within the overall deadline); a silent or
    // slow connection only costs that much before we move on.
    SocketWait hs =
        SocketWait::in(perConnectionMs, wait.abortFlag, "the connection handshake", /*quiet=*/true);
    if (wait.deadlineNs != 0 && (hs.deadlineNs == 0 || wait.deadlineNs < hs.deadlineNs))
      hs.deadlineNs = wait.deadlineNs;
    unsigned char hello[kHandshakeBytes];
    ncclResult_t res = conn.recvAll(hello, sizeof(hello), hs);
    if (res != ncclSuccess) {
      if (wait.aborted()) return aborted(wait, "socket accept on", local_);
      ACCL_INFO(ACCL_LOG_BOOTSTRAP, "socket accept on %s: dropping connection from %s: no valid handshake",
                local_.toString().c_str(), conn.peerAddress().toString().c_str());
      continue;
    }
    uint64_t gotMagic;
    int32_t gotType;
    std::memcpy(&gotMagic, hello, sizeof(gotMagic));
    std::memcpy(&gotType, hello + sizeof(gotMagic), sizeof(gotType));
    if (gotMagic != magic) {
      ACCL_INFO(ACCL_LOG_BOOTSTRAP,
                "socket accept on %s: dropping connection from %s: wrong magic 0x%llx (expected 0x%llx); "
                "another job or a stray client may be using this port",
                local_.toString().c_str(), conn.peerAddress().toString().c_str(),
                static_cast<unsigned long long>(gotMagic), static_cast<unsigned long long>(magic));
      continue;
    }
    if (gotType != static_cast<int32_t>(type)) {
      ACCL_INFO(ACCL_LOG_BOOTSTRAP, "socket accept on %s: dropping connection from %s: type %d, expected %d",
                local_.toString().c_str(), conn.peerAddress().toString().c_str(), gotType,
                static_cast<int>(type));
      continue;
    }
    *out = std::move(conn);
    return ncclSuccess;
  }
}

ncclResult_t Socket::sendAll(const void* data, size_t bytes, const SocketWait& wait) {
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = sendSome(p + done, bytes - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    int err = n < 0 ? errno : EAGAIN;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      ACCL_CHECK(checkWait(wait, "socket send to", peer_));
      pollfd pfd{fd_, pollEvents(tls_ && !tls_->wantsWrite() ? POLLIN : POLLOUT), 0};
      int r = ::poll(&pfd, 1, sliceMs(wait));
      if (r < 0 && errno != EINTR) {
        int perr = errno;
        return report(wait.quiet, ncclSystemError, "socket send to %s: poll failed: %s",
                      peer_.toString().c_str(), strerror(perr));
      }
      continue;
    }
    ncclResult_t code = isPeerGoneError(err) ? ncclRemoteError : ncclSystemError;
    return report(wait.quiet, code, "socket send to %s failed after %zu of %zu bytes: %s (sending %s)",
                  peer_.toString().c_str(), done, bytes, ioErrorText(err).c_str(), wait.what);
  }
  return ncclSuccess;
}

ncclResult_t Socket::recvAll(void* data, size_t bytes, const SocketWait& wait) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = recvSome(p + done, bytes - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0)
      return report(
          wait.quiet, ncclRemoteError,
          "socket recv from %s: connection closed by the peer after %zu of %zu bytes (waiting for %s)",
          peer_.toString().c_str(), done, bytes, wait.what);
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      ACCL_CHECK(checkWait(wait, "socket recv from", peer_));
      pollfd pfd{fd_, pollEvents(POLLIN), 0};
      int r = ::poll(&pfd, 1, sliceMs(wait));
      if (r < 0 && errno != EINTR) {
        int perr = errno;
        return report(wait.quiet, ncclSystemError, "socket recv from %s: poll failed: %s",
                      peer_.toString().c_str(), strerror(perr));
      }
      continue;
    }
    ncclResult_t code = isPeerGoneError(err) ? ncclRemoteError : ncclSystemError;
    return report(wait.quiet, code, "socket recv from %s failed after %zu of %zu bytes: %s (waiting for %s)",
                  peer_.toString().c_str(), done, bytes, ioErrorText(err).c_str(), wait.what);
  }
  return ncclSuccess;
}

ncclResult_t Socket::sendRecv(Socket& tx, const void* sendData, size_t sendBytes, Socket& rx, void* recvData,
                              size_t recvBytes, const SocketWait& wait) {
  const char* sp = static_cast<const char*>(sendData);
  char* rp = static_cast<char*>(recvData);
  size_t sent = 0, received = 0;
  while (sent < sendBytes || received < recvBytes) {
    bool progressed = false;
    if (sent < sendBytes) {
      ssize_t n = tx.sendSome(sp + sent, sendBytes - sent);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        progressed = true;
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        int err = errno;
        ncclResult_t code = isPeerGoneError(err) ? ncclRemoteError : ncclSystemError;
        return report(wait.quiet, code, "socket send to %s failed after %zu of %zu bytes: %s (sending %s)",
                      tx.peer_.toString().c_str(), sent, sendBytes, tx.ioErrorText(err).c_str(), wait.what);
      }
    }
    if (received < recvBytes) {
      ssize_t n = rx.recvSome(rp + received, recvBytes - received);
      if (n > 0) {
        received += static_cast<size_t>(n);
        progressed = true;
      } else if (n == 0) {
        return report(
            wait.quiet, ncclRemoteError,
            "socket recv from %s: connection closed by the peer after %zu of %zu bytes (waiting for %s)",
            rx.peer_.toString().c_str(), received, recvBytes, wait.what);
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        int err = errno;
        ncclResult_t code = isPeerGoneError(err) ? ncclRemoteError : ncclSystemError;
        return report(wait.quiet, code,
                      "socket recv from %s failed after %zu of %zu bytes: %s (waiting for %s)",
                      rx.peer_.toString().c_str(), received, recvBytes, rx.ioErrorText(err).c_str(), wait.what);
      }
    }
    if (progressed) continue;
    const SocketAddress& who = received < recvBytes ? rx.peer_ : tx.peer_;
    ACCL_CHECK(checkWait(wait, received < recvBytes ? "socket recv from" : "socket send to", who));
    pollfd pfds[2];
    int np = 0;
    if (sent < sendBytes) pfds[np++] = pollfd{tx.fd_, tx.pollEvents(POLLOUT), 0};
    if (received < recvBytes) pfds[np++] = pollfd{rx.fd_, rx.pollEvents(POLLIN), 0};
    int r = ::poll(pfds, np, sliceMs(wait));
    if (r < 0 && errno != EINTR) {
      int err = errno;
      return report(wait.quiet, ncclSystemError, "socket poll for %s failed: %s", wait.what, strerror(err));
    }
  }
  return ncclSuccess;
}

ssize_t Socket::sendSomeV(const iovec* iov, int count) {
  if (!tls_) {
    msghdr m{};
    m.msg_iov = const_cast<iovec*>(iov);
    m.msg_iovlen = static_cast<size_t>(count);
    return ::sendmsg(fd_, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  // TLS: one piece at a time (each a record or more); a short write ends the call like sendmsg's.
  ssize_t total = 0;
  for (int i = 0; i < count; ++i) {
    if (iov[i].iov_len == 0) continue;
    ssize_t n = tls_->send(iov[i].iov_base, iov[i].iov_len);
    if (n < 0) return total > 0 ? total : -1;
    total += n;
    if (static_cast<size_t>(n) < iov[i].iov_len) break;
  }
  return total;
}

std::string Socket::ioErrorText(int err) const {
  if (err == EPROTO && tls_) {
    std::string why = tls_->error();
    if (!why.empty()) return why;
  }
  return strerror(err);
}

ncclResult_t Socket::startTls(bool server, bool quiet) {
  std::shared_ptr<const TlsContext> ctx;
  ncclResult_t res = currentTls(&ctx);
  if (res == ncclSuccess && ctx) res = TlsSession::start(ctx, fd_, server, &tls_);
  if (res != ncclSuccess) {
    close();
    if (quiet) ACCL_INFO(ACCL_LOG_BOOTSTRAP, "socket %s: could not start TLS", peer_.toString().c_str());
  }
  return res;
}

}  // namespace accl
