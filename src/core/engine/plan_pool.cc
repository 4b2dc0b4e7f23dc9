// PlanPool: lending, recycling and counting a communicator's plans (see plan_pool.h).
#include "core/engine/plan_pool.h"

#include "core/comm/comm_memory.h"

namespace accl {

std::unique_ptr<Plan> PlanPool::acquire(int nChannels) {
  std::unique_ptr<Plan> plan;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++lent_;
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
  std::lock_guard<std::mutex> lock(mutex_);
  --lent_;
  idle_.push_back(std::move(plan));
}

void PlanPool::releaseIdle() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::unique_ptr<Plan>& plan : idle_) bytes_.fetch_sub(plan->countedBytes, std::memory_order_relaxed);
  idle_.clear();
  idle_.shrink_to_fit();
}

int PlanPool::lent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lent_;
}

}  // namespace accl
