// Spin-then-sleep waiting for the host backend (see host_wait.h).
#include "backend/host/host_wait.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <string>

#include "activity/ras_waits.h"
#include "core/liveness/liveness.h"
#include "util/check.h"
#include "util/last_error.h"
#include "util/params.h"
#include "util/time.h"

namespace accl {

WaitPolicy hostWaitPolicy(const std::atomic<int>* abortFlag, int threadsOnNode, int helperThreads) {
  WaitPolicy p;
  p.abortFlag = abortFlag;
  p.timeoutMs = paramInt("ACCL_TIMEOUT_MS");
  p.logIntervalMs = paramInt("ACCL_WAIT_LOG_INTERVAL_MS");
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  const bool oversubscribed = threadsOnNode > cpus;
  int64_t spin = paramInt("ACCL_HOST_SPIN");
  int64_t yieldUs = paramInt("ACCL_HOST_YIELD_US");
  // Not oversubscribed by our own threads, a running peer answers within a microsecond; a peer
  // that has not answered after ~1 us (50 polls) is likely not running at all — e.g. the
  // scheduler put it on this very core (it does, after a rank slept) — and a longer spin only
  // delays it (each poll is a pause plus a load, ~25 ns here). 2 ranks on one core, 8 B-2 KiB:
  // 200 polls 7.2-7.5 us per call, 50 polls 3.1-3.2; on two cores the same, 0.36 us at 8 B, and
  // 256 KiB-16 MiB busbw unchanged (docs/latency.md).
  // Oversubscribed, the peer a wait needs is most often queued behind this very thread: after a
  // few polls (a running peer's answer) the core is better given away at once. 4 ranks on 2 cores,
  // 8 B-2 KiB all-reduce: 10 polls 2.4-3.7 us per call, 50 polls 3.7-7.8 us (docs/latency.md).
  p.spinCount = static_cast<int>(spin >= 0 ? spin : (oversubscribed ? 10 : 50));
  const bool helpersStarved = helperThreads > 0 && threadsOnNode + helperThreads > cpus;
  p.yieldUs = static_cast<int>(yieldUs >= 0 ? yieldUs : helpersStarved ? 0 : (oversubscribed ? 5000 : 200));
  if (helpersStarved && spin < 0) p.spinCount = 50;
  return p;
}

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

bool peerGone(const WaitPeer& peer) {
  if (peer.closed && std::atomic_ref<const uint32_t>(*peer.closed).load(std::memory_order_acquire) != 0) return true;
  return peerProcessGone(peer);
}

ncclResult_t waitSlowPath(const WaitPolicy& policy, bool (*poll)(void*), void* pollArg, const uint32_t* word,
                          uint32_t* sleepers, const WaitPeer& peer, const char* what) {
  if (policy.yieldUs > 0) {
    const int64_t yieldEnd = nowNs() + static_cast<int64_t>(policy.yieldUs) * 1000;
    do {
      if (poll(pollArg)) return ncclSuccess;
      sched_yield();
    } while (nowNs() < yieldEnd);
  }
  const int64_t start = nowMs();
  int64_t lastLivenessCheck = start;
  int64_t lastLog = start;
  std::atomic_ref<uint32_t> sleeperCount(*sleepers);
  RasWaitNote rasNote(policy.abortFlag, peer.rank);  // accl-ras: "waiting for rank N" (activity/ras_waits.h)
  while (true) {
    // Read the word first, then announce ourselves, then re-check: the other end either sees
    // our sleeper count after publishing (and wakes us), or changed the word before our sleep.
    uint32_t seen = std::atomic_ref<const uint32_t>(*word).load(std::memory_order_seq_cst);
    sleeperCount.fetch_add(1, std::memory_order_seq_cst);
    if (poll(pollArg)) {
      sleeperCount.fetch_sub(1, std::memory_order_seq_cst);
      return ncclSuccess;
    }
    futexWaitWord(word, seen, 10000);
    sleeperCount.fetch_sub(1, std::memory_order_seq_cst);
    if (poll(pollArg)) return ncclSuccess;

    int64_t now = nowMs();
    if ((policy.abortFlag && policy.abortFlag->load(std::memory_order_relaxed)) ||
        (policy.health && policy.health->failed()))
      return waitFailure(policy, peer, what, WaitEnd::kAborted, now - start);
    if (policy.timeoutMs > 0 && now - start > policy.timeoutMs)
      return waitFailure(policy, peer, what, WaitEnd::kTimeout, now - start);
    if (now - lastLivenessCheck > 100) {
      lastLivenessCheck = now;
      // The peer may have published its last step and left since our poll.
      if (peerGone(peer) && !poll(pollArg))
        return waitFailure(policy, peer, what, peerProcessGone(peer) ? WaitEnd::kPeerExited : WaitEnd::kPeerClosed,
                           now - start);
    }
    maybeLogLongWait(policy, peer.rank, what, start, &lastLog);
  }
}

bool peerProcessGone(const WaitPeer& peer) { return peer.pid > 0 && kill(peer.pid, 0) != 0 && errno == ESRCH; }

namespace {

// How long a wait that saw its peer close gives the liveness service to deliver the failure that
// made the peer close (the peer records it and tells us before its own wait ends).
constexpr int64_t kClosedPeerGraceMs = 1000;

ncclResult_t recordedFailure(const WaitPolicy& policy, const char* what) {
  return fail(ncclRemoteError, "%s: %s", what, policy.health->describe().c_str());
}

}  // namespace

ncclResult_t waitFailure(const WaitPolicy& policy, const WaitPeer& peer, const char* what, WaitEnd why,
                         int64_t waitedMs) {
  const CommHealth* health = policy.health.get();
  if (health && !health->failed() && why == WaitEnd::kPeerExited) livenessReportExited(health, peer.rank);
  if (health && !health->failed() && (why == WaitEnd::kPeerClosed || why == WaitEnd::kPeerExited)) {
    const int64_t end = nowMs() + kClosedPeerGraceMs;
    while (!health->failed() && nowMs() < end) usleep(1000);
    // Nobody reported a cause (a process that left the communicator on purpose and then exited
    // is no liveness failure): this peer closed first. Say so to the others, whose waits end
    // when this rank's operation fails in turn.
    if (!health->failed()) livenessReportClosed(health, peer.rank);
  }
  if (health && health->failed()) return recordedFailure(policy, what);
  const int peerRank = peer.rank;
  switch (why) {
    case WaitEnd::kAborted:
      return fail(ncclInvalidUsage, "%s: aborted (ncclCommAbort) while waiting for rank %d", what, peerRank);
    case WaitEnd::kTimeout: {
      std::string status = livenessPeerStatus(health, peerRank);
      return fail(ncclRemoteError,
                  "%s: rank %d made no progress for %ld ms (ACCL_TIMEOUT_MS)%s%s; it may be stuck, dead or not "
                  "calling the same collective",
                  what, peerRank, (long)waitedMs, status.empty() ? "" : "; ", status.c_str());
    }
    case WaitEnd::kPeerExited:
      return fail(ncclRemoteError, "%s: rank %d (pid %d) has exited", what, peerRank, peer.pid);
    case WaitEnd::kPeerClosed:
      return fail(ncclRemoteError, "%s: rank %d closed its communicator (abort or destroy)", what, peerRank);
  }
  return ncclInternalError;
}

ncclResult_t peerFailureOr(const WaitPolicy& policy, const char* what, ncclResult_t res) {
  if (res == ncclSuccess || res == ncclInvalidArgument || res == ncclInvalidUsage) return res;
  const CommHealth* health = policy.health.get();
  if (!health) return res;
  // A bootstrap error caused by the failure may come before the verdict: give it a moment.
  const int64_t end = nowMs() + kClosedPeerGraceMs;
  while (!health->failed() && nowMs() < end) usleep(1000);
  return health->failed() ? recordedFailure(policy, what) : res;
}

void maybeLogLongWait(const WaitPolicy& policy, int peerRank, const char* what, int64_t startMs, int64_t* lastLogMs) {
  const int64_t interval = policy.logIntervalMs;
  if (interval <= 0) return;
  const int64_t now = nowMs();
  if (now - *lastLogMs < interval) return;
  *lastLogMs = now;
  std::string status = livenessPeerStatus(policy.health.get(), peerRank);
  // A progress note, not an error: keep ncclGetLastError's text as it was.
  std::string saved = lastErrorText();
  ACCL_WARN("%s (opCount %llx) rank %d: waiting for rank %d for %lld ms%s%s%s", what,
            static_cast<unsigned long long>(policy.opCount && *policy.opCount ? *policy.opCount - 1 : 0),
            policy.rank, peerRank, static_cast<long long>(now - startMs), status.empty() ? "" : " (", status.c_str(),
            status.empty() ? "" : ")");
  setLastError(saved.c_str());
}

}  // namespace accl
