// The CPU SIMT harness: runs a "kernel" (any callable) for a 1-D grid of 1-D blocks, and provides
// what the CPU side of the primitives layer (simt_cpu.h) needs from it: each thread's indices,
// per-block named barriers (bar.sync / bar.arrive with a thread count), per-warp exchange slots for
// shuffles and votes, per-block dynamic shared memory, and a launch-wide abort.
//
// Two execution modes, chosen per launch (LaunchConfig::fibers):
//   * Threads (the default): one std::thread per GPU thread. Real threads make the memory model
//     real: every wait in here goes through a mutex, so a barrier or a warp collective orders
//     everything before it in any participant before everything after it in every participant,
//     and the harness itself is free of data races.
//   * Fibers: one OS thread per block, its GPU threads run as user-level fibers (ucontext) that
//     a per-block scheduler round-robins. A fiber switches only inside a harness wait (barrier,
//     warp collective, simt::spinUntil poll), so hundreds of GPU threads per block cost one OS
//     thread: what a virtual GPU running 512-thread blocks on a 2-core machine needs. Waits keep
//     their mutexes, so the ordering above holds across blocks (separate OS threads) as well.
//     A GPU thread that waits for another thread of its own block by spinning without calling
//     into the layer never lets that thread run: its block hangs (and is reported as below).
//
// A launch may run only some blocks of its grid (firstBlock / blockCount); each still sees its
// real blockIndex() and the whole gridDim, so a block can be started by itself.
//
// A launch has a deadline. When it passes (or when a kernel thread throws), the launch is
// aborted: every harness wait and every simt::spinUntil poll in a kernel thread throws
// LaunchAborted, which unwinds the thread; launch() then reports failure. A thread that spins
// without calling into the layer cannot be stopped: after a grace period its OS thread (fiber
// mode: its block's) is detached and its unfinished GPU threads are counted in
// LaunchResult::threadsNotStopped (the launch's state stays alive for them).
//
// Weak-memory mode (LaunchConfig::weakMemorySeed, or ACCL_SIMT_WEAK_MEMORY=<seed> in the
// environment, or a ScopedWeakMemory in a test): the layer's loads and stores go through the
// model of weak_memory.h (stale reads, late stores, release/acquire/fence/barrier as the PTX
// model orders them, a store that a load before it could have read fails the launch), barriers
// and __syncwarp join what the participants know, and polls are scheduled less fairly. Off by
// default: the layer then maps to std::atomic_ref as it always did.
//
// Header-only and test-facing: the library itself never launches CPU kernels.
#pragma once

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "device/simt/weak_memory.h"

// Sanitizers do not follow stacks switched under them (ASan reports false stack errors, TSan
// loses the happens-before of a switch), so their builds run fiber-mode launches in thread mode.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ACCL_SIMT_CPU_FIBERS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ACCL_SIMT_CPU_FIBERS 0
#endif
#endif
#ifndef ACCL_SIMT_CPU_FIBERS
#define ACCL_SIMT_CPU_FIBERS 1
#endif

namespace accl::simt::cpu {

constexpr int kWarpSize = 32;
constexpr int kNamedBarriers = 16;
constexpr int kMaxBlockThreads = 1024;
constexpr int kMaxLaunchThreads = 4096;  // thread mode: GPU threads started by one launch
constexpr int kMaxFiberBlocks = 64;      // fiber mode: blocks started by one launch (one OS thread each)
// False where fiber-mode launches run in thread mode (sanitizer builds; fiber mode's limits apply).
constexpr bool kFiberModeAvailable = ACCL_SIMT_CPU_FIBERS != 0;

// Thrown inside a kernel thread while its launch is being torn down; caught by the harness.
struct LaunchAborted {};

struct LaunchConfig {
  int gridDim = 1;
  int blockDim = 64;         // a multiple of 32 (whole warps), at most 1024
  size_t sharedBytes = 0;    // dynamic shared memory per block
  std::chrono::milliseconds deadline{30000};
  std::chrono::milliseconds grace{3000};  // after an abort, how long threads get to unwind
  // Blocks [firstBlock, firstBlock + blockCount) of the grid run; -1: through the last block.
  int firstBlock = 0;
  int blockCount = -1;
  bool fibers = false;                // one OS thread per block, GPU threads as fibers
  size_t fiberStackBytes = 256 << 10;  // per fiber, below it one PROT_NONE guard page
  // Fiber mode: called by each block's OS thread after every round over its fibers, where no fiber
  // runs; it may block (the virtual GPU parks a process's blocks there while another process has
  // the device's time slice).
  std::function<void()> betweenRounds;
  // Nonzero: run in weak-memory mode with this seed. 0: the process default (ScopedWeakMemory,
  // else ACCL_SIMT_WEAK_MEMORY, else off).
  uint64_t weakMemorySeed = 0;
};

namespace detail {
inline std::atomic<uint64_t>& weakSeedOverride() {
  static std::atomic<uint64_t> seed{0};
  return seed;
}
}  // namespace detail

// The weak-memory seed a launch that names none runs with; 0: off.
inline uint64_t defaultWeakMemorySeed() {
  if (uint64_t s = detail::weakSeedOverride().load(std::memory_order_relaxed)) return s;
  static const uint64_t fromEnv = [] {
    const char* v = std::getenv("ACCL_SIMT_WEAK_MEMORY");
    return v != nullptr ? std::strtoull(v, nullptr, 0) : 0ull;
  }();
  return fromEnv;
}

// While alive, launches that name no seed run in weak-memory mode with `seed` (tests that reuse
// kernels and launch helpers unchanged). Not nested, not for concurrent tests.
class ScopedWeakMemory {
 public:
  explicit ScopedWeakMemory(uint64_t seed) { detail::weakSeedOverride().store(seed, std::memory_order_relaxed); }
  ~ScopedWeakMemory() { detail::weakSeedOverride().store(0, std::memory_order_relaxed); }
  ScopedWeakMemory(const ScopedWeakMemory&) = delete;
  ScopedWeakMemory& operator=(const ScopedWeakMemory&) = delete;
};

struct LaunchResult {
  bool ok = false;
  bool timedOut = false;
  int threadsNotStopped = 0;
  std::string error;  // empty when ok
};

class LaunchState;
struct BlockState;

// What the launch's wait loops poll: true once the launch is aborted.
bool launchAborted(const LaunchState& launch);

// One kernel thread's view: its indices and its block.
struct ThreadCtx {
  int thread;
  int block;
  int blockDim;
  int gridDim;
  BlockState* blockState;
  const LaunchState* launch;
  weak::Thread* weak = nullptr;  // weak-memory mode: this thread's side of the model
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

namespace detail {

// A wait that has gone on for this many polls (or fiber yields) is long: its thread sleeps
// (thread mode) or lets its block's scheduler sleep (fiber mode).
constexpr int kLongWaitPolls = 64;

// One GPU thread run as a fiber of its block's OS thread.
struct Fiber {
  ucontext_t context;            // holds pointers into itself: a Fiber never moves
  ucontext_t* scheduler = nullptr;
  LaunchState* launch = nullptr;
  ThreadCtx thread{};
  int index = 0;                 // the launch's thread index (block-major, started blocks only)
  void* mapping = nullptr;       // guard page + stack
  size_t mappingBytes = 0;
  bool done = false;
  bool longWait = false;         // the last yield came from a long wait
};

// Fiber stacks outlive their launch: a pool of mappings (guard page included) by size, reused by
// later launches — a launch of 8 blocks x 512 threads would otherwise map, protect and unmap 4096
// stacks, which costs more than a small collective. Bounded; the rest are unmapped.
class StackPool {
 public:
  static StackPool& instance() {
    static StackPool* pool = new StackPool;  // outlives static destructors (detached blocks)
    return *pool;
  }
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, free] : free_)
      if (size == bytes && !free.empty()) {
        void* p = free.back();
        free.pop_back();
        --pooled_;
        return p;
      }
    return nullptr;
  }
  void give(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pooled_ < kMaxPooled) {
        for (auto& [size, free] : free_)
          if (size == bytes) {
            free.push_back(p);
            ++pooled_;
            return;
          }
        free_.push_back({bytes, {p}});
        ++pooled_;
        return;
      }
    }
    munmap(p, bytes);
  }

 private:
  static constexpr size_t kMaxPooled = 16384;
  std::mutex mu_;
  std::vector<std::pair<size_t, std::vector<void*>>> free_;
  size_t pooled_ = 0;
};

// The fiber the calling OS thread runs now; null in thread mode and in the block's scheduler.
inline thread_local Fiber* tlsFiber = nullptr;

// Hands the block's OS thread back to its scheduler, which resumes this fiber after the others.
// Never called with a mutex held (every fiber of the block shares the OS thread), nor inside a
// catch handler (the C++ runtime keeps its caught-exception stack per OS thread).
inline void fiberYield(bool longWait) {
  Fiber* self = tlsFiber;
  self->longWait = longWait;
  swapcontext(&self->context, self->scheduler);
}

// Waits on cv until done() or the launch is aborted (then throws LaunchAborted). A fiber polls
// done() once per scheduler round instead, with the lock released while other fibers run.
template <class Done>
void waitOrAbort(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, const LaunchState& launch,
                 Done&& done) {
  for (int polls = 0; !done(); ++polls) {
    if (launchAborted(launch)) throw LaunchAborted{};
    if (tlsFiber != nullptr) {
      lock.unlock();
      fiberYield(polls >= kLongWaitPolls);
      lock.lock();
    } else {
      cv.wait_for(lock, std::chrono::milliseconds(10));
    }
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
  // `weak`: the arriving thread in weak-memory mode (what it knows joins the generation's; a
  // waiter learns the union: CTA-scope ordering), else null. That mode also checks that the
  // barrier is warp-aligned as bar.sync is: every warp (`warp`: the arriving thread's) takes part in a
  // generation with all its lanes or not at all; a lane that skipped it, or arrived before its
  // warp reconverged and so lands in another generation, fails the launch.
  bool arrive(int nthreads, bool wait, bool pred, const LaunchState& launch, weak::Thread* weak = nullptr,
              int warp = 0) {
    std::unique_lock<std::mutex> lock(mu_);
    if (arrived_ == 0) {
      expected_ = nthreads;
      orAcc_ = false;
      knownAcc_.clear();
      if (weak != nullptr)
        for (int& n : warpLanes_) n = 0;
    } else if (expected_ != nthreads) {
      throw std::logic_error("named barrier: arrivals name different thread counts (" + std::to_string(expected_) +
                             " and " + std::to_string(nthreads) + ")");
    }
    const uint64_t generation = generation_;
    orAcc_ = orAcc_ || pred;
    if (weak != nullptr) {
      weak->arriveAt(knownAcc_);
      ++warpLanes_[warp];
    }
    if (++arrived_ == expected_) {
      if (weak != nullptr)
        for (int w = 0; w < kMaxBlockThreads / kWarpSize; ++w)
          if (warpLanes_[w] != 0 && warpLanes_[w] != kWarpSize)
            throw std::logic_error("named barrier: warp " + std::to_string(w) + " arrived with " +
                                   std::to_string(warpLanes_[w]) + " of its lanes (bar.sync is warp-aligned)");
      arrived_ = 0;
      orResult_[generation & 1] = orAcc_;
      std::swap(knownResult_[generation & 1], knownAcc_);
      ++generation_;
      cv_.notify_all();
      if (weak != nullptr) weak->leave(knownResult_[generation & 1]);
      return orResult_[generation & 1];
    }
    if (!wait) return orResult_[generation & 1];
    detail::waitOrAbort(lock, cv_, launch, [&] { return generation_ != generation; });
    if (weak != nullptr) weak->leave(knownResult_[generation & 1]);
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
  weak::BarrierKnowledge knownAcc_;        // weak-memory mode: what this generation's arrivals knew
  weak::BarrierKnowledge knownResult_[2];  // ... of the last two generations, by parity (as orResult_)
  int warpLanes_[kMaxBlockThreads / kWarpSize] = {};  // weak-memory mode: this generation's arrivals per warp
};

// The exchange behind a warp's shuffles and votes: every lane of `mask` deposits one 64-bit
// value, and once all have, each gets a copy of all of them. Collectives over different masks
// may be in flight at once (divergent halves of a warp); each mask has its own group, and each
// group double-buffers by generation, so a fast lane may start the next collective while slow
// ones still copy out the last.
class WarpExchange {
 public:
  static constexpr int kMaxGroups = 8;

  // `orderMemory`: the lane's weak-memory side when the collective orders memory (__syncwarp in
  // weak-memory mode): what the lanes know is joined; null for shuffles and votes, which do not.
  void exchange(unsigned mask, int lane, uint64_t value, uint64_t (&out)[kWarpSize], const LaunchState& launch,
                weak::Thread* orderMemory = nullptr) {
    if (((mask >> lane) & 1u) == 0)
      throw std::logic_error("warp collective: lane " + std::to_string(lane) + " is not in its mask");
    std::unique_lock<std::mutex> lock(mu_);
    Group& g = groupFor(mask);
    const uint64_t generation = g.generation;
    uint64_t* slots = g.values[generation & 1];
    slots[lane] = value;
    if (orderMemory != nullptr) {
      weak::BarrierKnowledge& acc = g.known[generation & 1];
      if (g.arrived == 0) acc.clear();
      orderMemory->arriveAt(acc);
    }
    if (++g.arrived == popCount(mask)) {
      g.arrived = 0;
      ++g.generation;
      cv_.notify_all();
    } else {
      detail::waitOrAbort(lock, cv_, launch, [&] { return g.generation != generation; });
    }
    if (orderMemory != nullptr) orderMemory->leave(g.known[generation & 1]);
    for (int i = 0; i < kWarpSize; ++i) out[i] = ((mask >> i) & 1u) ? slots[i] : 0;
  }

 private:
  struct Group {
    unsigned mask = 0;
    int arrived = 0;
    uint64_t generation = 0;
    uint64_t values[2][kWarpSize] = {};
    weak::BarrierKnowledge known[2];  // weak-memory mode, memory-ordering collectives: what the lanes knew
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

// One poll of a spin loop: checks the harness abort, then lets others run. A thread yields the
// core (2-core CI machines run hundreds of kernel threads), sleeping briefly once the wait gets
// long; a fiber yields to its block's scheduler, which sleeps once all its fibers wait long.
//
// Weak-memory mode also makes the schedule less fair: now and then a poll yields twice, so that
// the order in which threads reach their next access varies with the seed.
inline void pollPause(int polls) {
  checkAbort();
  if (tlsThread != nullptr && tlsThread->weak != nullptr && tlsThread->weak->oneIn(4)) {
    if (detail::tlsFiber != nullptr) detail::fiberYield(false);
    else std::this_thread::yield();
  }
  if (detail::tlsFiber != nullptr) detail::fiberYield(polls >= detail::kLongWaitPolls);
  else if (polls < detail::kLongWaitPolls) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(50));
}

class LaunchState {
 public:
  // Runs blocks [firstBlock, firstBlock + blocks) of the grid.
  LaunchState(const LaunchConfig& config, int blocks, std::function<void()> kernel)
      : config_(config), blocks_(blocks), kernel_(std::move(kernel)), done_(new std::atomic<bool>[total()]) {
    for (int i = 0; i < total(); ++i) done_[i].store(false, std::memory_order_relaxed);
    for (int b = 0; b < blocks; ++b)
      blockStates_.push_back(std::make_unique<BlockState>(config.blockDim, config.sharedBytes));
    const uint64_t seed = config.weakMemorySeed != 0 ? config.weakMemorySeed : defaultWeakMemorySeed();
    if (seed != 0) {
      weakMemory_ = std::make_unique<weak::Memory>(seed, total(), config.blockDim, config.firstBlock);
      for (int i = 0; i < total(); ++i) weakThreads_.push_back(std::make_unique<weak::Thread>(*weakMemory_, i));
    }
  }

  // The weak-memory seed this launch runs with; 0: off.
  uint64_t weakMemorySeed() const { return weakMemory_ ? weakMemory_->seed() : 0; }

  // GPU threads of the blocks this launch runs.
  int total() const { return blocks_ * config_.blockDim; }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  void abort() { aborted_.store(true, std::memory_order_release); }

  // Thread mode: body of kernel thread `index` (block-major over the blocks this launch runs).
  void runThread(int index) {
    ThreadCtx ctx = threadCtx(index);
    tlsThread = &ctx;
    runKernel(ctx);
    tlsThread = nullptr;
    finishThread(index);
  }

#if ACCL_SIMT_CPU_FIBERS
  // Fiber mode: body of the OS thread of block `slot` (0-based among the blocks this launch
  // runs). Round-robins the block's fibers until all have finished.
  void runBlock(int slot) {
    const int n = config_.blockDim;
    std::unique_ptr<detail::Fiber[]> fibers(new detail::Fiber[n]);
    ucontext_t scheduler;
    for (int i = 0; i < n; ++i) {
      detail::Fiber& f = fibers[i];
      f.index = slot * n + i;
      f.thread = threadCtx(f.index);
      f.launch = this;
      f.scheduler = &scheduler;
      std::string why;
      if (!mapStack(f, &why)) {
        fail(f.thread, "could not map a fiber stack: " + why);
        for (int j = 0; j < n; ++j) {
          unmapStack(fibers[j]);
          finishThread(slot * n + j);
        }
        return;
      }
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = static_cast<char*>(f.mapping) + pageBytes();
      f.context.uc_stack.ss_size = f.mappingBytes - pageBytes();
      f.context.uc_link = &scheduler;  // where fiberMain's return lands
      makecontext(&f.context, &LaunchState::fiberMain, 0);
    }
    for (int live = n; live > 0;) {
      bool allWaitLong = true;  // no fiber finished or made progress this round
      for (int i = 0; i < n; ++i) {
        detail::Fiber& f = fibers[i];
        if (f.done) continue;
        f.longWait = false;
        detail::tlsFiber = &f;
        tlsThread = &f.thread;  // what simt_cpu.h reads, per fiber
        swapcontext(&scheduler, &f.context);
        tlsThread = nullptr;
        detail::tlsFiber = nullptr;
        if (f.done) {
          unmapStack(f);  // the fiber never runs again: its stack is free
          finishThread(f.index);
          --live;
          allWaitLong = false;
        } else if (!f.longWait) {
          allWaitLong = false;
        }
      }
      if (live == 0) break;
      if (config_.betweenRounds) config_.betweenRounds();
      if (allWaitLong) std::this_thread::sleep_for(std::chrono::microseconds(50));
      else std::this_thread::yield();  // other blocks share the cores
    }
  }
#endif

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
  ThreadCtx threadCtx(int index) {
    const int slot = index / config_.blockDim;
    return ThreadCtx{index % config_.blockDim, config_.firstBlock + slot, config_.blockDim, config_.gridDim,
                     blockStates_[slot].get(), this, weakMemory_ ? weakThreads_[size_t(index)].get() : nullptr};
  }

  // Runs the kernel as `ctx`; whatever it throws ends here (in fiber mode: before it could cross
  // a context switch).
  void runKernel(const ThreadCtx& ctx) {
    try {
      kernel_();
    } catch (const LaunchAborted&) {
    } catch (const std::exception& e) {
      fail(ctx, e.what());
    } catch (...) {
      fail(ctx, "unknown exception");
    }
  }

  void finishThread(int index) {
    done_[index].store(true, std::memory_order_release);
    std::lock_guard<std::mutex> lock(mu_);
    ++finished_;
    cv_.notify_all();
  }

#if ACCL_SIMT_CPU_FIBERS
  // Entry of every fiber; returning resumes the scheduler (uc_link).
  static void fiberMain() {
    detail::Fiber* self = detail::tlsFiber;
    self->launch->runKernel(self->thread);
    self->done = true;
  }

  static size_t pageBytes() {
    static const size_t page = size_t(sysconf(_SC_PAGESIZE));
    return page;
  }

  bool mapStack(detail::Fiber& f, std::string* why) {
    const size_t page = pageBytes();
    const size_t bytes = page + (config_.fiberStackBytes + page - 1) / page * page;
    if (void* pooled = detail::StackPool::instance().take(bytes)) {
      f.mapping = pooled;
      f.mappingBytes = bytes;
      return true;
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                   -1, 0);
    if (p == MAP_FAILED) {
      *why = "mmap of " + std::to_string(bytes) + " bytes failed";
      return false;
    }
    // Each guard page splits a mapping: a launch needs about two per GPU thread (vm.max_map_count).
    if (mprotect(p, page, PROT_NONE) != 0) {
      munmap(p, bytes);
      *why = "mprotect of its guard page failed (too many mappings? see vm.max_map_count)";
      return false;
    }
    f.mapping = p;
    f.mappingBytes = bytes;
    return true;
  }

  static void unmapStack(detail::Fiber& f) {
    if (f.mapping != nullptr) detail::StackPool::instance().give(f.mapping, f.mappingBytes);
    f.mapping = nullptr;
  }
#endif

  void fail(const ThreadCtx& ctx, const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.empty())
        error_ = "block " + std::to_string(ctx.block) + " thread " + std::to_string(ctx.thread) + ": " + what;
    }
    abort();
  }

  LaunchConfig config_;
  int blocks_;
  std::function<void()> kernel_;
  std::unique_ptr<std::atomic<bool>[]> done_;
  std::vector<std::unique_ptr<BlockState>> blockStates_;
  std::unique_ptr<weak::Memory> weakMemory_;                 // weak-memory mode only
  std::vector<std::unique_ptr<weak::Thread>> weakThreads_;  // by launch thread index
  std::atomic<bool> aborted_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int started_ = 0;
  int finished_ = 0;
  std::string error_;
};

inline bool launchAborted(const LaunchState& launch) { return launch.aborted(); }

// Runs `kernel` on every thread of the launch's blocks and waits for all of them, at most until
// the deadline (then aborts the launch and reports failure). Reentrant: several launches may run
// at once from different host threads (e.g. one per simulated rank, or one per block).
inline LaunchResult launch(const LaunchConfig& config, std::function<void()> kernel) {
  LaunchResult result;
  const bool fibers = config.fibers && kFiberModeAvailable;
  const int blocks = config.blockCount == -1 ? config.gridDim - config.firstBlock : config.blockCount;
  if (config.gridDim < 1 || config.blockDim < kWarpSize || config.blockDim > kMaxBlockThreads ||
      config.blockDim % kWarpSize != 0) {
    result.error = "simt launch: grid " + std::to_string(config.gridDim) + " x block " +
                   std::to_string(config.blockDim) + " is not whole warps within the harness limits";
    return result;
  }
  if (config.firstBlock < 0 || blocks < 1 || int64_t(config.firstBlock) + blocks > config.gridDim) {
    result.error = "simt launch: firstBlock " + std::to_string(config.firstBlock) + " and blockCount " +
                   std::to_string(config.blockCount) + " name no nonempty range of the grid's " +
                   std::to_string(config.gridDim) + " blocks";
    return result;
  }
  // The limits count what starts: fiber mode starts one OS thread per block.
  if (config.fibers ? blocks > kMaxFiberBlocks : int64_t(blocks) * config.blockDim > kMaxLaunchThreads) {
    result.error = "simt launch: grid " + std::to_string(config.gridDim) + " x block " +
                   std::to_string(config.blockDim) + " is not whole warps within the harness limits";
    if (blocks != config.gridDim) result.error += " (" + std::to_string(blocks) + " of its blocks to start)";
    return result;
  }
  if (fibers && config.fiberStackBytes < (16u << 10)) {  // makecontext's frame and the kernel's need room
    result.error = "simt launch: a fiber stack of " + std::to_string(config.fiberStackBytes) + " bytes is too small";
    return result;
  }
  auto state = std::make_shared<LaunchState>(config, blocks, std::move(kernel));
  const auto deadline = std::chrono::steady_clock::now() + config.deadline;
  // Thread mode: one OS thread per GPU thread. Fiber mode: one per block.
  const int threadsPerOsThread = fibers ? config.blockDim : 1;
  std::vector<std::thread> threads;
  threads.reserve(state->total() / threadsPerOsThread);
  try {
    for (int i = 0; i < state->total() / threadsPerOsThread; ++i) {
#if ACCL_SIMT_CPU_FIBERS
      if (fibers) {
        threads.emplace_back([state, i] { state->runBlock(i); });
        continue;
      }
#endif
      threads.emplace_back([state, i] { state->runThread(i); });
    }
  } catch (const std::system_error& e) {
    state->abort();
    result.error = std::string("simt launch: could not start a ") + (fibers ? "block" : "kernel") +
                   " thread: " + e.what();
  }
  state->setStarted(int(threads.size()) * threadsPerOsThread);

  if (!state->waitFinished(deadline)) {
    result.timedOut = true;
    state->abort();
    state->waitFinished(std::chrono::steady_clock::now() + config.grace);
  }
  std::string stuck;
  for (size_t t = 0; t < threads.size(); ++t) {
    int notDone = 0;
    for (int j = 0; j < threadsPerOsThread; ++j) {
      const int i = int(t) * threadsPerOsThread + j;
      if (state->threadDone(i)) continue;
      ++notDone;
      if (result.threadsNotStopped++ < 8)
        stuck += " b" + std::to_string(config.firstBlock + i / config.blockDim) + "t" +
                 std::to_string(i % config.blockDim);
    }
    if (notDone == 0) threads[t].join();
    else threads[t].detach();  // the thread holds its own reference to `state`
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
