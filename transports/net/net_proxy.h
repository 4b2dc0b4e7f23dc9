// NetProxy: one thread per communicator that moves the data of its network connections — the
// steps a sender's Prims published into its local staging FIFO go out through the NetDevice, the
// steps that arrive land in the receiver's FIFO and are published there (transports/net/
// net_transport.cc does both through TransportSide::proxyProgress). It starts with the first
// connection added and stops (joined) on stop() or destruction; it never blocks in the device.
//
// Idle policy: after a sweep that moved something it sweeps again at once; otherwise it yields
// for a moment, then sleeps in pauses that grow with the time since the last progress (20 us while
// a collective is likely running, up to kMaxIdleSleepUs when idle), so an idle communicator costs
// little CPU. While it sleeps it is also a sleeper on each end's *doorbell* (a FifoCounter the
// local Prims publish: the sender's staging tail, the receiver's head copy), waiting on all of them
// at once with futex_waitv, so a step the local Prims publish wakes it at once; what arrives from
// the network is found by the next sweep.
//
// Profiler: each idle period (from the first sleep after progress to the next progress) is one
// ProxyCtrl event with the states Sleep, then Wakeup when work returns.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "nccl.h"
#include "profiler/comm_profiler.h"

namespace accl {

struct ConnEnd;
struct FifoCounter;

class NetProxy {
 public:
  static constexpr int kMaxIdleSleepUs = 1000;

  NetProxy() = default;
  ~NetProxy() { stop(); }
  NetProxy(const NetProxy&) = delete;
  NetProxy& operator=(const NetProxy&) = delete;

  // Starts progressing `end` (through its transport's proxyProgress); starts the thread if needed.
  // `doorbell`: the counter in this process that the local Prims publish for `end` (null: none).
  void add(ConnEnd* end, FifoCounter* doorbell);
  // Stops progressing `end`; when it returns the thread no longer touches it.
  void remove(ConnEnd* end);
  // Stops and joins the thread (it restarts on the next add). Returns within about a millisecond
  // plus the longest single proxyProgress call.
  void stop();
  // Keeps the thread running until busy(end) is false for every end, no end moved for `stallMs`,
  // or `maxMs` passed. busy() is called with the ends' lock held (no sweep runs meanwhile).
  // Returns whether everything drained.
  template <class Busy, class Progress>
  bool drain(Busy&& busy, Progress&& progress, int64_t stallMs, int64_t maxMs);
  bool running() const { return running_.load(std::memory_order_acquire); }
  // Calls fn(end) for every end, with the ends' lock held (no sweep runs meanwhile).
  template <class Fn>
  void forEachEnd(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry& e : entries_) fn(e.end);
  }
  // The communicator's profiler (null: none); set before the first add().
  void setProfiler(prof::CommProfiler* p) { prof_ = p; }
  // Sweeps done since start (for tests).
  uint64_t sweeps() const { return sweeps_.load(std::memory_order_relaxed); }

 private:
  void loop();
  // Sleeps up to `us`, or until a doorbell differs from what the last sweep saw (seen).
  void sleepOnDoorbells(const std::vector<uint32_t>& seen, long us);

  struct Entry {
    ConnEnd* end;
    FifoCounter* doorbell;
    bool failed;  // its proxyProgress returned an error: no longer progressed
  };

  std::mutex mutex_;  // guards entries_ and every proxyProgress call
  std::vector<Entry> entries_;
  std::thread thread_;
  std::mutex threadMutex_;  // start / stop
  std::atomic<bool> running_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> sweeps_{0};
  prof::CommProfiler* prof_ = nullptr;
};

template <class Busy, class Progress>
bool NetProxy::drain(Busy&& busy, Progress&& progress, int64_t stallMs, int64_t maxMs) {
  const int64_t pauseUs = 200;
  int64_t waitedUs = 0, stalledUs = 0;
  uint64_t lastProgress = ~uint64_t(0);
  while (true) {
    bool anyBusy = false;
    uint64_t moved = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const Entry& e : entries_)
        if (!e.failed && busy(e.end)) {
          anyBusy = true;
          moved += progress(e.end);
        }
    }
    if (!anyBusy) return true;
    if (!running() || waitedUs >= maxMs * 1000) return false;
    stalledUs = moved == lastProgress ? stalledUs + pauseUs : 0;
    lastProgress = moved;
    if (stalledUs >= stallMs * 1000) return false;
    struct timespec ts = {0, pauseUs * 1000};
    nanosleep(&ts, nullptr);
    waitedUs += pauseUs;
  }
}

}  // namespace accl
