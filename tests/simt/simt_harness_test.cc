// The CPU SIMT harness itself (src/device/simt/cpu_harness.h): block barriers under repetition,
// per-block shared memory, concurrent launches, and the failure paths: a hung kernel is aborted
// at its deadline and reported, a throwing thread fails the launch, bad configurations and
// misuse of barriers and warp collectives are reported instead of hanging. SimtHarnessFibers: the
// same in fiber mode with 512-thread blocks (the virtual GPU's kernel shape), and launches of
// only some blocks of a grid (firstBlock / blockCount) in both modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "device/simt/simt.h"

namespace accl::simt {
namespace {

cpu::LaunchConfig grid(int blocks, int threads, std::chrono::milliseconds deadline = std::chrono::milliseconds(60000)) {
  cpu::LaunchConfig c;
  c.gridDim = blocks;
  c.blockDim = threads;
  c.deadline = deadline;
  return c;
}

TEST(SimtHarness, SyncBlockOrdersManyIterations) {
  const int blocks = 2, threads = 64, iterations = 300;
  std::vector<int> cells(blocks * threads, -1);
  std::atomic<int> bad{0};
  auto r = cpu::launch(grid(blocks, threads), [&] {
    int* mine = &cells[blockIndex() * threads];
    const int t = threadIndex();
    for (int it = 0; it < iterations; ++it) {
      mine[t] = it;  // plain stores: the barrier alone must order them
      syncBlock();
      if (mine[(t + 17) % threads] != it) bad++;
      syncBlock();
    }
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(bad.load(), 0);
}

TEST(SimtHarness, BarrierOrIsUniformAcrossRepeatedGenerations) {
  const int threads = 128, iterations = 200;
  std::atomic<int> bad{0};
  auto r = cpu::launch(grid(2, threads), [&] {
    const int t = threadIndex();
    for (int it = 0; it < iterations; ++it) {
      // Only one thread (rotating, or none every third iteration) votes true.
      const bool vote = it % 3 != 0 && t == (it * 7) % threads;
      if (syncBlockOr(vote) != (it % 3 != 0)) bad++;
      // Two 64-thread halves on their own barrier, with different outcomes.
      const int halfId = 1 + t / 64;
      if (barSyncOr(halfId, 64, t == 5 && it % 2 == 0) != (halfId == 1 && it % 2 == 0)) bad++;
    }
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(bad.load(), 0);
}

TEST(SimtHarness, SharedMemoryIsPerBlockAndAligned) {
  cpu::LaunchConfig c = grid(3, 32);
  c.sharedBytes = 100;
  std::atomic<int> bad{0};
  auto r = cpu::launch(c, [&] {
    unsigned char* s = sharedMem();
    if (reinterpret_cast<uintptr_t>(s) % 16 != 0) bad++;
    s[threadIndex()] = static_cast<unsigned char>(blockIndex() * 32 + threadIndex());
    syncBlock();
    for (int i = 0; i < 32; ++i)
      if (s[i] != blockIndex() * 32 + i) bad++;
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(bad.load(), 0);
}

TEST(SimtHarness, LaunchesFromSeveralHostThreadsRunIndependently) {
  std::atomic<int> bad{0};
  std::vector<cpu::LaunchResult> results(3);
  std::vector<std::thread> hosts;
  for (int h = 0; h < 3; ++h) {
    hosts.emplace_back([&, h] {
      results[h] = cpu::launch(grid(1, 64), [&, h] {
        for (int it = 0; it < 50; ++it) {
          int v = shfl(h * 100 + laneId(), 0);
          if (v != h * 100) bad++;
          syncBlock();
        }
      });
    });
  }
  for (auto& t : hosts) t.join();
  for (auto& r : results) EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(bad.load(), 0);
}

TEST(SimtHarness, HungKernelIsAbortedAtItsDeadlineAndReported) {
  const auto start = std::chrono::steady_clock::now();
  uint64_t never = 0;
  auto r = cpu::launch(grid(2, 64, std::chrono::milliseconds(300)), [&] {
    if (blockIndex() == 0 && threadIndex() == 0) {
      spinUntil([&] { return loadVolatile64(&never) != 0; }, nullptr);  // nobody ever sets it
    }
    syncBlock();  // block 0's other threads wait here forever; block 1 finishes
  });
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timedOut);
  EXPECT_EQ(r.threadsNotStopped, 0);
  EXPECT_NE(r.error.find("did not finish within 300 ms"), std::string::npos) << r.error;
  EXPECT_LT(elapsed, std::chrono::seconds(20));
}

TEST(SimtHarness, WarpCollectiveMissingALaneIsAborted) {
  auto r = cpu::launch(grid(1, 32, std::chrono::milliseconds(200)), [&] {
    if (laneId() != 5) syncWarp();  // lane 5 never arrives: a hang on a GPU
  });
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timedOut);
  EXPECT_EQ(r.threadsNotStopped, 0);
}

TEST(SimtHarness, ThrowingThreadFailsTheLaunchAndReleasesTheOthers) {
  auto r = cpu::launch(grid(1, 64), [&] {
    if (threadIndex() == 37) throw std::runtime_error("bad step");
    syncBlock();
  });
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.timedOut);
  EXPECT_NE(r.error.find("block 0 thread 37: bad step"), std::string::npos) << r.error;
}

TEST(SimtHarness, BarrierMisuseIsReported) {
  auto mismatched = cpu::launch(grid(1, 64), [&] { barSync(1, warpIndex() == 0 ? 64 : 32); });
  EXPECT_FALSE(mismatched.ok);
  EXPECT_NE(mismatched.error.find("different thread counts"), std::string::npos) << mismatched.error;

  auto notWarps = cpu::launch(grid(1, 64), [&] { barSync(2, 48); });
  EXPECT_FALSE(notWarps.ok);
  EXPECT_NE(notWarps.error.find("whole warps"), std::string::npos) << notWarps.error;

  auto badId = cpu::launch(grid(1, 32), [&] { barSync(16, 32); });
  EXPECT_FALSE(badId.ok);
}

TEST(SimtHarness, ShuffleFromALaneOutsideTheMaskIsReported) {
  auto r = cpu::launch(grid(1, 32),
                       [&] { shfl(laneId(), 20, 0x0000ffffu * (laneId() < 16) + 0xffff0000u * (laneId() >= 16)); });
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("not in the mask"), std::string::npos) << r.error;
}

TEST(SimtHarness, BadConfigurationsAreRejected) {
  for (auto [blocks, threads] : {std::pair{1, 48}, std::pair{0, 64}, std::pair{1, 2048}, std::pair{100, 1024}}) {
    auto r = cpu::launch(grid(blocks, threads), [] {});
    EXPECT_FALSE(r.ok) << blocks << "x" << threads;
    EXPECT_NE(r.error.find("whole warps"), std::string::npos) << r.error;
  }
}

TEST(SimtHarness, PrimitivesOutsideALaunchAreAnError) {
  EXPECT_THROW(threadIndex(), std::logic_error);
  EXPECT_THROW(syncBlock(), std::logic_error);
  uint64_t w = 0;
  storeRelease(&w, 3);  // memory primitives need no launch
  EXPECT_EQ(loadAcquire(&w), 3u);
}

// ---- fiber mode -------------------------------------------------------------------------------

cpu::LaunchConfig fiberGrid(int blocks, int threads,
                            std::chrono::milliseconds deadline = std::chrono::milliseconds(60000)) {
  cpu::LaunchConfig c = grid(blocks, threads, deadline);
  c.fibers = true;
  return c;
}

// For the tests of 512-thread blocks: sanitizer builds run fiber launches in thread mode, where
// those take seconds to minutes and only repeat the thread-mode tests above.
#define SKIP_WITHOUT_FIBERS() \
  if (!cpu::kFiberModeAvailable) GTEST_SKIP() << "fiber mode runs as thread mode in this (sanitizer) build"

TEST(SimtHarnessFibers, SyncBlockOrdersManyIterationsIn512ThreadBlocks) {
  SKIP_WITHOUT_FIBERS();
  const int blocks = 2, threads = 512, iterations = 300;
  std::vector<int> cells(blocks * threads, -1);
  std::atomic<int> bad{0}, checks{0};
  auto r = cpu::launch(fiberGrid(blocks, threads), [&] {
    int* mine = &cells[blockIndex() * threads];
    const int t = threadIndex();
    for (int it = 0; it < iterations; ++it) {
      mine[t] = it;
      syncBlock();
      if (mine[(t + 17) % threads] != it) bad++;
      if (mine[(t + 300) % threads] != it) bad++;
      checks++;
      syncBlock();
    }
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(checks.load(), blocks * threads * iterations);
  for (int v : cells) EXPECT_EQ(v, iterations - 1);
}

// Warps 0..7 produce into shared memory and bar.arrive; warps 8..15 bar.sync, consume, and
// bar.arrive on a second barrier the producers bar.sync on before they overwrite the slots.
TEST(SimtHarnessFibers, NamedBarriersHandOffBetweenProducerAndConsumerWarps) {
  SKIP_WITHOUT_FIBERS();
  const int threads = 512, half = 256, iterations = 100;
  cpu::LaunchConfig c = fiberGrid(2, threads);
  c.sharedBytes = half * sizeof(int);
  std::atomic<int> bad{0}, consumed{0}, orBad{0};
  auto r = cpu::launch(c, [&] {
    int* slots = reinterpret_cast<int*>(sharedMem());
    const int t = threadIndex(), b = blockIndex();
    for (int it = 0; it < iterations; ++it) {
      if (t < half) {
        slots[t] = b * 1000000 + it * 1000 + t;
        barArrive(1, threads);
        barSync(2, threads);  // the consumers have read this round's slots
        // The first four producer warps also vote on a barrier of their own.
        if (warpIndex() < 4 && barSyncOr(3, 128, t == (it % 128) && it % 2 == 1) != (it % 2 == 1)) orBad++;
      } else {
        barSync(1, threads);
        const int p = t - half, q = (p * 7 + it) % half;
        if (slots[p] != b * 1000000 + it * 1000 + p) bad++;
        if (slots[q] != b * 1000000 + it * 1000 + q) bad++;
        consumed++;
        barArrive(2, threads);
      }
    }
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(orBad.load(), 0);
  EXPECT_EQ(consumed.load(), 2 * half * iterations);
}

TEST(SimtHarnessFibers, WarpShufflesAndVotesWithDivergentMasks) {
  SKIP_WITHOUT_FIBERS();
  const int blocks = 2, threads = 512, iterations = 20;
  std::atomic<int> bad{0}, checks{0};
  auto r = cpu::launch(fiberGrid(blocks, threads), [&] {
    const int lane = laneId(), w = warpIndex(), b = blockIndex();
    for (int it = 0; it < iterations; ++it) {
      if (shfl(b * 10000 + threadIndex(), (it + w) % kWarpSize) != b * 10000 + w * kWarpSize + (it + w) % kWarpSize)
        bad++;
      int sum = lane + it;
      for (int off = 16; off > 0; off /= 2) sum += shflXor(sum, off);
      if (sum != 496 + kWarpSize * it) bad++;
      unsigned expect = 0;
      for (int i = 0; i < kWarpSize; ++i) expect |= unsigned((i + it + w) % 3 == 0) << i;
      if (ballot((lane + it + w) % 3 == 0) != expect) bad++;
      // Divergent halves, each a collective over its own mask; odd warps take them in the other
      // order, so the halves of different warps interleave differently.
      const bool low = (lane < 16) != (w % 2 == 1);
      if (low == (lane < 16)) {
        if (lane < 16) {
          if (shfl(lane * (it + 1), 3, 0x0000ffffu) != 3 * (it + 1)) bad++;
          if (ballot(lane % 2 == 1, 0x0000ffffu) != 0x0000aaaau) bad++;
        } else {
          if (shfl(lane + it, 16 + it % 16, 0xffff0000u) != 16 + it % 16 + it) bad++;
          if (!any(lane == 31, 0xffff0000u) || !all(lane >= 16, 0xffff0000u)) bad++;
        }
      } else {
        if (lane >= 16) {
          if (shfl(lane + it, 16 + it % 16, 0xffff0000u) != 16 + it % 16 + it) bad++;
          if (!any(lane == 31, 0xffff0000u) || !all(lane >= 16, 0xffff0000u)) bad++;
        } else {
          if (shfl(lane * (it + 1), 3, 0x0000ffffu) != 3 * (it + 1)) bad++;
          if (ballot(lane % 2 == 1, 0x0000ffffu) != 0x0000aaaau) bad++;
        }
      }
      syncWarp();
      checks++;
    }
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(checks.load(), blocks * threads * iterations);
}

// Block 0 waits (simt::spinUntil, then its barrier) for data block 1 publishes after a barrier:
// a wait across two blocks' OS threads, long enough that block 0's scheduler sleeps. Within
// block 0, thread 511 waits for block 1 and relays to thread 0, which only sees it if its own
// polls let the later fiber run.
TEST(SimtHarnessFibers, SpinWaitAcrossTwoBlocks) {
  SKIP_WITHOUT_FIBERS();
  const int threads = 512;
  std::vector<int> data(threads, 0);
  uint64_t flag = 0, relay = 0;
  std::atomic<int> bad{0}, readers{0};
  auto r = cpu::launch(fiberGrid(2, threads, std::chrono::milliseconds(20000)), [&] {
    const int t = threadIndex();
    if (blockIndex() == 1) {
      if (t == 0) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      data[t] = 7 * t + 1;
      syncBlock();
      if (t == 0) storeRelease(&flag, 1);
      return;
    }
    if (t == threads - 1) {
      if (!spinUntil([&] { return loadAcquire(&flag) == 1; }, nullptr)) bad++;
      storeRelease(&relay, 1);
    }
    if (t == 0 && !spinUntil([&] { return loadAcquire(&relay) == 1; }, nullptr)) bad++;
    syncBlock();
    const int u = (t + 1) % threads;
    if (data[u] != 7 * u + 1) bad++;
    readers++;
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(readers.load(), threads);
}

TEST(SimtHarnessFibers, SharedMemoryIsPerBlockAndAligned) {
  SKIP_WITHOUT_FIBERS();
  const int blocks = 3, threads = 512;
  cpu::LaunchConfig c = fiberGrid(blocks, threads);
  c.sharedBytes = threads * sizeof(int);
  std::atomic<int> bad{0}, checks{0};
  auto r = cpu::launch(c, [&] {
    int* s = reinterpret_cast<int*>(sharedMem());
    if (reinterpret_cast<uintptr_t>(s) % 16 != 0) bad++;
    s[threadIndex()] = blockIndex() * 100000 + threadIndex();
    syncBlock();
    for (int i = 0; i < threads; ++i)
      if (s[i] != blockIndex() * 100000 + i) bad++;
    checks++;
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(checks.load(), blocks * threads);
}

TEST(SimtHarnessFibers, ThrowingThreadFailsTheLaunchAndReleasesTheOthers) {
  std::atomic<int> passed{0};
  auto r = cpu::launch(fiberGrid(2, 512), [&] {
    if (blockIndex() == 1 && threadIndex() == 300) throw std::runtime_error("bad step");
    syncBlock();
    passed++;
  });
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.timedOut);
  EXPECT_EQ(r.threadsNotStopped, 0);
  EXPECT_NE(r.error.find("block 1 thread 300: bad step"), std::string::npos) << r.error;
  EXPECT_LT(passed.load(), 2 * 512);  // block 1's barrier never completed
}

TEST(SimtHarnessFibers, HungKernelIsAbortedAtItsDeadlineAndReported) {
  SKIP_WITHOUT_FIBERS();
  const auto start = std::chrono::steady_clock::now();
  uint64_t never = 0;
  std::atomic<int> finished{0};
  auto r = cpu::launch(fiberGrid(2, 512, std::chrono::milliseconds(300)), [&] {
    if (blockIndex() == 0 && threadIndex() == 0) {
      spinUntil([&] { return loadVolatile64(&never) != 0; }, nullptr);  // nobody ever sets it
    }
    syncBlock();  // block 0's other threads wait here forever; block 1 finishes
    finished++;
  });
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timedOut);
  EXPECT_EQ(r.threadsNotStopped, 0);
  EXPECT_EQ(finished.load(), 512);
  EXPECT_NE(r.error.find("did not finish within 300 ms"), std::string::npos) << r.error;
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));
  EXPECT_LT(elapsed, std::chrono::seconds(20));
}

// A thread that spins without calling into the layer never hands its block's OS thread back: the
// whole block is left running after the grace period and its unfinished threads are counted.
TEST(SimtHarnessFibers, BlockSpinningOutsideTheLayerIsDetachedAndCounted) {
  static std::atomic<bool> release{false};
  static std::atomic<bool> spinnerLeft{false};
  cpu::LaunchConfig c = fiberGrid(1, 64, std::chrono::milliseconds(200));
  c.grace = std::chrono::milliseconds(200);
  auto r = cpu::launch(c, [] {
    if (threadIndex() == 5) {
      while (!release.load()) {
      }
      spinnerLeft.store(true);
      return;
    }
    syncBlock();
  });
  release.store(true);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timedOut);
  // Fibers: threads 0..4 wait at the barrier, 6..63 never started. Threads: only 5 is stuck.
  EXPECT_EQ(r.threadsNotStopped, cpu::kFiberModeAvailable ? 64 : 1);
  EXPECT_NE(r.error.find("ignored the abort: b0t"), std::string::npos) << r.error;
  for (int i = 0; i < 1000 && !spinnerLeft.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(spinnerLeft.load());
}

// Only blocks [firstBlock, firstBlock + blockCount) run, each with its real index and the whole
// grid's size; bad ranges are rejected. Both modes.
TEST(SimtHarnessFibers, FirstBlockAndBlockCountRunOnlyTheNamedBlocks) {
  for (bool fibers : {false, true}) {
    struct Case {
      int firstBlock, blockCount;
      std::vector<int> expect;
    };
    for (const Case& k :
         {Case{3, 2, {3, 4}}, Case{6, -1, {6, 7}}, Case{7, 1, {7}}, Case{0, -1, {0, 1, 2, 3, 4, 5, 6, 7}}}) {
      const int threads = 64;
      cpu::LaunchConfig c = grid(8, threads);
      c.fibers = fibers;
      c.firstBlock = k.firstBlock;
      c.blockCount = k.blockCount;
      c.sharedBytes = sizeof(int);
      std::array<std::atomic<int>, 8> ran{};
      std::atomic<int> bad{0};
      auto r = cpu::launch(c, [&] {
        if (gridSize() != 8 || blockIndex() < 0 || blockIndex() >= 8) {
          bad++;
          return;
        }
        int* s = reinterpret_cast<int*>(sharedMem());
        if (threadIndex() == 0) *s = blockIndex();
        syncBlock();
        if (*s != blockIndex()) bad++;
        ran[blockIndex()]++;
      });
      ASSERT_TRUE(r.ok) << r.error;
      EXPECT_EQ(bad.load(), 0);
      for (int b = 0; b < 8; ++b) {
        const bool named = std::find(k.expect.begin(), k.expect.end(), b) != k.expect.end();
        EXPECT_EQ(ran[b].load(), named ? threads : 0)
            << "fibers " << fibers << " first " << k.firstBlock << " count " << k.blockCount << " block " << b;
      }
    }
    for (auto [firstBlock, blockCount] : {std::pair{7, 2}, std::pair{-1, 1}, std::pair{2, 0}, std::pair{8, -1},
                                          std::pair{0, -2}}) {
      cpu::LaunchConfig c = grid(8, 64);
      c.fibers = fibers;
      c.firstBlock = firstBlock;
      c.blockCount = blockCount;
      auto r = cpu::launch(c, [] {});
      EXPECT_FALSE(r.ok) << firstBlock << " " << blockCount;
      EXPECT_NE(r.error.find("no nonempty range"), std::string::npos) << r.error;
    }
    // The limits count the blocks and threads started, not the grid.
    cpu::LaunchConfig big = grid(1000, 64);
    big.fibers = fibers;
    big.firstBlock = 998;
    big.blockCount = 1;
    std::atomic<int> ran{0};
    auto r = cpu::launch(big, [&] {
      if (blockIndex() == 998 && gridSize() == 1000) ran++;
    });
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(ran.load(), 64);
  }
}

// Fiber mode limits blocks (one OS thread each), not threads: 33 x 128 exceeds thread mode's 4096.
// A fiber stack too small or that cannot be mapped fails the launch.
TEST(SimtHarnessFibers, FiberLimitsCountBlocksAndStacksAreChecked) {
  EXPECT_FALSE(cpu::launch(grid(33, 128), [] {}).ok);
  auto tooMany = cpu::launch(fiberGrid(65, 32), [] {});
  EXPECT_FALSE(tooMany.ok);
  EXPECT_NE(tooMany.error.find("harness limits"), std::string::npos) << tooMany.error;
  SKIP_WITHOUT_FIBERS();
  cpu::LaunchConfig tiny = fiberGrid(1, 32);
  tiny.fiberStackBytes = 4096;
  auto small = cpu::launch(tiny, [] {});
  EXPECT_FALSE(small.ok);
  EXPECT_NE(small.error.find("too small"), std::string::npos) << small.error;
  cpu::LaunchConfig huge = fiberGrid(1, 64);
  huge.fiberStackBytes = size_t{1} << 47;  // more than a user address space
  auto unmapped = cpu::launch(huge, [] { syncBlock(); });
  EXPECT_FALSE(unmapped.ok);
  EXPECT_FALSE(unmapped.timedOut);
  EXPECT_EQ(unmapped.threadsNotStopped, 0);
  EXPECT_NE(unmapped.error.find("could not map a fiber stack"), std::string::npos) << unmapped.error;
  std::atomic<int> ran{0};
  auto r = cpu::launch(fiberGrid(33, 128), [&] {
    syncBlock();
    ran++;
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(ran.load(), 33 * 128);
}

// The virtual GPU's load: 4 blocks of 512 threads, 200 barriers each. Prints its duration.
TEST(SimtHarnessFibers, FourBlocksOf512Run200SyncBlocks) {
  SKIP_WITHOUT_FIBERS();
  const int blocks = 4, threads = 512, iterations = 200;
  std::vector<int> cells(2 * blocks * threads, -1);  // double-buffered: one barrier per iteration
  std::atomic<int> bad{0}, checks{0};
  const auto start = std::chrono::steady_clock::now();
  auto r = cpu::launch(fiberGrid(blocks, threads), [&] {
    const int t = threadIndex();
    for (int it = 0; it < iterations; ++it) {
      int* mine = &cells[((it & 1) * blocks + blockIndex()) * threads];
      mine[t] = it;
      syncBlock();
      if (mine[(t + 1) % threads] != it) bad++;
      checks++;
    }
  });
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(checks.load(), blocks * threads * iterations);
  std::cout << "[ timing   ] " << blocks << " x " << threads << " threads, " << iterations << " syncBlock: "
            << ms.count() << " ms\n";
}

}  // namespace
}  // namespace accl::simt
