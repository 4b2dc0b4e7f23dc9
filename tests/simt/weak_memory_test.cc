// The CPU SIMT harness's weak-memory mode (src/device/simt/weak_memory.h): litmus tests that show
// the mode can fail (relaxed message passing reads stale data, store buffering shows both old
// values, a barrier is not an acquire, an LL128 line across two 128-byte segments is seen torn,
// read one group or four at a time, load buffering -- a store a load before it could have read --
// fails the launch) and that what
// the PTX model orders stays ordered for every seed; then the CUDA Prims' ring all-reduce and a
// one-way pipeline that reuses every FIFO slot, every protocol, under several seeds.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "algos/ring_all_reduce.h"
#include "device/common/red_ops.h"
#include "device/cuda/cuda_prims.h"
#include "prims_test_net.h"
#include "ring_run.h"

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

// ---- load buffering: r1 = x; y = 1  ||  wait for y == 1; x = 1. Without ordering on both sides
// a weak machine lets the first load read the second thread's store (a cycle); the mode cannot
// return that value, so it reports the store instead. Returns the launch's error ("" when none).
enum class LbStore { kRelaxed, kRelease, kFenceThenRelaxed };
enum class LbLoad { kRelaxed, kAcquire, kRelaxedThenFence };

std::string loadBuffering(uint64_t seed, LbStore publish, LbLoad observe) {
  std::vector<uint64_t> x(kRounds, 0), y(kRounds, 0);
  return launchWeak(seed, 2, 32, [&] {
    if (simt::threadIndex() != 0) return;
    for (int r = 0; r < kRounds; ++r) {
      uint64_t* xr = &x[size_t(r)];
      uint64_t* yr = &y[size_t(r)];
      if (simt::blockIndex() == 0) {
        simt::storeVolatile64(xr, 7);  // a location the launch stores to: its loads are tracked
        (void)simt::loadVolatile64(xr);
        if (publish == LbStore::kRelease) {
          simt::storeRelease(yr, 1);
        } else {
          if (publish == LbStore::kFenceThenRelaxed) simt::fence();
          simt::storeVolatile64(yr, 1);
        }
      } else {
        auto load = [&] { return observe == LbLoad::kAcquire ? simt::loadAcquire(yr) : simt::loadVolatile64(yr); };
        simt::spinUntil([&] { return load() == 1; }, nullptr);
        if (observe == LbLoad::kRelaxedThenFence) simt::fence();
        simt::storeVolatile64(xr, 1);
      }
    }
  });
}

TEST(WeakMemoryLitmus, LoadBufferingIsReportedUnlessBothSidesOrder) {
  for (uint64_t seed : {1, 2, 3}) {
    for (LbStore publish : {LbStore::kRelaxed, LbStore::kRelease, LbStore::kFenceThenRelaxed})
      for (LbLoad observe : {LbLoad::kRelaxed, LbLoad::kAcquire, LbLoad::kRelaxedThenFence}) {
        const bool ordered = publish != LbStore::kRelaxed && observe != LbLoad::kRelaxed;
        const std::string err = loadBuffering(seed, publish, observe);
        if (ordered) {
          EXPECT_EQ(err, "") << "seed " << seed << " store " << int(publish) << " load " << int(observe);
        } else {
          EXPECT_NE(err.find("load buffering"), std::string::npos)
              << "seed " << seed << " store " << int(publish) << " load " << int(observe) << ": " << err;
        }
      }
  }
}

// ---- the FIFO's shape: one slot reused every round. The sender's thread 0 waits for `head`, a
// barrier, its thread 5 writes the slot, a barrier, thread 0 releases `tail`; the receiver's
// thread 0 acquires `tail`, a barrier, its thread 7 reads the slot, a barrier, thread 0 posts
// `head`. The barriers order the data threads' accesses at CTA scope only: the post of `head`
// must be a release (or fence + relaxed store) and its wait an acquire (or relaxed load + fence)
// for the receiver's read to be ordered before the sender's next write. Returns the launch's
// error, or "stale" when a read missed its round's value.
std::string fifoSlotReuse(uint64_t seed, LbStore post, LbLoad wait) {
  uint64_t slot = 0, head = 0, tail = 0;
  std::atomic<bool> wrong{false};
  const std::string err = launchWeak(seed, 2, 64, [&] {
    const int t = simt::threadIndex();
    const bool sender = simt::blockIndex() == 1;
    for (uint64_t r = 0; r < uint64_t(kRounds); ++r) {
      if (sender) {
        auto loadHead = [&] {
          return wait == LbLoad::kAcquire ? simt::loadAcquire(&head) : simt::loadVolatile64(&head);
        };
        if (t == 0) simt::spinUntil([&] { return loadHead() >= r; }, nullptr);
        if (t == 0 && wait == LbLoad::kRelaxedThenFence) simt::fence();
        simt::syncBlock();
        if (t == 5) simt::storeVolatile64(&slot, r + 1);
        simt::syncBlock();
        if (t == 0) simt::storeRelease(&tail, r + 1);
      } else {
        if (t == 0) simt::spinUntil([&] { return simt::loadAcquire(&tail) >= r + 1; }, nullptr);
        simt::syncBlock();
        if (t == 7 && simt::loadVolatile64(&slot) != r + 1) wrong = true;
        simt::syncBlock();
        if (t == 0) {
          if (post == LbStore::kRelease) {
            simt::storeRelease(&head, r + 1);
          } else {
            if (post == LbStore::kFenceThenRelaxed) simt::fence();
            simt::storeVolatile64(&head, r + 1);
          }
        }
      }
    }
  });
  return !err.empty() ? err : wrong ? "stale" : "";
}

TEST(WeakMemoryLitmus, FifoSlotReuseNeedsTheHeadReleaseAndAcquire) {
  for (uint64_t seed : {1, 2, 3}) {
    for (LbStore post : {LbStore::kRelease, LbStore::kFenceThenRelaxed})
      for (LbLoad wait : {LbLoad::kAcquire, LbLoad::kRelaxedThenFence})
        EXPECT_EQ(fifoSlotReuse(seed, post, wait), "") << "seed " << seed;
    // A relaxed post, or a relaxed wait: the barriers alone do not order the read before the
    // next write across blocks.
    for (auto [post, wait] :
         {std::pair{LbStore::kRelaxed, LbLoad::kAcquire}, std::pair{LbStore::kRelease, LbLoad::kRelaxed}}) {
      const std::string err = fifoSlotReuse(seed, post, wait);
      EXPECT_NE(err.find("load buffering"), std::string::npos) << "seed " << seed << ": " << err;
    }
  }
}

// ---- LL128: block 0's warp stores kRounds groups of 4 lines, block 1's warp reads them
// `perRead` groups at a time (1: ll128TryLoad; 2..4: one ll128TryLoadLines per pass, re-polling
// only the groups still late) and checks every word. The groups of pass p carry flag p + 1.
// Lines start `offsetWords` past a 128-byte boundary. Returns the number of groups accepted with
// a wrong word (torn).
int ll128Torn(uint64_t seed, int offsetWords, int perRead) {
  constexpr int kMaxPerRead = 4;
  if (perRead < 1 || perRead > kMaxPerRead || kRounds % perRead != 0) return -1;
  const int lines = kRounds * simt::kLL128LinesPerWarp;
  std::vector<uint64_t> mem(size_t(lines + 2) * simt::kLL128LineWords, 0);
  uint64_t* base = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(mem.data()) + 127) / 128 * 128) + offsetWords;
  auto word = [](int line, int i) { return uint64_t(line) * 100 + uint64_t(i) + 1; };
  std::atomic<int> torn{0};
  const std::string err = launchWeak(seed, 2, 32, [&] {
    const int lane = simt::laneId();
    const int part = lane % simt::kLL128LanesPerLine;
    const size_t stride = size_t(simt::kLL128LinesPerWarp) * simt::kLL128LineWords;  // group to group
    for (int pass = 0; pass < kRounds / perRead; ++pass) {
      const int l0 = pass * perRead * simt::kLL128LinesPerWarp + lane / simt::kLL128LanesPerLine;
      uint64_t* line = base + size_t(l0) * simt::kLL128LineWords;
      const uint64_t flag = uint64_t(pass) + 1;
      if (simt::blockIndex() == 0) {
        for (int u = 0; u < perRead; ++u) {
          const int l = l0 + u * simt::kLL128LinesPerWarp;
          simt::ll128Store(line + u * stride, word(l, 2 * part), word(l, 2 * part + 1), flag);
        }
        continue;
      }
      simt::Vec16 v[kMaxPerRead] = {};
      unsigned late = (1u << perRead) - 1;
      if (perRead == 1)
        simt::warpSpinUntil([&] { return simt::ll128TryLoad(line, flag, v[0].lo, v[0].hi); }, nullptr);
      else
        simt::warpSpinUntil([&] { return (late = simt::ll128TryLoadLines(line, stride, flag, late, v)) == 0; },
                            nullptr);
      for (int u = 0; u < perRead; ++u) {
        const int l = l0 + u * simt::kLL128LinesPerWarp;
        const bool bad = v[u].lo != word(l, 2 * part) ||
                         v[u].hi != (part == simt::kLL128LanesPerLine - 1 ? flag : word(l, 2 * part + 1));
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
    EXPECT_EQ(ll128Torn(seed, 0, 1), 0) << "seed " << seed;
    straddling += ll128Torn(seed, 8, 1);  // 64 bytes past a boundary: two segments per line
  }
  EXPECT_GT(straddling, 0);
}

// The same with the Prims' way of reading: several groups per call, no partial line accepted in
// any of them (and, across segments, the check still sees torn ones: it can fail).
TEST(WeakMemoryLitmus, LL128LinesReadSeveralGroupsAtOnceAreNeverAcceptedPartial) {
  for (int perRead : {2, 4}) {
    int straddling = 0;
    for (uint64_t seed : kSeeds) {
      EXPECT_EQ(ll128Torn(seed, 0, perRead), 0) << "seed " << seed << ", " << perRead << " groups per read";
      straddling += ll128Torn(seed, 8, perRead);
    }
    EXPECT_GT(straddling, 0) << perRead << " groups per read";
  }
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

// Block 0 sends 2 * kFifoSteps + 4 chunks to block 1, so every slot is written three times, and
// nothing but `head` orders the receiver's reads of a slot before the sender's next write to it
// (in a ring the ring itself orders them too). Making the post of `head` or its wait relaxed
// fails this with a load-buffering report, for every protocol.
template <class T>
std::string weakOneWay(uint64_t seed, ProtoId proto, int blockDim) {
  cpu::ScopedWeakMemory weak(seed);
  TestNet net(2);
  const size_t chunk = primsChunkCapacity(*net.sendEnd(0, 1), proto, sizeof(T));
  const int steps = 2 * kFifoSteps + 4;
  const size_t count = chunk * size_t(steps) - 5;  // the last step is partial
  std::vector<T> in(count), out(count, T(77));
  for (size_t i = 0; i < count; ++i) in[i] = contribution<T>(0, i);
  std::atomic<int> aborted{0};
  const std::string err = net.launch([&] {
    const bool sender = simt::blockIndex() == 0;
    CudaPrimsArgs args;
    if (sender) {
      args.send[0] = net.sendEnd(0, 1);
      args.nSend = 1;
    } else {
      args.recv[0] = net.recvEnd(1, 0);
      args.nRecv = 1;
    }
    args.input = in.data();
    args.output = out.data();
    args.proto = proto;
    CudaPrims<T, RedSum<T>, 1, 1> prims(args, RedSum<T>{});
    for (int s = 0; s < steps; ++s) {
      const size_t off = size_t(s) * chunk;
      const size_t n = count - off < chunk ? count - off : chunk;
      if (sender) prims.send(off, n);
      else prims.recv(off, n);
    }
    if (prims.aborted()) ++aborted;
  }, blockDim);
  if (!err.empty()) return err;
  if (aborted) return "a block reported an abort";
  for (size_t i = 0; i < count; ++i)
    if (!(out[i] == in[i]))
      return "seed " + std::to_string(seed) + " element " + std::to_string(i) + " = " +
             std::to_string(double(out[i])) + ", expected " + std::to_string(double(in[i]));
  return net.checkSteps();
}

TEST_P(WeakMemoryPrims, OneWayPipelineReusesEverySlot) {
  const ProtoId proto = GetParam();
  for (uint64_t seed : {1, 2, 3})
    EXPECT_EQ(weakOneWay<float>(seed, proto, 64), "") << protoName(proto) << " seed " << seed;
  EXPECT_EQ(weakOneWay<float>(4, proto, 32), "") << protoName(proto) << " one-warp blocks";
}

// The ring Prims' LL128 path (CudaPrims<float, RedSum, 1, 1>: four groups per pass) under weak
// memory: 80-line slots and two data warps, steps of 7 groups (one warp's pass of 4, the other's
// of 3) and of many uneven sizes, every slot reused.
TEST(WeakMemoryPrimsLL128, FourGroupsPerPassUnderSeveralSeeds) {
  auto runRing1 = [](size_t count) {
    return primstest::runRingAllReduce<float, 1>(2, kProtoLL128, count, false, /*repeats=*/2, /*blockDim=*/96,
                                                 /*ll128SlotLines=*/80);
  };
  for (uint64_t seed : {1, 2, 3}) {
    cpu::ScopedWeakMemory weak(seed);
    for (size_t count : {size_t(2 * (7 * 120 - 7)), size_t(3001)})
      EXPECT_EQ(runRing1(count), "") << "seed " << seed << ", count " << count;
  }
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, WeakMemoryPrims, ::testing::Values(kProtoSimple, kProtoLL, kProtoLL128),
                         [](const ::testing::TestParamInfo<ProtoId>& info) {
                           return std::string(protoName(info.param));
                         });

}  // namespace
}  // namespace accl
