// The CUDA Prims (src/device/cuda/cuda_prims.h) on the CPU SIMT harness: the ring all-reduce
// schedule of src/algos, one block of 64 threads per rank (one channel), every protocol, 1-4
// ranks, awkward counts, in and out of place, against closed-form results.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
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
using primstest::runRingAllReduce;
using primstest::TestNet;

// The Prims over connections laid out exactly as device/common/fifo.h lays them out (the memory
// the transports allocate), converted with primsConnFrom.
TEST(CudaPrimsRingFifoLayout, EveryProtocolOverFifoViews) {
  const int nranks = 3;
  const FifoLayout layout{/*simpleSlotBytes=*/512, /*llSlotWords=*/64, /*ll128SlotLines=*/8};
  // FIFO memory as the transports give it: 64-byte aligned (FifoCounter is a cache line).
  struct alignas(64) Line64 {
    unsigned char bytes[64];
  };
  std::vector<std::vector<Line64>> recvMem(nranks), sendMem(nranks);
  std::vector<PrimsConn> senderEnds(nranks), receiverEnds(nranks);  // [r]: connection r -> r + 1
  for (int r = 0; r < nranks; ++r) {
    recvMem[r].assign(layout.recvBytes() / sizeof(Line64) + 1, Line64{});
    sendMem[r].assign(FifoLayout::sendBytes() / sizeof(Line64) + 1, Line64{});
    FifoView view = makeFifoView(recvMem[r].data(), sendMem[r].data(), layout);
    senderEnds[r] = receiverEnds[r] = primsConnFrom(view);
  }
  std::vector<int> userRanks = {0, 1, 2};
  for (ProtoId proto : {kProtoSimple, kProtoLL, kProtoLL128}) {
    const size_t count = 1000;
    std::vector<std::vector<float>> in(nranks), out(nranks, std::vector<float>(count, 0.0f));
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < count; ++i) in[r].push_back(contribution<float>(r, i));
    cpu::LaunchConfig cfg;
    cfg.gridDim = nranks;
    cfg.blockDim = 64;
    auto res = cpu::launch(cfg, [&] {
      const int r = simt::blockIndex();
      CudaPrimsArgs args;
      args.recv[0] = &receiverEnds[(r + nranks - 1) % nranks];
      args.send[0] = &senderEnds[r];
      args.nRecv = args.nSend = 1;
      args.input = in[r].data();
      args.output = out[r].data();
      args.proto = proto;
      CudaPrims<float, RedSum<float>> prims(args, RedSum<float>{});
      RingView ring{nranks, r, userRanks.data()};
      CollWork work{};
      work.chanCount = count;
      work.chunkElems = primsChunkCapacity(senderEnds[0], proto, sizeof(float));
      ringAllReduce(prims, ring, work);
    });
    ASSERT_TRUE(res.ok) << res.error;
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[r][i], closedFormSum<float>(nranks, i)) << protoName(proto);
  }
  for (int r = 0; r < nranks; ++r) {
    EXPECT_EQ(senderEnds[r].step, receiverEnds[r].step);
    EXPECT_EQ(*senderEnds[r].tail, senderEnds[r].step);
    EXPECT_EQ(*receiverEnds[r].head, receiverEnds[r].step);
  }
}

// LL128 slots follow the LL slots on absolute 128-byte boundaries, only when the layout has
// them: a layout without them (the host backend's) keeps its size and gives a view without LL128.
TEST(CudaPrimsRingFifoLayout, LL128SlotsOnlyWhereTheLayoutHasThem) {
  const FifoLayout host{/*simpleSlotBytes=*/1000, /*llSlotWords=*/6};
  EXPECT_EQ(host.recvBytes(), sizeof(FifoCounter) + 1000 * kFifoSteps + 6 * sizeof(LLWord) * kFifoSteps);
  std::vector<simt::Vec16> mem(host.recvBytes() / 16 + 1), head(8);
  EXPECT_EQ(makeFifoView(mem.data(), head.data(), host).ll128, nullptr);
  EXPECT_EQ(primsConnFrom(makeFifoView(mem.data(), head.data(), host)).ll128SlotLines, 0u);

  const FifoLayout gpu{/*simpleSlotBytes=*/1024, /*llSlotWords=*/6, /*ll128SlotLines=*/12};
  EXPECT_GE(gpu.ll128Offset(), host.recvBytes());
  EXPECT_EQ(gpu.recvBytes(), gpu.ll128Offset() + 128 + 12 * 128 * kFifoSteps);
  // Issue 18 fault 1: the FIFO memory starts where its region's header ends, 64 bytes into an
  // aligned region; every slot kind must still sit on its own absolute boundary (LL128: 128
  // bytes, a line is written whole only inside one aligned segment), inside recvBytes().
  std::vector<simt::Vec16> region((gpu.recvBytes() + 256) / 16 + 1, simt::Vec16{0, 0});
  char* aligned = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(region.data()) + 127) / 128 * 128);
  // (The FIFO memory starts with a 64-byte-aligned FifoCounter: headers of 0 and 64 bytes.)
  for (size_t headerBytes : {size_t(0), size_t(64)}) {
    char* base = aligned + headerBytes;
    const PrimsConn c = primsConnFrom(makeFifoView(base, head.data(), gpu));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(c.ll128) % FifoLayout::kLL128LineBytes, 0u) << "header " << headerBytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(c.simple) % 16, 0u) << "header " << headerBytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(c.ll) % 16, 0u) << "header " << headerBytes;
    EXPECT_GE(reinterpret_cast<char*>(c.ll128), base + gpu.ll128Offset());
    EXPECT_LE(reinterpret_cast<char*>(c.ll128 + 12 * simt::kLL128LineWords * kFifoSteps), base + gpu.recvBytes())
        << "header " << headerBytes;
  }
  const PrimsConn c = primsConnFrom(makeFifoView(aligned + 64, head.data(), gpu));
  EXPECT_EQ(c.ll128SlotLines, 12u);
  EXPECT_EQ(primsChunkCapacity(c, kProtoLL128, sizeof(float)), 12 * 120 / sizeof(float));
  // NCCL's default LL128 FIFO (4800 KiB): 4800 lines of 128 bytes per step.
  EXPECT_EQ(ll128SlotLinesFor(0), 4800u);
  EXPECT_EQ(ll128SlotLinesFor(4800 << 10), 4800u);
  EXPECT_EQ(ll128SlotLinesFor(1), size_t(simt::kLL128LinesPerWarp));
}

struct RingCase {
  int nranks;
  ProtoId proto;
};

void PrintTo(const RingCase& c, std::ostream* os) { *os << c.nranks << " ranks, " << protoName(c.proto); }

class CudaPrimsRing : public ::testing::TestWithParam<RingCase> {};

TEST_P(CudaPrimsRing, FloatSumMatchesClosedForm) {
  const RingCase c = GetParam();
  // 0, 1, odd, prime and multi-chunk counts (chunks: Simple 256, LL 128, LL128 240 floats).
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(241), size_t(1031)})
    EXPECT_EQ(runRingAllReduce<float>(c.nranks, c.proto, count, /*inPlace=*/false), "") << "count " << count;
}

TEST_P(CudaPrimsRing, InPlaceAndOtherWidthsMatchClosedForm) {
  const RingCase c = GetParam();
  EXPECT_EQ(runRingAllReduce<float>(c.nranks, c.proto, 523, /*inPlace=*/true), "");
  EXPECT_EQ(runRingAllReduce<uint8_t>(c.nranks, c.proto, 301, false), "");  // 16 per vector
  EXPECT_EQ(runRingAllReduce<double>(c.nranks, c.proto, 133, false), "");   // 1 per LL line
}

TEST(CudaPrimsRingReuse, ConnectionsCarryStepsAcrossOperations) {
  // Three all-reduces over the same connections: each end resumes from its stored step.
  EXPECT_EQ(runRingAllReduce<float>(3, kProtoSimple, 700, false, /*repeats=*/3), "");
  EXPECT_EQ(runRingAllReduce<float>(3, kProtoLL, 300, false, 3), "");
  EXPECT_EQ(runRingAllReduce<float>(3, kProtoLL128, 500, false, 3), "");
}

// Warp roles at other block sizes: one warp (its lanes wait, move data and post; both barriers
// are votes of that warp) and eight warps (two peer warps, six data warps). The 64-thread blocks
// of the other tests have one data warp, so a Simple step of 64 packets keeps two of each
// thread's unrolled packets in flight.
TEST(CudaPrimsRingWarpRoles, OneWarpAndEightWarpBlocks) {
  for (ProtoId proto : {kProtoSimple, kProtoLL, kProtoLL128}) {
    EXPECT_EQ(runRingAllReduce<float>(3, proto, 1031, false, 1, /*blockDim=*/32), "") << protoName(proto);
    EXPECT_EQ(runRingAllReduce<float>(2, proto, 1031, false, 1, /*blockDim=*/256), "") << protoName(proto);
  }
}

std::vector<RingCase> ringCases() {
  std::vector<RingCase> v;
  for (int n = 1; n <= 4; ++n)
    for (ProtoId p : {kProtoSimple, kProtoLL, kProtoLL128}) v.push_back({n, p});
  return v;
}

std::string ringCaseName(const ::testing::TestParamInfo<RingCase>& info) {
  return std::to_string(info.param.nranks) + "ranks_" + protoName(info.param.proto);
}

// Issue 18 fault 9: an LL flag is 32 bits of step + 1, so a line no step has written for 2^32
// steps would be accepted stale when the flags come round. The connections start just before a
// clean-up step (kLLCleanSteps) with every LL line holding a flag no step of this run writes;
// one-line all-reduces then run through the clean-up window, after which every line of every
// slot must carry a flag of this run (and every result is right).
TEST(CudaPrimsRingLLFlags, EveryLineIsRewrittenBeforeItsFlagComesRound) {
  constexpr int n = 2;
  constexpr uint32_t kPoison = 0x5a5a5a5au;
  const uint64_t s0 = kLLCleanSteps - 3;
  TestNet net(n);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      PrimsConn* s = net.sendEnd(a, b);
      *s->tail = *s->head = s0;
      s->step = net.recvEnd(b, a)->step = s0;
      for (size_t w = 0; w < s->llSlotWords * kFifoSteps; ++w) s->ll[w] = simt::llPack(0xdeadbeefu, kPoison);
    }
  std::vector<int> userRanks{0, 1};
  constexpr int kRepeats = 8;  // 2 steps per connection each: s0 .. s0 + 16, past kLLCleanSteps + 8
  for (int rep = 0; rep < kRepeats; ++rep) {
    std::vector<std::vector<float>> in(n, std::vector<float>(1)), out(n, std::vector<float>(1, -1.0f));
    for (int r = 0; r < n; ++r) in[r][0] = primstest::contribution<float>(r, rep);
    uint32_t aborted = 0;
    ASSERT_EQ(net.launch([&] {
      const int r = simt::blockIndex();
      CudaPrimsArgs args = net.ringArgs(r, in[r].data(), out[r].data(), kProtoLL);
      CudaPrims<float, RedSum<float>> prims(args, RedSum<float>{});
      RingView ring{n, r, userRanks.data()};
      CollWork work{};
      work.chanCount = 1;
      work.chunkElems = primsChunkCapacity(*net.sendEnd(0, 1), kProtoLL, sizeof(float));
      ringAllReduce(prims, ring, work);
      if (prims.aborted()) simt::atomicAdd32(&aborted, 1);
    }), "");
    ASSERT_EQ(aborted, 0u);
    for (int r = 0; r < n; ++r) ASSERT_EQ(out[r][0], primstest::closedFormSum<float>(n, rep)) << "repeat " << rep;
  }
  ASSERT_EQ(net.checkSteps(), "");
  const uint64_t last = net.sendEnd(0, 1)->step;
  ASSERT_GE(last, kLLCleanSteps + kFifoSteps) << "the run must cross the whole clean-up window";
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const PrimsConn* s = net.sendEnd(a, b);
      for (size_t w = 0; w < s->llSlotWords * kFifoSteps; ++w) {
        const uint32_t flag = simt::llFlag(s->ll[w]);
        ASSERT_TRUE(flag > uint32_t(s0) && flag <= uint32_t(last))
            << "connection " << a << "->" << b << " word " << w << " (slot " << w / s->llSlotWords << ") has flag "
            << flag << ", not one of steps " << s0 + 1 << ".." << last;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, CudaPrimsRing, ::testing::ValuesIn(ringCases()), ringCaseName);

}  // namespace
}  // namespace accl
