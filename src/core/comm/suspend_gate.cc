// SuspendGate (see suspend_gate.h).
#include "core/comm/suspend_gate.h"

#include "util/check.h"

namespace accl {

ncclResult_t SuspendGate::enter(const char* call) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (suspended_) return fail(ncclInvalidUsage, "%s: communicator is suspended; call ncclCommResume", call);
  ++active_;
  return ncclSuccess;
}

void SuspendGate::leave() {
  std::lock_guard<std::mutex> lock(mutex_);
  --active_;
}

ncclResult_t SuspendGate::suspend(const char* call, const std::function<void()>& release) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (suspended_) return fail(ncclInvalidUsage, "%s: communicator is already suspended", call);
  if (active_ > 0)
    return fail(ncclInvalidUsage, "%s: %d operation(s) of this communicator are running on another thread; wait "
                "for them to finish before suspending", call, active_);
  suspended_.store(true, std::memory_order_release);
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
