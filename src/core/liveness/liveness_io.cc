// The liveness service's sockets: the listener, dialing, sending and reading frames, and the
// background loop that polls them all (see liveness_service.h). Connections are Sockets: their
// byte moves (sendSome / recvSome) are ::send / ::recv, or TLS when the process encrypts; an
// encrypted connection's handshake runs on util/tls_pump.h's thread while frames written before it
// finishes wait in the session, so a peer that never completes it is judged like a silent one
// (ACCL_HEARTBEAT_TIMEOUT_MS).
#include "core/liveness/liveness_service.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <set>
#include <thread>

#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"

namespace accl::liveness {

namespace {

// A connection from the listener, TLS started when the process encrypts; invalid when that failed.
Socket acceptedSocket(int fd) {
  Socket s = Socket::adopt(fd, SocketAddress());
  if (s.startTls(/*server=*/true, /*quiet=*/true) != ncclSuccess)
    ACCL_INFO(ACCL_LOG_INIT, "liveness: dropped a connection: could not start TLS on it");
  return s;
}

// The errno a failed byte move left, with a TLS handshake that the peer ended by closing the
// connection (it exited or was killed mid-handshake) counted as that close: 0.
int closeOrError(const Socket& s, int err) { return err == EPROTO && s.tlsEndedByPeer() ? 0 : err; }

}  // namespace

void Service::wake() {
  uint64_t one = 1;
  if (wakeFd_ >= 0) (void)!write(wakeFd_, &one, sizeof(one));
}

void Service::queue(Proc& p, const Frame& f) {
  p.outBuf.append(reinterpret_cast<const char*>(&f), sizeof(f));
  flush(p);
}

void Service::flush(Proc& p) {
  if (!p.out.valid() || p.connecting) return;
  while (!p.outBuf.empty()) {
    ssize_t n = p.out.sendSome(p.outBuf.data(), p.outBuf.size());
    if (n > 0) {
      p.outBuf.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    int err = n < 0 ? closeOrError(p.out, errno) : EPIPE;
    if (err == 0) err = EPIPE;
    const std::string why = p.out.ioErrorText(err);
    p.out.close();
    p.outBuf.clear();
    if (!watched(p.token)) return;
    if (err == EPIPE || err == ECONNRESET)
      failProc(p, PeerFailureKind::kExited, "its heartbeat connection was closed (" + why + ")", 0);
    else
      failProc(p, PeerFailureKind::kLinkLost, "heartbeat send failed: " + why, 0);
    return;
  }
}

void Service::dial(Proc& p, int64_t now) {
  p.nextDialMs = now + std::max<int64_t>(intervalMs_, 50);
  int fd = socket(p.addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  int rc = connect(fd, &p.addr.sa, p.addr.length());
  p.out = Socket::adopt(fd, p.addr);
  p.outBuf.clear();
  if (rc == 0) {
    onDialDone(p, 0);
  } else if (errno == EINPROGRESS) {
    p.connecting = true;
  } else {
    onDialDone(p, errno);
  }
}

void Service::finishDial(Proc& p, int timeoutMs) {
  if (!p.out.valid() || !p.connecting) return;
  pollfd pfd{p.out.fd(), POLLOUT, 0};
  if (poll(&pfd, 1, timeoutMs) <= 0) return;
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(p.out.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
  onDialDone(p, err);
}

void Service::connectNow(int64_t now) {
  std::vector<Proc*> dialed;
  for (auto& [t, p] : procs_)
    if (!p.dead && !p.out.valid() && p.haveAddr && watched(p.token)) {
      dial(p, now);
      if (p.connecting) dialed.push_back(&p);
    }
  const int64_t end = nowMs() + 1000;
  for (Proc* p : dialed) finishDial(*p, static_cast<int>(std::max<int64_t>(0, end - nowMs())));
}

void Service::onDialDone(Proc& p, int err) {
  p.connecting = false;
  if (err == 0 && p.out.startTls(/*server=*/false, /*quiet=*/true) != ncclSuccess) {
    p.lastDialError = "could not start TLS (encryption is on)";
    return;  // startTls closed it; the next dial tries again, the silence verdict bounds it
  }
  if (err == 0) {
    p.lastDialError.clear();
    Frame hello = frame(kHello, p.token);
    p.outBuf.insert(0, reinterpret_cast<const char*>(&hello), sizeof(hello));
    flush(p);
    return;
  }
  p.out.close();
  p.lastDialError = errnoText(err);
  if (err == ECONNREFUSED && watched(p.token))
    failProc(p, PeerFailureKind::kExited, "its heartbeat port refuses connections", 0);
}

void Service::readPending(Pending& pd, bool* done) {
  *done = false;
  char buf[sizeof(Frame)];
  ssize_t n = pd.sock.recvSome(buf, sizeof(Frame) - pd.buf.size());
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    // Encrypted: a peer with another key (or none) ends here; bootstrap, which authenticates
    // first, normally keeps such a peer out of the job long before.
    if (n < 0 && pd.sock.encrypted())
      ACCL_INFO(ACCL_LOG_INIT, "liveness: dropped a connection before its HELLO: %s",
                pd.sock.ioErrorText(errno).c_str());
    pd.sock.close();
    *done = true;
    return;
  }
  if (n < 0) return;
  pd.buf.append(buf, static_cast<size_t>(n));
  if (pd.buf.size() < sizeof(Frame)) return;
  Frame f;
  std::memcpy(&f, pd.buf.data(), sizeof(f));
  *done = true;
  if (f.magic != kFrameMagic || f.kind != kHello || f.target != token_) {
    ACCL_INFO(ACCL_LOG_INIT, "liveness: dropped a connection that did not introduce itself");
    pd.sock.close();
    return;
  }
  Proc& p = procs_[f.token];
  p.token = f.token;
  if (p.pid == 0) p.pid = f.pid;
  p.in = std::move(pd.sock);
  p.inBuf.clear();
  p.lastSeenMs = nowMs();
  // TLS: frames that came in the HELLO's record wait in the session, where poll() cannot see them.
  if (p.in.hasBuffered()) readIncoming(p, /*verdictOnClose=*/false);
}

void Service::readIncoming(Proc& p, bool verdictOnClose) {
  char buf[4096];
  while (p.in.valid()) {
    ssize_t n = p.in.recvSome(buf, sizeof(buf));
    if (n > 0) {
      p.lastSeenMs = nowMs();
      p.inBuf.append(buf, static_cast<size_t>(n));
      while (p.inBuf.size() >= sizeof(Frame)) {
        Frame f;
        std::memcpy(&f, p.inBuf.data(), sizeof(f));
        p.inBuf.erase(0, sizeof(f));
        if (f.magic != kFrameMagic || f.token != p.token) continue;
        handleFrame(f, &p);
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (!verdictOnClose) return;  // the close stays readable: the loop judges it later
    int err = n < 0 ? closeOrError(p.in, errno) : 0;
    const std::string why = err ? p.in.ioErrorText(err) : "";
    p.in.close();
    if (!watched(p.token) || p.dead) return;
    if (err == 0 || err == ECONNRESET)
      failProc(p, PeerFailureKind::kExited, "its heartbeat connection closed", 0);
    else
      failProc(p, PeerFailureKind::kLinkLost, "heartbeat connection failed: " + why, 0);
    return;
  }
}

void Service::drainAll() {
  if (draining_ || listenFd_ < 0) return;
  draining_ = true;
  while (true) {
    int fd = accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) break;
    pending_.push_back({acceptedSocket(fd), nowMs() + 5000, {}});
  }
  for (Pending& pd : pending_) {
    bool done = false;
    if (pd.sock.valid()) readPending(pd, &done);
  }
  for (auto& [t, p] : procs_)
    if (p.in.valid()) readIncoming(p, /*verdictOnClose=*/false);
  draining_ = false;
}

void Service::loop() {
  std::vector<pollfd> fds;
  std::vector<std::pair<int, uint64_t>> refs;  // what each pollfd is: 0 wake, 1 listener, 2 pending, 3 in, 4 out
  std::vector<size_t> buffered;                 // pollfds whose TLS session holds decrypted bytes or failed
  while (true) {
    int tick;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!running_) return;
      fds.clear();
      refs.clear();
      buffered.clear();
      fds.push_back({wakeFd_, POLLIN, 0});
      refs.push_back({0, 0});
      fds.push_back({listenFd_, POLLIN, 0});
      refs.push_back({1, 0});
      for (size_t i = 0; i < pending_.size(); ++i) {
        if (pending_[i].sock.readyWithoutFd()) buffered.push_back(fds.size());
        fds.push_back({pending_[i].sock.fd(), pending_[i].sock.pollEvents(POLLIN), 0});
        refs.push_back({2, i});
      }
      for (auto& [t, p] : procs_) {
        if (p.in.valid()) {
          if (p.in.readyWithoutFd()) buffered.push_back(fds.size());
          fds.push_back({p.in.fd(), p.in.pollEvents(POLLIN), 0});
          refs.push_back({3, t});
        }
        if (p.out.valid()) {
          if (p.out.tlsFailed()) buffered.push_back(fds.size());
          short ev = POLLIN;
          if (p.connecting || !p.outBuf.empty()) ev = p.out.pollEvents(POLLIN | POLLOUT);
          fds.push_back({p.out.fd(), ev, 0});
          refs.push_back({4, t});
        }
      }
      tick = static_cast<int>(std::clamp<int64_t>(intervalMs_ / 4, 10, 250));
      if (!buffered.empty()) tick = 0;
    }
    poll(fds.data(), fds.size(), tick);
    for (size_t i : buffered) fds[i].revents |= POLLIN;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_) return;
    handleEvents(fds, refs);
    periodic(nowMs());
  }
}

void Service::handleEvents(const std::vector<pollfd>& fds, const std::vector<std::pair<int, uint64_t>>& refs) {
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    const auto [what, ref] = refs[i];
    if (what == 0) {
      uint64_t v;
      (void)!read(wakeFd_, &v, sizeof(v));
    } else if (what == 1) {
      while (true) {
        int fd = accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        pending_.push_back({acceptedSocket(fd), nowMs() + 5000, {}});
      }
    } else if (what == 2) {
      if (ref >= pending_.size() || pending_[ref].sock.fd() != fds[i].fd) continue;
      bool done = false;
      readPending(pending_[ref], &done);  // done: its fd moved on or closed (-1)
    } else {
      auto it = procs_.find(ref);
      if (it == procs_.end()) continue;
      Proc& p = it->second;
      if (what == 3) {
        if (p.in.fd() == fds[i].fd) readIncoming(p);
      } else if (p.out.fd() == fds[i].fd) {
        if (p.connecting && (fds[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
          int err = 0;
          socklen_t len = sizeof(err);
          getsockopt(p.out.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
          onDialDone(p, err);
        } else if (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) {
          // Nothing is ever sent back on an outgoing connection (TLS: only its handshake, which
          // the read consumes): readable means closed or reset.
          char c;
          ssize_t n = p.out.recvSome(&c, 1);
          if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) {
            int err = n < 0 ? closeOrError(p.out, errno) : 0;
            const std::string why = err ? p.out.ioErrorText(err) : "";
            p.out.close();
            if (watched(p.token)) {
              if (err == 0 || err == ECONNRESET)
                failProc(p, PeerFailureKind::kExited, "its heartbeat connection closed", 0);
              else
                failProc(p, PeerFailureKind::kLinkLost, "heartbeat connection failed: " + why, 0);
            }
          }
        } else if (fds[i].revents & POLLOUT) {
          flush(p);
        }
      }
    }
  }
  // Drop finished pending connections.
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Pending& pd) { return !pd.sock.valid(); }),
                 pending_.end());
}

}  // namespace accl::liveness
