// TCP sockets for control connections (bootstrap and friends): an RAII Socket with listen/connect/accept,
// two connect handshakes, and deadline-bounded, abortable sendAll/recvAll. Handshakes: the plain one
// (u64 magic + i32 type, for same-machine helpers and tests) and the authenticated one (a
// challenge-response proving the job's secret, util/socket_auth.h; the server side is
// util/socket_acceptor.h, which handshakes with many strangers at once).
// Addresses live in util/socket_address.h, interface selection in util/net_interfaces.h.
//
// Every blocking operation takes a SocketWait: an absolute deadline (or none), the abort flag of the
// communicator, a short description of what is being waited for (it ends up in error messages) and a
// `quiet` switch. Quiet failures are logged at INFO level only and do not replace ncclGetLastError();
// the bootstrap root uses it so a stray or hostile connection cannot overwrite a real rank's error.
//
// Encryption: when the process asked for it (util/tls_config.h), every connection connect() makes and
// every one accepted runs TLS 1.3 with the pre-shared key (util/tls_session.h); the handshakes above
// then travel inside it. Code that moves bytes itself calls sendSome/recvSome/sendSomeV (the ::send /
// ::recv of a plain socket, one branch away) and, before it sleeps in poll() on fd(), checks
// hasBuffered() (decrypted bytes the fd no longer shows) and pollEvents().
//
// Error mapping: peer closed / reset / unreachable / timed out -> ncclRemoteError; any other failing
// syscall -> ncclSystemError; abort flag raised -> ncclInternalError (quiet, the caller asked for it).
#pragma once

#include <sys/types.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "nccl.h"
#include "util/socket_address.h"
#include "util/socket_auth.h"
#include "util/tls_session.h"

namespace accl {

// Connection kinds sent in the connect handshake (same numbering as NCCL).
enum class SocketType : int32_t { kBootstrap = 1, kProxy = 2, kNetSocket = 3, kNetIb = 4, kRas = 5 };

// The text of the last error this thread's socket calls reported (quiet or not); "" if none yet.
// Quiet callers (the bootstrap root) use it to pass the reason on to the ranks.
const char* lastSocketErrorText();

struct SocketWait {
  int64_t deadlineNs = 0;                       // absolute accl::nowNs() value; 0 = no deadline
  int64_t timeoutMs = 0;                        // the budget the deadline came from (for messages)
  const std::atomic<int>* abortFlag = nullptr;  // may be null
  const char* what = "data";                    // "... waiting for <what>"
  bool quiet = false;                           // log failures at INFO, leave ncclGetLastError alone

  // A wait that expires `ms` milliseconds from now (ms <= 0: no deadline).
  static SocketWait in(int64_t ms, const std::atomic<int>* abortFlag, const char* what, bool quiet = false);
  int64_t remainingMs() const;  // -1 when there is no deadline
  bool expired() const;
  bool aborted() const;
};

class Socket {
 public:
  Socket() = default;
  ~Socket();
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Listener: the bound address (real port filled in). Connection: our end.
  const SocketAddress& localAddress() const { return local_; }
  // Connection: the other end. Listener: unset.
  const SocketAddress& peerAddress() const { return peer_; }
  void close();

  // Binds to `addr` (port 0 = ephemeral; a fixed port sets SO_REUSEADDR) and listens.
  static ncclResult_t listen(const SocketAddress& addr, Socket* out, bool quiet = false);

  // Connects to `peer`, retrying refused/unreachable/timed-out attempts NCCL_SOCKET_RETRY_CNT times with a
  // sleep of attempt * NCCL_SOCKET_RETRY_SLEEP_MSEC ms (never past the wait's deadline), then sends the
  // handshake (u64 magic, i32 type). TCP_NODELAY is set.
  static ncclResult_t connect(const SocketAddress& peer, uint64_t magic, SocketType type,
                              const SocketWait& wait, Socket* out);

  // Same connection and retries, then the authenticated handshake as the client. kChallenge: waits for
  // the server's challenge, proves `key`, and checks the server's proof; a server that refuses the
  // proof or cannot prove the secret itself fails the call with ncclRemoteError naming the address.
  // kClientFirst: sends the proof for the address dialed and returns without waiting (a refusal shows
  // as a closed connection later).
  static ncclResult_t connect(const SocketAddress& peer, const SocketKey& key, SocketType type,
                              const SocketWait& wait, Socket* out, AuthMode mode = AuthMode::kChallenge);

  // Takes over `fd` (a TCP connection, connected or still connecting, non-blocking) from code that
  // dials or accepts by itself (the liveness service); TLS starts when it calls startTls().
  static Socket adopt(int fd, const SocketAddress& peer);

  // Accepts one raw connection (no handshake).
  ncclResult_t acceptRaw(const SocketWait& wait, Socket* out);

  // Accepts connections until one presents the right handshake. A connection that sends a wrong magic,
  // a wrong type, junk, or nothing within perConnectionMs is logged at INFO level and closed, and
  // accepting continues. Only the listener-level wait (deadline / abort) ends the call with an error.
  ncclResult_t accept(uint64_t magic, SocketType type, const SocketWait& wait, Socket* out,
                      int64_t perConnectionMs = 1000);

  ncclResult_t sendAll(const void* data, size_t bytes, const SocketWait& wait);
  ncclResult_t recvAll(void* data, size_t bytes, const SocketWait& wait);

  // Sends on `tx` and receives on `rx` at the same time (neither side can fill the other's buffers and
  // deadlock, whatever the sizes). tx and rx may be the same socket.
  static ncclResult_t sendRecv(Socket& tx, const void* sendData, size_t sendBytes, Socket& rx, void* recvData,
                               size_t recvBytes, const SocketWait& wait);

  // Waits until the socket is readable (data, EOF or a pending connection on a listener).
  // *ready = false when the deadline passed (no error is reported then; the caller decides).
  ncclResult_t waitReadable(const SocketWait& wait, bool* ready);

  // Non-blocking: true when the peer has closed (or reset) the connection and no unread data is left.
  bool peerClosed() const;

  // The connection's byte moves, as ::send / ::recv / ::sendmsg with MSG_DONTWAIT (and MSG_NOSIGNAL)
  // would do them: > 0 bytes, recv 0 at the peer's close, -1 with errno (EAGAIN: would block).
  ssize_t sendSome(const void* data, size_t bytes) {
    if (!tls_) return ::send(fd_, data, bytes, MSG_DONTWAIT | MSG_NOSIGNAL);
    return tls_->send(data, bytes);
  }
  ssize_t recvSome(void* data, size_t bytes) {
    if (!tls_) return ::recv(fd_, data, bytes, MSG_DONTWAIT);
    return tls_->recv(data, bytes);
  }
  ssize_t sendSomeV(const iovec* iov, int count);
  bool encrypted() const { return tls_ != nullptr; }
  // Decrypted bytes are waiting: read them before polling the fd.
  bool hasBuffered() const { return tls_ && tls_->buffered(); }
  // A recvSome / sendSome has something to say without the fd becoming ready: decrypted bytes, or
  // a TLS failure the helper thread met (and whose bytes it took). A poller treats this as ready.
  bool readyWithoutFd() const { return hasBuffered() || tlsFailed(); }
  // The poll events that mean progress for a transfer that wants `events` (TLS may need the other way).
  short pollEvents(short events) const {
    if (tls_ && tls_->wantsWrite()) return static_cast<short>(events | POLLOUT);
    return events;
  }
  // Text for an errno a byte move left: the TLS failure (EPROTO) or strerror.
  std::string ioErrorText(int err) const;
  // An encrypted server end whose peer never spoke: tells a plaintext client that encryption is on.
  void refuseSilentPeer() {
    if (tls_) tls_->refuseSilentPeer();
  }
  // Starts TLS on this connection when the process asked for encryption (no-op otherwise).
  ncclResult_t startTls(bool server, bool quiet);
  // TLS still has a handshake or bytes written before it to finish (plaintext: never).
  bool tlsBusy() const { return tls_ && tls_->busy(); }
  // A byte move's EPROTO came from the peer closing during the TLS handshake (it may have exited).
  bool tlsEndedByPeer() const { return tls_ && tls_->endedByPeer(); }
  // The TLS session failed: a recvSome / sendSome reports it at once (do not wait for the fd).
  bool tlsFailed() const { return tls_ && tls_->failed(); }
  // In a forked child: closes this process's copy of the fd and forgets the session without a
  // word to the peer or a lock the parent's threads may have held (the connection is the parent's).
  void forgetInChild();

 private:
  // The TCP connection with retries (no handshake).
  static ncclResult_t connectTcp(const SocketAddress& peer, const SocketWait& wait, Socket* out);
  friend class SocketAcceptor;
  Socket(int fd, const SocketAddress& local, const SocketAddress& peer)
      : fd_(fd), local_(local), peer_(peer) {}
  int fd_ = -1;
  std::shared_ptr<TlsSession> tls_;  // null: plaintext
  SocketAddress local_;
  SocketAddress peer_;
};

}  // namespace accl
