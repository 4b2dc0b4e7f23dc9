// IB network connection setup over a TCP side channel, as non-blocking state machines (connect /
// accept return a null comm until done). The connector sends its metadata (the handle's magic,
// its QP numbers, GID, MTU, the address and rkey of its clear-to-send FIFO); the listener checks
// the magic (a connection with junk, a wrong magic or nothing at all is logged and dropped), builds
// its QPs towards the connector's, answers with its own metadata (QP numbers, sizes FIFO); the
// connector brings its QPs to RTS and sends one "ready" byte, after which the listener may write
// clear-to-send entries. Also frees comms.
#if __has_include(<infiniband/verbs.h>)
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "transports/net/ib/ib_net_internal.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"

namespace accl::ib {

namespace {

constexpr int64_t kConnectBudgetMs = 30000;   // TCP connect retries to a listener
constexpr int64_t kHandshakeBudgetMs = 30000; // metadata exchange once connected
constexpr int64_t kSilentCandidateMs = 10000; // a connection that sends nothing is dropped
constexpr char kReady = 'R';

// Sends / receives what the socket takes now. False: the connection failed (errno kept).
bool sendSome(int fd, const void* buf, size_t len, size_t* off) {
  while (*off < len) {
    ssize_t n = send(fd, static_cast<const char*>(buf) + *off, len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    *off += static_cast<size_t>(n);
  }
  return true;
}

bool recvSome(int fd, void* buf, size_t len, size_t* got) {
  while (*got < len) {
    ssize_t n = recv(fd, static_cast<char*>(buf) + *got, len - *got, MSG_DONTWAIT);
    if (n == 0) {
      errno = ECONNRESET;
      return false;
    }
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    *got += static_cast<size_t>(n);
  }
  return true;
}

void* allocFifo(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0) return nullptr;
  memset(p, 0, bytes);
  return p;
}

void fillInfo(IbDev* dev, const IbQps& q, uint64_t magic, uint64_t fifoAddr, uint32_t fifoRkey, int tc,
              IbConnInfo* info) {
  memset(info, 0, sizeof(*info));
  info->magic = magic;
  info->nqps = static_cast<uint32_t>(q.qps.size());
  for (size_t i = 0; i < q.qps.size(); i++) info->qpn[i] = q.qps[i]->qp_num;
  memcpy(info->gid, dev->gid.raw, 16);
  info->lid = dev->portAttr.lid;
  info->linkLayer = dev->portAttr.link_layer;
  info->mtu = static_cast<uint8_t>(dev->portAttr.active_mtu);
  info->fifoAddr = fifoAddr;
  info->fifoRkey = fifoRkey;
  info->trafficClass = tc;
  snprintf(info->devName, sizeof(info->devName), "%s", dev->devName.c_str());
}

std::string peerText(const SocketAddress& addr, const IbConnInfo& info) {
  char dev[sizeof(info.devName) + 1] = {0};
  memcpy(dev, info.devName, sizeof(info.devName));
  return addr.toString() + " (" + dev + ", GID " + gidString(info.gid) + ")";
}

ncclResult_t checkRemoteInfo(const IbConnInfo& info, uint64_t magic, const SocketAddress& from) {
  if (info.magic != magic)
    return fail(ncclRemoteError, "NET/IB: connection metadata from %s carries a wrong magic", from.toString().c_str());
  if (info.nqps < 1 || info.nqps > static_cast<uint32_t>(kMaxQps))
    return fail(ncclRemoteError, "NET/IB: connection metadata from %s asks for %u QPs (1..%d)",
                from.toString().c_str(), info.nqps, kMaxQps);
  return ncclSuccess;
}

}  // namespace

// --- Freeing comms ---

void ibFreeSendComm(IbSendComm* c) {
  if (!c) return;
  const IbvTable* ibv = c->ibv;
  for (IbSendSlot& s : c->slots)
    for (IbRequest*& r : s.reqs) {
      delete r;
      r = nullptr;
    }
  ibDestroyQps(ibv, &c->q);
  if (c->fifoMr) ibv->deregMr(c->fifoMr);
  if (c->sizesMr) ibv->deregMr(c->sizesMr);
  free(c->fifo);
  free(c->sizesStage);
  delete c;
}

void ibFreeRecvComm(IbRecvComm* c) {
  if (!c) return;
  const IbvTable* ibv = c->ibv;
  for (IbRecvSlot& s : c->slots) {
    delete s.req;
    s.req = nullptr;
  }
  ibDestroyQps(ibv, &c->q);
  if (c->ctsMr) ibv->deregMr(c->ctsMr);
  if (c->sizesMr) ibv->deregMr(c->sizesMr);
  free(c->ctsStage);
  free(c->sizes);
  delete c;
}

// --- Listen / accept ---

struct IbAcceptInProgress {
  int fd = -1;
  SocketAddress peer;
  IbRecvComm* comm = nullptr;
  IbConnInfo mine{};
  size_t sent = 0;
  char ready = 0;
  size_t readyGot = 0;
  int64_t deadlineNs = 0;
  ~IbAcceptInProgress() {
    if (fd >= 0) close(fd);
    ibFreeRecvComm(comm);
  }
};

IbListenComm::~IbListenComm() {
  if (fd >= 0) close(fd);
  for (Candidate& c : candidates) close(c.fd);
}

ncclResult_t ibListen(const IbvTable* ibv, IbDev* dev, int devIndex, const SocketAddress& bindAddr,
                      NetHandle* handle, IbListenComm** out) {
  *out = nullptr;
  auto l = std::make_unique<IbListenComm>();
  l->ibv = ibv;
  l->dev = dev;
  l->addr = bindAddr;
  l->addr.setPort(0);
  l->fd = socket(l->addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (l->fd < 0) return fail(ncclSystemError, "NET/IB listen: socket() failed: %s", strerror(errno));
  socklen_t len = l->addr.length();
  if (bind(l->fd, &l->addr.sa, len) != 0 || ::listen(l->fd, 64) != 0 ||
      getsockname(l->fd, &l->addr.sa, &len) != 0)
    return fail(ncclSystemError, "NET/IB listen: cannot listen on %s: %s", l->addr.toString().c_str(),
                strerror(errno));
  std::random_device rd;
  l->magic = (uint64_t(rd()) << 32) ^ rd() ^ kConnMagic;
  IbHandleWire h{};
  h.addr = l->addr;
  h.magic = l->magic;
  h.dev = devIndex;
  memset(handle->bytes, 0, sizeof(handle->bytes));
  memcpy(handle->bytes, &h, sizeof(h));
  ACCL_INFO(ACCL_LOG_NET, "NET/IB: %s:%d listening on %s", dev->devName.c_str(), dev->port, l->addr.toString().c_str());
  *out = l.release();
  return ncclSuccess;
}

namespace {

// Builds the receive end once a candidate's metadata is complete and valid.
ncclResult_t startAccept(IbListenComm* l, IbListenComm::Candidate& cand) {
  const IbvTable* ibv = l->ibv;
  auto a = std::make_unique<IbAcceptInProgress>();
  a->fd = cand.fd;
  a->peer = cand.peer;
  a->deadlineNs = nowNs() + kHandshakeBudgetMs * 1000000;
  cand.fd = -1;
  auto* c = new IbRecvComm();
  a->comm = c;
  c->ibv = ibv;
  c->peer = peerText(cand.peer, cand.info);
  c->remoteFifoAddr = cand.info.fifoAddr;
  c->remoteFifoRkey = cand.info.fifoRkey;
  size_t ctsBytes = sizeof(IbCts) * kFifoDepth * kNetMaxRecvs;
  size_t sizesBytes = sizeof(uint32_t) * kFifoDepth * kNetMaxRecvs;
  c->ctsStage = static_cast<IbCts*>(allocFifo(ctsBytes));
  c->sizes = static_cast<uint32_t*>(allocFifo(sizesBytes));
  if (!c->ctsStage || !c->sizes) return fail(ncclSystemError, "NET/IB accept: out of memory");
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  c->ctsMr = ibv->regMr(l->dev->pd, c->ctsStage, ctsBytes, IBV_ACCESS_LOCAL_WRITE);
  c->sizesMr = ibv->regMr(l->dev->pd, c->sizes, sizesBytes, access);
  if (!c->ctsMr || !c->sizesMr)
    return fail(ncclSystemError, "NET/IB accept: cannot register the FIFOs on %s: %s", l->dev->devName.c_str(),
                strerror(errno));
  ACCL_CHECK(ibCreateQps(ibv, l->dev, static_cast<int>(cand.info.nqps), access, &c->q));
  ACCL_CHECK(ibConnectQps(ibv, &c->q, cand.info, cand.info.trafficClass));
  fillInfo(l->dev, c->q, l->magic, reinterpret_cast<uint64_t>(c->sizes), c->sizesMr->rkey, cand.info.trafficClass,
           &a->mine);
  l->accepting = std::move(a);
  return ncclSuccess;
}

}  // namespace

ncclResult_t ibAcceptStep(IbListenComm* l, IbRecvComm** out) {
  *out = nullptr;
  if (!l->accepting) {
    // Take new connections, then read each candidate's metadata as far as it has come.
    for (;;) {
      SocketAddress peer;
      socklen_t len = sizeof(peer);
      int fd = accept4(l->fd, &peer.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      l->candidates.push_back(IbListenComm::Candidate{fd, peer, nowNs(), {}, 0});
    }
    for (size_t i = 0; i < l->candidates.size() && !l->accepting; i++) {
      IbListenComm::Candidate& cand = l->candidates[i];
      bool ok = recvSome(cand.fd, &cand.info, sizeof(cand.info), &cand.got);
      const char* why = nullptr;
      if (!ok) why = "closed the connection before sending its metadata";
      else if (cand.got >= sizeof(uint64_t) && cand.info.magic != l->magic) why = "sent a wrong magic or junk";
      else if (cand.got < sizeof(cand.info) && nowNs() - cand.sinceNs > kSilentCandidateMs * 1000000)
        why = "sent no metadata in time";
      else if (cand.got == sizeof(cand.info) && (cand.info.nqps < 1 || cand.info.nqps > static_cast<uint32_t>(kMaxQps)))
        why = "sent invalid metadata";
      if (why) {
        ACCL_INFO(ACCL_LOG_NET, "NET/IB: %s: connection from %s %s; dropped", l->addr.toString().c_str(),
                  cand.peer.toString().c_str(), why);
        close(cand.fd);
        l->candidates.erase(l->candidates.begin() + static_cast<long>(i));
        i--;
        continue;
      }
      if (cand.got == sizeof(cand.info)) {
        ncclResult_t res = startAccept(l, cand);
        l->candidates.erase(l->candidates.begin() + static_cast<long>(i));
        if (res != ncclSuccess) {
          l->accepting.reset();
          return res;
        }
      }
    }
    if (!l->accepting) return ncclSuccess;
  }
  IbAcceptInProgress* a = l->accepting.get();
  if (!sendSome(a->fd, &a->mine, sizeof(a->mine), &a->sent) ||
      (a->sent == sizeof(a->mine) && !recvSome(a->fd, &a->ready, 1, &a->readyGot))) {
    int e = errno;
    std::string peer = a->comm->peer;
    l->accepting.reset();
    return fail(ncclRemoteError, "NET/IB accept: the side channel to %s failed during setup: %s", peer.c_str(),
                strerror(e));
  }
  if (a->readyGot == 1) {
    if (a->ready != kReady) {
      std::string peer = a->comm->peer;
      l->accepting.reset();
      return fail(ncclRemoteError, "NET/IB accept: %s sent a bad ready byte", peer.c_str());
    }
    *out = a->comm;
    a->comm = nullptr;
    ACCL_INFO(ACCL_LOG_NET, "NET/IB: %s:%d accepted a connection from %s, %zu QPs", l->dev->devName.c_str(),
              l->dev->port, (*out)->peer.c_str(), (*out)->q.qps.size());
    l->accepting.reset();
    return ncclSuccess;
  }
  if (nowNs() > a->deadlineNs) {
    std::string peer = a->comm->peer;
    l->accepting.reset();
    return fail(ncclRemoteError, "NET/IB accept: %s did not finish the connection setup within %lld ms", peer.c_str(),
                static_cast<long long>(kHandshakeBudgetMs));
  }
  return ncclSuccess;
}

// --- Connect ---

struct IbConnectInProgress {
  IbHandleWire handle{};
  int fd = -1;
  bool tcpUp = false;
  int64_t connectDeadlineNs = 0;
  int64_t nextAttemptNs = 0;
  int64_t handshakeDeadlineNs = 0;
  IbSendComm* comm = nullptr;
  IbConnInfo mine{};
  size_t sent = 0;
  IbConnInfo theirs{};
  size_t got = 0;
  bool qpsUp = false;
  size_t readySent = 0;
  ~IbConnectInProgress() {
    if (fd >= 0) close(fd);
    ibFreeSendComm(comm);
  }
};

void ibFreeConnectState(IbConnectInProgress* s) { delete s; }

namespace {

ncclResult_t buildSendComm(const IbvTable* ibv, IbDev* dev, const NetCommConfig& config, IbConnectInProgress* s) {
  auto* c = new IbSendComm();
  s->comm = c;
  c->ibv = ibv;
  size_t fifoBytes = sizeof(IbCts) * kFifoDepth * kNetMaxRecvs;
  size_t sizesBytes = sizeof(uint32_t) * kFifoDepth * kNetMaxRecvs;
  c->fifo = static_cast<IbCts*>(allocFifo(fifoBytes));
  c->sizesStage = static_cast<uint32_t*>(allocFifo(sizesBytes));
  if (!c->fifo || !c->sizesStage) return fail(ncclSystemError, "NET/IB connect: out of memory");
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  c->fifoMr = ibv->regMr(dev->pd, c->fifo, fifoBytes, access);
  c->sizesMr = ibv->regMr(dev->pd, c->sizesStage, sizesBytes, IBV_ACCESS_LOCAL_WRITE);
  if (!c->fifoMr || !c->sizesMr)
    return fail(ncclSystemError, "NET/IB connect: cannot register the FIFOs on %s: %s", dev->devName.c_str(),
                strerror(errno));
  int64_t nqps = paramInt("NCCL_IB_QPS_PER_CONNECTION");
  if (nqps < 1 || nqps > kMaxQps)
    return fail(ncclInvalidArgument, "NET/IB: NCCL_IB_QPS_PER_CONNECTION = %lld is out of range (1..%d)",
                static_cast<long long>(nqps), kMaxQps);
  ACCL_CHECK(ibCreateQps(ibv, dev, static_cast<int>(nqps), access, &c->q));
  fillInfo(dev, c->q, s->handle.magic, reinterpret_cast<uint64_t>(c->fifo), c->fifoMr->rkey, config.trafficClass,
           &s->mine);
  return ncclSuccess;
}

// Non-blocking TCP connect with retries on refusal; *up once connected.
ncclResult_t tcpStep(IbConnectInProgress* s, bool* up) {
  *up = false;
  const SocketAddress& to = s->handle.addr;
  int64_t now = nowNs();
  if (s->fd < 0) {
    if (now < s->nextAttemptNs) return ncclSuccess;
    s->fd = socket(to.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0) return fail(ncclSystemError, "NET/IB connect: socket() failed: %s", strerror(errno));
    if (connect(s->fd, &to.sa, to.length()) == 0) {
      *up = true;
      return ncclSuccess;
    }
    if (errno != EINPROGRESS) goto retry;
  }
  {
    pollfd p{s->fd, POLLOUT, 0};
    if (poll(&p, 1, 0) <= 0) goto checkDeadline;
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err == 0) {
      *up = true;
      return ncclSuccess;
    }
    errno = err;
  }
retry : {
  int e = errno;
  close(s->fd);
  s->fd = -1;
  s->nextAttemptNs = now + 100 * 1000000LL;
  if (now > s->connectDeadlineNs)
    return fail(ncclRemoteError, "NET/IB connect: cannot reach the listener at %s: %s", to.toString().c_str(),
                strerror(e));
  return ncclSuccess;
}
checkDeadline:
  if (now > s->connectDeadlineNs)
    return fail(ncclRemoteError, "NET/IB connect: no answer from the listener at %s within %lld ms",
                to.toString().c_str(), static_cast<long long>(kConnectBudgetMs));
  return ncclSuccess;
}

ncclResult_t connectStep(const IbvTable* ibv, IbDev* dev, const NetCommConfig& config, IbConnectInProgress* s,
                         IbSendComm** out) {
  if (!s->tcpUp) {
    bool up = false;
    ACCL_CHECK(tcpStep(s, &up));
    if (!up) return ncclSuccess;
    s->tcpUp = true;
    int one = 1;
    setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    s->handshakeDeadlineNs = nowNs() + kHandshakeBudgetMs * 1000000;
    ACCL_CHECK(buildSendComm(ibv, dev, config, s));
  }
  const std::string to = s->handle.addr.toString();
  if (!sendSome(s->fd, &s->mine, sizeof(s->mine), &s->sent) ||
      !recvSome(s->fd, &s->theirs, sizeof(s->theirs), &s->got))
    return fail(ncclRemoteError, "NET/IB connect: the side channel to %s failed during setup: %s", to.c_str(),
                strerror(errno));
  if (s->got == sizeof(s->theirs) && !s->qpsUp) {
    ACCL_CHECK(checkRemoteInfo(s->theirs, s->handle.magic, s->handle.addr));
    if (s->theirs.nqps != s->comm->q.qps.size())
      return fail(ncclRemoteError, "NET/IB connect: %s answered with %u QPs, %zu expected", to.c_str(),
                  s->theirs.nqps, s->comm->q.qps.size());
    s->comm->peer = peerText(s->handle.addr, s->theirs);
    s->comm->remoteSizesAddr = s->theirs.fifoAddr;
    s->comm->remoteSizesRkey = s->theirs.fifoRkey;
    ACCL_CHECK(ibConnectQps(ibv, &s->comm->q, s->theirs, config.trafficClass));
    s->qpsUp = true;
  }
  if (s->qpsUp) {
    if (!sendSome(s->fd, &kReady, 1, &s->readySent))
      return fail(ncclRemoteError, "NET/IB connect: the side channel to %s failed during setup: %s", to.c_str(),
                  strerror(errno));
    if (s->readySent == 1) {
      *out = s->comm;
      s->comm = nullptr;
      ACCL_INFO(ACCL_LOG_NET, "NET/IB: %s:%d connected to %s, %zu QPs", dev->devName.c_str(), dev->port,
                (*out)->peer.c_str(), (*out)->q.qps.size());
      return ncclSuccess;
    }
  }
  if (nowNs() > s->handshakeDeadlineNs)
    return fail(ncclRemoteError, "NET/IB connect: %s did not finish the connection setup within %lld ms", to.c_str(),
                static_cast<long long>(kHandshakeBudgetMs));
  return ncclSuccess;
}

}  // namespace

ncclResult_t ibConnectStep(const IbvTable* ibv, IbDev* dev, const NetCommConfig& config, const NetHandle& handle,
                           IbConnectState* state, IbSendComm** out) {
  *out = nullptr;
  if (!*state) {
    IbConnectState s(new IbConnectInProgress());
    memcpy(&s->handle, handle.bytes, sizeof(s->handle));
    if (!s->handle.addr.isInet() || s->handle.addr.port() == 0)
      return fail(ncclInvalidArgument, "NET/IB connect: the handle was not made by an IB listener");
    s->connectDeadlineNs = nowNs() + kConnectBudgetMs * 1000000;
    *state = std::move(s);
  }
  ncclResult_t res = connectStep(ibv, dev, config, state->get(), out);
  if (res != ncclSuccess || *out) state->reset();
  return res;
}

}  // namespace accl::ib
#endif  // __has_include(<infiniband/verbs.h>)
