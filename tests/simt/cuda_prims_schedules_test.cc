// The CUDA Prims on the CPU SIMT harness with the other schedules of src/algos: ring all-gather,
// reduce-scatter, broadcast and reduce, tree all-reduce (fans of up to three children, so up to
// three receive sources per step), and the ops with a preOp (PreMulSum) or a postOp
// (SumPostDiv), every protocol, against closed-form results.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "algos/ring_all_gather.h"
#include "algos/ring_all_reduce.h"
#include "algos/ring_broadcast.h"
#include "algos/ring_reduce.h"
#include "algos/ring_reduce_scatter.h"
#include "algos/tree_all_reduce.h"
#include "device/common/red_ops.h"
#include "device/cuda/cuda_prims.h"
#include "prims_test_net.h"

namespace accl {
namespace {

using primstest::closedFormSum;
using primstest::contribution;
using primstest::protoName;
using primstest::TestNet;

constexpr float kUnset = 77.0f;

// Runs `schedule(prims, ring)` on every rank of a ring 0 -> 1 -> ... -> n-1 -> 0 with a
// CudaPrims over rank r's buffers; "" or what went wrong.
template <class T, class Op, class Schedule>
std::string runOnRing(int nranks, ProtoId proto, std::vector<std::vector<T>>& in, std::vector<std::vector<T>>& out,
                      const Op& op, Schedule&& schedule) {
  TestNet net(nranks);
  std::vector<int> userRanks(nranks);
  for (int r = 0; r < nranks; ++r) userRanks[r] = r;
  uint32_t aborted = 0;
  std::string err = net.launch([&] {
    const int r = simt::blockIndex();
    CudaPrimsArgs args = net.ringArgs(r, in[r].data(), out[r].data(), proto);
    CudaPrims<T, Op> prims(args, op);
    RingView ring{nranks, r, userRanks.data()};
    schedule(prims, ring);
    if (prims.aborted()) simt::atomicAdd32(&aborted, 1);
  });
  if (!err.empty()) return err;
  if (aborted) return "a block reported an abort";
  return net.checkSteps();
}

CollWork workFor(size_t count, size_t chunkElems, int root = 0) {
  CollWork w{};
  w.count = count;
  w.chanOffset = 0;
  w.chanCount = count;
  w.chunkElems = chunkElems;
  w.root = root;
  return w;
}

size_t chunkFor(ProtoId proto) {
  TestNet one(1);
  return primsChunkCapacity(*one.sendEnd(0, 0), proto, sizeof(float));
}

std::string mismatch(const char* what, int rank, size_t i, float got, float want) {
  return std::string(what) + ": rank " + std::to_string(rank) + " element " + std::to_string(i) + " = " +
         std::to_string(got) + ", expected " + std::to_string(want);
}

struct Case {
  int nranks;
  ProtoId proto;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.nranks << " ranks, " << protoName(c.proto); }

class CudaPrimsSchedules : public ::testing::TestWithParam<Case> {};

const size_t kCounts[] = {0, 7, 1031};

TEST_P(CudaPrimsSchedules, RingAllGather) {
  const auto [n, proto] = GetParam();
  for (size_t count : kCounts) {
    std::vector<std::vector<float>> in(n), out(n);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) in[r].push_back(contribution<float>(r, i));
      out[r].assign(n * count + 3, kUnset);
    }
    const CollWork work = workFor(count, chunkFor(proto));
    ASSERT_EQ(runOnRing(n, proto, in, out, RedSum<float>{},
                        [&](auto& p, const RingView& ring) { ringAllGather(p, ring, work); }),
              "");
    for (int r = 0; r < n; ++r) {
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(out[r][q * count + i], contribution<float>(q, i)) << "rank " << r << " element " << q * count + i;
      for (size_t i = n * count; i < out[r].size(); ++i) ASSERT_EQ(out[r][i], kUnset) << "guard " << i;
    }
  }
}

TEST_P(CudaPrimsSchedules, RingReduceScatter) {
  const auto [n, proto] = GetParam();
  for (size_t count : kCounts) {
    std::vector<std::vector<float>> in(n), out(n);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < n * count; ++i) in[r].push_back(contribution<float>(r, i));
      out[r].assign(count + 3, kUnset);
    }
    const CollWork work = workFor(count, chunkFor(proto));
    ASSERT_EQ(runOnRing(n, proto, in, out, RedSum<float>{},
                        [&](auto& p, const RingView& ring) { ringReduceScatter(p, ring, work); }),
              "");
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[r][i], closedFormSum<float>(n, r * count + i)) << "rank " << r << " element " << i;
      for (size_t i = count; i < out[r].size(); ++i) ASSERT_EQ(out[r][i], kUnset) << "guard " << i;
    }
  }
}

TEST_P(CudaPrimsSchedules, RingBroadcastAndReduceFromEveryRoot) {
  const auto [n, proto] = GetParam();
  const size_t count = 1031;
  for (int root = 0; root < n; ++root) {
    std::vector<std::vector<float>> in(n), out(n);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) in[r].push_back(contribution<float>(r, i));
      out[r].assign(count + 3, kUnset);
    }
    const CollWork work = workFor(count, chunkFor(proto), root);
    // Broadcast, in place on the root (as ncclBroadcast with sendbuff == recvbuff).
    out[root] = in[root];
    out[root].resize(count + 3, kUnset);
    ASSERT_EQ(runOnRing(n, proto, out, out, RedSum<float>{},
                        [&](auto& p, const RingView& ring) { ringBroadcast(p, ring, work); }),
              "");
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[r][i], contribution<float>(root, i)) << "rank " << r << " element " << i;

    // Reduce, in place everywhere (the schedule reads and writes the same offsets).
    std::vector<std::vector<float>> buf = in;
    for (auto& b : buf) b.resize(count + 3, kUnset);
    ASSERT_EQ(runOnRing(n, proto, buf, buf, RedSum<float>{},
                        [&](auto& p, const RingView& ring) { ringReduce(p, ring, work); }),
              "");
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(buf[root][i], closedFormSum<float>(n, i)) << "rank " << root << " element " << i;
  }
}

TEST_P(CudaPrimsSchedules, PreOpAndPostOpApplyExactlyOnce) {
  const auto [n, proto] = GetParam();
  const size_t count = 777;
  {  // PreMulSum by 2 (every contribution doubled once): 2 * sum.
    std::vector<std::vector<float>> in(n), out(n);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) in[r].push_back(contribution<float>(r, i));
      out[r].assign(count, kUnset);
    }
    const CollWork work = workFor(count, chunkFor(proto));
    ASSERT_EQ(runOnRing(n, proto, in, out, RedPreMulSum<float>{2.0f},
                        [&](auto& p, const RingView& ring) { ringAllReduce(p, ring, work); }),
              "");
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[r][i], 2 * closedFormSum<float>(n, i)) << "rank " << r << " element " << i;
  }
  {  // SumPostDiv by n (ncclAvg on integers): the complete sum divided once, truncating.
    std::vector<std::vector<int32_t>> in(n), out(n);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) in[r].push_back(contribution<int32_t>(r, i));
      out[r].assign(count, -1);
    }
    const CollWork work = workFor(count, primsChunkCapacity(*TestNet(1).sendEnd(0, 0), proto, sizeof(int32_t)));
    ASSERT_EQ(runOnRing(n, proto, in, out, RedSumPostDiv<int32_t>{uint64_t(n)},
                        [&](auto& p, const RingView& ring) { ringAllReduce(p, ring, work); }),
              "");
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[r][i], closedFormSum<int32_t>(n, i) / n) << "avg rank " << r << " element " << i;
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (int n = 1; n <= 4; ++n)
    for (ProtoId p : {kProtoSimple, kProtoLL, kProtoLL128}) v.push_back({n, p});
  return v;
}
std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return std::to_string(info.param.nranks) + "ranks_" + protoName(info.param.proto);
}
INSTANTIATE_TEST_SUITE_P(AllProtocols, CudaPrimsSchedules, ::testing::ValuesIn(cases()), caseName);

// ---- tree all-reduce ------------------------------------------------------------------------------

// Runs tree all-reduce on the tree given by parent[] (-1 at the root); "" or what went wrong.
std::string runTreeAllReduce(const std::vector<int>& parent, ProtoId proto, size_t count, int blockDim = 64) {
  const int n = int(parent.size());
  TestNet net(n);
  std::vector<std::vector<float>> in(n), out(n);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count + 3; ++i) in[r].push_back(contribution<float>(r, i));
    out[r].assign(count + 3, kUnset);
  }
  const CollWork work = workFor(count, chunkFor(proto));
  uint32_t aborted = 0;
  std::string err = net.launch([&] {
    const int r = simt::blockIndex();
    TreeView tree{parent[r], {-1, -1, -1}};
    int nChildren = 0;
    for (int c = 0; c < n; ++c)
      if (parent[c] == r) tree.down[nChildren++] = c;
    CudaPrimsArgs upArgs, downArgs;
    for (int i = 0; i < nChildren; ++i) {
      upArgs.recv[i] = net.recvEnd(r, tree.down[i]);
      downArgs.send[i] = net.sendEnd(r, tree.down[i]);
    }
    upArgs.nRecv = downArgs.nSend = nChildren;
    if (tree.up >= 0) {
      upArgs.send[0] = net.sendEnd(r, tree.up);
      downArgs.recv[0] = net.recvEnd(r, tree.up);
      upArgs.nSend = downArgs.nRecv = 1;
    }
    upArgs.input = in[r].data();
    upArgs.output = out[r].data();
    downArgs.input = out[r].data();  // the result being forwarded, not a contribution
    downArgs.output = out[r].data();
    downArgs.inputIsContribution = false;
    upArgs.proto = downArgs.proto = proto;
    CudaPrims<float, RedSum<float>> up(upArgs, RedSum<float>{});
    CudaPrims<float, RedSum<float>> down(downArgs, RedSum<float>{});
    treeAllReduce(up, down, tree, work);
    if (up.aborted() || down.aborted()) simt::atomicAdd32(&aborted, 1);
  }, blockDim);
  if (!err.empty()) return err;
  if (aborted) return "a block reported an abort";
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i)
      if (out[r][i] != closedFormSum<float>(n, i))
        return mismatch("tree all-reduce", r, i, out[r][i], closedFormSum<float>(n, i));
    for (size_t i = count; i < count + 3; ++i)
      if (out[r][i] != kUnset) return "tree all-reduce: rank " + std::to_string(r) + " guard overwritten";
  }
  return net.checkSteps();
}

class CudaPrimsTree : public ::testing::TestWithParam<ProtoId> {};

TEST_P(CudaPrimsTree, AllReduceOverChainsAndFans) {
  const ProtoId proto = GetParam();
  const std::vector<std::vector<int>> trees = {
      {-1},              // one rank
      {-1, 0},           // a pair
      {-1, 0, 0, 0},     // a root with three children: three receive sources per step
      {-1, 0, 0, 1, 1},  // an inner node with a parent and two children
      {-1, 0, 1, 2},     // a chain (the intra-node tree)
  };
  for (const auto& parent : trees)
    for (size_t count : {size_t(1), size_t(250), size_t(1031)})
      EXPECT_EQ(runTreeAllReduce(parent, proto, count), "") << parent.size() << " ranks, count " << count;
}

// A fan of three children plus a parent on 5-warp blocks: at the root one peer warp per child
// (three waiting warps in the reduce phase, three posting warps in the broadcast phase) and two
// data warps reducing from three sources.
TEST_P(CudaPrimsTree, FanOfThreeWithAWarpPerPeer) {
  const ProtoId proto = GetParam();
  EXPECT_EQ(runTreeAllReduce({-1, 0, 0, 0, 1}, proto, 701, /*blockDim=*/160), "");
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, CudaPrimsTree, ::testing::Values(kProtoSimple, kProtoLL, kProtoLL128),
                         [](const ::testing::TestParamInfo<ProtoId>& info) {
                           return std::string(protoName(info.param));
                         });

}  // namespace
}  // namespace accl
