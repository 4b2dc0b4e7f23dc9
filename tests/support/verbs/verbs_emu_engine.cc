// The verbs emulator's per-context network thread: accepts requester connections on each QP's
// listener, reads frames (data on responder connections, acknowledgements on requester ones),
// writes queued output, (re)starts requester connections, and enforces the retry budget
// (IBV_WC_RETRY_EXC_ERR when a peer stops answering). All state changes happen under the
// context's mutex; the poll() itself runs unlocked.
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/tcp.h>

#include <cstdio>
#include <cstring>

#include "verbs_emu.h"

namespace verbs_emu {

namespace {

constexpr int64_t kConnectRetryNs = 50 * 1000000LL;
// The loop wakes at least every 10 ms (its poll timeout); a longer gap between two passes means
// this process did not run (stopped, starved, a sanitizer's pause), and the time is not counted
// against any retry budget: a real HCA goes on acknowledging while its host is descheduled, so a
// stall of the host never makes a retry exceeded.
constexpr int64_t kStallNs = 200 * 1000000LL;
constexpr size_t kMaxQueuedInbound = 64;

void dropFd(Conn* c) {  // closes the socket, keeps queued output (a requester reconnects)
  if (c->fd >= 0) ::close(c->fd);
  c->fd = -1;
  c->connecting = false;
  c->outOff = 0;
  c->hdrGot = 0;
  c->payload.clear();
  c->payloadGot = 0;
}

void connected(Qp* q) {
  q->out.connecting = false;
  int one = 1;
  setsockopt(q->out.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ibv_gid sgid{};
  sgid.raw[10] = 0xff;
  sgid.raw[11] = 0xff;
  memcpy(&sgid.raw[12], &q->ctx->dev->ip.s_addr, 4);
  WireHdr h{};
  h.magic = kWireMagic;
  h.type = kWireHello;
  h.seq = q->destQpn;
  h.raddr = q->qp.qp_num;
  h.len = sizeof(sgid);
  std::vector<char> f(sizeof(h) + sizeof(sgid));
  memcpy(f.data(), &h, sizeof(h));
  memcpy(f.data() + sizeof(h), &sgid, sizeof(sgid));
  q->out.out.push_front(std::move(f));
  q->out.outOff = 0;
}

// Reads what is available; calls onFrame for each complete frame. False: EOF, error or junk.
template <typename F>
bool readFrames(Conn* c, size_t budget, F onFrame) {
  while (budget > 0) {
    if (c->hdrGot < sizeof(WireHdr)) {
      ssize_t n = recv(c->fd, reinterpret_cast<char*>(&c->hdr) + c->hdrGot, sizeof(WireHdr) - c->hdrGot, MSG_DONTWAIT);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      c->hdrGot += static_cast<size_t>(n);
      if (c->hdrGot < sizeof(WireHdr)) continue;
      if (c->hdr.magic != kWireMagic || c->hdr.len > kMaxFrameBytes) return false;
      c->payload.resize(c->hdr.len);
      c->payloadGot = 0;
    }
    if (c->payloadGot < c->payload.size()) {
      ssize_t n = recv(c->fd, c->payload.data() + c->payloadGot, c->payload.size() - c->payloadGot, MSG_DONTWAIT);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      c->payloadGot += static_cast<size_t>(n);
      budget = budget > static_cast<size_t>(n) ? budget - static_cast<size_t>(n) : 0;
      if (c->payloadGot < c->payload.size()) continue;
    }
    WireHdr h = c->hdr;
    std::vector<char> p = std::move(c->payload);
    c->hdrGot = 0;
    c->payload.clear();
    c->payloadGot = 0;
    if (!onFrame(h, std::move(p))) return false;
    if (budget > 0) budget--;
  }
  return true;
}

// True when a hello frame comes from the QP's RTR peer.
bool helloFromPeer(const Qp* q, const WireHdr& h, const std::vector<char>& p) {
  ibv_gid src{};
  if (h.type != kWireHello || p.size() != sizeof(src)) return false;
  memcpy(&src, p.data(), sizeof(src));
  if (h.seq != q->qp.qp_num || h.raddr != q->destQpn || memcmp(&src, &q->dgid, sizeof(src)) != 0) {
    fprintf(stderr, "verbs-emu: QP %u: connection from QP %llu is not this QP's peer (QP %u); closed\n", q->qp.qp_num,
            static_cast<unsigned long long>(h.raddr), q->destQpn);
    return false;
  }
  return true;
}

}  // namespace

void startConnect(Qp* q) {
  if (q->out.fd >= 0 || q->outBroken) return;
  if (nowNs() < q->nextConnectNs) return;
  if (!q->destIpValid) {  // a GID the emulator cannot route: nobody will ever answer
    q->outBroken = true;
    return;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    q->nextConnectNs = nowNs() + kConnectRetryNs;
    return;
  }
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr = q->ctx->dev->ip;
  bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local));  // best effort: leave by our interface
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_addr = q->destIp;
  peer.sin_port = htons(static_cast<uint16_t>(q->destQpn));
  q->out.fd = fd;
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof(peer));
  if (rc == 0) {
    connected(q);
  } else if (errno == EINPROGRESS) {
    q->out.connecting = true;
  } else {
    dropFd(&q->out);
    q->nextConnectNs = nowNs() + kConnectRetryNs;
  }
}

void engineMain(Context* ctx) {
  struct Watch {
    std::shared_ptr<Qp> qp;
    int fd;
    int kind;  // 0 listener, 1 responder conn, 2 requester conn, 3 responder candidate
  };
  std::vector<pollfd> fds;
  std::vector<Watch> watches;
  int64_t lastPassNs = nowNs();
  while (!ctx->stop.load()) {
    faultPollFile();
    fds.clear();
    watches.clear();
    fds.push_back(pollfd{ctx->wakeFd, POLLIN, 0});
    watches.push_back(Watch{nullptr, ctx->wakeFd, -1});
    {
      std::lock_guard<std::mutex> lock(ctx->mu);
      int64_t now = nowNs();
      int64_t stalled = now - lastPassNs > kStallNs ? now - lastPassNs : 0;
      lastPassNs = now;
      for (const auto& sp : ctx->qps) {
        Qp* q = sp.get();
        // Timers first.
        if (stalled && q->retryDeadlineNs) q->retryDeadlineNs += stalled;
        if (!q->unacked.empty() && q->retryDeadlineNs && now > q->retryDeadlineNs && q->state == IBV_QPS_RTS) {
          fprintf(stderr, "verbs-emu: QP %u: no answer from QP %u within the retry budget: retry exceeded\n",
                  q->qp.qp_num, q->destQpn);
          failSends(q, IBV_WC_RETRY_EXC_ERR);
        }
        if (q->state == IBV_QPS_RTS && q->out.fd < 0 && q->out.hasOutput() && !q->outBroken) startConnect(q);
        if (!q->inQueue.empty()) processInbound(q);
        fds.push_back(pollfd{q->listenFd, POLLIN, 0});
        watches.push_back(Watch{sp, q->listenFd, 0});
        if (q->in.fd >= 0) {
          short ev = 0;
          if ((q->state == IBV_QPS_RTR || q->state == IBV_QPS_RTS) && q->inQueue.size() < kMaxQueuedInbound)
            ev |= POLLIN;
          if (q->in.hasOutput()) ev |= POLLOUT;
          fds.push_back(pollfd{q->in.fd, ev, 0});
          watches.push_back(Watch{sp, q->in.fd, 1});
        }
        if (q->pendingIn.fd >= 0 && (q->state == IBV_QPS_RTR || q->state == IBV_QPS_RTS)) {
          fds.push_back(pollfd{q->pendingIn.fd, POLLIN, 0});
          watches.push_back(Watch{sp, q->pendingIn.fd, 3});
        }
        if (q->out.fd >= 0) {
          short ev = q->out.connecting ? POLLOUT : static_cast<short>(POLLIN | (q->out.hasOutput() ? POLLOUT : 0));
          fds.push_back(pollfd{q->out.fd, ev, 0});
          watches.push_back(Watch{sp, q->out.fd, 2});
        }
      }
    }
    int n = poll(fds.data(), fds.size(), 10);
    if (n <= 0) continue;
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (fds[0].revents & POLLIN) {
      uint64_t v;
      while (read(ctx->wakeFd, &v, sizeof(v)) > 0) {
      }
    }
    for (size_t i = 1; i < fds.size(); i++) {
      short re = fds[i].revents;
      if (!re) continue;
      Qp* q = watches[i].qp.get();
      if (q->dead) continue;
      int fd = watches[i].fd;
      switch (watches[i].kind) {
        case 0: {
          int c = accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) break;
          int one = 1;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          if (q->in.fd >= 0 && q->inHelloOk) {  // keep the established one until this one proves itself
            q->pendingIn.close();
            q->pendingIn.fd = c;
            break;
          }
          q->in.close();
          q->in.fd = c;
          q->inHelloOk = false;
          break;
        }
        case 3: {
          if (q->pendingIn.fd != fd) break;
          bool valid = false;
          bool ok = readFrames(&q->pendingIn, 4096, [&](const WireHdr& h, std::vector<char>&& p) {
            valid = helloFromPeer(q, h, p);
            return false;  // stop after the hello either way
          });
          if (valid && q->pendingIn.hdrGot == 0) {
            q->in.close();
            q->in.fd = q->pendingIn.fd;
            q->pendingIn.fd = -1;
            q->pendingIn.close();
            q->inHelloOk = true;
          } else if (!ok) {
            q->pendingIn.close();
          }
          break;
        }
        case 1: {
          if (q->in.fd != fd) break;
          bool ok = true;
          if (re & (POLLIN | POLLHUP | POLLERR)) {
            ok = readFrames(&q->in, size_t(64) << 20, [&](const WireHdr& h, std::vector<char>&& p) {
              if (!q->inHelloOk) {
                if (!helloFromPeer(q, h, p)) return false;
                q->inHelloOk = true;
                return true;
              }
              if (h.type != kWireData) return false;
              q->inQueue.push_back(InFrame{h, std::move(p)});
              return q->inQueue.size() < kMaxQueuedInbound || true;
            });
            processInbound(q);
          }
          if (ok && q->in.fd == fd && (re & POLLOUT)) ok = flushOut(&q->in);
          if (!ok && q->in.fd == fd) q->in.close();
          break;
        }
        case 2: {
          if (q->out.fd != fd) break;
          if (q->out.connecting) {
            int err = 0;
            socklen_t len = sizeof(err);
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err != 0) {
              dropFd(&q->out);
              q->nextConnectNs = nowNs() + kConnectRetryNs;
              break;
            }
            connected(q);
          }
          bool ok = true;
          if (re & POLLIN)
            ok = readFrames(&q->out, size_t(1) << 20, [&](const WireHdr& h, std::vector<char>&&) {
              if (h.type != kWireAck && h.type != kWireRnr) return false;
              handleAck(q, h);
              return q->out.fd == fd;
            });
          if (ok && q->out.fd == fd) ok = flushOut(&q->out);
          if (!ok && q->out.fd == fd) {
            // The peer went away: nothing more will be acknowledged; the retry clock decides.
            q->out.close();
            q->outBroken = true;
          }
          break;
        }
      }
    }
  }
}

}  // namespace verbs_emu
