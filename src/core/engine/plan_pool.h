// PlanPool: the plans of one communicator. Each launch takes its own Plan (core/engine/plan.h) from the
// pool and the backend gives it back once the launch has completed, so an asynchronous backend
// can have several launches in flight while a synchronous one (the host backend) keeps reusing
// one plan and allocates nothing per call. The pool counts the storage of every plan it owns or
// has lent out: that is the communicator's planBytes (core/comm/comm_memory.h), which
// ncclCommSuspend releases (the idle plans; a suspend only happens with nothing in flight).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/engine/plan.h"

namespace accl {

class PlanPool {
 public:
  PlanPool() = default;
  ~PlanPool();
  PlanPool(const PlanPool&) = delete;
  PlanPool& operator=(const PlanPool&) = delete;

  // A plan for a new launch, empty, with `nChannels` channel lists (a recycled one when idle
  // plans exist).
  std::unique_ptr<Plan> acquire(int nChannels);
  // Counts the storage of a plan that was just built (call before launching it).
  void count(Plan& plan);
  // The launch of `plan` completed (or never started): the plan becomes idle for reuse.
  void recycle(std::unique_ptr<Plan> plan);
  // Frees the idle plans (ncclCommSuspend). Plans in flight stay counted.
  void releaseIdle();

  // Storage bytes of every plan owned or lent out. Lock-free: memory stats read it any time.
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  // Plans lent out and not yet recycled (launches in flight or being built).
  int lent() const;
  // Plans lent out since the pool was made (launches that took the general path).
  uint64_t lentEver() const { return lentEver_.load(std::memory_order_relaxed); }

 private:
  // One idle plan taken and given back without the lock: a synchronous backend's every launch
  // (docs/latency.md). The others wait in idle_.
  std::atomic<Plan*> spare_{nullptr};
  std::mutex mutex_;  // guards idle_
  std::vector<std::unique_ptr<Plan>> idle_;
  std::atomic<int> lent_{0};
  std::atomic<uint64_t> lentEver_{0};
  std::atomic<uint64_t> bytes_{0};
};

}  // namespace accl
