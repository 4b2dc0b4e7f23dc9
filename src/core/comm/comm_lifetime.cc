// The registry of communicator objects, holds, pins, and the close protocol (see comm_lifetime.h).
#include "core/comm/comm_lifetime.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "util/check.h"
#include "util/log.h"
#include "util/time.h"

namespace accl {
namespace {

// How long a closer waits for other threads to leave the communicator before it hands the
// freeing to the last of them. Every wait in the library watches the abort flag at least every
// 100 ms, so this only runs out when a thread is stuck outside the library's waits.
constexpr int64_t kDrainWaitMs = 5000;
// Destroyed handles remembered for better messages (addresses only, the memory is freed).
constexpr size_t kDeadRemembered = 4096;

struct Registry {
  std::mutex mutex;
  std::condition_variable left;  // a hold was released
  std::unordered_set<const ncclComm*> objects;  // allocated and not yet deleted (closing ones too)
  std::unordered_set<const ncclComm*> dead;
  std::deque<const ncclComm*> deadOrder;
};

Registry& reg() {
  static Registry* r = new Registry();  // never destroyed: handles may be used during exit
  return *r;
}

// One hold taken by checkCommHandle; `fast`: without the mutex, through the sticky pin.
struct HeldComm {
  ncclComm* comm;
  bool fast;
};

// The holds taken by checkCommHandle during this thread's API calls, and the thread's sticky
// communicator: the last one it held under the mutex, pinned (one reference) so that its next
// call on it can hold without the mutex (lookupAndHold). The pin moves to another communicator
// when the thread holds that one, and goes with the thread.
struct ThreadHolds {
  std::vector<HeldComm> held;
  int scopeDepth = 0;
  ncclComm* sticky = nullptr;
  ~ThreadHolds();
};
thread_local ThreadHolds tHolds;  // one thread-local object: each is a call to reach (docs/latency.md)

bool holdsFast(const ncclComm* comm) {
  for (const HeldComm& h : tHolds.held)
    if (h.comm == comm && h.fast) return true;
  return false;
}

enum class Found { Live, Closing, Dead, Unknown };

Found findLocked(const ncclComm* comm) {
  Registry& r = reg();
  // A closed communicator that a thread still pins (its sticky one) stays listed until unpinned.
  if (r.objects.count(comm))
    return !comm->life.closing ? Found::Live : comm->life.tornDown ? Found::Dead : Found::Closing;
  return r.dead.count(comm) ? Found::Dead : Found::Unknown;
}

ncclResult_t foundError(const char* call, const ncclComm* comm, Found f) {
  const void* p = static_cast<const void*>(comm);
  switch (f) {
    case Found::Live:
      return ncclSuccess;
    case Found::Closing:
      return fail(ncclInvalidArgument,
                  "%s: comm %p is being destroyed or aborted by another call (not a live communicator any more)", call,
                  p);
    case Found::Dead:
      return fail(ncclInvalidArgument, "%s: comm %p was destroyed or aborted (not a live communicator)", call, p);
    case Found::Unknown:
      break;
  }
  return fail(ncclInvalidArgument, "%s: comm %p is not a live communicator (already destroyed, or never created)", call,
              p);
}

// With the mutex held: whether the closer gave up waiting (handleDropped) and the holder leaving
// now was the last one, so it must free the communicator; marks the freeing as begun.
bool lastHolderTearsLocked(CommLifetime& life) {
  if (!life.closing || !life.handleDropped || life.active != 0 || life.fastActive.load() != 0 || life.tearing)
    return false;
  life.tearing = true;
  return true;
}

// Called with the mutex held once the object is unreferenced and torn down.
void forgetLocked(ncclComm* comm) {
  Registry& r = reg();
  r.objects.erase(comm);
  if (r.dead.insert(comm).second) r.deadOrder.push_back(comm);
  while (r.deadOrder.size() > kDeadRemembered) {
    r.dead.erase(r.deadOrder.front());
    r.deadOrder.pop_front();
  }
}

void deleteObject(ncclComm* comm) {
  comm->startMagic = comm->endMagic = 0;
  delete comm;
}

// Frees the resources, then deletes the object if nothing refers to it any more.
void tearDown(ncclComm* comm) {
  releaseCommResources(comm);
  bool del = false;
  {
    std::lock_guard<std::mutex> lock(reg().mutex);
    comm->life.tornDown = true;
    if (comm->life.refs == 0) {
      forgetLocked(comm);
      del = true;
    }
  }
  if (del) deleteObject(comm);
}

// Drops one reference (and one hold when `active`); frees what the drop made unreferenced.
void drop(ncclComm* comm, bool active) {
  bool tear = false, del = false;
  {
    std::lock_guard<std::mutex> lock(reg().mutex);
    if (active) {
      comm->life.active--;
      reg().left.notify_all();  // closers wait for 0, revoke for its own holds (cheap without waiters)
    }
    comm->life.refs--;
    if (lastHolderTearsLocked(comm->life)) {
      tear = true;
    } else if (comm->life.refs == 0 && comm->life.tornDown) {
      forgetLocked(comm);
      del = true;
    }
  }
  if (tear) tearDown(comm);
  if (del) deleteObject(comm);
}

// Ends a hold taken without the mutex. Why no hold slips past a closer: a holder counts itself
// in fastActive, then reads closingFlag; a closer sets closingFlag (or counts itself in
// drainWaiters), then reads fastActive — all sequentially consistent, so one of the two sees the
// other. A holder that sees the flag leaves again and takes the locked path, which refuses it; a
// leaver that sees a waiter wakes it under the mutex, and the last one out frees the
// communicator when its closer gave up waiting (as drop() does). The sticky pin keeps the object
// here throughout.
void leaveFast(ncclComm* comm) {
  CommLifetime& life = comm->life;
  life.fastActive.fetch_sub(1, std::memory_order_seq_cst);
  if (life.drainWaiters.load(std::memory_order_seq_cst) == 0 && !life.closingFlag.load(std::memory_order_seq_cst))
    return;
  bool tear = false;
  {
    std::lock_guard<std::mutex> lock(reg().mutex);
    reg().left.notify_all();
    tear = lastHolderTearsLocked(life);
  }
  if (tear) tearDown(comm);
}

}  // namespace

ThreadHolds::~ThreadHolds() {
  if (sticky) drop(std::exchange(sticky, nullptr), /*active=*/false);
}

void registerComm(ncclComm* comm) {
  Registry& r = reg();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.objects.insert(comm);
  r.dead.erase(comm);  // a new object at a recycled address (deadOrder may keep a stale entry)
}

ncclResult_t CommHold::acquire(const char* call, ncclComm* comm) {
  release();
  Found f;
  {
    std::lock_guard<std::mutex> lock(reg().mutex);
    f = findLocked(comm);
    if (f == Found::Live) {
      comm->life.active++;
      comm->life.refs++;
      comm_ = comm;
      return ncclSuccess;
    }
  }
  return fail(ncclInvalidUsage, "%s: comm %p was destroyed or aborted%s", call, static_cast<void*>(comm),
              f == Found::Closing ? " while this work was pending" : "");
}

void CommHold::release() {
  if (comm_) drop(std::exchange(comm_, nullptr), /*active=*/true);
}

CommPin::CommPin(ncclComm* comm) : comm_(comm) {
  std::lock_guard<std::mutex> lock(reg().mutex);
  comm_->life.refs++;
}

CommPin::~CommPin() {
  if (comm_) drop(comm_, /*active=*/false);
}

CommPin& CommPin::operator=(CommPin&& o) noexcept {
  if (this != &o) {
    if (comm_) drop(comm_, false);
    comm_ = std::exchange(o.comm_, nullptr);
  }
  return *this;
}

ApiCallScope::ApiCallScope() : mark_(tHolds.held.size()) { tHolds.scopeDepth++; }

ApiCallScope::~ApiCallScope() {
  tHolds.scopeDepth--;
  while (tHolds.held.size() > mark_) {
    const HeldComm h = tHolds.held.back();
    tHolds.held.pop_back();
    if (h.fast)
      leaveFast(h.comm);
    else
      drop(h.comm, /*active=*/true);
  }
}

bool threadHolds(const ncclComm* comm) {
  for (const HeldComm& h : tHolds.held)
    if (h.comm == comm) return true;
  return false;
}

ncclResult_t lookupAndHold(const char* call, ncclComm* comm) {
  const bool hold = tHolds.scopeDepth > 0 && !threadHolds(comm);
  // This thread's sticky communicator: pinned, so its object is there to count on; no mutex
  // (two locked instructions instead of four and a table lookup; docs/latency.md).
  if (hold && comm != nullptr && comm == tHolds.sticky) {
    comm->life.fastActive.fetch_add(1, std::memory_order_seq_cst);
    if (!comm->life.closingFlag.load(std::memory_order_seq_cst)) {
      tHolds.held.push_back(HeldComm{comm, true});
      return ncclSuccess;
    }
    leaveFast(comm);  // being closed: the locked lookup below refuses it and says why
  }
  Found f;
  ncclComm* unpinned = nullptr;
  {
    std::lock_guard<std::mutex> lock(reg().mutex);
    f = findLocked(comm);
    if (f == Found::Live && hold) {
      comm->life.active++;
      comm->life.refs++;
      tHolds.held.push_back(HeldComm{comm, false});
      // Pin it for this thread's next call; the old pin goes unless a hold of this very call
      // still relies on it.
      if (tHolds.sticky != comm && !holdsFast(tHolds.sticky)) {
        comm->life.refs++;
        unpinned = std::exchange(tHolds.sticky, comm);
      }
    }
  }
  if (unpinned) drop(unpinned, /*active=*/false);
  return foundError(call, comm, f);
}

ncclResult_t closeComm(const char* call, ncclComm* comm, bool abort) {
  Registry& r = reg();
  std::unique_lock<std::mutex> lock(r.mutex);
  Found f = findLocked(comm);
  if (f != Found::Live) {
    // A second closer: an abort still hurries the first one along.
    if (f == Found::Closing && abort) comm->abortFlag.store(1);
    lock.unlock();
    return foundError(call, comm, f);
  }
  if (comm->startMagic != ncclComm::kMagic || comm->endMagic != ncclComm::kMagic) {
    lock.unlock();
    return fail(ncclInvalidArgument, "%s: comm %p is corrupted", call, static_cast<void*>(comm));
  }
  comm->life.closing = true;
  comm->life.closingFlag.store(true, std::memory_order_seq_cst);  // before fastActive is read
  // Nobody may keep using a communicator that is going away: other holders (a collective on
  // another thread, a nonblocking job) are aborted, destroy included.
  if (abort || comm->life.active > 0 || comm->life.fastActive.load() > 0) comm->abortFlag.store(1);
  const int64_t t0 = nowMs();
  comm->life.drainWaiters.fetch_add(1, std::memory_order_seq_cst);
  const bool drained = r.left.wait_for(lock, std::chrono::milliseconds(kDrainWaitMs), [comm] {
    return comm->life.active == 0 && comm->life.fastActive.load() == 0;
  });
  comm->life.drainWaiters.fetch_sub(1, std::memory_order_seq_cst);
  if (!drained) {
    comm->life.handleDropped = true;
    const int still = comm->life.active + comm->life.fastActive.load();
    lock.unlock();
    ACCL_WARN("%s: comm %p: %d call(s) on other threads did not leave within %ld ms; the last of them frees the "
              "communicator",
              call, static_cast<void*>(comm), still, (long)kDrainWaitMs);
    drop(comm, /*active=*/false);  // the handle's reference
    return ncclSuccess;
  }
  comm->life.tearing = true;
  comm->life.refs--;  // the handle's reference; the object stays until tearDown below ends
  lock.unlock();
  const int64_t waited = nowMs() - t0;
  if (waited > 100)
    ACCL_INFO(ACCL_LOG_INIT, "%s: comm %p: waited %ld ms for calls on other threads to leave", call,
              static_cast<void*>(comm), (long)waited);
  tearDown(comm);
  return ncclSuccess;
}

ncclResult_t quiesceComm(const char* call, ncclComm* comm) {
  int own = 0;
  for (const HeldComm& h : tHolds.held)
    if (h.comm == comm) own++;
  Registry& r = reg();
  {
    std::unique_lock<std::mutex> lock(r.mutex);
    comm->abortFlag.store(1);
    comm->life.drainWaiters.fetch_add(1, std::memory_order_seq_cst);
    const bool drained = r.left.wait_for(lock, std::chrono::milliseconds(kDrainWaitMs), [comm, own] {
      return comm->life.active + comm->life.fastActive.load() <= own;
    });
    comm->life.drainWaiters.fetch_sub(1, std::memory_order_seq_cst);
    if (!drained) {
      lock.unlock();
      return fail(ncclInternalError, "%s: comm %p: calls on other threads did not stop within %ld ms", call,
                  static_cast<void*>(comm), (long)kDrainWaitMs);
    }
  }
  // Nothing runs on the connections now: close them so peers still waiting on this rank fail.
  if (comm->engine) comm->engine->releaseConnections(/*stopRunning=*/true);
  comm->abortFlag.store(0);
  return ncclSuccess;
}

}  // namespace accl
