// The host point-to-point progress loop (see p2p_batch_loop.h); each transfer steps its FIFO end
// through fifo_end.h without blocking.
#include "backend/host/p2p_batch_loop.h"

#include <sched.h>
#include <signal.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <type_traits>

#include "device/common/chunk_loop.h"
#include "device/common/dtypes.h"
#include "backend/host/fifo_end.h"
#include "backend/host/landings.h"
#include "backend/host/user_sends.h"
#include "util/check.h"
#include "util/time.h"

namespace accl {
namespace {

struct Transfer {
  const P2pWork* work;
  Connection* conn;
  size_t done = 0;       // elements moved
  bool started = false;  // a zero-element transfer still takes one step
  bool finished = false;
  // A send whose chunks went as user pointers (backend/host/user_sends.h) finishes once head
  // reaches this (the network has sent them all); until then the proxy reads the user's buffer.
  uint64_t userSendsHead = 0;
  // Over a device that sends (receiver: lands) only in registered memory: the registered buffer
  // holding this transfer's whole range (id 0: none, every chunk goes through the FIFO).
  UserBufferReg userReg;
  // A step was published without its barrier (publishTailUnfenced / releaseHeadUnfenced): the
  // other end's sleepers are still to be checked (flushWakes).
  bool wakePending = false;
  // Receiver: step + 1 of the step it asked to land in the user's buffer (landings.h); 0: none.
  uint64_t landing = 0;
};

HostConnEnd endOf(const Transfer& t) { return hostConnEnd(*t.conn, t.work->isSend); }

// After an unfenced publish of `counter`: a sleeper that registered well before (a network proxy
// idle since the last call) is woken now, without the barrier; the fenced check (flushWakes)
// still follows, for one that registers meanwhile.
void wakeSettledSleeper(Transfer& t, FifoCounter* counter) {
  wakeIfSleeping(counter);
  t.wakePending = true;
}

// Moves at most one chunk of `t` if its connection is ready; returns whether it did.
bool tryStep(Transfer& t) {
  const P2pWork& w = *t.work;
  FifoView& f = t.conn->view;
  const size_t elem = dtypeSize(w.type);
  const size_t n = minSize(w.chunkElems, w.chanCount - t.done);
  const size_t off = (w.chanOffset + t.done) * elem;
  const bool ll = w.proto == kProtoLL;  // LL: data and flag in one word, no separate tail read
  if (w.isSend && t.started && t.done == w.chanCount) {  // every chunk out: wait for the user-pointer ones
    if (fifoCounter(f.head).load(std::memory_order_acquire) < t.userSendsHead) return false;
    t.finished = true;
    return true;
  }
  if (w.isSend) {
    if (!sendSlotFree(f)) return false;
    const char* from = static_cast<const char*>(w.sendbuff) + off;
    const size_t min = t.conn->userSendRegisteredOnly && t.userReg.id == 0 ? 0 : t.conn->userSendMinBytes;
    if (!ll && min > 0 && n * elem >= min) {
      publishUserSend(f, from, n * elem, t.userReg);
      t.userSendsHead = f.step;
    } else {
      sendStepUnfenced(f, from, n * elem, ll);
      wakeSettledSleeper(t, f.tail);
    }
  } else {
    char* to = static_cast<char*>(w.recvbuff) + off;
    const HostConnEnd end = endOf(t);
    // A large Simple chunk may land straight in the user's buffer: asked for once, before it is
    // there (landings.h); the proxy takes the landing if it has not posted the chunk's receive yet.
    const bool landable = mayLand(end, n * elem) && (!end.landRegisteredOnly || t.userReg.id != 0);
    if (!ll && t.landing != f.step + 1 && landable) {
      publishLanding(end, to, n * elem, t.userReg);
      t.landing = f.step + 1;
    }
    if (t.landing == f.step + 1) {
      // One readiness check decides: data published after it may have landed, so a second
      // check must not send this step to the slot copy.
      if (!simpleDataReady(f)) return false;
      if (!stepLanded(end)) std::memcpy(to, f.simpleSlot(f.step), n * elem);  // the proxy was ahead
      releaseHeadUnfenced(f);
    } else if (!recvStepUnfenced(f, n * elem, to, ll)) {
      return false;
    }
    wakeSettledSleeper(t, f.head);
  }
  t.done += n;
  t.started = true;
  t.finished = t.done == w.chanCount && (!w.isSend || t.userSendsHead == 0 ||
                                         fifoCounter(f.head).load(std::memory_order_acquire) >= t.userSendsHead);
  return true;
}

// The sleepers check of every step published unfenced since the last one (fifo_end.h): one
// barrier, then each counter's sleepers. Before the loop waits and before it returns.
template <class Transfers>
void flushWakes(Transfers& transfers) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (Transfer& t : transfers) {
    if (!t.wakePending) continue;
    t.wakePending = false;
    wakeIfSleeping(t.work->isSend ? t.conn->view.tail : t.conn->view.head);
  }
}

WaitPeer waitPeerOf(const Transfer& t) { return t.work->isSend ? sendWaitPeer(endOf(t)) : recvWaitPeer(endOf(t)); }

// What a wait log or an error names: the call the batch serves (a one-round all-reduce), or the
// transfer's direction.
const char* callName(const HostP2pContext& ctx, const Transfer& t) {
  return ctx.what ? ctx.what : t.work->isSend ? "ncclSend" : "ncclRecv";
}

// The transfers of one batch: on the stack up to kInline (a small call allocates nothing), on the
// heap beyond.
class TransferList {
 public:
  explicit TransferList(size_t n) : n_(n) {
    if (n > kInline)
      heap_.resize(n);
    else
      for (size_t i = 0; i < n; ++i) new (&inline_.t[i]) Transfer();  // only the used ones: a small call's
  }                                                                   // two, not sixteen, zeroed
  Transfer* begin() { return n_ > kInline ? heap_.data() : inline_.t; }
  Transfer* end() { return begin() + n_; }
  const Transfer* begin() const { return n_ > kInline ? heap_.data() : inline_.t; }
  const Transfer* end() const { return begin() + n_; }
  Transfer& operator[](size_t i) { return begin()[i]; }
  size_t size() const { return n_; }

 private:
  static constexpr size_t kInline = 16;
  static_assert(std::is_trivially_destructible_v<Transfer>, "the inline entries are never destroyed");
  size_t n_;
  union Inline {  // storage without construction
    Inline() {}
    Transfer t[kInline];
  } inline_;
  std::vector<Transfer> heap_;
};

const Transfer& firstUnfinished(const TransferList& transfers) {
  for (const Transfer& t : transfers)
    if (!t.finished) return t;
  return *transfers.begin();
}

}  // namespace

ncclResult_t hostRunP2pBatch(const HostP2pContext& ctx, int channel, const std::vector<P2pWork>& works) {
  TransferList transfers(works.size());
  for (size_t i = 0; i < works.size(); ++i) {
    transfers[i].work = &works[i];
    transfers[i].conn = ctx.view.connection(channel, works[i].peer, works[i].isSend);
    if (!transfers[i].conn)
      return fail(ncclInternalError, "p2p: no connection to rank %d on channel %d", works[i].peer, channel);
    const Connection& c = *transfers[i].conn;
    const size_t elem = dtypeSize(works[i].type);
    if (works[i].isSend && c.userSendMinBytes > 0 && c.userSendRegisteredOnly)
      ctx.view.registeredBuffer(static_cast<const char*>(works[i].sendbuff) + works[i].chanOffset * elem,
                                works[i].chanCount * elem, &transfers[i].userReg);
    if (!works[i].isSend && c.landings && c.landRegisteredOnly)
      ctx.view.registeredBuffer(static_cast<const char*>(works[i].recvbuff) + works[i].chanOffset * elem,
                                works[i].chanCount * elem, &transfers[i].userReg);
  }
  // On a failure the proxy must stop reading the user's buffers of the sends not finished, and
  // stop writing the landing a receive still waits for.
  struct AbandonOnFailure {
    TransferList& transfers;
    const HostP2pContext& ctx;
    bool armed = true;
    ~AbandonOnFailure() {
      if (!armed) return;
      for (Transfer& t : transfers) {
        if (!t.finished && t.userSendsHead > 0) abandonUserSends(t.conn->view, t.userSendsHead - 1);
        if (!t.finished && t.landing == t.conn->view.step + 1)
          withdrawLanding(endOf(t), callName(ctx, t));
      }
    }
  } guard{transfers, ctx};
  const WaitPolicy& policy = *ctx.wait;
  int idle = 0;
  int sleeps = 0;
  int64_t idleSinceMs = 0;
  int64_t lastLivenessMs = 0;
  int64_t lastLogMs = 0;
  size_t remaining = transfers.size();
  while (remaining > 0) {
    bool progressed = false;
    for (size_t i = 0; i < transfers.size(); ++i) {
      Transfer& t = transfers[i];
      if (t.finished) continue;
      // Transfers on one connection go in call order: the peer matches them that way.
      bool blocked = false;
      for (size_t j = 0; j < i && !blocked; ++j) blocked = !transfers[j].finished && transfers[j].conn == t.conn;
      if (blocked) continue;
      if (tryStep(t)) {
        progressed = true;
        if (t.finished) --remaining;
      }
    }
    if (progressed) {
      idle = sleeps = 0;
      idleSinceMs = 0;
      continue;
    }
    remaining = 0;
    for (const Transfer& t : transfers) remaining += !t.finished;
    if (remaining == 0) break;
    if (idle == 0) flushWakes(transfers);  // nothing moved: the wait starts
    // Nothing moved: spin, then yield, then sleep with a growing pause, watching abort,
    // the timeout and the peers' liveness.
    ++idle;
    if (idle < policy.spinCount) {
      cpuRelax();
      continue;
    }
    // The clock is read once the spin is over: most waits of a small call end within it.
    if (idleSinceMs == 0) lastLogMs = idleSinceMs = nowMs();
    if (nowMs() - idleSinceMs < policy.yieldUs / 1000 + 1) {
      sched_yield();
      continue;
    }
    long pauseUs = sleeps < 10 ? (1L << sleeps) : 1000;
    ++sleeps;
    struct timespec ts = {0, pauseUs * 1000};
    nanosleep(&ts, nullptr);
    if ((policy.abortFlag && policy.abortFlag->load()) || (policy.health && policy.health->failed())) {
      const Transfer& t = firstUnfinished(transfers);
      return waitFailure(policy, waitPeerOf(t), callName(ctx, t), WaitEnd::kAborted, nowMs() - idleSinceMs);
    }
    int64_t now = nowMs();
    if (policy.timeoutMs > 0 && now - idleSinceMs > policy.timeoutMs) {
      const Transfer& t = firstUnfinished(transfers);
      return waitFailure(policy, waitPeerOf(t), callName(ctx, t), WaitEnd::kTimeout, now - idleSinceMs);
    }
    if (now - lastLivenessMs > 100) {
      lastLivenessMs = now;
      for (Transfer& t : transfers)
        // A peer may post its last chunk and exit between our poll and this check: only a peer
        // that is gone and left nothing to take is an error.
        if (!t.finished && peerGone(waitPeerOf(t)) && !tryStep(t))
          return waitFailure(policy, waitPeerOf(t), callName(ctx, t),
                             peerProcessGone(waitPeerOf(t)) ? WaitEnd::kPeerExited : WaitEnd::kPeerClosed,
                             now - idleSinceMs);
    }
    const Transfer& waited = firstUnfinished(transfers);
    maybeLogLongWait(policy, waited.work->peer, callName(ctx, waited), idleSinceMs, &lastLogMs);
  }
  flushWakes(transfers);
  guard.armed = false;
  return ncclSuccess;
}

}  // namespace accl
