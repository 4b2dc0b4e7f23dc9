// TLS sessions over non-blocking fds (see tls_session.h); their handshakes are driven by
// util/tls_pump.h, their bytes move through util/tls_fd_bio.h.
#include "util/tls_session.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

#include "util/check.h"
#include "util/log.h"
#include "util/socket_auth.h"
#include "util/tls_fd_bio.h"
#include "util/tls_pump.h"

namespace accl {
namespace {

constexpr size_t kMaxQueuedBytes = 1 << 20;  // bytes written before the handshake finished

int clampInt(size_t bytes) { return static_cast<int>(std::min<size_t>(bytes, INT_MAX)); }

bool contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

ncclResult_t TlsSession::start(const std::shared_ptr<const TlsContext>& ctx, int fd, bool server,
                               std::shared_ptr<TlsSession>* out) {
  std::shared_ptr<TlsSession> s(new TlsSession());
  s->ctx_ = ctx;
  s->lib_ = &ctx->lib();
  s->fd_ = fd;
  s->server_ = server;
  s->ssl_ = s->lib_->SSL_new(server ? ctx->server() : ctx->client());
  OsslBio* bio = s->ssl_ ? newFdBio(fd) : nullptr;
  if (!bio) return fail(ncclSystemError, "encryption: could not make a TLS session (libssl.so.3 SSL_new/BIO_new)");
  s->lib_->SSL_set_bio(s->ssl_, bio, bio);  // the session owns the BIO
  if (server)
    s->lib_->SSL_set_accept_state(s->ssl_);
  else
    s->lib_->SSL_set_connect_state(s->ssl_);
  int r;
  {
    std::lock_guard<std::mutex> lock(s->mutex_);
    r = s->progressLocked();  // the client's hello leaves now
  }
  if (r == 0) addToTlsPump(s);
  *out = std::move(s);
  return ncclSuccess;
}

TlsSession::~TlsSession() {
  if (ssl_) lib_->SSL_free(ssl_);
}

void TlsSession::detach() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (detached_) return;
  // Best effort close_notify; a non-blocking socket never waits here.
  if (handshaken_ && !failed_) (void)lib_->SSL_shutdown(ssl_);
  detached_ = true;
}

void TlsSession::failLocked(int ret, int sslErr, const char* during) {
  int sysErr = errno;
  char text[256];
  takeOpensslErrors(text, sizeof(text));
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string why;
  failErrno_ = EPROTO;
  if (contains(lower, "decrypt error") || contains(lower, "binder") || contains(lower, "bad record mac") ||
      contains(lower, "illegal parameter")) {
    why = "the peer's pre-shared key differs from this process's (NCCL_ENCRYPTION_MODE_PSK: every rank must "
          "set the same key)";
  } else if (contains(lower, "wrong version number") || contains(lower, "packet length too long") ||
             contains(lower, "unexpected message") || contains(lower, "record layer failure") ||
             contains(lower, "http request")) {
    why = "the peer does not speak TLS: it runs without encryption (every rank must call ncclSetEncryption "
          "with the same mode and key, or set ACCL_ENCRYPTION_PSK_FILE alike)";
    if (server_ && !handshaken_) sendTlsRequiredNoticeLocked();
  } else if (sslErr == ossl::kErrorSyscall || sslErr == ossl::kErrorZeroReturn || ret == 0) {
    if (handshaken_ && sysErr != 0) {
      failErrno_ = sysErr;  // a plain socket error after the handshake
      why = strerror(sysErr);
    } else {
      why = "the peer closed the connection during the TLS handshake (does it run without encryption, or with "
            "another key?)";
      endedByPeer_ = true;
    }
  } else {
    why = "TLS failed";
  }
  error_ = std::string(handshaken_ ? "TLS session failed while " : "TLS handshake failed while ") + during + ": " +
           why + (text[0] ? std::string(" [OpenSSL: ") + text + "]" : std::string());
  failed_ = true;
}

// Tells a plaintext peer in words it can read (util/socket_auth.h, kTlsRequiredGreeting), then
// ends our side so it reads the notice and an end rather than a reset.
void TlsSession::sendTlsRequiredNoticeLocked() {
  uint8_t notice[kServerChallengeBytes] = {};
  encodeTlsRequiredNotice(notice);
  (void)!::send(fd_, notice, sizeof(notice), MSG_DONTWAIT | MSG_NOSIGNAL);
  (void)::shutdown(fd_, SHUT_WR);
}

void TlsSession::refuseSilentPeer() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!server_ || handshaken_ || detached_ || failed_) return;
  sendTlsRequiredNoticeLocked();
  failed_ = true;
  failErrno_ = EPROTO;
  error_ = "TLS handshake failed while accepting a connection: the peer sent nothing (a client without "
           "encryption, waiting for us to speak first?)";
}

int TlsSession::handshakeLocked() {
  if (const CryptoLib* c = cryptoLib(nullptr)) c->ERR_clear_error();
  int r = lib_->SSL_do_handshake(ssl_);
  if (r == 1) {
    handshaken_ = true;
    return 1;
  }
  afterIoLocked(r, server_ ? "accepting a connection" : "connecting", /*reading=*/false);
  return failed_ ? -1 : 0;
}

int TlsSession::afterIoLocked(int ret, const char* during, bool reading) {
  int sysErr = errno;
  int e = lib_->SSL_get_error(ssl_, ret);
  if (e == ossl::kErrorWantRead || e == ossl::kErrorWantWrite) {
    wantWrite_ = e == ossl::kErrorWantWrite;
    errno = EAGAIN;
    return -1;
  }
  if (reading && (e == ossl::kErrorZeroReturn || (e == ossl::kErrorSyscall && sysErr == 0))) return 0;
  errno = sysErr;
  failLocked(ret, e, during);
  errno = failErrno_;
  return -1;
}

int TlsSession::progressLocked() {
  if (failed_) {
    errno = failErrno_;
    return -1;
  }
  if (detached_) {
    errno = EBADF;
    return -1;
  }
  if (!handshaken_) {
    int r = handshakeLocked();
    if (r <= 0) return r;
  }
  while (queueDone_ < queue_.size()) {
    int n = lib_->SSL_write(ssl_, queue_.data() + queueDone_, clampInt(queue_.size() - queueDone_));
    if (n > 0) {
      queueDone_ += static_cast<size_t>(n);
      continue;
    }
    afterIoLocked(n, "sending", /*reading=*/false);
    return failed_ ? -1 : 0;
  }
  queue_.clear();
  queue_.shrink_to_fit();
  queueDone_ = 0;
  return 1;
}

bool TlsSession::pump() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (detached_ || failed_) return false;
  int saved = errno;
  int r = progressLocked();
  errno = saved;
  return r == 0;
}

ssize_t TlsSession::send(const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!handshaken_ || queueDone_ < queue_.size()) {
    int r = progressLocked();
    if (r < 0) return -1;
    if (r == 0) {
      // Still handshaking (or flushing): queue, as a kernel buffer would, up to a bound.
      size_t room = kMaxQueuedBytes > queue_.size() ? kMaxQueuedBytes - queue_.size() : 0;
      size_t take = std::min(room, bytes);
      if (take == 0) {
        errno = EAGAIN;
        return -1;
      }
      const char* p = static_cast<const char*>(data);
      queue_.insert(queue_.end(), p, p + take);
      return static_cast<ssize_t>(take);
    }
  }
  int n = lib_->SSL_write(ssl_, data, clampInt(bytes));
  if (n > 0) return n;
  return afterIoLocked(n, "sending", /*reading=*/false);
}

ssize_t TlsSession::recv(void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!handshaken_ || failed_) {
    int r = progressLocked();
    if (r < 0) return -1;
    if (!handshaken_) {
      errno = EAGAIN;
      return -1;
    }
  } else if (queueDone_ < queue_.size()) {
    if (progressLocked() < 0) return -1;
  }
  int n = lib_->SSL_read(ssl_, data, clampInt(bytes));
  if (n > 0) return n;
  return afterIoLocked(n, "receiving", /*reading=*/true);
}

bool TlsSession::buffered() {
  std::lock_guard<std::mutex> lock(mutex_);
  return handshaken_ && !failed_ && lib_->SSL_pending(ssl_) > 0;
}

bool TlsSession::failed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_;
}

bool TlsSession::endedByPeer() {
  std::lock_guard<std::mutex> lock(mutex_);
  return endedByPeer_;
}

bool TlsSession::busy() {
  std::lock_guard<std::mutex> lock(mutex_);
  return !failed_ && !detached_ && (!handshaken_ || queueDone_ < queue_.size());
}

bool TlsSession::wantsWrite() const { return wantWrite_; }

std::string TlsSession::error() {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

}  // namespace accl
