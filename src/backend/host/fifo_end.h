// One end of a FIFO (device/common/fifo.h) on the host backend: the sender's and the receiver's
// half of a Simple or LL step, each as a non-blocking test and as a blocking wait. The host Prims
// (blocking, one step at a time) and the host point-to-point loop (non-blocking, many transfers)
// both take their steps here, so the protocol is written once.
//
//   sender:   waitSendSlot / sendSlotFree -> write the Simple slot, or writeLLSlot -> publishTail(step info)
//   receiver: waitSimpleData / simpleDataReady, or waitLLData -> read -> releaseHead
//
// Every wait polls this end's own memory (the receiver `tail` and the LL flags, the sender
// `head`), sleeps on it when the policy says so, and fails (abort, timeout, peer gone or closed)
// through host_wait.h.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "device/common/fifo.h"
#include "backend/host/host_wait.h"
#include "nccl.h"

namespace accl {

struct Connection;

// One end of a connection as the host uses it.
struct HostConnEnd {
  FifoView* fifo;  // persistent view (its `step` is this end's counter)
  int peerRank;
  int peerPid;     // 0 when the peer is in this process
  // Sender over the network: Simple steps of at least this many bytes may be published as user
  // pointers (kFifoStepUserPtr; backend/host/user_sends.h); 0: never.
  size_t userSendMin = 0;
  // With userSendMin: only from inside a buffer registered with ncclCommRegister (IB, plugins).
  bool userSendRegisteredOnly = false;
  // Receiver over the network: where Simple steps of at least landMin bytes may be asked to land
  // in the user's buffer (ConnEnd::landings; null: never).
  FifoLanding* landings = nullptr;
  size_t landMin = 0;
  // With landings: only inside a buffer registered with ncclCommRegister (IB, plugins).
  bool landRegisteredOnly = false;
};

// The host's view of `conn`, a connection this rank sends on (isSend) or receives on, with the
// zero-copy fields of that side (the other side's stay off).
HostConnEnd hostConnEnd(Connection& conn, bool isSend);

inline std::atomic_ref<uint64_t> fifoCounter(FifoCounter* c) { return std::atomic_ref<uint64_t>(c->value); }

// The LL flag of the words written for `step`.
inline uint32_t llFlag(uint64_t step) { return static_cast<uint32_t>(step + 1); }

// --- Sender ---

// Who the sender waits on: its `closed` word is the one on head, which the sender polls.
inline WaitPeer sendWaitPeer(const HostConnEnd& c) { return WaitPeer{c.peerRank, c.peerPid, &c.fifo->head->closed}; }

// Whether the slot of the sender's current step is free (reads head only when the cached value
// says the FIFO may be full).
inline bool sendSlotFree(FifoView& f) {
  if (static_cast<int64_t>(f.step - f.headCache) < kFifoSteps) return true;
  f.headCache = fifoCounter(f.head).load(std::memory_order_acquire);
  return static_cast<int64_t>(f.step - f.headCache) < kFifoSteps;
}

// Waits until sendSlotFree.
ncclResult_t waitSendSlot(const HostConnEnd& c, const WaitPolicy& policy, const char* what);

// Waits until the receiver (or the proxy) has released `step` of this sender end (head > step).
ncclResult_t waitSendDone(const HostConnEnd& c, uint64_t step, const WaitPolicy& policy, const char* what);

// Writes `bytes` of `payload` into the LL slot of the current step (flag = llFlag(step)).
void writeLLSlot(FifoView& f, const char* payload, size_t bytes);

// Publishes the current step (tail = step + 1; LL receivers sleep on it too), wakes a sleeping
// receiver and moves to the next step. `stepInfo` (fifoStepInfo: what the slot holds) goes on the
// tail line first, for a proxy that forwards the step.
inline void publishTail(FifoView& f, uint32_t stepInfo) {
  std::atomic_ref<uint32_t>(f.tail->stepInfo[f.step % kFifoSteps]).store(stepInfo, std::memory_order_relaxed);
  fifoCounter(f.tail).store(f.step + 1, std::memory_order_seq_cst);
  wakeSleepers(f.tail->sleepers, f.tail->value);
  f.step++;
}

// --- Both ends: publishing now, waking later ---
// publishTail and releaseHead store their counter with a full barrier (sequentially consistent:
// the store, then the sleepers check), and that barrier waits until every earlier store has left
// the core — on a small step, the cache lines of the slot the peer is polling, a round trip to its
// core (most of a 2-rank small all-reduce's own time; docs/latency.md). A caller that takes several
// steps before it waits (the point-to-point loop) publishes with a release store instead and
// checks for sleepers later, with one barrier for all its steps, once those stores have drained:
// before it waits for anything and before it returns (flushWakes). A sleeper that registered
// in between is then either seen by that check or sees the counter itself (host_wait.cc).

// publishTail without its barrier and sleepers check.
inline void publishTailUnfenced(FifoView& f, uint32_t stepInfo) {
  std::atomic_ref<uint32_t>(f.tail->stepInfo[f.step % kFifoSteps]).store(stepInfo, std::memory_order_relaxed);
  fifoCounter(f.tail).store(f.step + 1, std::memory_order_release);
  f.step++;
}

// releaseHead without its barrier and sleepers check.
inline void releaseHeadUnfenced(FifoView& f) {
  fifoCounter(f.head).store(f.step + 1, std::memory_order_release);
  f.step++;
}

// One whole step through the FIFO, published unfenced, without waiting: the sender copies
// `bytes` of `payload` into the current slot (LL words, or the Simple slot) and publishes it (the
// caller checked sendSlotFree); the receiver, when the current step has arrived, copies its
// `bytes` to `out`, releases the slot and returns true. The point-to-point loop and the two-rank
// one-round exchange take their FIFO steps through these two.
void sendStepUnfenced(FifoView& f, const char* payload, size_t bytes, bool ll);
bool recvStepUnfenced(FifoView& f, size_t bytes, char* out, bool ll);

// Wakes the other end if it registered as a sleeper on `c`. Only after a sequentially consistent
// fence that follows unfenced publishes of `c` is a sleeper that registers at the same time sure
// to be seen; without one, it catches the sleepers that settled earlier.
inline void wakeIfSleeping(FifoCounter* c) {
  if (std::atomic_ref<uint32_t>(c->sleepers).load(std::memory_order_relaxed) != 0)
    futexWakeWord(counterWord(c->value));
}

// --- Receiver ---

// Who the receiver waits on: its `closed` word is the one on tail, which the receiver polls.
inline WaitPeer recvWaitPeer(const HostConnEnd& c) { return WaitPeer{c.peerRank, c.peerPid, &c.fifo->tail->closed}; }

// Simple: whether the current step's slot has been published.
inline bool simpleDataReady(const FifoView& f) {
  return fifoCounter(f.tail).load(std::memory_order_acquire) > f.step;
}

// Waits until simpleDataReady.
ncclResult_t waitSimpleData(const HostConnEnd& c, const WaitPolicy& policy, const char* what);

// LL: waits until every word of the current step's `bytes` carries this step's flag and copies
// the payload to `out` (room for `bytes` rounded up to kLLWordPayload).
ncclResult_t waitLLData(const HostConnEnd& c, size_t bytes, char* out, const WaitPolicy& policy, const char* what);

// LL, without waiting: when every word of the current step's `bytes` carries this step's flag,
// copies exactly `bytes` of payload to `out` and returns true.
bool tryReadLL(const FifoView& f, size_t bytes, char* out);

// Releases the current step's slot (head = step + 1), wakes a sleeping sender and moves to the
// next step.
inline void releaseHead(FifoView& f) {
  fifoCounter(f.head).store(f.step + 1, std::memory_order_seq_cst);
  wakeSleepers(f.head->sleepers, f.head->value);
  f.step++;
}

}  // namespace accl
