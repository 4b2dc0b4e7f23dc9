// SuspendGate (see suspend_gate.h).
#include "core/comm/suspend_gate.h"

#include "util/check.h"

namespace accl {

ncclResult_t SuspendGate::enter(const char* call) {
  // Lock-free when not suspended: announce the launch, then look. A suspend sets suspended_
  // before it counts the launches (both sequentially consistent), so either it sees this one or
  // this one sees it.
  active_.fetch_add(1, std::memory_order_seq_cst);
  if (!suspended_.load(std::memory_order_seq_cst)) return ncclSuccess;
  active_.fetch_sub(1, std::memory_order_seq_cst);
  // A suspend is in progress or done: wait for it under the lock, and look again (a suspend that
  // gave up because of another launch has cleared the flag).
  std::lock_guard<std::mutex> lock(mutex_);
  if (suspended_.load(std::memory_order_relaxed))
    return fail(ncclInvalidUsage, "%s: communicator is suspended; call ncclCommResume", call);
  active_.fetch_add(1, std::memory_order_seq_cst);
  return ncclSuccess;
}

void SuspendGate::leave() { active_.fetch_sub(1, std::memory_order_seq_cst); }

ncclResult_t SuspendGate::suspend(const char* call, const std::function<void()>& release) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (suspended_) return fail(ncclInvalidUsage, "%s: communicator is already suspended", call);
  suspended_.store(true, std::memory_order_seq_cst);
  const int active = active_.load(std::memory_order_seq_cst);
  if (active > 0) {
    suspended_.store(false, std::memory_order_seq_cst);
    return fail(ncclInvalidUsage, "%s: %d operation(s) of this communicator are running on another thread; wait "
                "for them to finish before suspending", call, active);
  }
  release();
  return ncclSuccess;
}

ncclResult_t SuspendGate::resume(const char* call) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!suspended_) return fail(ncclInvalidUsage, "%s: communicator is not suspended", call);
  suspended_.store(false, std::memory_order_release);
  return ncclSuccess;
}

}  // namespace accl
