// One TLS 1.3 session over a connected non-blocking TCP fd, with send/recv that behave like
// ::send/::recv with MSG_DONTWAIT, so Socket (util/socket.h) can swap them in behind one branch.
//
// Handshakes run in the background: until a session's handshake is done and the bytes written
// before it are flushed, a process-wide helper thread drives it whenever its fd is ready. Writes
// made before the handshake finishes are queued (send returns at once, as the kernel's buffer
// would), so two ranks that dial each other before either serves its listener cannot deadlock,
// and a server may write (a challenge) before the client's hello arrives.
//
// Readiness: a readable fd is not readable data (a partial record), and decrypted data can wait in
// the session with nothing left on the fd: pollers check buffered() before they sleep.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl.h"
#include "util/tls_config.h"

namespace accl {

class TlsSession {
 public:
  // A session on `fd` (connected, non-blocking), as the TLS client or server; its handshake starts
  // at once in the background.
  static ncclResult_t start(const std::shared_ptr<const TlsContext>& ctx, int fd, bool server,
                            std::shared_ptr<TlsSession>* out);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // > 0: bytes moved. recv 0: the peer closed. -1 with errno EAGAIN: would block (wantsWrite() says
  // for which readiness); -1 with errno EPROTO: the TLS session failed, error() says why
  // (handshake: keys differ / the peer does not encrypt); other errno: the socket's error.
  ssize_t send(const void* data, size_t bytes);
  ssize_t recv(void* data, size_t bytes);
  bool buffered();          // decrypted bytes wait in the session
  bool wantsWrite() const;  // the last EAGAIN waits for POLLOUT, not POLLIN
  std::string error();
  // The handshake or the writes queued behind it are unfinished (and the session has not failed).
  bool busy();
  // The session failed because the peer closed the connection (a clean end or a reset) before the
  // handshake finished, without a word of TLS saying why: it may just have exited.
  bool endedByPeer();
  // The session failed (the next send / recv says why). Its helper thread may have met the failure
  // and consumed the bytes that carried it: a poller that sleeps on the fd may then never wake.
  bool failed();
  // Before the fd closes: the session never touches it again.
  void detach();
  // A peer that has sent nothing within the server's patience: if it is a plaintext client waiting
  // for us to speak first, tell it in clear that encryption is required (then end our side).
  void refuseSilentPeer();

  // Background work (the helper thread): drives the handshake and the queued writes.
  // True while more remains.
  bool pump();
  int fd() const { return fd_; }

 private:
  TlsSession() = default;
  // With mutex_ held. Returns 1 when the handshake is done and the queue empty, 0 when waiting
  // on the fd, -1 on failure (error_ set, errno EPROTO or the socket's).
  int progressLocked();
  int handshakeLocked();
  void failLocked(int ret, int sslErr, const char* during);
  // After an SSL call returned `ret` <= 0: -1 with errno EAGAIN (wantWrite_ says which way) or
  // the failure's errno (error_ set); 0 when `reading` met the peer's close.
  int afterIoLocked(int ret, const char* during, bool reading);
  void sendTlsRequiredNoticeLocked();

  std::mutex mutex_;
  std::shared_ptr<const TlsContext> ctx_;
  const SslLib* lib_ = nullptr;
  OsslSsl* ssl_ = nullptr;
  int fd_ = -1;
  bool server_ = false;
  bool detached_ = false;
  bool handshaken_ = false;
  bool failed_ = false;
  bool endedByPeer_ = false;
  int failErrno_ = 0;
  std::atomic<bool> wantWrite_{false};  // read by the helper thread without the mutex
  std::vector<char> queue_;  // plaintext written before the handshake finished
  size_t queueDone_ = 0;
  std::string error_;
};

}  // namespace accl
