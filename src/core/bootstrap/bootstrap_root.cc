// The bootstrap root thread (see bootstrap_root.h for what it does and its time bounds).
// Everything here is quiet: the root logs at INFO level and never sets ncclGetLastError itself; the
// ranks it answers raise the user-visible error with the text the root sends them.
#include "core/bootstrap/bootstrap_root.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/bootstrap/bootstrap_wire.h"
#include "util/check.h"
#include "util/socket_acceptor.h"
#include "util/socket_retry.h"
#include "util/log.h"
#include "util/params.h"
#include "util/time.h"

namespace accl {
namespace {

std::atomic<int> gActiveRoots{0};

void copyMessage(char (&dst)[kWireMessageBytes], const std::string& text) {
  std::memset(dst, 0, sizeof(dst));
  std::strncpy(dst, text.c_str(), sizeof(dst) - 1);
}

// "2, 5, 7" or "2, 5, 7, ... (12 more)".
std::string rankList(const std::vector<int>& ranks, size_t maxShown = 16) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < maxShown; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > maxShown) s += ", ... (" + std::to_string(ranks.size() - maxShown) + " more)";
  return s;
}

class RootServer {
 public:
  RootServer(Socket listener, const SocketKey& key, int64_t idleTimeoutMs)
      : listener_(std::move(listener)), key_(key), idleTimeoutMs_(idleTimeoutMs), startNs_(nowNs()) {}

  void run() {
    acceptor_.start(&listener_, key_, SocketType::kBootstrap, AuthMode::kChallenge, perConnectionMs(),
                    "bootstrap root");
    gather();
    acceptor_.clear();
    requests_.clear();
    finish();
  }

 private:
  static constexpr int64_t kMs = 1000000;
  static constexpr int64_t kDepartureCheckMs = 100;

  bool isMaster() const { return haveRef_ && nroots_ > 1 && rootIndex_ == 0; }
  bool blockComplete() const { return haveRef_ && presentCount_ == block_.count; }
  std::string where() const { return listener_.localAddress().toString(); }
  int64_t perConnectionMs() const {
    int64_t t = haveRef_ ? timeoutMs_ : idleTimeoutMs_;
    return std::clamp<int64_t>(t / 4, 50, 1000);
  }

  void adopt(int nranks, int nroots, int rootIndex, int64_t timeoutMs, int refRank) {
    haveRef_ = true;
    nranks_ = nranks;
    nroots_ = nroots;
    rootIndex_ = rootIndex;
    refRank_ = refRank;
    timeoutMs_ = timeoutMs > 0 ? timeoutMs : paramInt("ACCL_BOOTSTRAP_TIMEOUT_MS");
    if (timeoutMs_ <= 0) timeoutMs_ = 120000;
    block_ = rankBlock(nranks, nroots, rootIndex);
    firstArrivalNs_ = nowNs();
    rankConns_.resize(block_.count);
    rankAddrs_.resize(block_.count);
    present_.assign(block_.count, 0);
    if (nroots > 1 && rootIndex == 0) {
      rootConns_.resize(nroots);
      reports_.resize(nroots);
      reported_.assign(nroots, 0);
    }
  }

  void reply(Socket& conn, ncclResult_t status, const std::string& message, const SocketAddress& next) {
    if (!conn.valid()) return;
    auto reply = std::make_unique<JoinReply>();
    std::memset(static_cast<void*>(reply.get()), 0, sizeof(JoinReply));
    reply->header = wireHeader(kJoinReplyKind, sizeof(JoinReply));
    reply->status = status;
    reply->nextAddr = next;
    copyMessage(reply->message, message);
    SocketWait w = SocketWait::in(timeoutMs_ > 0 ? timeoutMs_ : 1000, nullptr, "the bootstrap reply", true);
    if (conn.sendAll(reply.get(), sizeof(JoinReply), w) != ncclSuccess)
      ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap root %s: could not answer %s: %s", where().c_str(),
                conn.peerAddress().toString().c_str(), lastSocketErrorText());
    conn.close();
  }

  // With several ids the verdict is merged with the other blocks' at the end, so ranks are answered
  // then; with one id there is nothing to merge and ranks learn about an error at once.
  bool deferReplies() const { return haveRef_ && nroots_ > 1; }

  // First error wins; ranks are answered now (or at the end, see deferReplies).
  void setFatal(ncclResult_t code, const std::string& message) {
    if (fatal_ != ncclSuccess) return;
    fatal_ = code;
    fatalMsg_ = message;
    ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap root %s: failing this communicator creation: %s",
              where().c_str(), message.c_str());
    if (!deferReplies())
      for (Socket& c : rankConns_) reply(c, fatal_, fatalMsg_, SocketAddress());
  }

  std::string missingMessage() const {
    std::vector<int> missing;
    for (int i = 0; i < block_.count; ++i)
      if (!present_[i]) missing.push_back(block_.first + i);
    char buf[256];
    if (nroots_ > 1)
      snprintf(buf, sizeof(buf),
               "bootstrap: timed out after %lld ms waiting for %zu of %d ranks of block %d (ranks %d..%d)",
               static_cast<long long>(timeoutMs_), missing.size(), block_.count, rootIndex_, block_.first,
               block_.first + block_.count - 1);
    else
      snprintf(buf, sizeof(buf), "bootstrap: timed out after %lld ms waiting for %zu of %d ranks",
               static_cast<long long>(timeoutMs_), missing.size(), nranks_);
    std::string text = std::string(buf) + " (missing: " + rankList(missing) + ")";
    if (!acceptor_.lastTlsFailure().empty())
      text += "; a connection to the root failed its encryption: " + acceptor_.lastTlsFailure();
    return text;
  }

  void handleJoin(Socket conn, const JoinRequest& req) {
    // decodeJoinRequest checked every field's bounds; what is left is agreement between ranks.
    bool consistent = false;  // the request agrees with the reference and names a rank of this block
    if (!haveRef_) {
      adopt(req.nranks, req.nroots, req.rootIndex, req.timeoutMs, req.rank);
      consistent = true;
    } else if (req.nranks != nranks_) {
      std::string other =
          refRank_ >= 0 ? "rank " + std::to_string(refRank_) + " with" : "the other ranks use";
      setFatal(ncclInvalidUsage, "ncclCommInitRank: nranks mismatch: rank " + std::to_string(req.rank) +
                                     " was started with nranks=" + std::to_string(req.nranks) + " but " +
                                     other + " nranks=" + std::to_string(nranks_));
    } else if (req.nroots != nroots_) {
      setFatal(ncclInvalidUsage, "ncclCommInitRankScalable: rank " + std::to_string(req.rank) + " passed " +
                                     std::to_string(req.nroots) + " unique ids but the other ranks passed " +
                                     std::to_string(nroots_));
    } else if (req.rootIndex != rootIndex_) {
      setFatal(ncclInvalidUsage, "ncclCommInitRankScalable: rank " + std::to_string(req.rank) +
                                     " uses this id as id #" + std::to_string(req.rootIndex) +
                                     " but other ranks use it as id #" + std::to_string(rootIndex_) +
                                     " (pass the ids in the same order on every rank)");
    } else {
      consistent = true;
    }
    // Consistent joins fill their slot even after an error, so the root knows when everyone has been told.
    if (consistent) {
      int idx = req.rank - block_.first;
      if (idx < 0 || idx >= block_.count) {
        setFatal(ncclInvalidUsage, "bootstrap: rank " + std::to_string(req.rank) + " is not in block " +
                                       std::to_string(rootIndex_) + " (ranks " +
                                       std::to_string(block_.first) + ".." +
                                       std::to_string(block_.first + block_.count - 1) + ")");
      } else if (present_[idx]) {
        setFatal(ncclInvalidUsage, "ncclCommInitRank: rank " + std::to_string(req.rank) +
                                       " was claimed by two processes (" + rankAddrs_[idx].toString() +
                                       " and " + req.listenAddr.toString() +
                                       "); every rank must be used exactly once");
      } else {
        present_[idx] = 1;
        ++presentCount_;
        rankConns_[idx] = std::move(conn);
        rankAddrs_[idx] = req.listenAddr;
        if (presentCount_ == 1 || !root0Known_) {
          root0Addr_ = req.root0Addr;
          root0Key_.magic = req.root0Magic;
          std::memcpy(root0Key_.secret.data(), req.root0Secret, kSecretBytes);
          root0Known_ = true;
        }
        ACCL_TRACE(ACCL_LOG_BOOTSTRAP, "bootstrap root %s: rank %d joined (%d/%d)", where().c_str(), req.rank,
                   presentCount_, block_.count);
        if (fatal_ != ncclSuccess && !deferReplies())
          reply(rankConns_[idx], fatal_, fatalMsg_, SocketAddress());
        return;
      }
    }
    if (deferReplies())
      lateConns_.push_back(std::move(conn));
    else
      reply(conn, fatal_, fatalMsg_, SocketAddress());
  }

  void handleReport(Socket conn, const RootReport& rep) {
    if (!haveRef_) adopt(rep.nranks, rep.nroots, 0, rep.timeoutMs, -1);
    if (!isMaster()) {
      ACCL_INFO(ACCL_LOG_BOOTSTRAP,
                "bootstrap root %s: dropping a block report from %s: this root serves id #%d",
                where().c_str(), conn.peerAddress().toString().c_str(), rootIndex_);
      return;
    }
    if (rep.nranks != nranks_ || rep.nroots != nroots_) {
      setFatal(ncclInvalidUsage,
               "ncclCommInitRankScalable: the ranks of id #" + std::to_string(rep.rootIndex) +
                   " use nranks=" + std::to_string(rep.nranks) + " with " + std::to_string(rep.nroots) +
                   " ids, the ranks of id #0 nranks=" + std::to_string(nranks_) + " with " +
                   std::to_string(nroots_) + " ids");
      return;  // that root gets no verdict and reports the failure to its ranks itself
    }
    if (reported_[rep.rootIndex]) {
      ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap root %s: dropping a second report for block %d",
                where().c_str(), rep.rootIndex);
      return;
    }
    reported_[rep.rootIndex] = 1;
    ++reportsIn_;
    reports_[rep.rootIndex] = rep;
    rootConns_[rep.rootIndex] = std::move(conn);
  }

  // A rank that joined never sends anything else; if its connection becomes readable, it hung up.
  void rankLeft(int idx) {
    int rank = block_.first + idx;
    std::string addr = rankAddrs_[idx].toString();
    rankConns_[idx].close();
    present_[idx] = 0;
    --presentCount_;
    setFatal(ncclRemoteError,
             "bootstrap: rank " + std::to_string(rank) + " (" + addr +
                 ") hung up on the bootstrap root before all ranks had arrived (it was aborted "
                 "or died)");
  }

  // Looks (without waiting) for ranks that hung up while waiting for their answer.
  void checkDepartures() {
    std::vector<pollfd> fds;
    std::vector<int> slots;
    for (int i = 0; i < static_cast<int>(rankConns_.size()); ++i) {
      if (!rankConns_[i].valid()) continue;
      fds.push_back(pollfd{rankConns_[i].fd(), POLLIN, 0});
      slots.push_back(i);
    }
    if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) return;
    for (size_t k = 0; k < fds.size(); ++k)
      if (fds[k].revents) rankLeft(slots[k]);
  }

  // Waits one short slice (never past deadlineNs) for visitors and serves all of them at once:
  // handshakes run in the acceptor, authenticated connections' requests are read without blocking.
  // Departures are checked every kDepartureCheckMs rather than per visitor, so a burst of thousands of
  // joins stays linear.
  void serveOnce(int64_t deadlineNs) {
    int64_t now = nowNs();
    if (now - lastDepartureCheckNs_ >= kDepartureCheckMs * kMs) {
      checkDepartures();
      lastDepartureCheckNs_ = now;
    }
    int64_t leftMs = (deadlineNs - now) / kMs + 1;
    if (leftMs <= 0) return;
    fds_.clear();
    acceptor_.pollFds(&fds_);
    for (const Request& r : requests_) fds_.push_back(pollfd{r.conn.fd(), POLLIN, 0});
    if (::poll(fds_.data(), fds_.size(), static_cast<int>(std::min<int64_t>(leftMs, kDepartureCheckMs))) < 0 &&
        errno != EINTR) {
      ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap root %s: poll failed: %s", where().c_str(), strerror(errno));
      return;
    }
    ready_.clear();
    acceptor_.progress(&ready_);
    now = nowNs();
    for (Socket& c : ready_) {
      requests_.emplace_back();
      requests_.back().conn = std::move(c);
      requests_.back().deadlineNs = now + perConnectionMs() * kMs;
    }
    size_t kept = 0;
    for (size_t i = 0; i < requests_.size(); ++i) {
      if (advanceRequest(requests_[i], now)) continue;
      if (kept != i) requests_[kept] = std::move(requests_[i]);
      ++kept;
    }
    requests_.resize(kept);
  }

  // An authenticated connection's request, read without blocking: the header first (its length says
  // how much follows, checked against the kind's size before reading on), then the body.
  struct Request {
    Socket conn;
    int64_t deadlineNs = 0;
    size_t have = 0;
    size_t need = sizeof(WireHeader);
    std::unique_ptr<unsigned char[]> buf{new unsigned char[sizeof(RootReport) > sizeof(JoinRequest)
                                                               ? sizeof(RootReport)
                                                               : sizeof(JoinRequest)]};
  };

  void rejectRequest(Request& r, const std::string& why) {
    ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap root %s: rejected a request from %s: %s", where().c_str(),
              r.conn.peerAddress().toString().c_str(), why.c_str());
    // Only authenticated peers get here: tell them why (a rank of a mismatched build, say).
    reply(r.conn, ncclInvalidUsage, "bootstrap root " + where() + " rejected this rank's request: " + why,
          SocketAddress());
  }

  // Returns true when the request is finished (handled or rejected).
  bool advanceRequest(Request& r, int64_t now) {
    while (r.have < r.need) {
      ssize_t n = r.conn.recvSome(r.buf.get() + r.have, r.need - r.have);
      if (n > 0) {
        r.have += static_cast<size_t>(n);
        if (r.have == sizeof(WireHeader) && r.need == sizeof(WireHeader)) {
          WireHeader h;
          std::string why;
          if (!decodeWireHeader(r.buf.get(), r.have, &h, &why)) {
            rejectRequest(r, why);
            return true;
          }
          r.need = h.bytes;  // bounded: decodeWireHeader checked it is the kind's size
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (now < r.deadlineNs) return false;
        ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap root %s: dropping %s: no complete request within %lld ms",
                  where().c_str(), r.conn.peerAddress().toString().c_str(),
                  static_cast<long long>(perConnectionMs()));
        return true;
      }
      ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap root %s: dropping %s: %s before its request was complete",
                where().c_str(), r.conn.peerAddress().toString().c_str(),
                n == 0 ? "closed" : strerror(errno));
      return true;
    }
    auto msg = std::make_unique<RootBoundMessage>();
    std::string why;
    if (!decodeRootBound(r.buf.get(), r.have, msg.get(), &why)) {
      rejectRequest(r, why);
      return true;
    }
    if (msg->kind == kJoinRequestKind)
      handleJoin(std::move(r.conn), msg->join);
    else
      handleReport(std::move(r.conn), msg->report);
    return true;
  }

  void gather() {
    while (true) {
      int64_t now = nowNs();
      if (!haveRef_) {
        int64_t end = startNs_ + idleTimeoutMs_ * kMs;
        if (now >= end) return;
        serveOnce(end);
        continue;
      }
      // Even after an error the root stays until every slot is filled (or the timeout), so that ranks still
      // on their way hear the reason instead of finding the port closed.
      bool ownDone = blockComplete() || ownTimedOut_;
      bool reportsDone = !isMaster() || reportsIn_ == nroots_ - 1;
      if (ownDone && reportsDone) return;
      int64_t end;
      if (!ownDone) {
        end = firstArrivalNs_ + timeoutMs_ * kMs;
        if (now >= end) {
          ownTimedOut_ = true;
          setFatal(ncclRemoteError, missingMessage());
          continue;
        }
      } else {
        end = firstArrivalNs_ + timeoutMs_ * kMs * 3 / 2;
        if (now >= end) return;
      }
      serveOnce(end);
    }
  }

  // Block root 1..k-1: report to root 0 and take its verdict.
  void exchangeWithMaster(ncclResult_t* status, std::string* message, SocketAddress* nextBlockFirst) {
    auto rep = std::make_unique<RootReport>();
    std::memset(static_cast<void*>(rep.get()), 0, sizeof(RootReport));
    rep->header = wireHeader(kRootReportKind, sizeof(RootReport));
    rep->rootIndex = rootIndex_;
    rep->nroots = nroots_;
    rep->nranks = nranks_;
    rep->status = *status;
    rep->timeoutMs = timeoutMs_;
    if (*status == ncclSuccess) rep->firstRankAddr = rankAddrs_[0];
    copyMessage(rep->message, *message);
    auto verdict = std::make_unique<JoinReply>();
    Socket conn;
    std::string what = "root 0 at " + root0Addr_.toString();
    SocketWait w = SocketWait::in(timeoutMs_, nullptr, what.c_str(), true);
    ncclResult_t res = root0Known_
                           ? Socket::connect(root0Addr_, root0Key_, SocketType::kBootstrap, w, &conn)
                           : ncclInternalError;
    if (res == ncclSuccess) res = conn.sendAll(rep.get(), sizeof(RootReport), w);
    SocketWait wv = SocketWait::in(2 * timeoutMs_, nullptr, "the verdict of root 0", true);
    auto raw = std::make_unique<JoinReply>();
    if (res == ncclSuccess) res = conn.recvAll(raw.get(), sizeof(JoinReply), wv);
    std::string why;
    if (res == ncclSuccess && !decodeJoinReply(raw.get(), sizeof(JoinReply), verdict.get(), &why)) {
      snprintf(tMalformed, sizeof(tMalformed), "root 0 sent a malformed verdict: %s", why.c_str());
      res = ncclRemoteError;
    }
    if (res != ncclSuccess) {
      if (*status == ncclSuccess) {
        *status = ncclRemoteError;
        *message = "bootstrap: the root of id #" + std::to_string(rootIndex_) +
                   " could not get an answer from " + "the root of id #0 (" +
                   (tMalformed[0] ? tMalformed : lastSocketErrorText()) + ")";
      }
      return;
    }
    *status = static_cast<ncclResult_t>(verdict->status);
    *message = verdict->message;
    *nextBlockFirst = verdict->nextAddr;
  }

  // Root 0: merge every block's outcome, answer the block roots. A usage error (duplicate rank, nranks or
  // id-order mismatch) is the cause and leads the message; timeouts are often its consequence.
  void answerBlockRoots(ncclResult_t* status, std::string* message, SocketAddress* nextBlockFirst) {
    std::vector<SocketAddress> firstAddr(nroots_);
    std::vector<std::pair<ncclResult_t, std::string>> failures;
    if (*status == ncclSuccess)
      firstAddr[0] = rankAddrs_[0];
    else
      failures.emplace_back(*status, *message);
    for (int j = 1; j < nroots_; ++j) {
      if (!reported_[j]) {
        RankBlock b = rankBlock(nranks_, nroots_, j);
        failures.emplace_back(ncclRemoteError, "bootstrap: timed out after " + std::to_string(timeoutMs_) +
                                                   " ms waiting for the root of id #" + std::to_string(j) +
                                                   " (ranks " + std::to_string(b.first) + ".." +
                                                   std::to_string(b.first + b.count - 1) +
                                                   "; none of them arrived, or that root is unreachable)");
      } else if (reports_[j].status != ncclSuccess) {
        failures.emplace_back(static_cast<ncclResult_t>(reports_[j].status), reports_[j].message);
      } else {
        firstAddr[j] = reports_[j].firstRankAddr;
      }
    }
    std::stable_partition(failures.begin(), failures.end(),
                          [](const auto& f) { return f.first != ncclRemoteError; });
    ncclResult_t verdict = failures.empty() ? ncclSuccess : failures[0].first;
    std::string text;
    for (const auto& f : failures)
      if (text.find(f.second) == std::string::npos) text += (text.empty() ? "" : "; ") + f.second;
    for (int j = 1; j < nroots_; ++j)
      if (reported_[j]) reply(rootConns_[j], verdict, text, firstAddr[(j + 1) % nroots_]);
    *status = verdict;
    *message = text;
    *nextBlockFirst = firstAddr[1 % nroots_];
  }

  void finish() {
    listener_.close();
    if (!haveRef_) {
      ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap root %s: no rank arrived within %lld ms; exiting",
                where().c_str(), static_cast<long long>(idleTimeoutMs_));
      return;
    }
    ncclResult_t status = fatal_;
    std::string message = fatalMsg_;
    SocketAddress nextBlockFirst;
    if (nroots_ == 1) {
      if (status == ncclSuccess) nextBlockFirst = rankAddrs_[0];
    } else if (rootIndex_ == 0) {
      answerBlockRoots(&status, &message, &nextBlockFirst);
    } else if (presentCount_ > 0 || fatal_ != ncclSuccess) {
      exchangeWithMaster(&status, &message, &nextBlockFirst);
    }
    for (int i = 0; i < block_.count; ++i) {
      SocketAddress next = i + 1 < block_.count ? rankAddrs_[i + 1] : nextBlockFirst;
      reply(rankConns_[i], status, message, next);
    }
    for (Socket& c : lateConns_) reply(c, status != ncclSuccess ? status : fatal_, message, SocketAddress());
    ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap root %s: done (%d ranks of block %d, %s)", where().c_str(),
              presentCount_, rootIndex_, status == ncclSuccess ? "success" : message.c_str());
  }

  Socket listener_;
  SocketKey key_;
  SocketAcceptor acceptor_;
  std::vector<Request> requests_;
  std::vector<Socket> ready_;
  std::vector<pollfd> fds_;
  char tMalformed[256] = {};
  int64_t idleTimeoutMs_;
  int64_t startNs_;
  int64_t lastDepartureCheckNs_ = 0;

  bool haveRef_ = false;
  int nranks_ = 0, nroots_ = 0, rootIndex_ = -1, refRank_ = -1;
  int64_t timeoutMs_ = 0;
  int64_t firstArrivalNs_ = 0;
  RankBlock block_{0, 0};

  std::vector<Socket> rankConns_;
  std::vector<Socket> lateConns_;  // rejected joins waiting for the merged verdict (several ids)
  std::vector<SocketAddress> rankAddrs_;
  std::vector<char> present_;
  int presentCount_ = 0;
  bool ownTimedOut_ = false;

  bool root0Known_ = false;
  SocketAddress root0Addr_;
  SocketKey root0Key_;

  std::vector<Socket> rootConns_;
  std::vector<RootReport> reports_;
  std::vector<char> reported_;
  int reportsIn_ = 0;

  ncclResult_t fatal_ = ncclSuccess;
  std::string fatalMsg_;
};

}  // namespace

ncclResult_t startBootstrapRoot(Socket listener, const SocketKey& key, int64_t idleTimeoutMs) {
  ACCL_CHECK(requireLibcrypto("the bootstrap root"));
  if (idleTimeoutMs < 0) idleTimeoutMs = paramInt("ACCL_BOOTSTRAP_TIMEOUT_MS");
  if (idleTimeoutMs <= 0) idleTimeoutMs = 120000;
  auto server = std::make_unique<RootServer>(std::move(listener), key, idleTimeoutMs);
  gActiveRoots.fetch_add(1);
  try {
    std::thread([s = std::move(server)]() mutable {
      try {
        s->run();
      } catch (...) {
        ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap root: unexpected exception; exiting");
      }
      s.reset();  // close every socket before announcing the exit
      gActiveRoots.fetch_sub(1);
    }).detach();
  } catch (const std::system_error& e) {
    gActiveRoots.fetch_sub(1);
    return fail(ncclSystemError, "bootstrap: cannot start the root thread: %s", e.what());
  }
  return ncclSuccess;
}

ncclResult_t startBootstrapRootAt(const SocketAddress& addr, const SocketKey& key, int64_t idleTimeoutMs,
                                  const std::atomic<int>* abortFlag) {
  const SocketRetryPolicy retry = socketRetryPolicy();
  Socket listener;
  for (int64_t attempt = 0;; ++attempt) {
    bool last = attempt >= retry.retries;
    if (Socket::listen(addr, &listener, /*quiet=*/!last) == ncclSuccess) break;
    if (last) return ncclSystemError;  // listen() raised the error with the address and errno text
    if (abortFlag && abortFlag->load()) return ncclInternalError;
    // The root's own cap: a busy address is tried at least once a second.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(retry.backoffMs(attempt), 1000)));
  }
  ACCL_INFO(ACCL_LOG_BOOTSTRAP, "bootstrap: hosting the NCCL_COMM_ID root on %s", addr.toString().c_str());
  return startBootstrapRoot(std::move(listener), key, idleTimeoutMs);
}

int activeBootstrapRoots() { return gActiveRoots.load(); }

}  // namespace accl
