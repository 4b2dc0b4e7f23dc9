// The receiver's half of landings (see landings.h).
#include "backend/host/landings.h"

#include <sched.h>

#include <atomic>
#include <chrono>

#include "device/common/fifo_signal.h"
#include "util/log.h"

namespace accl {
namespace {

std::atomic_ref<uint64_t> landingState(FifoLanding& l) { return std::atomic_ref<uint64_t>(l.state); }

// How long a receiver waits for the proxy to stop a device receive into its buffer.
constexpr auto kWithdrawBound = std::chrono::seconds(10);

}  // namespace

void publishLanding(const HostConnEnd& c, char* out, size_t bytes, const UserBufferReg& reg) {
  FifoLanding& l = c.landings[c.fifo->step % kFifoSteps];
  l.data = out;
  l.bytes = bytes;
  l.reg = reg;
  landingState(l).store(c.fifo->step + 1, std::memory_order_release);
}

bool stepLanded(const HostConnEnd& c) {
  const uint32_t info =
      std::atomic_ref<uint32_t>(c.fifo->tail->stepInfo[c.fifo->step % kFifoSteps]).load(std::memory_order_relaxed);
  return (info & kFifoStepLanded) != 0;
}

void withdrawLanding(const HostConnEnd& c, const char* what) {
  FifoLanding& l = c.landings[c.fifo->step % kFifoSteps];
  const uint64_t published = c.fifo->step + 1;
  uint64_t expected = published;
  if (landingState(l).compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return;  // never claimed
  if (expected != (published | FifoLanding::kLandingClaimed)) return;  // done: the bytes are in, or released
  if (!landingState(l).compare_exchange_strong(expected, expected | FifoLanding::kLandingWithdrawn,
                                               std::memory_order_acq_rel))
    return;  // the receive completed meanwhile
  // The proxy sleeps on this end's head copy: wake it, then wait until it has released the landing.
  const auto until = std::chrono::steady_clock::now() + kWithdrawBound;
  while (landingState(l).load(std::memory_order_acquire) != 0) {
    futexWakeWord(counterWord(c.fifo->head->value));
    if (std::chrono::steady_clock::now() > until) {
      ACCL_WARN("%s: rank %d's network receive of step %llu into the user's buffer %p was not stopped within %lld s; "
                "the buffer may still be written until the communicator's connections close",
                what, c.peerRank, static_cast<unsigned long long>(c.fifo->step), l.data,
                static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(kWithdrawBound).count()));
      return;
    }
    sched_yield();
  }
}

}  // namespace accl
