// The liveness service's sockets: the listener, dialing, sending and reading frames, and the
// background loop that polls them all (see liveness_service.h).
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

void setNonBlockingNoDelay(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void Service::wake() {
  uint64_t one = 1;
  if (wakeFd_ >= 0) (void)!write(wakeFd_, &one, sizeof(one));
}

void Service::queue(Proc& p, const Frame& f) {
  p.outBuf.append(reinterpret_cast<const char*>(&f), sizeof(f));
  flush(p);
}

void Service::flush(Proc& p) {
  if (p.outFd < 0 || p.connecting) return;
  while (!p.outBuf.empty()) {
    ssize_t n = send(p.outFd, p.outBuf.data(), p.outBuf.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p.outBuf.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    int err = n < 0 ? errno : EPIPE;
    closeFd(p.outFd);
    p.outBuf.clear();
    if (!watched(p.token)) return;
    if (err == EPIPE || err == ECONNRESET)
      failProc(p, PeerFailureKind::kExited, "its heartbeat connection was closed (" + errnoText(err) + ")", 0);
    else
      failProc(p, PeerFailureKind::kLinkLost, "heartbeat send failed: " + errnoText(err), 0);
    return;
  }
}

void Service::dial(Proc& p, int64_t now) {
  p.nextDialMs = now + std::max<int64_t>(intervalMs_, 50);
  int fd = socket(p.addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  setNonBlockingNoDelay(fd);
  int rc = connect(fd, &p.addr.sa, p.addr.length());
  p.outFd = fd;
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
  if (p.outFd < 0 || !p.connecting) return;
  pollfd pfd{p.outFd, POLLOUT, 0};
  if (poll(&pfd, 1, timeoutMs) <= 0) return;
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(p.outFd, SOL_SOCKET, SO_ERROR, &err, &len);
  onDialDone(p, err);
}

void Service::connectNow(int64_t now) {
  std::vector<Proc*> dialed;
  for (auto& [t, p] : procs_)
    if (!p.dead && p.outFd < 0 && p.haveAddr && watched(p.token)) {
      dial(p, now);
      if (p.connecting) dialed.push_back(&p);
    }
  const int64_t end = nowMs() + 1000;
  for (Proc* p : dialed) finishDial(*p, static_cast<int>(std::max<int64_t>(0, end - nowMs())));
}

void Service::onDialDone(Proc& p, int err) {
  p.connecting = false;
  if (err == 0) {
    p.lastDialError.clear();
    Frame hello = frame(kHello, p.token);
    p.outBuf.insert(0, reinterpret_cast<const char*>(&hello), sizeof(hello));
    flush(p);
    return;
  }
  closeFd(p.outFd);
  p.lastDialError = errnoText(err);
  if (err == ECONNREFUSED && watched(p.token))
    failProc(p, PeerFailureKind::kExited, "its heartbeat port refuses connections", 0);
}

void Service::readPending(Pending& pd, bool* done) {
  *done = false;
  char buf[sizeof(Frame)];
  ssize_t n = recv(pd.fd, buf, sizeof(Frame) - pd.buf.size(), MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    closeFd(pd.fd);
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
    closeFd(pd.fd);
    return;
  }
  Proc& p = procs_[f.token];
  p.token = f.token;
  if (p.pid == 0) p.pid = f.pid;
  closeFd(p.inFd);
  p.inFd = pd.fd;
  p.inBuf.clear();
  p.lastSeenMs = nowMs();
  pd.fd = -1;
}

void Service::readIncoming(Proc& p, bool verdictOnClose) {
  char buf[4096];
  while (p.inFd >= 0) {
    ssize_t n = recv(p.inFd, buf, sizeof(buf), MSG_DONTWAIT);
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
    int err = n < 0 ? errno : 0;
    closeFd(p.inFd);
    if (!watched(p.token) || p.dead) return;
    if (err == 0 || err == ECONNRESET)
      failProc(p, PeerFailureKind::kExited, "its heartbeat connection closed", 0);
    else
      failProc(p, PeerFailureKind::kLinkLost, "heartbeat connection failed: " + errnoText(err), 0);
    return;
  }
}

void Service::drainAll() {
  if (draining_ || listenFd_ < 0) return;
  draining_ = true;
  while (true) {
    int fd = accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) break;
    setNonBlockingNoDelay(fd);
    pending_.push_back({fd, nowMs() + 5000, {}});
  }
  for (Pending& pd : pending_) {
    bool done = false;
    if (pd.fd >= 0) readPending(pd, &done);
  }
  for (auto& [t, p] : procs_)
    if (p.inFd >= 0) readIncoming(p, /*verdictOnClose=*/false);
  draining_ = false;
}

void Service::loop() {
  std::vector<pollfd> fds;
  std::vector<std::pair<int, uint64_t>> refs;  // what each pollfd is: 0 wake, 1 listener, 2 pending, 3 in, 4 out
  while (true) {
    int tick;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!running_) return;
      fds.clear();
      refs.clear();
      fds.push_back({wakeFd_, POLLIN, 0});
      refs.push_back({0, 0});
      fds.push_back({listenFd_, POLLIN, 0});
      refs.push_back({1, 0});
      for (size_t i = 0; i < pending_.size(); ++i) {
        fds.push_back({pending_[i].fd, POLLIN, 0});
        refs.push_back({2, i});
      }
      for (auto& [t, p] : procs_) {
        if (p.inFd >= 0) {
          fds.push_back({p.inFd, POLLIN, 0});
          refs.push_back({3, t});
        }
        if (p.outFd >= 0) {
          short ev = POLLIN;
          if (p.connecting || !p.outBuf.empty()) ev |= POLLOUT;
          fds.push_back({p.outFd, ev, 0});
          refs.push_back({4, t});
        }
      }
      tick = static_cast<int>(std::clamp<int64_t>(intervalMs_ / 4, 10, 250));
    }
    poll(fds.data(), fds.size(), tick);
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
        setNonBlockingNoDelay(fd);
        pending_.push_back({fd, nowMs() + 5000, {}});
      }
    } else if (what == 2) {
      if (ref >= pending_.size() || pending_[ref].fd != fds[i].fd) continue;
      bool done = false;
      readPending(pending_[ref], &done);  // done: its fd moved on or closed (-1)
    } else {
      auto it = procs_.find(ref);
      if (it == procs_.end()) continue;
      Proc& p = it->second;
      if (what == 3) {
        if (p.inFd == fds[i].fd) readIncoming(p);
      } else if (p.outFd == fds[i].fd) {
        if (p.connecting && (fds[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
          int err = 0;
          socklen_t len = sizeof(err);
          getsockopt(p.outFd, SOL_SOCKET, SO_ERROR, &err, &len);
          onDialDone(p, err);
        } else if (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) {
          // Nothing is ever sent back on an outgoing connection: readable means closed or reset.
          char c;
          ssize_t n = recv(p.outFd, &c, 1, MSG_DONTWAIT);
          if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) {
            int err = n < 0 ? errno : 0;
            closeFd(p.outFd);
            if (watched(p.token)) {
              if (err == 0 || err == ECONNRESET)
                failProc(p, PeerFailureKind::kExited, "its heartbeat connection closed", 0);
              else
                failProc(p, PeerFailureKind::kLinkLost, "heartbeat connection failed: " + errnoText(err), 0);
            }
          }
        } else if (fds[i].revents & POLLOUT) {
          flush(p);
        }
      }
    }
  }
  // Drop finished pending connections.
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Pending& pd) { return pd.fd < 0; }),
                 pending_.end());
}

}  // namespace accl::liveness
