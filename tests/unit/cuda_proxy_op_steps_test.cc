// The step counts behind the CUDA backend's ProxyOp events (src/backend/cuda/proxy_op_events.h),
// from packed work items, against closed forms: a ring all-reduce moves 2(n-1) steps each way per
// round of n chunks, a tree node one step per chunk with each child and its parent in each
// direction, a single rank none, a transfer ceil(bytes / chunk) steps and an empty one one step.
// No GPU needed: runs in every build.
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "backend/cuda/proxy_op_events.h"

namespace accl {
namespace {

CollWork allReduce(AlgoId algo, size_t chanCount, size_t chunkElems) {
  CollWork w{};
  w.func = kFuncAllReduce;
  w.algo = algo;
  w.proto = kProtoSimple;
  w.type = ncclFloat32;
  w.op.kind = DevRedOpKind::kSum;
  w.count = chanCount;
  w.chanCount = chanCount;
  w.chunkElems = chunkElems;
  return w;
}

// (peer, isSend) -> steps of one packed collective.
std::map<std::pair<int, bool>, uint64_t> stepsOf(const CollWork& w, const RingView& ring, const TreeView& tree) {
  DevWorkItem item{};
  EXPECT_EQ(packColl(w, kDevKernelSubset, &item), ncclSuccess);
  ItemSteps out[2 * (kMaxTreeChildren + 1)];
  const int n = collItemSteps(item, ring, tree, out);
  std::map<std::pair<int, bool>, uint64_t> m;
  for (int i = 0; i < n; ++i) EXPECT_TRUE(m.emplace(std::make_pair(out[i].peer, out[i].isSend), out[i].steps).second);
  return m;
}

const TreeView kNoTree{-1, {-1, -1, -1}};

TEST(CudaProxyOpSteps, RingAllReduceMovesTwoNMinusOneStepsEachWayPerRound) {
  const int ranks[] = {4, 9, 2};  // ring order; this rank is at index 1 (rank 9)
  const RingView ring{3, 1, ranks};
  // 1000 elements in rounds of 3 chunks of 64: ceil(1000 / 192) = 6 rounds of 2 * (3 - 1) steps.
  const auto m = stepsOf(allReduce(kAlgoRing, 1000, 64), ring, kNoTree);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at({2, true}), 24u) << "to the next rank";
  EXPECT_EQ(m.at({4, false}), 24u) << "from the previous rank";
}

TEST(CudaProxyOpSteps, ASingleRankMovesNoSteps) {
  const int ranks[] = {0};
  EXPECT_TRUE(stepsOf(allReduce(kAlgoRing, 1000, 64), RingView{1, 0, ranks}, kNoTree).empty());
}

TEST(CudaProxyOpSteps, TreeNodeMovesOneStepPerChunkWithEachNeighbourEachWay) {
  const int ranks[] = {0, 1, 2, 3};
  const TreeView tree{5, {6, 7, -1}};
  // ceil(1000 / 64) = 16 chunks: reduced up from each child to the parent, broadcast back down.
  const auto m = stepsOf(allReduce(kAlgoTree, 1000, 64), RingView{4, 0, ranks}, tree);
  ASSERT_EQ(m.size(), 6u);
  for (int peer : {5, 6, 7})
    for (bool isSend : {false, true}) EXPECT_EQ(m.at({peer, isSend}), 16u) << peer << (isSend ? " send" : " recv");
}

TEST(CudaProxyOpSteps, TransferStepsAreChunksAndAnEmptyTransferIsOneStep) {
  auto steps = [](size_t count, size_t chunk) {
    P2pWork w{};
    w.isSend = true;
    w.peer = 1;
    w.proto = kProtoSimple;
    w.type = ncclFloat32;
    w.chanCount = count;
    w.chunkElems = chunk;
    DevWorkItem item{};
    EXPECT_EQ(packP2p(w, true, &item), ncclSuccess);
    return p2pItemSteps(item);
  };
  EXPECT_EQ(steps(0, 16), 1u);
  EXPECT_EQ(steps(16, 16), 1u);
  EXPECT_EQ(steps(17, 16), 2u);
  EXPECT_EQ(steps(1031, 100), 11u);
}

}  // namespace
}  // namespace accl
