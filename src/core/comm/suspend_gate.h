// SuspendGate: whether a communicator is suspended (ncclCommSuspend) and how many launches are
// running on it right now. A launch enters the gate before it touches connections or scratch and
// leaves when done; a suspend closes the gate only when nothing is inside, and runs the release
// while holding it, so a launch on another thread never meets half-released memory and a resume
// never reopens the gate under a release in progress.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>

#include "nccl.h"

namespace accl {

class SuspendGate {
 public:
  // A launch begins. Fails with ncclInvalidUsage, naming `call`, while suspended. Lock-free
  // unless a suspend is under way.
  ncclResult_t enter(const char* call);
  // The launch that entered is done.
  void leave();

  // Marks the communicator suspended and runs `release` under the gate's lock. Fails with
  // ncclInvalidUsage when already suspended or while a launch is inside.
  ncclResult_t suspend(const char* call, const std::function<void()>& release);
  // Reopens the gate. Fails with ncclInvalidUsage when not suspended.
  ncclResult_t resume(const char* call);

  // Lock-free: enqueue asks on every call.
  bool suspended() const { return suspended_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mutex_;  // serialises suspend / resume, and a launch that met a suspend
  std::atomic<bool> suspended_{false};  // written under mutex_
  std::atomic<int> active_{0};          // launches inside (no lock: enter/leave run per launch)
};

// Holds the gate open for one launch (enter on construction, leave on destruction if entered).
class GateScope {
 public:
  GateScope(SuspendGate& gate, const char* call) : gate_(gate), result_(gate.enter(call)) {}
  ~GateScope() {
    if (result_ == ncclSuccess) gate_.leave();
  }
  GateScope(const GateScope&) = delete;
  GateScope& operator=(const GateScope&) = delete;
  ncclResult_t result() const { return result_; }

 private:
  SuspendGate& gate_;
  ncclResult_t result_;
};

}  // namespace accl
