// SocketNetListen: accepting and checking the sockets of incoming connections (socket_net_listen.h).
#include "transports/net/socket/socket_net_listen.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/socket_auth.h"
#include "util/time.h"

namespace accl::socketnet {
namespace {

// Bounds on what strangers can make a listener hold.
constexpr size_t kMaxPending = 256;
constexpr size_t kMaxGroups = 64;
constexpr int kMaxAcceptsPerCall = 64;

}  // namespace

ncclResult_t SocketNetListen::create(const SocketNetIf& iface, NetHandle* handle,
                                     std::unique_ptr<SocketNetListen>* out) {
  auto l = std::unique_ptr<SocketNetListen>(new SocketNetListen());
  ACCL_CHECK(Socket::listen(iface.addr, &l->listener_));
  if (!secureRandom(&l->magic_, sizeof(l->magic_)))
    return fail(ncclSystemError, "NET/Socket listen on %s: no random bytes for the listener's magic",
                iface.name.c_str());
  l->ifName_ = iface.name;
  l->par_ = chooseParallelism(iface.pciPath);
  l->handshakeMs_ = std::max<int64_t>(1, paramInt("ACCL_SOCKET_HANDSHAKE_MS"));
  HandleWire h{};
  h.kind = kHandleKind;
  h.listenMagic = l->magic_;
  h.addr = l->listener_.localAddress();
  h.nThreads = static_cast<uint32_t>(l->par_.nThreads);
  h.nSocksPerThread = static_cast<uint32_t>(l->par_.nSocksPerThread);
  std::memset(handle->bytes, 0, sizeof(handle->bytes));
  std::memcpy(handle->bytes, &h, sizeof(h));
  ACCL_INFO(ACCL_LOG_NET, "NET/Socket: listening on %s (%s), %d threads x %d sockets",
            h.addr.toString().c_str(), iface.name.c_str(), l->par_.nThreads, l->par_.nSocksPerThread);
  *out = std::move(l);
  return ncclSuccess;
}

SocketNetListen::~SocketNetListen() {
  acceptWaiting();  // strangers still queued in the kernel get their line too
  for (const Pending& p : pending_)
    reject(p, "closed by the listener after %zu of %zu hello bytes", p.have, kHelloBytes);
}

void SocketNetListen::reject(const Pending& p, const char* fmt, ...) {
  char why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  ++rejected_;
  ACCL_WARN("NET/Socket: listener %s (%s) rejected a connection from %s: %s",
            listener_.localAddress().toString().c_str(), ifName_.c_str(), p.sock.peerAddress().toString().c_str(), why);
}

void SocketNetListen::acceptWaiting() {
  const int64_t now = nowNs();
  for (int i = 0; i < kMaxAcceptsPerCall; ++i) {
    pollfd p{listener_.fd(), POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return;
    // Readable: a connection is waiting, so this returns at once (the short bound covers a
    // connection reset between the poll and the accept).
    Socket conn;
    if (listener_.acceptRaw(SocketWait::in(20, nullptr, "a net connection", /*quiet=*/true), &conn) != ncclSuccess)
      return;
    if (pending_.size() >= kMaxPending) {
      reject(pending_.front(), "too many connections without a hello (%zu); dropping the oldest", pending_.size());
      pending_.erase(pending_.begin());
    }
    Pending np;
    np.sock = std::move(conn);
    np.deadlineNs = now + handshakeMs_ * 1000000;
    pending_.push_back(std::move(np));
  }
}

bool SocketNetListen::advance(Pending& p, int64_t now) {
  while (p.have < kHelloBytes) {
    ssize_t n = p.sock.recvSome(p.hello + p.have, kHelloBytes - p.have);
    if (n > 0) {
      size_t before = p.have;
      p.have += static_cast<size_t>(n);
      // Refuse a wrong magic as soon as it is complete (junk need not wait for the whole hello).
      if (before < sizeof(uint64_t) && p.have >= sizeof(uint64_t)) {
        uint64_t magic;
        std::memcpy(&magic, p.hello, sizeof(magic));
        if (magic != magic_) {
          reject(p, "wrong magic 0x%016llx (junk, or a connection meant for another listener)",
                 static_cast<unsigned long long>(magic));
          return true;
        }
      }
      continue;
    }
    int err = errno;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)) {
      if (now >= p.deadlineNs) {
        reject(p, "%zu of %zu hello bytes within %lld ms", p.have, kHelloBytes, static_cast<long long>(handshakeMs_));
        return true;
      }
      return false;
    }
    reject(p, "%s after %zu of %zu hello bytes", n == 0 ? "closed" : strerror(err), p.have, kHelloBytes);
    return true;
  }
  int32_t type;
  HelloTail tail;
  std::memcpy(&type, p.hello + sizeof(uint64_t), sizeof(type));
  std::memcpy(&tail, p.hello + kPlainHandshakeBytes, sizeof(tail));
  const uint32_t nData = static_cast<uint32_t>(par_.dataSockets());
  if (type != static_cast<int32_t>(SocketType::kNetSocket)) {
    reject(p, "connection type %d, expected %d (net socket)", type, static_cast<int>(SocketType::kNetSocket));
    return true;
  }
  if (tail.connId == 0 || tail.nDataSockets != nData || tail.index > nData) {
    reject(p, "bad hello: connection id 0x%llx, socket %u of %u data sockets (this listener uses %u)",
           static_cast<unsigned long long>(tail.connId), tail.index, tail.nDataSockets, nData);
    return true;
  }
  auto it = groups_.find(tail.connId);
  if (it == groups_.end()) {
    if (groups_.size() >= kMaxGroups) {
      reject(p, "too many incomplete connections (%zu)", groups_.size());
      return true;
    }
    it = groups_.emplace(tail.connId, Group{}).first;
    it->second.socks.resize(nData + 1);
  }
  Group& g = it->second;
  if (g.socks[tail.index].valid()) {
    reject(p, "socket %u of connection 0x%llx arrived twice", tail.index,
           static_cast<unsigned long long>(tail.connId));
    return true;
  }
  g.socks[tail.index] = std::move(p.sock);
  ++g.arrived;
  return true;
}

ncclResult_t SocketNetListen::accept(std::unique_ptr<SocketNetRecvComm>* out) {
  out->reset();
  acceptWaiting();
  const int64_t now = nowNs();
  for (size_t i = 0; i < pending_.size();) {
    if (advance(pending_[i], now))
      pending_.erase(pending_.begin() + static_cast<long>(i));
    else
      ++i;
  }
  for (auto it = groups_.begin(); it != groups_.end(); ++it) {
    Group& g = it->second;
    if (g.arrived != static_cast<int>(g.socks.size())) continue;
    Socket ctrl = std::move(g.socks[0]);
    std::vector<Socket> data;
    for (size_t s = 1; s < g.socks.size(); ++s) data.push_back(std::move(g.socks[s]));
    groups_.erase(it);
    auto comm = std::make_unique<SocketNetRecvComm>(/*sending=*/false, std::move(ctrl), std::move(data),
                                                    par_.nSocksPerThread, ifName_);
    ACCL_CHECK(comm->start());
    ACCL_INFO(ACCL_LOG_NET, "NET/Socket: accepted a connection from %s, %d data sockets", comm->peerText().c_str(),
              par_.dataSockets());
    *out = std::move(comm);
    return ncclSuccess;
  }
  return ncclSuccess;
}

}  // namespace accl::socketnet
