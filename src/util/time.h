// Monotonic time and deadlines: every wait in accl is bounded by one of these.
#pragma once

#include <chrono>
#include <cstdint>

namespace accl {

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline int64_t nowMs() { return nowNs() / 1000000; }

// A point in time after which a wait gives up. A negative timeout means "never".
class Deadline {
 public:
  explicit Deadline(int64_t timeoutMs)
      : endNs_(timeoutMs < 0 ? INT64_MAX : nowNs() + timeoutMs * 1000000) {}
  bool expired() const { return nowNs() >= endNs_; }
  // Milliseconds left, clamped to [0, INT32_MAX] for poll().
  int remainingMs() const {
    if (endNs_ == INT64_MAX) return INT32_MAX;
    int64_t left = (endNs_ - nowNs()) / 1000000;
    return left < 0 ? 0 : (left > INT32_MAX ? INT32_MAX : static_cast<int>(left));
  }

 private:
  int64_t endNs_;
};

}  // namespace accl
