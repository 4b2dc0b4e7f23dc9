// The CPU SIMT harness itself (src/device/simt/cpu_harness.h): block barriers under repetition,
// per-block shared memory, concurrent launches, and the failure paths: a hung kernel is aborted
// at its deadline and reported, a throwing thread fails the launch, bad configurations and
// misuse of barriers and warp collectives are reported instead of hanging.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
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

}  // namespace
}  // namespace accl::simt
