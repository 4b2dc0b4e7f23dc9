// The zero-copy sends of one HostPrims (see user_sends.h).
#include "backend/host/user_sends.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace accl {

bool UserSends::allowed(const HostConnEnd* ends, int n, size_t bytes) {
  if (n == 0 || bytes == 0) return false;
  for (int i = 0; i < n; ++i)
    if (ends[i].userSendMin == 0 || bytes < ends[i].userSendMin) return false;
  return true;
}

bool UserSends::needRegistration(const HostConnEnd* ends, int n) {
  for (int i = 0; i < n; ++i)
    if (ends[i].userSendRegisteredOnly) return true;
  return false;
}

void publishUserSend(FifoView& f, const char* data, size_t bytes, const UserBufferReg& reg) {
  const FifoUserSend desc{data, reg};
  std::memcpy(f.simpleSlot(f.step), &desc, sizeof(desc));
  publishTail(f, fifoStepInfo(bytes, false) | kFifoStepUserPtr);
}

void abandonUserSends(FifoView& f, uint64_t step) {
  if (fifoCounter(f.head).load(std::memory_order_acquire) > step) return;
  std::atomic_ref<uint32_t>(f.tail->closed).store(1, std::memory_order_release);
}

void UserSends::publish(const HostConnEnd& c, const char* data, size_t bytes, const UserBufferReg& reg) {
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [](const Pending& p) { return p.end.fifo->headCache > p.step; }),
                 pending_.end());
  pending_.push_back(Pending{c, c.fifo->step, data, data + bytes});
  publishUserSend(*c.fifo, data, bytes, reg);
}

ncclResult_t UserSends::waitClear(const char* data, size_t bytes, const WaitPolicy& policy, const char* what) {
  const char* lo = data;
  const char* hi = data + bytes;
  for (const Pending& p : pending_) {
    if (p.hi <= lo || hi <= p.lo) continue;
    ncclResult_t res = waitSendDone(p.end, p.step, policy, what);
    if (res != ncclSuccess) return res;
  }
  // Forget what is done (head passed it), so the list stays as short as the FIFOs are deep.
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [](const Pending& p) { return p.end.fifo->headCache > p.step; }),
                 pending_.end());
  return ncclSuccess;
}

ncclResult_t UserSends::waitAll(const WaitPolicy& policy, const char* what) {
  for (const Pending& p : pending_) {
    ncclResult_t res = waitSendDone(p.end, p.step, policy, what);
    if (res != ncclSuccess) return res;
  }
  pending_.clear();
  return ncclSuccess;
}

void UserSends::abandon() {
  for (const Pending& p : pending_) abandonUserSends(*p.end.fifo, p.step);
  pending_.clear();
}

}  // namespace accl
