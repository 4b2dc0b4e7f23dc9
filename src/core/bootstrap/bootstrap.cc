// accl::Bootstrap: joining the root, the ring, and the operations over it (see bootstrap.h).
#include "core/bootstrap/bootstrap.h"

#include <poll.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/bootstrap/bootstrap_net.h"
#include "core/bootstrap/bootstrap_root.h"
#include "core/bootstrap/bootstrap_wire.h"
#include "core/bootstrap/unique_id.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"

namespace accl {
namespace {

std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* format, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, format);
  vsnprintf(buf, sizeof(buf), format, ap);
  va_end(ap);
  return buf;
}

// Short, quiet wait used for one stranger's handshake, never past `outer`'s deadline.
SocketWait shortWait(const SocketWait& outer, int64_t ms, const char* what) {
  SocketWait w = SocketWait::in(ms, outer.abortFlag, what, /*quiet=*/true);
  if (outer.deadlineNs != 0 && outer.deadlineNs < w.deadlineNs) w.deadlineNs = outer.deadlineNs;
  return w;
}

ncclResult_t abortedError(int rank, const char* what) {
  ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap: rank %d aborted while waiting for %s", rank, what);
  return ncclInternalError;
}

}  // namespace

Bootstrap::~Bootstrap() = default;

SocketWait Bootstrap::waitFor(const char* what) const { return SocketWait::in(timeoutMs_, abortFlag_, what); }

ncclResult_t Bootstrap::checkPeer(const char* op, int peer) const {
  if (peer < 0 || peer >= nranks_)
    return fail(ncclInvalidArgument, "bootstrap %s: peer %d is out of range [0, %d)", op, peer, nranks_);
  return ncclSuccess;
}

ncclResult_t Bootstrap::create(const ncclUniqueId* ids, int nIds, const BootstrapOptions& options,
                               std::unique_ptr<Bootstrap>* out) {
  if (!out) return fail(ncclInvalidArgument, "bootstrap: output pointer is NULL");
  out->reset();
  if (options.nranks < 1)
    return fail(ncclInvalidArgument, "ncclCommInitRank: nranks %d is invalid (must be >= 1)", options.nranks);
  if (options.nranks > kMaxRanks)
    return fail(ncclInvalidArgument, "ncclCommInitRank: nranks %d exceeds the maximum of %d ranks accl supports",
                options.nranks, kMaxRanks);
  if (options.rank < 0 || options.rank >= options.nranks)
    return fail(ncclInvalidArgument, "ncclCommInitRank: rank %d is out of range [0, %d)", options.rank,
                options.nranks);
  if (!ids) return fail(ncclInvalidArgument, "ncclCommInitRank: unique id pointer is NULL");
  if (nIds < 1 || nIds > options.nranks)
    return fail(ncclInvalidArgument,
                "ncclCommInitRankScalable: nId %d is invalid (must be in [1, nranks=%d])", nIds,
                options.nranks);
  ACCL_CHECK(requireLibcrypto("ncclCommInitRank"));
  std::unique_ptr<Bootstrap> b(new Bootstrap());
  b->rank_ = options.rank;
  b->nranks_ = options.nranks;
  b->abortFlag_ = options.abortFlag;
  b->timeoutMs_ = options.timeoutMs > 0 ? options.timeoutMs : paramInt("ACCL_BOOTSTRAP_TIMEOUT_MS");
  if (b->timeoutMs_ <= 0) b->timeoutMs_ = 120000;
  int64_t start = nowMs();
  ACCL_CHECK(b->join(ids, nIds));
  ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap: rank %d/%d joined in %lld ms (listening on %s)", b->rank_,
            b->nranks_, static_cast<long long>(nowMs() - start), b->peers_[b->rank_].toString().c_str());
  *out = std::move(b);
  return ncclSuccess;
}

ncclResult_t Bootstrap::join(const ncclUniqueId* ids, int nIds) {
  std::vector<UniqueIdInfo> infos(nIds);
  for (int i = 0; i < nIds; ++i) ACCL_CHECK(parseUniqueId(ids[i], &infos[i]));
  for (int i = 0; i < nIds; ++i)
    for (int j = i + 1; j < nIds; ++j)
      if (infos[i].magic == infos[j].magic && infos[i].root == infos[j].root)
        return fail(ncclInvalidArgument, "ncclCommInitRankScalable: unique ids #%d and #%d are the same (%s)",
                    i, j, infos[i].root.toString().c_str());
  key_ = infos[0].key();
  const int myRoot = rootOfRank(nranks_, nIds, rank_);
  const RankBlock block = rankBlock(nranks_, nIds, myRoot);
  const UniqueIdInfo& root = infos[myRoot];

  // An NCCL_COMM_ID id has no root running anywhere yet: the block's first rank hosts it.
  if (root.magic == kCommIdMagic && rank_ == block.first)
    ACCL_CHECK(startBootstrapRootAt(root.root, root.key(), timeoutMs_, abortFlag_));

  SocketAddress local;
  ACCL_CHECK(bootstrapNetAddress(&local));
  ACCL_CHECK(Socket::listen(local, &listener_));
  acceptor_.start(&listener_, key_, SocketType::kBootstrap, AuthMode::kClientFirst, handshakeMs(),
                  "bootstrap: rank " + std::to_string(rank_) + "'s peer listener");
  peers_.assign(nranks_, SocketAddress());
  peers_[rank_] = listener_.localAddress();
  incoming_.resize(nranks_);
  peerGone_.assign(nranks_, 0);
  outgoing_.resize(nranks_);

  JoinRequest req;
  std::memset(static_cast<void*>(&req), 0, sizeof(req));
  req.header = wireHeader(kJoinRequestKind, sizeof(req));
  req.rank = rank_;
  req.nranks = nranks_;
  req.nroots = nIds;
  req.rootIndex = myRoot;
  req.timeoutMs = timeoutMs_;
  req.listenAddr = peers_[rank_];
  req.root0Addr = infos[0].root;
  req.root0Magic = infos[0].magic;
  std::memcpy(req.root0Secret, infos[0].secret.data(), kSecretBytes);

  std::string rootName = fmt("the bootstrap root (id #%d at %s)", myRoot, root.root.toString().c_str());
  Socket rootConn;
  {
    SocketWait w = waitFor(rootName.c_str());
    ACCL_CHECK(Socket::connect(root.root, root.key(), SocketType::kBootstrap, w, &rootConn));
    ACCL_CHECK(rootConn.sendAll(&req, sizeof(req), w));
  }
  auto reply = std::make_unique<JoinReply>();
  {
    // The root answers at the latest one timeout after its first rank arrived (1.5 timeouts for root 0
    // of a multi-id job, plus the block roots' exchange); wait long enough to hear its explanation.
    std::string what = "the answer of " + rootName;
    SocketWait w = SocketWait::in((nIds > 1 ? 3 : 2) * timeoutMs_, abortFlag_, what.c_str());
    auto raw = std::make_unique<JoinReply>();
    ACCL_CHECK(rootConn.recvAll(raw.get(), sizeof(JoinReply), w));
    std::string why;
    if (!decodeJoinReply(raw.get(), sizeof(JoinReply), reply.get(), &why))
      return fail(ncclRemoteError, "bootstrap: rank %d got a malformed answer from %s: %s", rank_,
                  rootName.c_str(), why.c_str());
  }
  rootConn.close();
  if (reply->status != ncclSuccess) {
    ncclResult_t code = static_cast<ncclResult_t>(reply->status);
    return fail(code, "%s (rank %d)", reply->message, rank_);
  }
  if (nranks_ == 1) return ncclSuccess;

  ACCL_CHECK(connectRing(reply->nextAddr));
  const int prev = (rank_ + nranks_ - 1) % nranks_;
  std::string what = fmt("the ring connection from rank %d", prev);
  SocketWait w = waitFor(what.c_str());
  while (!ringPrev_.valid()) {
    if (w.expired())
      return fail(ncclRemoteError, "bootstrap: rank %d timed out after %lld ms waiting for %s", rank_,
                  static_cast<long long>(timeoutMs_), what.c_str());
    bool progressed = false;
    ACCL_CHECK(progressIncoming(w, -1, &progressed));
  }
  ACCL_CHECK(allGather(peers_.data(), sizeof(SocketAddress)));
  return ncclSuccess;
}

ncclResult_t Bootstrap::connectRing(const SocketAddress& next) {
  const int nextRank = (rank_ + 1) % nranks_;
  std::string what = fmt("ring successor rank %d", nextRank);
  SocketWait w = waitFor(what.c_str());
  ACCL_CHECK(Socket::connect(next, key_, SocketType::kBootstrap, w, &ringNext_, AuthMode::kClientFirst));
  PeerHello hello{static_cast<uint32_t>(PeerLink::kRing), rank_};
  ACCL_CHECK(ringNext_.sendAll(&hello, sizeof(hello), w));
  return ncclSuccess;
}

int64_t Bootstrap::handshakeMs() const { return std::clamp<int64_t>(timeoutMs_ / 4, 50, 1000); }

void Bootstrap::filePeer(Socket conn, const SocketWait& wait) {
  // Only connections that proved the secret get here, and they send their hello right away.
  unsigned char raw[sizeof(PeerHello)];
  SocketWait hw = shortWait(wait, handshakeMs(), "a peer hello");
  if (conn.recvAll(raw, sizeof(raw), hw) != ncclSuccess) return;
  PeerHello hello;
  std::string why;
  if (!decodePeerHello(raw, sizeof(raw), nranks_, &hello, &why)) {
    ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap: rank %d dropping a connection from %s: %s", rank_,
              conn.peerAddress().toString().c_str(), why.c_str());
    return;
  }
  const int prev = (rank_ + nranks_ - 1) % nranks_;
  if (hello.link == static_cast<uint32_t>(PeerLink::kRing)) {
    if (ringPrev_.valid() || hello.fromRank != prev) {
      ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap: rank %d dropping an unexpected ring connection from rank %d (%s)",
                rank_, hello.fromRank, conn.peerAddress().toString().c_str());
      return;
    }
    ringPrev_ = std::move(conn);
  } else {
    peerGone_[hello.fromRank] = 0;
    if (incoming_[hello.fromRank].valid())
      ACCL_INFO(ACCL_LOG_BOOTSTRAP,
                "bootstrap: rank %d: rank %d opened a second connection; using the new one", rank_,
                hello.fromRank);
    incoming_[hello.fromRank] = std::move(conn);
  }
}

ncclResult_t Bootstrap::readMessage(int peer, const SocketWait& wait) {
  Socket& c = incoming_[peer];
  unsigned char raw[sizeof(MessageHeader)];
  std::string what = fmt("a message from rank %d", peer);
  SocketWait w = wait;
  w.what = what.c_str();
  ACCL_CHECK(c.recvAll(raw, sizeof(raw), w));
  MessageHeader h;
  std::string why;
  if (!decodeMessageHeader(raw, sizeof(raw), &h, &why)) {
    c.close();  // the stream is out of step: nothing more from this connection can be trusted
    peerGone_[peer] = 1;
    return fail(ncclInternalError, "bootstrap: rank %d got a corrupt message header from rank %d: %s", rank_, peer,
                why.c_str());
  }
  std::vector<char> payload(h.bytes);
  ACCL_CHECK(c.recvAll(payload.data(), payload.size(), w));
  queued_[{peer, h.tag}].push_back(std::move(payload));
  return ncclSuccess;
}

ncclResult_t Bootstrap::progressIncoming(const SocketWait& wait, int waitedPeer, bool* progressed) {
  *progressed = false;
  std::vector<pollfd> fds;
  std::vector<int> owners;  // -1 = listener, else peer rank
  while (true) {
    if (wait.aborted()) return abortedError(rank_, wait.what);
    if (wait.expired()) return ncclSuccess;
    fds.clear();
    owners.clear();
    // Decrypted bytes already in a TLS session, or its failure (met by its helper thread, which
    // took the bytes), show nowhere on its fd: a poll that must not sleep.
    bool buffered = false;
    for (int p = 0; p < nranks_; ++p) {
      if (!incoming_[p].valid()) continue;
      buffered = buffered || incoming_[p].readyWithoutFd();
      fds.push_back(pollfd{incoming_[p].fd(), incoming_[p].pollEvents(POLLIN), 0});
      owners.push_back(p);
    }
    // The listener and the handshakes in progress go last: filing a peer may replace an incoming
    // connection polled above.
    size_t firstAcceptorFd = fds.size();
    acceptor_.pollFds(&fds);
    owners.resize(fds.size(), -1);
    int64_t left = wait.remainingMs();
    int n = ::poll(fds.data(), fds.size(), buffered ? 0 : static_cast<int>(left < 0 || left > 100 ? 100 : left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      return fail(ncclSystemError, "bootstrap: rank %d poll failed while waiting for %s: %s", rank_,
                  wait.what, strerror(err));
    }
    // Handshakes also expire while nothing happens, so the acceptor runs on every wake-up.
    ready_.clear();
    acceptor_.progress(&ready_);
    for (Socket& conn : ready_) {
      filePeer(std::move(conn), wait);
      *progressed = true;
    }
    if (wait.aborted()) return abortedError(rank_, wait.what);
    if (*progressed) return ncclSuccess;  // the connections polled above may have been replaced
    if (n == 0 && !buffered) continue;
    for (size_t i = 0; i < firstAcceptorFd; ++i) {
      if (!fds[i].revents && !(buffered && incoming_[owners[i]].readyWithoutFd())) continue;
      int owner = owners[i];
      if (owner < 0) {
        continue;
      } else if (incoming_[owner].peerClosed()) {
        incoming_[owner].close();
        peerGone_[owner] = 1;
        if (owner == waitedPeer)
          return fail(ncclRemoteError,
                      "bootstrap: rank %d closed its connection while rank %d was waiting for %s", owner,
                      rank_, wait.what);
        ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap: rank %d: rank %d closed its connection", rank_, owner);
      } else {
        ACCL_CHECK(readMessage(owner, wait));
      }
      *progressed = true;
    }
    if (*progressed) return ncclSuccess;
  }
}

ncclResult_t Bootstrap::allGather(void* data, size_t bytesPerRank) {
  if (nranks_ == 1 || bytesPerRank == 0) return ncclSuccess;
  if (!data)
    return fail(ncclInvalidArgument, "bootstrap allGather: data is NULL (%zu bytes per rank)", bytesPerRank);
  std::lock_guard<std::mutex> lock(ringMutex_);
  const int prev = (rank_ + nranks_ - 1) % nranks_;
  std::string what = fmt("allGather data from rank %d (rank %d)", prev, rank_);
  uint64_t mine = bytesPerRank, theirs = 0;
  ACCL_CHECK(Socket::sendRecv(ringNext_, &mine, sizeof(mine), ringPrev_, &theirs, sizeof(theirs),
                              waitFor(what.c_str())));
  if (theirs != mine)
    return fail(ncclInternalError,
                "bootstrap allGather: rank %d passed %llu bytes per rank but rank %d passed %zu", prev,
                static_cast<unsigned long long>(theirs), rank_, bytesPerRank);
  char* base = static_cast<char*>(data);
  for (int step = 0; step < nranks_ - 1; ++step) {
    size_t sendSlice = static_cast<size_t>((rank_ - step + nranks_) % nranks_);
    size_t recvSlice = static_cast<size_t>((rank_ - step - 1 + nranks_) % nranks_);
    ACCL_CHECK(Socket::sendRecv(ringNext_, base + sendSlice * bytesPerRank, bytesPerRank, ringPrev_,
                                base + recvSlice * bytesPerRank, bytesPerRank, waitFor(what.c_str())));
  }
  return ncclSuccess;
}

ncclResult_t Bootstrap::sendLocked(int peer, int tag, const void* data, size_t bytes) {
  if (peer == rank_) {
    std::lock_guard<std::mutex> lock(recvMutex_);
    const char* p = static_cast<const char*>(data);
    queued_[{peer, tag}].emplace_back(p, p + bytes);
    return ncclSuccess;
  }
  std::lock_guard<std::mutex> lock(sendMutex_);
  Socket& c = outgoing_[peer];
  std::string what = fmt("rank %d to take a message with tag %d (from rank %d)", peer, tag, rank_);
  SocketWait w = waitFor(what.c_str());
  ncclResult_t res = ncclSuccess;
  if (bytes > kMaxPeerMessageBytes)
    return fail(ncclInvalidArgument, "bootstrap send: %zu bytes to rank %d exceed the limit of %llu bytes", bytes,
                peer, static_cast<unsigned long long>(kMaxPeerMessageBytes));
  if (!c.valid()) {
    ACCL_CHECK(Socket::connect(peers_[peer], key_, SocketType::kBootstrap, w, &c, AuthMode::kClientFirst));
    PeerHello hello{static_cast<uint32_t>(PeerLink::kP2p), rank_};
    ACCL_CHECK_GOTO(c.sendAll(&hello, sizeof(hello), w), res, broken);
  }
  {
    MessageHeader h{tag, 0, bytes};
    ACCL_CHECK_GOTO(c.sendAll(&h, sizeof(h), w), res, broken);
    ACCL_CHECK_GOTO(c.sendAll(data, bytes, w), res, broken);
  }
  return ncclSuccess;
broken:
  c.close();  // the stream is out of step now; a later send starts a new connection
  return res;
}

ncclResult_t Bootstrap::recvLocked(int peer, int tag, void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(recvMutex_);
  std::string what = fmt("a message from rank %d with tag %d", peer, tag);
  SocketWait w = waitFor(what.c_str());
  while (true) {
    auto it = queued_.find({peer, tag});
    if (it != queued_.end() && !it->second.empty()) {
      std::vector<char> msg = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) queued_.erase(it);
      if (msg.size() != bytes)
        return fail(ncclInternalError,
                    "bootstrap: message from rank %d with tag %d has %zu bytes but rank %d expected %zu",
                    peer, tag, msg.size(), rank_, bytes);
      if (bytes) std::memcpy(data, msg.data(), bytes);
      return ncclSuccess;
    }
    if (peerGone_[peer])
      return fail(ncclRemoteError, "bootstrap: rank %d closed its connection before rank %d received %s",
                  peer, rank_, what.c_str());
    if (w.expired())
      return fail(ncclRemoteError, "bootstrap: rank %d timed out after %lld ms waiting for %s%s", rank_,
                  static_cast<long long>(timeoutMs_), what.c_str(),
                  peer != rank_ && !incoming_[peer].valid() ? " (that rank never connected)" : "");
    bool progressed = false;
    ACCL_CHECK(progressIncoming(w, peer, &progressed));
  }
}

ncclResult_t Bootstrap::send(int peer, int tag, const void* data, size_t bytes) {
  ACCL_CHECK(checkPeer("send", peer));
  if (bytes && !data) return fail(ncclInvalidArgument, "bootstrap send: data is NULL for %zu bytes", bytes);
  return sendLocked(peer, tag, data, bytes);
}

ncclResult_t Bootstrap::recv(int peer, int tag, void* data, size_t bytes) {
  ACCL_CHECK(checkPeer("recv", peer));
  if (bytes && !data) return fail(ncclInvalidArgument, "bootstrap recv: data is NULL for %zu bytes", bytes);
  return recvLocked(peer, tag, data, bytes);
}

ncclResult_t Bootstrap::barrier() {
  const char token = 1;
  char got = 0;
  for (int dist = 1; dist < nranks_; dist <<= 1) {
    ACCL_CHECK(sendLocked((rank_ + dist) % nranks_, kBarrierTag, &token, 1));
    ACCL_CHECK(recvLocked((rank_ - dist % nranks_ + nranks_) % nranks_, kBarrierTag, &got, 1));
  }
  return ncclSuccess;
}

ncclResult_t Bootstrap::broadcast(int root, void* data, size_t bytes) {
  ACCL_CHECK(checkPeer("broadcast", root));
  if (bytes && !data)
    return fail(ncclInvalidArgument, "bootstrap broadcast: data is NULL for %zu bytes", bytes);
  if (nranks_ == 1) return ncclSuccess;
  if (rank_ != root) return recvLocked(root, kBroadcastTag, data, bytes);
  for (int p = 0; p < nranks_; ++p)
    if (p != root) ACCL_CHECK(sendLocked(p, kBroadcastTag, data, bytes));
  return ncclSuccess;
}

}  // namespace accl
