// The device-primitives layer on the CPU SIMT harness: the shared test kernels of
// simt_test_kernels.h (the same ones tests/gpu compiles for sm_90) run with one thread per GPU
// thread, and their error counts and output buffers are checked here.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "simt_test_kernels.h"

namespace accl::simttest {
namespace {

namespace cpu = accl::simt::cpu;

cpu::LaunchConfig grid(int blocks, int threads, size_t sharedBytes = 0) {
  cpu::LaunchConfig c;
  c.gridDim = blocks;
  c.blockDim = threads;
  c.sharedBytes = sharedBytes;
  c.deadline = std::chrono::milliseconds(60000);
  return c;
}

// 16-byte aligned, zeroed words.
// On a 128-byte boundary: an LL128 line is written whole only inside one aligned 128-byte
// segment (the harness's weak-memory mode tears lines that straddle two).
struct AlignedWords {
  explicit AlignedWords(size_t n) : v((n + 1) / 2 + 8) {}
  uint64_t* data() {
    return reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(v.data()) + 127) / 128 * 128);
  }
  std::vector<simt::Vec16> v;
};

TEST(SimtPrimitives, IndicesCoverTheGrid) {
  const int blocks = 3, threads = 64;
  std::vector<int> out(blocks * threads * kIndexFields, -1);
  auto r = cpu::launch(grid(blocks, threads), [&] { indicesKernel(out.data()); });
  ASSERT_TRUE(r.ok) << r.error;
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < threads; ++t) {
      const int* o = &out[(b * threads + t) * kIndexFields];
      EXPECT_EQ(o[0], b);
      EXPECT_EQ(o[1], t);
      EXPECT_EQ(o[2], t % 32);
      EXPECT_EQ(o[3], t / 32);
      EXPECT_EQ(o[4], threads / 32);
      EXPECT_EQ(o[5], threads);
      EXPECT_EQ(o[6], blocks);
    }
  }
}

TEST(SimtPrimitives, WarpShufflesAndVotes) {
  uint32_t errors = 0;
  auto r = cpu::launch(grid(2, 64), [&] { warpOpsKernel(&errors, 40); });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(errors, 0u);
}

TEST(SimtPrimitives, NamedBarriersWithSubsetsOfThreads) {
  uint32_t errors = 0;
  auto r = cpu::launch(grid(2, kNamedBarrierBlock, kNamedBarrierShared), [&] { namedBarrierKernel(&errors, 60); });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(errors, 0u);
}

TEST(SimtPrimitives, VectorLoadsAndStoresCopyExactly) {
  for (bool useVolatile : {false, true}) {
    for (size_t vectors : {size_t(0), size_t(1), size_t(63), size_t(1021)}) {
      AlignedWords src(2 * vectors), dst(2 * vectors + 2);
      for (size_t i = 0; i < 2 * vectors; ++i) src.data()[i] = pattern(0, i, 9);
      const uint64_t guard = 0xdeadbeefcafef00dull;
      dst.data()[2 * vectors] = dst.data()[2 * vectors + 1] = guard;
      auto r = cpu::launch(grid(2, 32), [&] { vectorCopyKernel(src.data(), dst.data(), vectors, useVolatile); });
      ASSERT_TRUE(r.ok) << r.error;
      if (vectors > 0) EXPECT_EQ(0, memcmp(src.data(), dst.data(), vectors * sizeof(simt::Vec16))) << vectors;
      EXPECT_EQ(dst.data()[2 * vectors], guard);
      EXPECT_EQ(dst.data()[2 * vectors + 1], guard);
    }
  }
}

TEST(SimtPrimitives, ReleaseAcquireCounterHandoff) {
  const int slotWords = 2 * 64 * 3 + 6;  // more than one pass of the block, odd vector count
  AlignedWords slots(size_t(kHandoffSlots) * slotWords);
  uint64_t tail = 0, head = 0;
  uint32_t errors = 0, abortFlag = 0;
  HandoffArgs a{slots.data(), slotWords, &tail, &head, 200, &errors, &abortFlag};
  auto r = cpu::launch(grid(2, 64, sizeof(int)), [&] { counterHandoffKernel(a); });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(errors, 0u);
  EXPECT_EQ(tail, 200u);
  EXPECT_EQ(head, 200u);
}

TEST(SimtPrimitives, LLWordPingPong) {
  const int words = 2 * 64 + 5;
  AlignedWords ab(words), ba(words);
  uint32_t errors = 0;
  LLPingPongArgs a{ab.data(), ba.data(), words, 150, /*lines=*/false, &errors, nullptr};
  auto r = cpu::launch(grid(2, 64), [&] { llPingPongKernel(a); });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(errors, 0u);
  for (int w = 0; w < words; ++w) EXPECT_EQ(simt::llFlag(ab.data()[w]), 150u) << w;
}

TEST(SimtPrimitives, LLLinePingPong) {
  const int words = 2 * (64 + 3);
  AlignedWords ab(words), ba(words);
  uint32_t errors = 0;
  LLPingPongArgs a{ab.data(), ba.data(), words, 150, /*lines=*/true, &errors, nullptr};
  auto r = cpu::launch(grid(2, 64), [&] { llPingPongKernel(a); });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(errors, 0u);
  for (int w = 0; w < words; ++w) EXPECT_EQ(simt::llFlag(ba.data()[w]), 150u) << w;
}

TEST(SimtPrimitives, LL128LinePingPongNeverShowsAPartialLine) {
  const int lines = 4 * 2 * 3;  // three passes of a 2-warp block
  AlignedWords ab(size_t(lines) * simt::kLL128LineWords), ba(size_t(lines) * simt::kLL128LineWords);
  uint32_t errors = 0;
  LL128PingPongArgs a{ab.data(), ba.data(), lines, 120, &errors, nullptr};
  auto r = cpu::launch(grid(2, 64), [&] { ll128PingPongKernel(a); });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(errors, 0u);
  for (int l = 0; l < lines; ++l) {
    EXPECT_EQ(ab.data()[l * simt::kLL128LineWords + simt::kLL128FlagWord], 120u);
    EXPECT_EQ(ab.data()[l * simt::kLL128LineWords + 14], pattern(119, l * simt::kLL128DataWords + 14, 4));
  }
}

TEST(SimtPrimitives, LL128LinesAreAcceptedOnlyWhenEveryFlagMatches) {
  AlignedWords lines(simt::kLL128LineWords * 4);
  for (int i = 0; i < simt::kLL128LineWords * 4; ++i) lines.data()[i] = 7;  // step 7 everywhere
  auto tryOnce = [&](uint64_t flag) {
    uint32_t accepted = 0;
    auto r = cpu::launch(grid(1, 32), [&] { ll128TryOnceKernel(lines.data(), flag, &accepted); });
    EXPECT_TRUE(r.ok) << r.error;
    return accepted;
  };
  EXPECT_EQ(tryOnce(7), 32u);
  EXPECT_EQ(tryOnce(8), 0u);
  for (int l = 0; l < 3; ++l) lines.data()[l * simt::kLL128LineWords + simt::kLL128FlagWord] = 8;
  EXPECT_EQ(tryOnce(8), 0u);  // three of the warp's four lines are not enough
  lines.data()[3 * simt::kLL128LineWords + simt::kLL128FlagWord] = 8;
  EXPECT_EQ(tryOnce(8), 32u);
}

// ll128TryLoadLines: four line groups read at once; the warp learns which groups are not complete
// yet (any of their four flags old), completed groups hold their lines' words, groups it was not
// asked for are left alone.
TEST(SimtPrimitives, LL128TryLoadLinesReportsEachIncompleteGroup) {
  constexpr int kGroups = 4, kLines = kGroups * simt::kLL128LinesPerWarp;
  auto word = [](int line, int i) { return uint64_t(line) * 100 + uint64_t(i) + 1; };
  AlignedWords lines(size_t(kLines) * simt::kLL128LineWords);
  for (int l = 0; l < kLines; ++l) {
    for (int i = 0; i < simt::kLL128DataWords; ++i) lines.data()[l * simt::kLL128LineWords + i] = word(l, i);
    lines.data()[l * simt::kLL128LineWords + simt::kLL128FlagWord] = 7;
  }
  std::vector<unsigned> late(simt::kWarpSize);
  std::vector<uint64_t> words(simt::kWarpSize * kGroups * 2);
  // Runs the kernel; returns the late bits after checking that every lane was told the same.
  auto tryOnce = [&](uint64_t flag, unsigned pending) {
    auto r = cpu::launch(grid(1, simt::kWarpSize),
                         [&] { ll128TryLinesOnceKernel(lines.data(), flag, pending, late.data(), words.data()); });
    EXPECT_TRUE(r.ok) << r.error;
    for (int lane = 1; lane < simt::kWarpSize; ++lane) EXPECT_EQ(late[lane], late[0]) << "lane " << lane;
    return late[0];
  };
  // Lane `lane`'s words of group u: its line's words, or the marker when the group was not asked for.
  auto expectWords = [&](unsigned loaded, uint64_t flag) {
    for (int lane = 0; lane < simt::kWarpSize; ++lane)
      for (int u = 0; u < kGroups; ++u) {
        const int l = u * simt::kLL128LinesPerWarp + lane / simt::kLL128LanesPerLine;
        const int part = lane % simt::kLL128LanesPerLine;
        const bool in = (loaded >> u) & 1u;
        const uint64_t w0 = in ? word(l, 2 * part) : kNotLoaded;
        const uint64_t w1 = !in ? kNotLoaded : part == simt::kLL128LanesPerLine - 1 ? flag : word(l, 2 * part + 1);
        EXPECT_EQ(words[(4 * lane + u) * 2], w0) << "lane " << lane << " group " << u;
        EXPECT_EQ(words[(4 * lane + u) * 2 + 1], w1) << "lane " << lane << " group " << u;
      }
  };
  EXPECT_EQ(tryOnce(7, 0xfu), 0u);
  expectWords(0xfu, 7);
  EXPECT_EQ(tryOnce(8, 0xfu), 0xfu);
  EXPECT_EQ(tryOnce(7, 0x5u), 0u);  // groups 1 and 3 not asked for: left alone
  expectWords(0x5u, 7);
  // Step 8 reaches groups 0 and 1 whole, three of group 2's four lines, none of group 3.
  for (int l = 0; l < 11; ++l) lines.data()[l * simt::kLL128LineWords + simt::kLL128FlagWord] = 8;
  EXPECT_EQ(tryOnce(8, 0xfu), 0xcu);
  EXPECT_EQ(tryOnce(8, 0x3u), 0u);
  expectWords(0x3u, 8);
  EXPECT_EQ(tryOnce(8, 0x4u), 0x4u);
  EXPECT_EQ(tryOnce(8, 0x0u), 0u);  // nothing asked, nothing late
}

TEST(SimtPrimitives, GpuScopeCountersFencesAndFloatShuffles) {
  uint64_t counter = 0;
  uint32_t word = 0, errors = 0;
  auto r = cpu::launch(grid(1, 64), [&] { smokeKernel(SmokeArgs{&counter, &word, &errors}); });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(errors, 0u);
  EXPECT_EQ(counter, 41u + 64u);
  EXPECT_EQ(word, 7u);
}

TEST(SimtPrimitives, SpinUntilReturnsFalseWhenTheAbortFlagIsSet) {
  uint32_t abortFlag = 0;
  uint32_t gaveUp = 0;
  auto r = cpu::launch(grid(1, 64), [&] {
    if (simt::threadIndex() == 0) {
      simt::storeVolatile32(&abortFlag, 1);  // the communicator's abort, as ncclCommAbort sets it
      return;
    }
    uint64_t never = 0;
    if (!simt::spinUntil([&] { return simt::loadVolatile64(&never) != 0; }, &abortFlag, 16))
      simt::atomicAdd32(&gaveUp, 1);
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(gaveUp, 63u);
}

TEST(SimtPrimitives, WarpSpinUntilLeavesTogetherOnAbort) {
  uint32_t abortFlag = 0;
  uint32_t gaveUp = 0;
  AlignedWords line(simt::kLL128LineWords);
  auto r = cpu::launch(grid(1, 64), [&] {
    if (simt::warpIndex() == 1) {
      if (simt::laneId() == 0) simt::storeVolatile32(&abortFlag, 1);
      return;
    }
    uint64_t v0, v1;
    if (!simt::warpSpinUntil([&] { return simt::ll128TryLoad(line.data(), 1, v0, v1); }, &abortFlag, 8))
      simt::atomicAdd32(&gaveUp, 1);
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(gaveUp, 32u);
}

}  // namespace
}  // namespace accl::simttest
