// ProxyOpMarks: how a network proxy learns which operation a FIFO step belongs to, for its
// ProxyOp / ProxyStep profiler events. The proxy moves steps of one connection end without
// knowing the operations above them; the backend does. So, per connection end, the thread that
// runs the end's channel (the backend) marks each operation: begin() with the operation's
// ProxyOp event and the end's step counter when the operation starts, finish() with the step
// counter when it has run. The proxy thread asks opOf(step) for the ProxyOp that parents a step,
// and retire() stops each ProxyOp once the proxy has completed every step of it (NCCL's ProxyOp
// ends when the proxy is done with it, not when the kernel is).
//
// One writer, one reader, no lock: a ring of kSlots marks, published with release stores and read
// with acquire loads. When the proxy lags kSlots operations behind, begin() refuses (the backend
// then reports no ProxyOp for that operation): bounded memory, nothing allocated.
#pragma once

#include <atomic>
#include <cstdint>

#include "profiler/comm_profiler.h"

namespace accl::prof {

class ProxyOpMarks {
 public:
  static constexpr int kSlots = 16;
  static constexpr uint64_t kRunning = ~0ull;

  // Backend: an operation with ProxyOp event `op` starts at `firstStep`; false when the ring is full.
  bool begin(void* op, uint64_t firstStep) {
    const uint64_t n = load(begun_, std::memory_order_relaxed);
    if (n - load(retired_, std::memory_order_acquire) >= kSlots) return false;
    Mark& m = marks_[n % kSlots];
    m.op = op;
    m.firstStep = firstStep;
    store(m.endStep, kRunning, std::memory_order_relaxed);
    store(begun_, n + 1, std::memory_order_release);
    return true;
  }
  // Backend: the operation begun last has moved its steps up to `endStep` (exclusive).
  void finish(uint64_t endStep) {
    const uint64_t n = load(begun_, std::memory_order_relaxed);
    store(marks_[(n - 1) % kSlots].endStep, endStep, std::memory_order_release);
  }

  // Proxy: the ProxyOp of step `s` (null: no operation covers it yet).
  void* opOf(uint64_t s) const {
    const uint64_t n = load(begun_, std::memory_order_acquire);
    for (uint64_t i = retired_; i < n; ++i) {
      const Mark& m = marks_[i % kSlots];
      if (s >= m.firstStep && s < load(m.endStep, std::memory_order_acquire)) return m.op;
    }
    return nullptr;
  }
  // Proxy: stops, in order, the ProxyOps whose steps are all below `doneStep`.
  void retire(CommProfiler& p, uint64_t doneStep) {
    const uint64_t n = load(begun_, std::memory_order_acquire);
    uint64_t r = retired_;
    while (r < n) {
      const Mark& m = marks_[r % kSlots];
      const uint64_t end = load(m.endStep, std::memory_order_acquire);
      if (end == kRunning || end > doneStep) break;
      p.stop(m.op);
      ++r;
    }
    store(retired_, r, std::memory_order_release);
  }
  // Teardown (the end goes; its backend is done): stops every ProxyOp still open.
  void retireAll(CommProfiler& p) {
    const uint64_t n = load(begun_, std::memory_order_acquire);
    for (uint64_t r = retired_; r < n; ++r) p.stop(marks_[r % kSlots].op);
    store(retired_, n, std::memory_order_release);
  }

 private:
  struct Mark {
    void* op = nullptr;
    uint64_t firstStep = 0;
    uint64_t endStep = 0;
  };
  static uint64_t load(const uint64_t& v, std::memory_order o) {
    return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(v)).load(o);
  }
  static void store(uint64_t& v, uint64_t x, std::memory_order o) { std::atomic_ref<uint64_t>(v).store(x, o); }

  Mark marks_[kSlots];
  uint64_t begun_ = 0;    // marks begun (backend writes)
  uint64_t retired_ = 0;  // marks whose ProxyOp is stopped (proxy writes)
};

}  // namespace accl::prof
