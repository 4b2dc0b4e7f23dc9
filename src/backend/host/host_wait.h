// How host-backend threads wait for a FIFO counter or flag: spin briefly, then yield, then sleep
// on the counter's futex (device/common/fifo_signal.h) until the other end publishes and wakes
// us. Ranks may outnumber cores (16 ranks on 2 cores in CI), so a waiter must give its core away
// quickly.
// Every wait also watches the communicator's abort flag, an overall timeout, and whether the
// peer process is still alive, so a dead or silent peer becomes an error, never a hang.
// When the communicator's liveness record (core/liveness/peer_failure.h) holds a failure, every wait that
// ends reports that failure (the failed rank, its host and pid, what was seen) rather than the
// neighbour it happened to wait on. A long wait logs a line every ACCL_WAIT_LOG_INTERVAL_MS.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "core/liveness/peer_failure.h"
#include "device/common/fifo_signal.h"
#include "nccl.h"

namespace accl {

struct WaitPolicy {
  const std::atomic<int>* abortFlag = nullptr;
  int64_t timeoutMs = 0;  // <= 0: no timeout
  int spinCount = 0;      // polls before yielding
  int yieldUs = 0;        // microseconds of sched_yield() polling before sleeping
  std::shared_ptr<const CommHealth> health;  // the communicator's failure record (null: none)
  const uint64_t* opCount = nullptr;         // collectives planned so far (for wait logs)
  int rank = -1;                             // this rank (for wait logs)
  int64_t logIntervalMs = 0;                 // ACCL_WAIT_LOG_INTERVAL_MS (<= 0: no wait logs)
};

// The policy for a communicator whose node runs `threadsOnNode` busy threads (local ranks x
// channels): when they outnumber this process's CPUs a waiter must hand its core over almost at
// once (a spinning waiter would starve the rank it waits for), otherwise spinning is cheapest.
// ACCL_HOST_SPIN / ACCL_HOST_YIELD_US override the automatic choice; ACCL_TIMEOUT_MS bounds it.
// `helperThreads`: threads that move the data the waiters wait for (the network proxy and its
// socket threads); when those too outnumber the CPUs, a waiter sleeps right after its short spin
// instead of yield-polling, which would take the core from the very thread it waits for.
WaitPolicy hostWaitPolicy(const std::atomic<int>* abortFlag, int threadsOnNode, int helperThreads = 0);

// Who a wait depends on: its rank (for messages), its pid (0: same process, no liveness check)
// and the connection's `closed` word, which the peer sets when its communicator goes away.
struct WaitPeer {
  int rank;
  int pid;
  const uint32_t* closed;
};

// Waits until ready() is true. While sleeping it registers in *sleepers and sleeps on *word
// (the low half of the counter the other end bumps after publishing); meanwhile it checks that
// the peer still exists and has not closed the connection. `what` names the wait in errors.
template <class Ready>
ncclResult_t waitUntil(const WaitPolicy& policy, Ready&& ready, const uint32_t* word, uint32_t* sleepers,
                       const WaitPeer& peer, const char* what);

// Non-template part of waitUntil: the sleeping slow path after spinning and yielding failed.
// Returns ncclSuccess once ready() holds (checked through `poll`).
ncclResult_t waitSlowPath(const WaitPolicy& policy, bool (*poll)(void*), void* pollArg, const uint32_t* word,
                          uint32_t* sleepers, const WaitPeer& peer, const char* what);

// Whether the peer of a connection is gone: it closed the connection, or its process exited.
bool peerGone(const WaitPeer& peer);
// Whether the peer's process no longer exists (same host, pid known).
bool peerProcessGone(const WaitPeer& peer);

// Why a wait ended without its condition.
enum class WaitEnd { kAborted, kPeerExited, kPeerClosed, kTimeout };

// The error of a wait that ended for `why` after `waitedMs`: the communicator's recorded peer
// failure when there is one (a closed peer gets a short grace for the record to arrive, since a
// survivor closes its side after it failed), else what this wait saw itself. A peer process found
// gone is declared failed to the liveness service, which tells the other ranks.
ncclResult_t waitFailure(const WaitPolicy& policy, const WaitPeer& peer, const char* what, WaitEnd why,
                         int64_t waitedMs);

// For errors met outside a FIFO wait (e.g. connection setup over the bootstrap, which the abort
// flag interrupts): when the communicator holds a peer failure, returns ncclRemoteError naming it;
// otherwise `res` unchanged.
ncclResult_t peerFailureOr(const WaitPolicy& policy, const char* what, ncclResult_t res);

// Logs, every ACCL_WAIT_LOG_INTERVAL_MS of one wait, which operation waits for which peer and how
// long; *lastLogMs is the wait's last log time (start with the wait's start).
void maybeLogLongWait(const WaitPolicy& policy, int peerRank, const char* what, int64_t startMs, int64_t* lastLogMs);

void cpuRelax();

template <class Ready>
ncclResult_t waitUntil(const WaitPolicy& policy, Ready&& ready, const uint32_t* word, uint32_t* sleepers,
                       const WaitPeer& peer, const char* what) {
  for (int i = 0; i < policy.spinCount; ++i) {
    if (ready()) return ncclSuccess;
    cpuRelax();
  }
  using Fn = std::remove_reference_t<Ready>;
  auto poll = [](void* arg) -> bool { return (*static_cast<Fn*>(arg))(); };
  return waitSlowPath(policy, poll, const_cast<void*>(static_cast<const void*>(&ready)), word, sleepers, peer, what);
}

}  // namespace accl
