// The device runs each schedule with exactly the steps the host runs (label gpu; skips without
// a device).
#include <gtest/gtest.h>

#include <vector>

#include "core/engine/tree_builder.h"
#include "schedules_kernels.h"

namespace accl {
namespace {

PrimsCounts onHost(ScheduleKind kind, int n, int index, const TreeView& tree, const CollWork& w) {
  std::vector<int> ranks(n);
  for (int i = 0; i < n; ++i) ranks[i] = i;
  return countSchedule(kind, RingView{n, index, ranks.data()}, tree, w);
}

TEST(GpuSchedules, DeviceTakesTheHostSteps) {
  for (ScheduleKind kind : {ScheduleKind::RingAllReduce, ScheduleKind::RingAllGather, ScheduleKind::RingReduceScatter,
                            ScheduleKind::RingBroadcast, ScheduleKind::RingReduce, ScheduleKind::TreeAllReduce}) {
    for (int n : {1, 2, 5, 8}) {
      std::vector<int> nodeOf(n);
      for (int r = 0; r < n; ++r) nodeOf[r] = r * 2 / n;
      for (int index = 0; index < n; ++index) {
        CollWork w{};
        w.count = w.chanCount = 4099;
        w.chunkElems = 64;
        w.root = n - 1;
        TreeView tree = buildTreeView(nodeOf, index, 0);
        PrimsCounts dev;
        if (!runScheduleOnDevice(kind, n, index, tree, w, &dev)) GTEST_SKIP() << "no CUDA device";
        PrimsCounts host = onHost(kind, n, index, tree, w);
        EXPECT_EQ(dev.sends, host.sends);
        EXPECT_EQ(dev.recvs, host.recvs);
        EXPECT_EQ(dev.reduces, host.reduces);
        EXPECT_EQ(dev.outputs, host.outputs);
        EXPECT_EQ(dev.postOps, host.postOps);
        EXPECT_EQ(dev.elemsSent, host.elemsSent);
        EXPECT_EQ(dev.elemsOut, host.elemsOut);
      }
    }
  }
}

}  // namespace
}  // namespace accl
