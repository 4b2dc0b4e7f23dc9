// The CPU SIMT harness: runs a "kernel" (any callable) for a 1-D grid of 1-D blocks with one
// std::thread per GPU thread, and provides what the CPU side of the primitives layer
// (simt_cpu.h) needs from it: each thread's indices, per-block named barriers (bar.sync /
// bar.arrive with a thread count), per-warp exchange slots for shuffles and votes, per-block
// dynamic shared memory, and a launch-wide abort.
//
// Real threads make the memory model real: every wait in here goes through a mutex, so a
// barrier or a warp collective orders everything before it in any participant before
// everything after it in every participant, and the harness itself is free of data races.
//
// A launch has a deadline. When it passes (or when a kernel thread throws), the launch is
// aborted: every harness wait and every simt::spinUntil poll in a kernel thread throws
// LaunchAborted, which unwinds the thread; launch() then reports failure. A thread that spins
// without calling into the layer cannot be stopped: after a grace period it is detached and
// counted in LaunchResult::threadsNotStopped (the launch's state stays alive for it).
//
// Header-only and test-facing: the library itself never launches CPU kernels.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace accl::simt::cpu {

constexpr int kWarpSize = 32;
constexpr int kNamedBarriers = 16;
constexpr int kMaxBlockThreads = 1024;
constexpr int kMaxLaunchThreads = 4096;

// Thrown inside a kernel thread while its launch is being torn down; caught by the harness.
struct LaunchAborted {};

struct LaunchConfig {
  int gridDim = 1;
  int blockDim = 64;         // a multiple of 32 (whole warps), at most 1024
  size_t sharedBytes = 0;    // dynamic shared memory per block
  std::chrono::milliseconds deadline{30000};
  std::chrono::milliseconds grace{3000};  // after an abort, how long threads get to unwind
};

struct LaunchResult {
  bool ok = false;
  bool timedOut = false;
  int threadsNotStopped = 0;
  std::string error;  // empty when ok
};

class LaunchState;

// What the launch's wait loops poll: true once the launch is aborted.
bool launchAborted(const LaunchState& launch);

namespace detail {
// Waits on cv until done() or the launch is aborted (then throws LaunchAborted).
template <class Done>
void waitOrAbort(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, const LaunchState& launch,
                 Done&& done) {
  while (!done()) {
    if (launchAborted(launch)) throw LaunchAborted{};
    cv.wait_for(lock, std::chrono::milliseconds(10));
  }
}
}  // namespace detail

// One named barrier of a block: `nthreads` arrivals complete a generation. bar.sync arrives and
// waits for the generation to complete; bar.arrive only arrives. Every arrival of a generation
// must name the same count.
// Every arrival also contributes a predicate; a waiter gets the OR of its generation's predicates
// (bar.red.or). Results are kept per generation parity: a waiter of generation g reads its result
// before it can arrive at g + 1, which g + 2 needs.
class NamedBarrier {
 public:
  bool arrive(int nthreads, bool wait, bool pred, const LaunchState& launch) {
    std::unique_lock<std::mutex> lock(mu_);
    if (arrived_ == 0) {
      expected_ = nthreads;
      orAcc_ = false;
    } else if (expected_ != nthreads) {
      throw std::logic_error("named barrier: arrivals name different thread counts (" + std::to_string(expected_) +
                             " and " + std::to_string(nthreads) + ")");
    }
    const uint64_t generation = generation_;
    orAcc_ = orAcc_ || pred;
    if (++arrived_ == expected_) {
      arrived_ = 0;
      orResult_[generation & 1] = orAcc_;
      ++generation_;
      cv_.notify_all();
      return orResult_[generation & 1];
    }
    if (wait) detail::waitOrAbort(lock, cv_, launch, [&] { return generation_ != generation; });
    return orResult_[generation & 1];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int expected_ = 0;
  uint64_t generation_ = 0;
  bool orAcc_ = false;
  bool orResult_[2] = {false, false};
};

// The exchange behind a warp's shuffles and votes: every lane of `mask` deposits one 64-bit
// value, and once all have, each gets a copy of all of them. Collectives over different masks
// may be in flight at once (divergent halves of a warp); each mask has its own group, and each
// group double-buffers by generation, so a fast lane may start the next collective while slow
// ones still copy out the last.
class WarpExchange {
 public:
  static constexpr int kMaxGroups = 8;

  void exchange(unsigned mask, int lane, uint64_t value, uint64_t (&out)[kWarpSize], const LaunchState& launch) {
    if (((mask >> lane) & 1u) == 0)
      throw std::logic_error("warp collective: lane " + std::to_string(lane) + " is not in its mask");
    std::unique_lock<std::mutex> lock(mu_);
    Group& g = groupFor(mask);
    const uint64_t generation = g.generation;
    uint64_t* slots = g.values[generation & 1];
    slots[lane] = value;
    if (++g.arrived == popCount(mask)) {
      g.arrived = 0;
      ++g.generation;
      cv_.notify_all();
    } else {
      detail::waitOrAbort(lock, cv_, launch, [&] { return g.generation != generation; });
    }
    for (int i = 0; i < kWarpSize; ++i) out[i] = ((mask >> i) & 1u) ? slots[i] : 0;
  }

 private:
  struct Group {
    unsigned mask = 0;
    int arrived = 0;
    uint64_t generation = 0;
    uint64_t values[2][kWarpSize] = {};
  };

  static int popCount(unsigned m) { return __builtin_popcount(m); }

  Group& groupFor(unsigned mask) {
    for (int i = 0; i < nGroups_; ++i)
      if (groups_[i].mask == mask) return groups_[i];
    if (nGroups_ == kMaxGroups) throw std::logic_error("warp collective: more than 8 distinct masks in one warp");
    groups_[nGroups_].mask = mask;
    return groups_[nGroups_++];
  }

  std::mutex mu_;
  std::condition_variable cv_;
  Group groups_[kMaxGroups];
  int nGroups_ = 0;
};

// Everything one block shares.
struct BlockState {
  explicit BlockState(int blockDim, size_t sharedBytes)
      : warps(blockDim / kWarpSize),
        shared(new SharedLine[(sharedBytes + sizeof(SharedLine) - 1) / sizeof(SharedLine)]()) {
    for (auto& w : warps) w = std::make_unique<WarpExchange>();
  }
  struct alignas(16) SharedLine {
    unsigned char bytes[16];
  };
  NamedBarrier barriers[kNamedBarriers];
  std::vector<std::unique_ptr<WarpExchange>> warps;
  std::unique_ptr<SharedLine[]> shared;
};

// One kernel thread's view: its indices and its block.
struct ThreadCtx {
  int thread;
  int block;
  int blockDim;
  int gridDim;
  BlockState* blockState;
  const LaunchState* launch;
};

inline thread_local ThreadCtx* tlsThread = nullptr;

// The calling kernel thread's context; a primitive that needs one outside a launch is a bug.
inline ThreadCtx& currentThread() {
  if (tlsThread == nullptr) throw std::logic_error("simt: block/warp primitive called outside a CPU launch");
  return *tlsThread;
}

// Throws LaunchAborted in a kernel thread whose launch is aborted; nothing outside a launch.
inline void checkAbort() {
  if (tlsThread != nullptr && launchAborted(*tlsThread->launch)) throw LaunchAborted{};
}

// One poll of a spin loop: checks the harness abort, then yields the core (2-core CI machines
// run hundreds of kernel threads), sleeping briefly once the wait gets long.
inline void pollPause(int polls) {
  checkAbort();
  if (polls < 64) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(50));
}

class LaunchState {
 public:
  LaunchState(const LaunchConfig& config, std::function<void()> kernel)
      : config_(config), kernel_(std::move(kernel)), done_(new std::atomic<bool>[total()]) {
    for (int i = 0; i < total(); ++i) done_[i].store(false, std::memory_order_relaxed);
    for (int b = 0; b < config.gridDim; ++b)
      blocks_.push_back(std::make_unique<BlockState>(config.blockDim, config.sharedBytes));
  }

  int total() const { return config_.gridDim * config_.blockDim; }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  void abort() { aborted_.store(true, std::memory_order_release); }

  // Body of kernel thread `index` (block-major).
  void runThread(int index) {
    ThreadCtx ctx{index % config_.blockDim, index / config_.blockDim, config_.blockDim, config_.gridDim,
                  blocks_[index / config_.blockDim].get(), this};
    tlsThread = &ctx;
    try {
      kernel_();
    } catch (const LaunchAborted&) {
    } catch (const std::exception& e) {
      fail(ctx, e.what());
    } catch (...) {
      fail(ctx, "unknown exception");
    }
    tlsThread = nullptr;
    done_[index].store(true, std::memory_order_release);
    std::lock_guard<std::mutex> lock(mu_);
    ++finished_;
    cv_.notify_all();
  }

  // Waits until every thread finished or `until`; true when all finished.
  bool waitFinished(std::chrono::steady_clock::time_point until) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, until, [&] { return finished_ == started_; });
  }

  void setStarted(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = n;
  }
  bool threadDone(int index) const { return done_[index].load(std::memory_order_acquire); }
  std::string firstError() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  const LaunchConfig& config() const { return config_; }

 private:
  void fail(const ThreadCtx& ctx, const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.empty())
        error_ = "block " + std::to_string(ctx.block) + " thread " + std::to_string(ctx.thread) + ": " + what;
    }
    abort();
  }

  LaunchConfig config_;
  std::function<void()> kernel_;
  std::unique_ptr<std::atomic<bool>[]> done_;
  std::vector<std::unique_ptr<BlockState>> blocks_;
  std::atomic<bool> aborted_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int started_ = 0;
  int finished_ = 0;
  std::string error_;
};

inline bool launchAborted(const LaunchState& launch) { return launch.aborted(); }

// Runs `kernel` on every thread of the grid and waits for all of them, at most until the
// deadline (then aborts the launch and reports failure). Reentrant: several launches may run at
// once from different host threads (e.g. one per simulated rank).
inline LaunchResult launch(const LaunchConfig& config, std::function<void()> kernel) {
  LaunchResult result;
  if (config.gridDim < 1 || config.blockDim < kWarpSize || config.blockDim > kMaxBlockThreads ||
      config.blockDim % kWarpSize != 0 || int64_t(config.gridDim) * config.blockDim > kMaxLaunchThreads) {
    result.error = "simt launch: grid " + std::to_string(config.gridDim) + " x block " +
                   std::to_string(config.blockDim) + " is not whole warps within the harness limits";
    return result;
  }
  auto state = std::make_shared<LaunchState>(config, std::move(kernel));
  const auto deadline = std::chrono::steady_clock::now() + config.deadline;
  std::vector<std::thread> threads;
  threads.reserve(state->total());
  try {
    for (int i = 0; i < state->total(); ++i) threads.emplace_back([state, i] { state->runThread(i); });
  } catch (const std::system_error& e) {
    state->abort();
    result.error = std::string("simt launch: could not start a kernel thread: ") + e.what();
  }
  state->setStarted(int(threads.size()));

  if (!state->waitFinished(deadline)) {
    result.timedOut = true;
    state->abort();
    state->waitFinished(std::chrono::steady_clock::now() + config.grace);
  }
  std::string stuck;
  for (size_t i = 0; i < threads.size(); ++i) {
    if (state->threadDone(int(i))) {
      threads[i].join();
      continue;
    }
    threads[i].detach();  // the thread holds its own reference to `state`
    if (result.threadsNotStopped++ < 8)
      stuck += " b" + std::to_string(int(i) / config.blockDim) + "t" + std::to_string(int(i) % config.blockDim);
  }
  std::string kernelError = state->firstError();
  if (result.timedOut) {
    result.error = "simt launch did not finish within " + std::to_string(config.deadline.count()) + " ms";
    if (result.threadsNotStopped > 0)
      result.error += "; " + std::to_string(result.threadsNotStopped) + " thread(s) ignored the abort:" + stuck;
    if (!kernelError.empty()) result.error += "; first kernel error: " + kernelError;
  } else if (result.error.empty()) {
    result.error = kernelError;
  }
  result.ok = result.error.empty();
  return result;
}

}  // namespace accl::simt::cpu
