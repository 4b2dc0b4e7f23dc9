// The CUDA kernel's block body (src/backend/cuda/kernels/channel_body.h + dev_run.h) on the CPU
// SIMT harness: each rank's plan is packed by the launch path (work_batch.h) exactly as
// CudaBackend packs it, and one 64-thread block per rank runs the packed items through a function
// table filled by the kernels' own fill templates — ring and tree all-reduce (float sum), an
// all-gather (a copy collective, carried in bytes) and a point-to-point batch, for 1-4 ranks and
// every protocol — against closed-form results (a batch between collectives also at 32 to 512
// threads per block); plus the abort flag and a missing kernel landing in the error word. No GPU
// needed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/cuda/kernels/channel_body.h"
#include "backend/cuda/work_batch.h"
#include "tests/simt/prims_test_net.h"

namespace accl {
namespace {

using primstest::closedFormSum;
using primstest::contribution;
using primstest::TestNet;

// The functions these tests use, filled like the device table (the same templates).
std::vector<DevFn> cpuTable() {
  std::vector<DevFn> t(kDevNumFuncs, nullptr);
  devFillIds(t.data(), std::integer_sequence<int, devFuncId(kFuncAllReduce, 0, ncclFloat32, kAlgoRing, 0),
                                              devFuncId(kFuncAllReduce, 0, ncclFloat32, kAlgoRing, 1),
                                              devFuncId(kFuncAllReduce, 0, ncclFloat32, kAlgoRing, 2),
                                              devFuncId(kFuncAllReduce, 0, ncclFloat32, kAlgoTree, 0),
                                              devFuncId(kFuncAllReduce, 0, ncclFloat32, kAlgoTree, 1),
                                              devFuncId(kFuncAllReduce, 0, ncclFloat32, kAlgoTree, 2),
                                              devFuncId(kFuncAllGather, 0, ncclUint8, kAlgoRing, 0),
                                              devFuncId(kFuncAllGather, 0, ncclUint8, kAlgoRing, 1),
                                              devFuncId(kFuncAllGather, 0, ncclUint8, kAlgoRing, 2)>{});
  return t;
}

struct RankState {
  DevChannel channel{};
  DevComm comm{};
  uint32_t error = 0;
  uint32_t detail = 0;
  std::vector<PrimsConn*> p2pSend, p2pRecv;
  PackedLaunch packed;
};

// Wires rank r's channel 0 to the test net: ring r-1 -> r -> r+1, chain tree (parent r-1,
// child r+1), point-to-point to every peer.
void wire(TestNet& net, int n, int r, const std::vector<int>& ringRanks, const uint32_t* abortFlag, RankState* s) {
  DevChannel& ch = s->channel;
  ch.nRanks = n;
  ch.ringIndex = r;
  ch.ringUserRanks = ringRanks.data();
  ch.tree = TreeView{r - 1, {r + 1 < n ? r + 1 : -1, -1, -1}};
  if (n > 1) {
    ch.ringRecv = net.recvEnd(r, (r + n - 1) % n);
    ch.ringSend = net.sendEnd(r, (r + 1) % n);
  }
  if (r > 0) {
    ch.treeUpSend = net.sendEnd(r, r - 1);
    ch.treeUpRecv = net.recvEnd(r, r - 1);
  }
  if (r + 1 < n) {
    ch.treeDownRecv[0] = net.recvEnd(r, r + 1);
    ch.treeDownSend[0] = net.sendEnd(r, r + 1);
  }
  s->p2pSend.assign(n, nullptr);
  s->p2pRecv.assign(n, nullptr);
  for (int p = 0; p < n; ++p) {
    s->p2pSend[p] = net.sendEnd(r, p);
    s->p2pRecv[p] = net.recvEnd(r, p);
  }
  ch.p2pSend = s->p2pSend.data();
  ch.p2pRecv = s->p2pRecv.data();
  s->comm.channels = &s->channel;
  s->comm.abortFlag = abortFlag;
  s->comm.errorWord = &s->error;
  s->comm.errorDetail = &s->detail;
  s->comm.rank = r;
  s->comm.nRanks = n;
}

CollWork collWork(FuncId func, AlgoId algo, ProtoId proto, ncclDataType_t type, const void* in, void* out, size_t count,
                  size_t chunk) {
  CollWork w{};
  w.func = func;
  w.algo = algo;
  w.proto = proto;
  w.type = type;
  w.sendbuff = in;
  w.recvbuff = out;
  w.count = count;
  w.chanOffset = 0;
  w.chanCount = count;
  w.chunkElems = chunk;
  return w;
}

// Runs every rank's packed launch (one block per rank, `blockDim` threads) and checks each rank's
// error word: "" when the launch ended and no rank raised an error.
std::string launchRanks(const TestNet& net, std::vector<RankState>& ranks, const std::vector<DevFn>& table,
                        int blockDim) {
  std::string err = net.launch([&] {
    RankState& s = ranks[simt::blockIndex()];
    devRunChannel(s.packed.args.header, s.packed.items(), s.comm, 0, table.data());
  }, blockDim);
  if (!err.empty()) return err;
  for (size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].error != 0)
      return "rank " + std::to_string(r) + " error word " + std::to_string(ranks[r].error) + " detail " +
             std::to_string(ranks[r].detail);
  return "";
}

// `mask` picks the items: 1 ring all-reduce, 2 all-gather, 4 tree all-reduce, 8 p2p batch, 16
// makes the p2p transfers longer than the FIFO (more steps than kFifoSteps), 32 runs the ring
// all-reduce again after the batch (with mask 1). `blockDim` threads per rank.
std::string runMixedLaunch(int n, ProtoId proto, size_t count, unsigned mask = 15, int blockDim = 64) {
  TestNet net(n);
  const std::vector<DevFn> table = cpuTable();
  std::vector<int> ringRanks(n);
  for (int r = 0; r < n; ++r) ringRanks[r] = r;
  uint32_t abortFlag = 0;
  const size_t capBytes = primsChunkCapacity(*net.sendEnd(0, 0), proto, 1);
  const size_t chunkF = capBytes / sizeof(float);
  const size_t chunkI = capBytes / sizeof(int32_t);
  const size_t p2pCount = (mask & 16) ? capBytes * (kFifoSteps + 3) + 3 : count * 3 + 1;  // int8 elements

  std::vector<std::vector<float>> ringIn(n), ringOut(n), treeIn(n), treeOut(n);
  std::vector<std::vector<int32_t>> agIn(n), agOut(n);
  std::vector<std::vector<int8_t>> p2pIn(n), p2pOut(n);
  std::vector<RankState> ranks(n);
  for (int r = 0; r < n; ++r) {
    ringIn[r].resize(count);
    treeIn[r].resize(count);
    agIn[r].resize(count);
    p2pIn[r].resize(p2pCount);
    for (size_t i = 0; i < count; ++i) {
      ringIn[r][i] = contribution<float>(r, i);
      treeIn[r][i] = contribution<float>(r, i + 5);
      agIn[r][i] = int32_t(1000 * r + i);
    }
    for (size_t i = 0; i < p2pCount; ++i) p2pIn[r][i] = int8_t((r * 31 + i) & 0x7f);
    ringOut[r].assign(count, -1.f);
    treeOut[r].assign(count, -1.f);
    agOut[r].assign(count * n, -1);
    p2pOut[r].assign(p2pCount, -1);
    wire(net, n, r, ringRanks, &abortFlag, &ranks[r]);

    Plan plan;
    plan.reset(1);
    plan.nChannelsUsed = 1;
    PlanItem it;
    it.coll = collWork(kFuncAllReduce, kAlgoRing, proto, ncclFloat32, ringIn[r].data(), ringOut[r].data(), count, chunkF);
    if (mask & 1) plan.channels[0].push_back(it);
    it.coll = collWork(kFuncAllGather, kAlgoRing, proto, ncclInt32, agIn[r].data(), agOut[r].data(), count, chunkI);
    if (mask & 2) plan.channels[0].push_back(it);
    it.coll = collWork(kFuncAllReduce, kAlgoTree, proto, ncclFloat32, treeIn[r].data(), treeOut[r].data(), count, chunkF);
    if (mask & 4) plan.channels[0].push_back(it);
    if (n > 1 && (mask & 8)) {
      PlanItem batch;
      batch.isColl = false;
      P2pWork w{};
      w.proto = proto;
      w.type = ncclInt8;
      w.chanCount = p2pCount;
      w.chunkElems = capBytes;
      w.isSend = false;
      w.peer = (r + n - 1) % n;
      w.recvbuff = p2pOut[r].data();
      batch.p2p.push_back(w);  // receive first: the batch must not depend on the order
      w.isSend = true;
      w.peer = (r + 1) % n;
      w.recvbuff = nullptr;
      w.sendbuff = p2pIn[r].data();
      batch.p2p.push_back(w);
      plan.channels[0].push_back(batch);
    }
    it.coll = collWork(kFuncAllReduce, kAlgoRing, proto, ncclFloat32, ringIn[r].data(), ringOut[r].data(), count, chunkF);
    if (mask & 32) plan.channels[0].push_back(it);  // the same result again
    PackOptions opts;
    opts.subset = false;
    opts.inlineCapacity = r % 2 ? 0 : kArgInlineItems;  // odd ranks run from a spill array
    if (packPlan(plan, opts, &ranks[r].packed) != ncclSuccess) return "packPlan failed";
  }

  if (std::string err = launchRanks(net, ranks, table, blockDim); !err.empty()) return err;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      if ((mask & 1) && ringOut[r][i] != closedFormSum<float>(n, i))
        return "ring all-reduce: rank " + std::to_string(r) + " element " + std::to_string(i);
      const float treeWant = closedFormSum<float>(n, i + 5);
      if ((mask & 4) && treeOut[r][i] != treeWant)
        return "tree all-reduce: rank " + std::to_string(r) + " element " + std::to_string(i) + " = " +
               std::to_string(treeOut[r][i]) + ", expected " + std::to_string(treeWant);
      for (int k = 0; k < n; ++k)
        if ((mask & 2) && agOut[r][k * count + i] != int32_t(1000 * k + i))
          return "all-gather: rank " + std::to_string(r) + " block " + std::to_string(k) + " element " + std::to_string(i);
    }
    if (n > 1 && (mask & 8)) {
      const int prev = (r + n - 1) % n;
      for (size_t i = 0; i < p2pCount; ++i)
        if (p2pOut[r][i] != p2pIn[prev][i]) return "p2p: rank " + std::to_string(r) + " element " + std::to_string(i);
    }
  }
  return net.checkSteps();
}

// One tree all-reduce on an n-rank chain (root 0), `blockDim` threads per rank, in place (the
// result written over the contribution) or not, against closed-form sums.
std::string runTreeLaunch(int n, ProtoId proto, size_t count, bool inPlace, int blockDim) {
  TestNet net(n);
  const std::vector<DevFn> table = cpuTable();
  std::vector<int> ringRanks(n);
  for (int r = 0; r < n; ++r) ringRanks[r] = r;
  uint32_t abortFlag = 0;
  const size_t chunkF = primsChunkCapacity(*net.sendEnd(0, 0), proto, 1) / sizeof(float);
  std::vector<std::vector<float>> in(n), out(n);
  std::vector<RankState> ranks(n);
  for (int r = 0; r < n; ++r) {
    in[r].resize(count);
    for (size_t i = 0; i < count; ++i) in[r][i] = contribution<float>(r, i);
    out[r].assign(count, -1.f);
    wire(net, n, r, ringRanks, &abortFlag, &ranks[r]);
    Plan plan;
    plan.reset(1);
    plan.nChannelsUsed = 1;
    PlanItem it;
    float* dst = inPlace ? in[r].data() : out[r].data();
    it.coll = collWork(kFuncAllReduce, kAlgoTree, proto, ncclFloat32, in[r].data(), dst, count, chunkF);
    plan.channels[0].push_back(it);
    PackOptions opts;
    opts.subset = false;
    if (packPlan(plan, opts, &ranks[r].packed) != ncclSuccess) return "packPlan failed";
  }
  if (std::string err = launchRanks(net, ranks, table, blockDim); !err.empty()) return err;
  for (int r = 0; r < n; ++r) {
    const std::vector<float>& got = inPlace ? in[r] : out[r];
    for (size_t i = 0; i < count; ++i)
      if (got[i] != closedFormSum<float>(n, i))
        return "rank " + std::to_string(r) + " element " + std::to_string(i) + " = " + std::to_string(got[i]) +
               ", expected " + std::to_string(closedFormSum<float>(n, i));
  }
  return net.checkSteps();
}

// A 3-rank chain (root, middle node, leaf) with more chunks than two FIFOs hold. With two or more
// warps the root reduces and broadcasts each chunk in one step, and so stops taking
// contributions once kFifoSteps results wait unread at its child: the launch completes only if
// the middle node and the leaf run their broadcast phase on their own warps while their reduce
// phase still streams (a node that ran the phases in turn would wait on the root for ever). One
// warp per block runs the phases in turn on every rank.
TEST(CudaKernelBodyTree, ThreeRankChainRunsBothPhasesAtOnce) {
  for (ProtoId proto : {kProtoLL, kProtoLL128, kProtoSimple}) {
    const size_t chunkF = primsChunkCapacity(*TestNet(1).sendEnd(0, 0), proto, 1) / sizeof(float);
    const size_t count = chunkF * (2 * kFifoSteps + 3) + 7;
    for (int blockDim : {32, 64, 96})
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(std::string("proto ") + primstest::protoName(proto) + ", " + std::to_string(blockDim) + " threads, " +
                     (inPlace ? "in place" : "out of place"));
        EXPECT_EQ(runTreeLaunch(3, proto, count, inPlace, blockDim), "");
      }
  }
}

class CudaKernelBody : public ::testing::TestWithParam<std::tuple<int, ProtoId>> {};

// Every rank lists its receive before its send and each transfer needs more FIFO steps than the
// FIFO has: a block that ran both kinds on all its warps in turn would wait on itself.
TEST(CudaKernelBodyP2p, ReceiveFirstLongerThanTheFifo) {
  for (int n : {2, 3})
    for (ProtoId proto : {kProtoLL, kProtoLL128, kProtoSimple}) {
      SCOPED_TRACE(std::to_string(n) + " ranks, proto " + std::to_string(int(proto)));
      EXPECT_EQ(runMixedLaunch(n, proto, 1, 8 | 16), "");
    }
}

// A batch after a ring all-reduce (whose Simple data warps leave their last step with a
// bar.arrive on barrier 2) or a tree all-reduce (barriers 1 to 4 on two groups), and a ring
// all-reduce after the batch: the batch's warp groups reuse those barrier ids with their own thread
// counts, so they must start only once the collective's last barrier rounds are complete (a
// launch mixing the two hung on the harness when they did not). 32 to 512 threads per block (at
// 512 two ranks and short collectives, which keeps the test within its deadline under TSan).
void batchBetweenCollectives(int blockDim) {
  for (ProtoId proto : {kProtoLL, kProtoLL128, kProtoSimple}) {
    SCOPED_TRACE(std::to_string(blockDim) + " threads, proto " + primstest::protoName(proto));
    if (blockDim < 512) EXPECT_EQ(runMixedLaunch(3, proto, 611, 1 | 4 | 8 | 16 | 32, blockDim), "");
    else EXPECT_EQ(runMixedLaunch(2, proto, 1, 1 | 4 | 8 | 16 | 32, blockDim), "");
    EXPECT_EQ(runMixedLaunch(2, proto, 1, 1 | 2 | 8 | 32, blockDim), "");
  }
}
// Two tests, each within the unit label's time limit under TSan.
TEST(CudaKernelBodyP2p, BatchBetweenCollectivesAt32And64Threads) {
  for (int blockDim : {32, 64}) batchBetweenCollectives(blockDim);
}
TEST(CudaKernelBodyP2p, BatchBetweenCollectivesAt96And512Threads) {
  for (int blockDim : {96, 512}) batchBetweenCollectives(blockDim);
}

TEST_P(CudaKernelBody, MixedLaunchGivesClosedFormResults) {
  const auto [n, proto] = GetParam();
  for (size_t count : {size_t(1), size_t(611)}) {
    SCOPED_TRACE("count " + std::to_string(count));
    EXPECT_EQ(runMixedLaunch(n, proto, count), "");
  }
}

INSTANTIATE_TEST_SUITE_P(RanksProtocols, CudaKernelBody,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values(kProtoLL, kProtoLL128, kProtoSimple)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks_" +
                                  primstest::protoName(std::get<1>(info.param));
                         });

TEST(CudaKernelBodyErrors, AbortFlagEndsAWaitingBlock) {
  // Rank 0 of 2 runs an all-reduce alone: it waits for rank 1 until the flag goes up.
  TestNet net(2);
  const std::vector<DevFn> table = cpuTable();
  std::vector<int> ringRanks{0, 1};
  uint32_t abortFlag = 0;
  RankState s;
  wire(net, 2, 0, ringRanks, &abortFlag, &s);
  std::vector<float> in(100, 1.f), out(100, 0.f);
  Plan plan;
  plan.reset(1);
  plan.nChannelsUsed = 1;
  PlanItem it;
  it.coll = collWork(kFuncAllReduce, kAlgoRing, kProtoSimple, ncclFloat32, in.data(), out.data(), in.size(), 16);
  plan.channels[0].push_back(it);
  ASSERT_EQ(packPlan(plan, PackOptions{}, &s.packed), ncclSuccess);
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::atomic_ref<uint32_t>(abortFlag).store(1);
  });
  simt::cpu::LaunchConfig cfg;
  cfg.gridDim = 1;
  cfg.blockDim = 64;
  cfg.deadline = std::chrono::milliseconds(60000);
  const simt::cpu::LaunchResult r =
      simt::cpu::launch(cfg, [&] { devRunChannel(s.packed.args.header, s.packed.items(), s.comm, 0, table.data()); });
  raiser.join();
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(s.error, uint32_t(kDevErrAborted));
}

TEST(CudaKernelBodyErrors, MissingKernelAndBadHeaderAreReported) {
  TestNet net(1);
  std::vector<DevFn> table(kDevNumFuncs, nullptr);  // nothing built
  std::vector<int> ringRanks{0};
  uint32_t abortFlag = 0;
  RankState s;
  wire(net, 1, 0, ringRanks, &abortFlag, &s);
  std::vector<float> buf(8, 1.f);
  Plan plan;
  plan.reset(1);
  plan.nChannelsUsed = 1;
  PlanItem it;
  it.coll = collWork(kFuncAllReduce, kAlgoRing, kProtoLL, ncclFloat32, buf.data(), buf.data(), buf.size(), 4);
  plan.channels[0].push_back(it);
  ASSERT_EQ(packPlan(plan, PackOptions{}, &s.packed), ncclSuccess);
  EXPECT_EQ(net.launch([&] { devRunChannel(s.packed.args.header, s.packed.items(), s.comm, 0, table.data()); }), "");
  EXPECT_EQ(s.error, uint32_t(kDevErrNoKernel));
  EXPECT_EQ(s.detail, uint32_t(s.packed.items()[0].funcId));

  s.error = s.detail = 0;
  KernelArgsHeader bad = s.packed.args.header;
  bad.magic = 1;
  EXPECT_EQ(net.launch([&] { devRunChannel(bad, s.packed.items(), s.comm, 0, table.data()); }), "");
  EXPECT_EQ(s.error, uint32_t(kDevErrBadArgs));
}

}  // namespace
}  // namespace accl
