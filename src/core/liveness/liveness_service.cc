// The liveness service's registrations, verdicts and failure propagation (see liveness_service.h).
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
#include "core/liveness/liveness.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"

namespace accl::liveness {

Service& Service::get() {
  static Service* s = new Service();
  return *s;
}

Service::Service() {
  pthread_atfork([] { get().mutex_.lock(); }, [] { get().mutex_.unlock(); }, [] { get().resetInChild(); });
}

uint64_t randomU64() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return v ^ static_cast<uint64_t>(nowNs()) ^ (static_cast<uint64_t>(getpid()) << 17);
}

ncclResult_t Service::startLocked(const SocketAddress& bindAddr) {
  intervalMs_ = paramInt("ACCL_HEARTBEAT_INTERVAL_MS");
  timeoutMs_ = paramInt("ACCL_HEARTBEAT_TIMEOUT_MS");
  if (running_) return ncclSuccess;
  SocketAddress addr = bindAddr;
  addr.setPort(0);
  int fd = socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(ncclSystemError, "liveness: socket() failed: %s", strerror(errno));
  if (bind(fd, &addr.sa, addr.length()) != 0 || ::listen(fd, 128) != 0) {
    int err = errno;
    ::close(fd);
    return fail(ncclSystemError, "liveness: cannot listen on %s: %s", addr.toString().c_str(), strerror(err));
  }
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  listenAddr_ = SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  listenFd_ = fd;
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  token_ = randomU64();
  pid_ = getpid();
  char h[64] = {};
  gethostname(h, sizeof(h) - 1);
  // NCCL_HOSTID is the host's identity when set (e.g. namespaces sharing one hostname): name it first.
  const std::string hostId = paramStr("NCCL_HOSTID");
  host_ = hostId.empty() ? std::string(h) : hostId + "/" + h;
  lastBeatMs_ = lastLoopMs_ = nowMs();
  running_ = true;
  std::thread([this] { loop(); }).detach();
  ACCL_INFO(ACCL_LOG_INIT, "liveness: heartbeat on %s every %lld ms, timeout %lld ms", listenAddr_.toString().c_str(),
            static_cast<long long>(intervalMs_), static_cast<long long>(timeoutMs_));
  return ncclSuccess;
}

void Service::resetInChild() {
  // The parent's thread does not exist here; its sockets and communicators are the parent's.
  // (Closing our copies of the fds leaves the parent's connections open.)
  closeFd(listenFd_);
  closeFd(wakeFd_);
  for (auto& [t, p] : procs_) {
    p.out.forgetInChild();
    p.in.forgetInChild();
  }
  for (Pending& pd : pending_) pd.sock.forgetInChild();
  departed_.clear();
  procs_.clear();
  regs_.clear();
  pending_.clear();
  running_ = false;
  mutex_.unlock();
}

Frame Service::frame(FrameKind kind, uint64_t target) const {
  Frame f;
  std::memset(&f, 0, sizeof(f));
  f.magic = kFrameMagic;
  f.kind = kind;
  f.token = token_;
  f.target = target;
  f.pid = pid_;
  return f;
}

bool Service::watched(uint64_t token) const {
  for (const auto& r : regs_)
    for (const Member& m : r->members)
      if (m.token == token && !m.left) return true;
  return false;
}

Registration* Service::findByHealth(const CommHealth* health) {
  for (auto& r : regs_)
    if (r->health.get() == health) return r.get();
  return nullptr;
}

ncclResult_t Service::join(ncclComm* comm, const std::shared_ptr<CommHealth>& health) {
  const int n = comm->nranks;
  Card mine{};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ACCL_CHECK(startLocked(comm->bootstrap->peerAddresses()[comm->rank]));
    mine.addr = listenAddr_;
    mine.pid = pid_;
    mine.token = token_;
    copyText(mine.host, sizeof(mine.host), host_);
  }
  mine.keyPart = randomU64();
  std::vector<Card> cards(n);
  cards[comm->rank] = mine;
  ACCL_CHECK(comm->bootstrap->allGather(cards.data(), sizeof(Card)));

  std::lock_guard<std::mutex> lock(mutex_);
  if (!running_) return ncclSuccess;  // forked in between: this process does not own that comm
  auto reg = std::make_unique<Registration>();
  reg->comm = comm;
  reg->key = cards[0].keyPart;
  reg->rank = comm->rank;
  reg->health = health;
  reg->members.resize(n);
  const int64_t now = nowMs();
  for (int r = 0; r < n; ++r) {
    const Card& c = cards[r];
    reg->members[r].token = c.token;
    if (c.token == token_) continue;
    Proc& p = procs_[c.token];
    p.token = c.token;
    if (!p.haveAddr) {
      p.addr = c.addr;
      p.haveAddr = true;
      p.pid = c.pid;
      p.host = frameText(c.host, sizeof(c.host));
    }
    if (p.lastSeenMs == 0 || !p.in.valid()) p.lastSeenMs = std::max(p.lastSeenMs, now);
  }
  drainAll();  // LEAVEs of faster members that already went
  for (const Departure& d : departed_)
    if (d.key == reg->key && d.rank >= 0 && d.rank < n && reg->members[d.rank].token == d.token)
      reg->members[d.rank].left = true;
  regs_.push_back(std::move(reg));
  // Connect to the new member processes now, so that a LEAVE or FAILED this rank sends soon
  // after (a short job) finds the connection made.
  connectNow(now);
  // A member that died before we registered: its verdict is already in.
  Registration& r = *regs_.back();
  for (int m = 0; m < n && !health->failed(); ++m) {
    auto it = procs_.find(r.members[m].token);
    if (it != procs_.end() && it->second.dead) {
      Proc& p = it->second;
      p.dead = false;  // re-run the verdict for this registration
      failProc(p, PeerFailureKind::kExited, "its process exited before this rank finished init", 0);
    }
  }
  wake();
  return ncclSuccess;
}

void Service::leave(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < regs_.size(); ++i) {
    Registration& r = *regs_[i];
    if (r.comm != comm) continue;
    std::set<uint64_t> told;
    for (const Member& m : r.members) {
      if (m.token == token_ || !told.insert(m.token).second) continue;
      auto it = procs_.find(m.token);
      if (it == procs_.end() || it->second.dead) continue;
      // The process may exit right after the destroy: give the LEAVE a short chance to go out.
      Proc& p = it->second;
      if (!p.out.valid() && p.haveAddr) dial(p, nowMs());
      Frame f = frame(kLeave, r.key);
      f.rank = r.rank;
      queue(p, f);
      finishDial(p, 100);
      // Encrypted: the LEAVE may wait in TLS behind a handshake the helper thread finishes.
      for (int tries = 0; tries < 20 && p.out.valid() && !p.connecting && (!p.outBuf.empty() || p.out.tlsBusy());
           ++tries) {
        pollfd pfd{p.out.fd(), p.outBuf.empty() ? short{0} : p.out.pollEvents(POLLOUT), 0};
        poll(&pfd, 1, 5);
        flush(p);
      }
    }
    regs_.erase(regs_.begin() + i);
    return;
  }
}

void Service::reportExited(const CommHealth* health, int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  Registration* r = findByHealth(health);
  if (!r || rank < 0 || rank >= (int)r->members.size()) return;
  auto it = procs_.find(r->members[rank].token);
  if (it == procs_.end() || it->second.dead) return;
  failProc(it->second, PeerFailureKind::kExited, "its process no longer exists", 0);
}

void Service::reportClosed(const CommHealth* health, int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  Registration* r = findByHealth(health);
  if (!r || rank < 0 || rank >= (int)r->members.size()) return;
  const uint64_t token = r->members[rank].token;
  PeerFailure f;
  f.rank = rank;
  f.ranks = std::to_string(rank);
  f.kind = PeerFailureKind::kClosed;
  f.detectedBy = r->rank;
  f.detail = "abort or destroy during an operation";
  if (token == token_) {
    f.host = host_;
    f.pid = pid_;
  } else if (auto it = procs_.find(token); it != procs_.end()) {
    f.host = it->second.host;
    f.pid = it->second.pid;
  }
  if (r->health->record(f)) onRecorded(*r, f, /*spread=*/true);
}

void Service::reportLinkLost(const CommHealth* health, int rank, const std::string& detail) {
  std::lock_guard<std::mutex> lock(mutex_);
  Registration* r = findByHealth(health);
  if (!r || rank < 0 || rank >= (int)r->members.size() || r->health->failed()) return;
  drainAll();  // a LEAVE or FAILED that already arrived comes first
  auto it = procs_.find(r->members[rank].token);
  if (r->members[rank].left || r->health->failed() || it == procs_.end() || it->second.dead) return;
  PeerFailure f;
  f.rank = rank;
  f.ranks = std::to_string(rank);
  f.host = it->second.host;
  f.pid = it->second.pid;
  f.kind = PeerFailureKind::kLinkLost;
  f.detectedBy = r->rank;
  f.detail = detail;
  if (r->health->record(f)) onRecorded(*r, f, /*spread=*/true);
}

std::string Service::peerStatus(const CommHealth* health, int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  Registration* r = findByHealth(health);
  if (!r || rank < 0 || rank >= (int)r->members.size()) return "";
  if (r->members[rank].token == token_) return "in this process";
  auto it = procs_.find(r->members[rank].token);
  if (it == procs_.end()) return "";
  const Proc& p = it->second;
  char buf[256];
  if (p.dead)
    snprintf(buf, sizeof(buf), "pid %d on host %s, declared failed", p.pid, p.host.c_str());
  else
    snprintf(buf, sizeof(buf), "pid %d on host %s, alive: last heartbeat %lld ms ago", p.pid, p.host.c_str(),
             static_cast<long long>(nowMs() - p.lastSeenMs));
  return buf;
}

void Service::handleFrame(const Frame& f, Proc* from) {
  if (f.kind == kBeat || f.kind == kHello) return;
  if (f.kind == kLeave) {
    // Kept even when a registration of that communicator exists: another rank of it in this
    // process may still be between its card exchange and its registration (grouped inits), and
    // must learn on registering that this member already left.
    if (departed_.size() >= 4096) departed_.erase(departed_.begin(), departed_.begin() + 1024);
    departed_.push_back({f.target, from->token, f.rank});
  }
  for (auto& rp : regs_) {
    Registration& r = *rp;
    if (r.key != f.target) continue;
    bool member = false;
    for (const Member& m : r.members) member |= m.token == from->token;
    if (!member) continue;
    if (f.kind == kLeave) {
      if (f.rank >= 0 && f.rank < (int)r.members.size() && r.members[f.rank].token == from->token)
        r.members[f.rank].left = true;
    } else if (f.kind == kFailed) {
      PeerFailure pf;
      pf.rank = f.rank;
      pf.ranks = frameText(f.ranks, sizeof(f.ranks));
      pf.host = frameText(f.host, sizeof(f.host));
      pf.pid = f.pid;
      pf.kind = static_cast<PeerFailureKind>(f.failKind);
      pf.silentMs = f.silentMs;
      pf.detectedBy = f.detectedBy;
      pf.detail = frameText(f.detail, sizeof(f.detail));
      // A link fails at both ends: told that ours failed, we name the rank that saw it.
      if (pf.kind == PeerFailureKind::kLinkLost && pf.rank >= 0 && pf.rank < (int)r.members.size() &&
          r.members[pf.rank].token == token_ && from->token != token_) {
        pf.rank = f.detectedBy;
        pf.ranks = std::to_string(f.detectedBy);
        pf.host = from->host;
        pf.pid = from->pid;
      }
      if (r.health->record(pf)) onRecorded(r, pf, /*spread=*/false);
    }
  }
}

void Service::failProc(Proc& p, PeerFailureKind kind, const std::string& detail, int64_t silentMs) {
  if (p.dead) return;
  drainAll();
  // It left every communicator we share with it before it went: no failure.
  if (p.dead || !watched(p.token)) return;
  p.dead = true;
  p.out.close();
  p.in.close();
  p.outBuf.clear();
  for (auto& rp : regs_) {
    Registration& r = *rp;
    PeerFailure f;
    for (int m = 0; m < (int)r.members.size(); ++m) {
      if (r.members[m].token != p.token || r.members[m].left) continue;
      if (f.rank < 0) f.rank = m;
      f.ranks += (f.ranks.empty() ? "" : ",") + std::to_string(m);
    }
    if (f.rank < 0) continue;
    f.host = p.host;
    f.pid = p.pid;
    f.kind = kind;
    f.silentMs = silentMs;
    f.detectedBy = r.rank;
    f.detail = detail;
    if (r.health->record(f)) onRecorded(r, f, /*spread=*/true);
  }
}

void Service::onRecorded(Registration& r, const PeerFailure& f, bool spread) {
  ncclComm* comm = r.comm;
  comm->asyncResult.store(ncclRemoteError);
  // Stop the operation that may run now (its bootstrap waits watch only the abort flag). Not while
  // the communicator is being revoked or shrunk (that quiesces it and clears the flag itself), nor
  // once an operation already failed: nothing runs then.
  int expected = 0;
  if (comm->state.load() == CommState::Ready) comm->abortFlag.compare_exchange_strong(expected, kAbortByPeerFailure);
  ACCL_WARN("comm %p rank %d: %s; its operations fail with ncclRemoteError", static_cast<void*>(comm), r.rank,
            describePeerFailure(f).c_str());
  if (!spread) return;
  // Other ranks of this communicator in this process (threads mode) learn it directly.
  for (auto& other : regs_)
    if (other.get() != &r && other->key == r.key && other->health->record(f)) onRecorded(*other, f, false);
  std::set<uint64_t> told;
  for (const Member& m : r.members) {
    if (m.token == token_ || !told.insert(m.token).second) continue;
    auto it = procs_.find(m.token);
    if (it == procs_.end() || it->second.dead) continue;
    Frame fr = frame(kFailed, r.key);
    fr.rank = f.rank;
    fr.detectedBy = f.detectedBy;
    fr.failKind = static_cast<int32_t>(f.kind);
    fr.pid = f.pid;
    fr.silentMs = f.silentMs;
    copyText(fr.host, sizeof(fr.host), f.host);
    copyText(fr.ranks, sizeof(fr.ranks), f.ranks);
    copyText(fr.detail, sizeof(fr.detail), f.detail);
    queue(it->second, fr);
  }
}

void Service::periodic(int64_t now) {
  // This process itself was stopped or starved (the loop did not run): what arrived meanwhile is
  // read already, so silence measured across the gap says nothing about the peers.
  if (now - lastLoopMs_ > std::max<int64_t>(2 * intervalMs_, 1000))
    for (auto& [t, p] : procs_) p.lastSeenMs = std::max(p.lastSeenMs, now);
  lastLoopMs_ = now;
  const bool beat = now - lastBeatMs_ >= intervalMs_;
  if (beat) lastBeatMs_ = now;
  for (auto& [t, p] : procs_) {
    if (p.dead) continue;
    const bool w = watched(p.token);
    if (w && !p.out.valid() && p.haveAddr && now >= p.nextDialMs) dial(p, now);
    if (p.dead) continue;
    if (beat && p.out.valid() && !p.connecting) queue(p, frame(kBeat, 0));
    if (p.dead || !w || timeoutMs_ <= 0) continue;
    const int64_t silent = now - p.lastSeenMs;
    if (silent > timeoutMs_) {
      if (!p.in.valid() && !p.lastDialError.empty())
        failProc(p, PeerFailureKind::kLinkLost, "unreachable: " + p.lastDialError, silent);
      else
        failProc(p, PeerFailureKind::kFrozen, "", silent);
    }
  }
  for (size_t i = 0; i < pending_.size();) {
    if (!pending_[i].sock.valid() || now > pending_[i].deadlineMs) {
      pending_.erase(pending_.begin() + i);
    } else {
      ++i;
    }
  }
}

}  // namespace accl::liveness
