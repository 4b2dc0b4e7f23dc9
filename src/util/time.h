// Monotonic time and deadlines: every wait in accl is bounded by one of these.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace accl {

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline int64_t nowMs() { return nowNs() / 1000000; }

// The same clock at the kernel's tick resolution (a few ms), several times cheaper to read: for
// timestamps that are only shown in seconds (accl-ras), on paths run per operation.
inline int64_t nowCoarseNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

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
