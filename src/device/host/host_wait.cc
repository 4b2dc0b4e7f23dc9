// Spin-then-sleep waiting for the host backend (see host_wait.h).
#include "device/host/host_wait.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "util/check.h"
#include "util/params.h"
#include "util/time.h"

namespace accl {

WaitPolicy hostWaitPolicy(const std::atomic<int>* abortFlag, int threadsOnNode) {
  WaitPolicy p;
  p.abortFlag = abortFlag;
  p.timeoutMs = paramInt("ACCL_TIMEOUT_MS");
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  const bool oversubscribed = threadsOnNode > cpus;
  int64_t spin = paramInt("ACCL_HOST_SPIN");
  int64_t yieldUs = paramInt("ACCL_HOST_YIELD_US");
  p.spinCount = static_cast<int>(spin >= 0 ? spin : (oversubscribed ? 50 : 20000));
  p.yieldUs = static_cast<int>(yieldUs >= 0 ? yieldUs : (oversubscribed ? 5000 : 200));
  return p;
}

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void futexWaitWord(const uint32_t* word, uint32_t expected, int timeoutUs) {
  struct timespec ts;
  ts.tv_sec = timeoutUs / 1000000;
  ts.tv_nsec = (timeoutUs % 1000000) * 1000L;
  syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeWord(const uint32_t* word) { syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0); }

bool peerGone(const WaitPeer& peer) {
  if (peer.closed && std::atomic_ref<const uint32_t>(*peer.closed).load(std::memory_order_acquire) != 0) return true;
  return peer.pid > 0 && kill(peer.pid, 0) != 0 && errno == ESRCH;
}

ncclResult_t waitSlowPath(const WaitPolicy& policy, bool (*poll)(void*), void* pollArg, const uint32_t* word,
                          uint32_t* sleepers, const WaitPeer& peer, const char* what) {
  const int peerRank = peer.rank;
  if (policy.yieldUs > 0) {
    const int64_t yieldEnd = nowNs() + static_cast<int64_t>(policy.yieldUs) * 1000;
    do {
      if (poll(pollArg)) return ncclSuccess;
      sched_yield();
    } while (nowNs() < yieldEnd);
  }
  const int64_t start = nowMs();
  int64_t lastLivenessCheck = start;
  std::atomic_ref<uint32_t> sleeperCount(*sleepers);
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

    if (policy.abortFlag && policy.abortFlag->load(std::memory_order_relaxed))
      return fail(ncclInvalidUsage, "%s: aborted (ncclCommAbort) while waiting for rank %d", what, peerRank);
    int64_t now = nowMs();
    if (policy.timeoutMs > 0 && now - start > policy.timeoutMs)
      return fail(ncclRemoteError,
                  "%s: rank %d made no progress for %ld ms (ACCL_TIMEOUT_MS); it may be stuck, dead or not calling "
                  "the same collective",
                  what, peerRank, (long)(now - start));
    if (now - lastLivenessCheck > 100) {
      lastLivenessCheck = now;
      // The peer may have published its last step and left since our poll.
      if (peerGone(peer) && !poll(pollArg)) {
        if (peer.pid > 0)
          return fail(ncclRemoteError, "%s: rank %d (pid %d) has exited or closed its communicator", what, peerRank,
                      peer.pid);
        return fail(ncclRemoteError, "%s: rank %d closed its communicator (abort or destroy)", what, peerRank);
      }
    }
  }
}

}  // namespace accl
