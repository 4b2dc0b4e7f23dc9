// The CPU SIMT harness's weak-memory mode (src/device/simt/weak_memory.h): litmus tests that show
// the mode can fail (relaxed message passing reads stale data, store buffering shows both old
// values, a barrier is not an acquire, an LL128 line across two 128-byte segments is seen torn)
// and that what the PTX model orders stays ordered for every seed; then the CUDA Prims' ring
// all-reduce, every protocol, under several seeds, against closed forms.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "algos/ring_all_reduce.h"
#include "device/common/red_ops.h"
#include "device/cuda/cuda_prims.h"
#include "prims_test_net.h"

namespace accl {
namespace {

namespace cpu = simt::cpu;
using primstest::closedFormSum;
using primstest::contribution;
using primstest::protoName;
using primstest::TestNet;

constexpr uint64_t kSeeds[] = {1, 2, 3, 4, 5, 6, 7, 8};
constexpr int kRounds = 32;

std::string launchWeak(uint64_t seed, int blocks, int blockDim, const std::function<void()>& kernel) {
  cpu::LaunchConfig cfg;
  cfg.gridDim = blocks;
  cfg.blockDim = blockDim;
  cfg.weakMemorySeed = seed;
  cfg.deadline = std::chrono::milliseconds(20000);
  const cpu::LaunchResult r = cpu::launch(cfg, kernel);
  return r.ok ? "" : r.error;
}

TEST(WeakMemoryMode, OffUnlessAsked) {
  bool weak = true;
  cpu::LaunchConfig cfg;
  cfg.blockDim = 32;
  ASSERT_TRUE(cpu::launch(cfg, [&] {
                if (simt::threadIndex() == 0) weak = cpu::currentThread().weak != nullptr;
              }).ok);
  EXPECT_EQ(weak, cpu::defaultWeakMemorySeed() != 0);  // ACCL_SIMT_WEAK_MEMORY may switch it on
  cfg.weakMemorySeed = 9;
  ASSERT_TRUE(cpu::launch(cfg, [&] {
                if (simt::threadIndex() == 0) weak = cpu::currentThread().weak != nullptr;
              }).ok);
  EXPECT_TRUE(weak);
}

// bar.sync is warp-aligned: half of each of two warps making up the 32 arrivals is a lane
// that never reconverged. Weak-memory mode reports it; the default mode keeps counting threads.
TEST(WeakMemoryMode, BarriersCheckThatWholeWarpsArrive) {
  auto halfWarps = [] {
    if (simt::laneId() < 16) simt::barSync(1, 32);
  };
  cpu::LaunchConfig cfg;
  cfg.blockDim = 64;
  cfg.weakMemorySeed = 3;
  const cpu::LaunchResult weak = cpu::launch(cfg, halfWarps);
  EXPECT_FALSE(weak.ok);
  EXPECT_NE(weak.error.find("warp-aligned"), std::string::npos) << weak.error;
  EXPECT_EQ(launchWeak(3, 1, 64, [] { simt::barSync(1, 64); }), "");  // whole warps: fine
}

// ---- message passing: block 0 writes four words and a flag, block 1 waits for the flag and
// reads the words; kRounds rounds over fresh locations. Returns how many words were read stale.

enum class Publish { kRelease, kFenceThenRelaxed, kRelaxed };
enum class Observe { kAcquire, kRelaxedThenFence, kRelaxed };

int messagePassingStale(uint64_t seed, Publish publish, Observe observe) {
  struct Round {
    uint64_t data[4] = {};
    uint64_t flag = 0;
  };
  std::vector<Round> rounds(kRounds);
  std::atomic<int> stale{0};
  const std::string err = launchWeak(seed, 2, 32, [&] {
    if (simt::threadIndex() != 0) return;
    for (int r = 0; r < kRounds; ++r) {
      Round& m = rounds[size_t(r)];
      if (simt::blockIndex() == 0) {
        for (int k = 0; k < 4; ++k) simt::storeVolatile64(&m.data[k], uint64_t(r * 10 + k + 1));
        if (publish == Publish::kRelease) {
          simt::storeRelease(&m.flag, 1);
        } else {
          if (publish == Publish::kFenceThenRelaxed) simt::fence();
          simt::storeVolatile64(&m.flag, 1);
        }
      } else {
        simt::spinUntil([&] { return (observe == Observe::kAcquire ? simt::loadAcquire(&m.flag)
                                                                   : simt::loadVolatile64(&m.flag)) == 1; },
                        nullptr);
        if (observe == Observe::kRelaxedThenFence) simt::fence();
        for (int k = 0; k < 4; ++k) stale += simt::loadVolatile64(&m.data[k]) != uint64_t(r * 10 + k + 1);
      }
    }
  });
  EXPECT_EQ(err, "");
  return stale.load();
}

TEST(WeakMemoryLitmus, MessagePassingWithReleaseAndAcquireNeverReadsStale) {
  for (uint64_t seed : kSeeds) {
    EXPECT_EQ(messagePassingStale(seed, Publish::kRelease, Observe::kAcquire), 0) << "seed " << seed;
    EXPECT_EQ(messagePassingStale(seed, Publish::kFenceThenRelaxed, Observe::kRelaxedThenFence), 0) << "seed " << seed;
    EXPECT_EQ(messagePassingStale(seed, Publish::kFenceThenRelaxed, Observe::kAcquire), 0) << "seed " << seed;
  }
}

// The mode can fail: drop either side's ordering and some seed reads an old value.
TEST(WeakMemoryLitmus, MessagePassingWithoutReleaseOrAcquireReadsStale) {
  int relaxed = 0, noAcquire = 0, noRelease = 0;
  for (uint64_t seed : kSeeds) {
    relaxed += messagePassingStale(seed, Publish::kRelaxed, Observe::kRelaxed);
    noAcquire += messagePassingStale(seed, Publish::kRelease, Observe::kRelaxed);
    noRelease += messagePassingStale(seed, Publish::kRelaxed, Observe::kAcquire);
  }
  EXPECT_GT(relaxed, 0);
  EXPECT_GT(noAcquire, 0);
  EXPECT_GT(noRelease, 0);
}

// ---- store buffering: x = 1; r0 = y  ||  y = 1; r1 = x. Both 0 is allowed without fences and
// forbidden with fence.sc between store and load. Returns how many rounds ended with both 0.
int storeBufferingBothOld(uint64_t seed, bool fences) {
  std::vector<uint64_t> x(kRounds, 0), y(kRounds, 0), r0(kRounds, 9), r1(kRounds, 9);
  const std::string err = launchWeak(seed, 2, 32, [&] {
    if (simt::threadIndex() != 0) return;
    const bool first = simt::blockIndex() == 0;
    for (int r = 0; r < kRounds; ++r) {
      simt::storeVolatile64(first ? &x[size_t(r)] : &y[size_t(r)], 1);
      if (fences) simt::fence();
      (first ? r0 : r1)[size_t(r)] = simt::loadVolatile64(first ? &y[size_t(r)] : &x[size_t(r)]);
    }
  });
  EXPECT_EQ(err, "");
  int both = 0;
  for (int r = 0; r < kRounds; ++r) both += r0[size_t(r)] == 0 && r1[size_t(r)] == 0;
  return both;
}

TEST(WeakMemoryLitmus, StoreBufferingNeedsFences) {
  int withoutFences = 0;
  for (uint64_t seed : kSeeds) {
    withoutFences += storeBufferingBothOld(seed, false);
    EXPECT_EQ(storeBufferingBothOld(seed, true), 0) << "seed " << seed;
  }
  EXPECT_GT(withoutFences, 0);
}

// ---- the Prims' own shape: data written by one thread, a barrier, a release by another thread
// (cumulativity); on the reader's side one thread waits for the flag, a barrier, another reads.
// With an acquire the data is never stale; with a relaxed load before the barrier it can be: a
// CTA barrier passes on what its participants know, not what they merely read.
int barrierRelayStale(uint64_t seed, bool acquire) {
  std::vector<uint64_t> data(kRounds, 0), flag(kRounds, 0);
  std::atomic<int> stale{0};
  const std::string err = launchWeak(seed, 2, 32, [&] {
    const int t = simt::threadIndex();
    for (int r = 0; r < kRounds; ++r) {
      if (simt::blockIndex() == 0) {
        if (t == 5) simt::storeVolatile64(&data[size_t(r)], uint64_t(r + 1));
        simt::syncBlock();
        if (t == 0) simt::storeRelease(&flag[size_t(r)], 1);
      } else {
        if (t == 0)
          simt::spinUntil([&] { return (acquire ? simt::loadAcquire(&flag[size_t(r)])
                                                : simt::loadVolatile64(&flag[size_t(r)])) == 1; },
                          nullptr);
        simt::syncBlock();
        if (t == 7) stale += simt::loadVolatile64(&data[size_t(r)]) != uint64_t(r + 1);
      }
    }
  });
  EXPECT_EQ(err, "");
  return stale.load();
}

TEST(WeakMemoryLitmus, BarrierPassesOnReleaseAndAcquireButIsNoAcquire) {
  int withoutAcquire = 0;
  for (uint64_t seed : kSeeds) {
    EXPECT_EQ(barrierRelayStale(seed, true), 0) << "seed " << seed;
    withoutAcquire += barrierRelayStale(seed, false);
  }
  EXPECT_GT(withoutAcquire, 0);
}

// ---- LL128: block 0's warp stores kRounds groups of 4 lines (flag = line + 1), block 1's warp
// waits for each line's flag and checks every word. Lines start `offsetWords` past a 128-byte
// boundary. Returns the number of lines accepted with a wrong word (torn).
int ll128Torn(uint64_t seed, int offsetWords) {
  const int lines = kRounds * simt::kLL128LinesPerWarp;
  std::vector<uint64_t> mem(size_t(lines + 2) * simt::kLL128LineWords, 0);
  uint64_t* base = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(mem.data()) + 127) / 128 * 128) + offsetWords;
  auto word = [](int line, int i) { return uint64_t(line) * 100 + uint64_t(i) + 1; };
  std::atomic<int> torn{0};
  const std::string err = launchWeak(seed, 2, 32, [&] {
    const int lane = simt::laneId();
    const int part = lane % simt::kLL128LanesPerLine;
    for (int g = 0; g < kRounds; ++g) {
      const int l = g * simt::kLL128LinesPerWarp + lane / simt::kLL128LanesPerLine;
      uint64_t* line = base + size_t(l) * simt::kLL128LineWords;
      const uint64_t flag = uint64_t(l) + 1;
      if (simt::blockIndex() == 0) {
        simt::ll128Store(line, word(l, 2 * part), word(l, 2 * part + 1), flag);
      } else {
        uint64_t w0 = 0, w1 = 0;
        simt::warpSpinUntil([&] { return simt::ll128TryLoad(line, flag, w0, w1); }, nullptr);
        const bool bad = w0 != word(l, 2 * part) ||
                         w1 != (part == simt::kLL128LanesPerLine - 1 ? flag : word(l, 2 * part + 1));
        if (simt::ballot(bad) != 0 && lane == 0) ++torn;
      }
    }
  });
  EXPECT_EQ(err, "");
  return torn.load();
}

TEST(WeakMemoryLitmus, LL128LineIsWholeOnlyInsideOneAlignedSegment) {
  int straddling = 0;
  for (uint64_t seed : kSeeds) {
    EXPECT_EQ(ll128Torn(seed, 0), 0) << "seed " << seed;
    straddling += ll128Torn(seed, 8);  // 64 bytes past a boundary: two segments per line
  }
  EXPECT_GT(straddling, 0);
}

// ---- the CUDA Prims under weak memory ------------------------------------------------------------

// Ring all-reduce (sum) on `nranks` blocks, `repeats` times over the same connections so that
// FIFO slots are reused (stale data from an earlier step is what a missing acquire shows).
template <class T>
std::string weakRingAllReduce(uint64_t seed, int nranks, ProtoId proto, size_t count, int repeats, int blockDim = 64) {
  cpu::ScopedWeakMemory weak(seed);  // TestNet's launches run in weak-memory mode
  TestNet net(nranks);
  std::vector<int> userRanks(nranks);
  for (int r = 0; r < nranks; ++r) userRanks[r] = r;
  const size_t chunk = primsChunkCapacity(*net.sendEnd(0, 0), proto, sizeof(T));
  for (int rep = 0; rep < repeats; ++rep) {
    std::vector<std::vector<T>> in(nranks), out(nranks, std::vector<T>(count, T(77)));
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < count; ++i) in[r].push_back(contribution<T>(r, i) + T(rep));
    std::atomic<int> aborted{0};
    const std::string err = net.launch([&] {
      const int r = simt::blockIndex();
      CudaPrimsArgs args = net.ringArgs(r, in[r].data(), out[r].data(), proto);
      CudaPrims<T, RedSum<T>> prims(args, RedSum<T>{});
      RingView ring{nranks, r, userRanks.data()};
      CollWork work{};
      work.chanCount = count;
      work.chunkElems = chunk;
      ringAllReduce(prims, ring, work);
      if (prims.aborted()) ++aborted;
    }, blockDim);
    if (!err.empty()) return err;
    if (aborted) return "a block reported an abort";
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < count; ++i) {
        const T want = closedFormSum<T>(nranks, i) + T(nranks * rep);
        if (!(out[r][i] == want))
          return "seed " + std::to_string(seed) + " repeat " + std::to_string(rep) + " rank " + std::to_string(r) +
                 " element " + std::to_string(i) + " = " + std::to_string(double(out[r][i])) + ", expected " +
                 std::to_string(double(want));
      }
  }
  return net.checkSteps();
}

class WeakMemoryPrims : public ::testing::TestWithParam<ProtoId> {};

TEST_P(WeakMemoryPrims, RingAllReduceMatchesClosedFormUnderEverySeed) {
  const ProtoId proto = GetParam();
  // Simple: 256 floats a step, LL 128, LL128 240; 3 ranks x 2 loops x 4 steps, twice: every FIFO
  // slot is written more than once.
  for (uint64_t seed : {1, 2, 3, 4})
    EXPECT_EQ(weakRingAllReduce<float>(seed, 3, proto, 1031, 2), "") << protoName(proto) << " seed " << seed;
}

// One warp per block: its lanes wait, move the data and post (both barriers are warp votes).
TEST_P(WeakMemoryPrims, OneWarpBlocks) {
  const ProtoId proto = GetParam();
  for (uint64_t seed : {5, 6})
    EXPECT_EQ(weakRingAllReduce<float>(seed, 2, proto, 700, 2, /*blockDim=*/32), "") << protoName(proto);
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, WeakMemoryPrims, ::testing::Values(kProtoSimple, kProtoLL, kProtoLL128),
                         [](const ::testing::TestParamInfo<ProtoId>& info) {
                           return std::string(protoName(info.param));
                         });

}  // namespace
}  // namespace accl
