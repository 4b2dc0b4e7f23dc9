// PlanPool: lending, recycling and counting a communicator's plans (see plan_pool.h).
#include "core/engine/plan_pool.h"

#include "core/comm/comm_memory.h"

namespace accl {

PlanPool::~PlanPool() { delete spare_.load(std::memory_order_acquire); }

std::unique_ptr<Plan> PlanPool::acquire(int nChannels) {
  lent_.fetch_add(1, std::memory_order_relaxed);
  lentEver_.fetch_add(1, std::memory_order_relaxed);
  std::unique_ptr<Plan> plan(spare_.exchange(nullptr, std::memory_order_acquire));
  if (!plan) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      plan = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!plan) plan = std::make_unique<Plan>();
  plan->reset(nChannels);
  return plan;
}

void PlanPool::count(Plan& plan) {
  const uint64_t now = planStorageBytes(plan);
  if (now == plan.countedBytes) return;
  // Only the launching thread touches this plan: no lock needed for its own field.
  bytes_.fetch_add(now - plan.countedBytes, std::memory_order_relaxed);  // unsigned wrap = subtraction
  plan.countedBytes = now;
}

void PlanPool::recycle(std::unique_ptr<Plan> plan) {
  if (!plan) return;
  count(*plan);
  lent_.fetch_sub(1, std::memory_order_relaxed);
  Plan* expected = nullptr;
  if (spare_.compare_exchange_strong(expected, plan.get(), std::memory_order_release, std::memory_order_relaxed)) {
    plan.release();  // now owned by spare_
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(plan));
}

void PlanPool::releaseIdle() {
  std::unique_ptr<Plan> spare(spare_.exchange(nullptr, std::memory_order_acquire));
  if (spare) bytes_.fetch_sub(spare->countedBytes, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::unique_ptr<Plan>& plan : idle_) bytes_.fetch_sub(plan->countedBytes, std::memory_order_relaxed);
  idle_.clear();
  idle_.shrink_to_fit();
}

int PlanPool::lent() const { return lent_.load(std::memory_order_relaxed); }

}  // namespace accl
