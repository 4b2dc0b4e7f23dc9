// The schedules of src/algos against closed-form step counts, through CountingPrims: how many
// steps each rank takes, how many reduce, and how many elements reach its output, for awkward
// rank counts and sizes (0, 1, odd, multi-chunk, a tail shorter than nranks chunks).
#include <gtest/gtest.h>

#include <vector>

#include "algos/ring_all_gather.h"
#include "algos/ring_all_reduce.h"
#include "algos/ring_broadcast.h"
#include "algos/ring_reduce.h"
#include "algos/ring_reduce_scatter.h"
#include "algos/tree_all_reduce.h"
#include "core/engine/tree_builder.h"
#include "support/counting_prims.h"

namespace accl {
namespace {

CollWork work(size_t count, size_t chunk, int root = 0) {
  CollWork w{};
  w.count = count;
  w.chanOffset = 0;
  w.chanCount = count;
  w.chunkElems = chunk;
  w.root = root;
  return w;
}

struct Ring {
  std::vector<int> ranks;
  RingView view(int index) {
    return RingView{static_cast<int>(ranks.size()), index, ranks.data()};
  }
  explicit Ring(int n) : ranks(n) {
    for (int i = 0; i < n; ++i) ranks[i] = i;
  }
};

size_t divUpTest(size_t a, size_t b) { return (a + b - 1) / b; }

class ScheduleCounts : public ::testing::TestWithParam<std::tuple<int, size_t, size_t>> {};

TEST_P(ScheduleCounts, RingAllReduce) {
  auto [n, count, chunk] = GetParam();
  Ring ring(n);
  for (int r = 0; r < n; ++r) {
    CountingPrims p;
    ringAllReduce(p, ring.view(r), work(count, chunk));
    const uint64_t loops = n == 1 ? divUpTest(count, chunk) : divUpTest(count, n * chunk);
    EXPECT_EQ(p.c.elemsOut, count) << "rank " << r;
    if (n == 1) {
      EXPECT_EQ(p.c.sends, 0u);
      EXPECT_EQ(p.c.postOps, loops);
      continue;
    }
    EXPECT_EQ(p.c.sends, loops * (2 * n - 2));
    EXPECT_EQ(p.c.recvs, loops * (2 * n - 2));
    EXPECT_EQ(p.c.reduces, loops * (n - 1));
    EXPECT_EQ(p.c.postOps, loops);
  }
}

TEST_P(ScheduleCounts, RingAllGatherAndReduceScatter) {
  auto [n, count, chunk] = GetParam();
  Ring ring(n);
  const uint64_t chunks = divUpTest(count, chunk);
  for (int r = 0; r < n; ++r) {
    CountingPrims ag, rs;
    ringAllGather(ag, ring.view(r), work(count, chunk));
    ringReduceScatter(rs, ring.view(r), work(count, chunk));
    EXPECT_EQ(ag.c.elemsOut, count * n) << "all-gather fills every rank's block";
    EXPECT_EQ(ag.c.sends, chunks * (n - 1));
    EXPECT_EQ(ag.c.reduces, 0u);
    EXPECT_EQ(rs.c.elemsOut, count) << "reduce-scatter fills one block";
    EXPECT_EQ(rs.c.reduces, chunks * (n - 1));
    EXPECT_EQ(rs.c.sends, chunks * (n - 1));
    EXPECT_EQ(rs.c.postOps, chunks);
  }
}

TEST_P(ScheduleCounts, RingBroadcastAndReduce) {
  auto [n, count, chunk] = GetParam();
  Ring ring(n);
  const uint64_t chunks = divUpTest(count, chunk);
  for (int root = 0; root < n; ++root) {
    uint64_t totalSends = 0, totalRecvs = 0, reduceRecvs = 0;
    for (int r = 0; r < n; ++r) {
      CountingPrims b, red;
      ringBroadcast(b, ring.view(r), work(count, chunk, root));
      ringReduce(red, ring.view(r), work(count, chunk, root));
      EXPECT_EQ(b.c.elemsOut, count) << "every rank stores the broadcast";
      totalSends += b.c.sends;
      totalRecvs += b.c.recvs;
      reduceRecvs += red.c.recvs;
      EXPECT_EQ(red.c.elemsOut, r == root ? count : 0) << "only the root keeps the reduction";
      if (r == root) EXPECT_EQ(red.c.postOps, chunks);
    }
    // A chain of n-1 hops per chunk: as many sends as receives.
    EXPECT_EQ(totalSends, chunks * (n - 1));
    EXPECT_EQ(totalRecvs, chunks * (n - 1));
    EXPECT_EQ(reduceRecvs, chunks * (n - 1));
  }
}

TEST_P(ScheduleCounts, TreeAllReduceOnVirtualNodes) {
  auto [n, count, chunk] = GetParam();
  const uint64_t chunks = divUpTest(count, chunk);
  for (int nodes : {1, 2, 3}) {
    if (nodes > n) continue;
    std::vector<int> nodeOf(n);
    for (int r = 0; r < n; ++r) nodeOf[r] = r * nodes / n;
    for (int which = 0; which < 2; ++which) {
      uint64_t up = 0, roots = 0;
      for (int r = 0; r < n; ++r) {
        TreeView t = buildTreeView(nodeOf, r, which);
        CountingPrims u, d;
        treeAllReduce(u, d, t, work(count, chunk));
        EXPECT_EQ(u.c.elemsOut + d.c.elemsOut, count) << "rank " << r << " gets the whole result";
        up += u.c.sends;
        roots += t.up < 0;
      }
      EXPECT_EQ(roots, 1u) << "one root per tree";
      EXPECT_EQ(up, chunks * (n - 1)) << "every rank but the root sends each chunk up once";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, ScheduleCounts,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5, 8), ::testing::Values(1, 7, 4099),
                                            ::testing::Values(1, 64, 1000)));

TEST(ScheduleCounts, ZeroElementsTakeNoSteps) {
  Ring ring(3);
  CountingPrims p;
  ringAllReduce(p, ring.view(1), work(0, 16));
  ringAllGather(p, ring.view(1), work(0, 16));
  EXPECT_EQ(p.c.sends + p.c.recvs + p.c.outputs, 0u);
}

TEST(TreeBuilder, BinaryTreesCoverEveryNodeOnce) {
  for (int n = 1; n <= 33; ++n) {
    for (int which = 0; which < 2; ++which) {
      std::vector<int> parentOf(n), childCount(n, 0);
      int roots = 0;
      for (int i = 0; i < n; ++i) {
        int p, c0, c1;
        binaryTreeNode(n, i, which, &p, &c0, &c1);
        parentOf[i] = p;
        roots += p < 0;
        for (int c : {c0, c1})
          if (c >= 0) {
            int cp, x, y;
            binaryTreeNode(n, c, which, &cp, &x, &y);
            EXPECT_EQ(cp, i) << "n=" << n << " tree " << which << ": child " << c << " disagrees about its parent";
            childCount[i]++;
          }
      }
      EXPECT_EQ(roots, 1) << "n=" << n;
      int edges = 0;
      for (int c : childCount) edges += c;
      EXPECT_EQ(edges, n - 1) << "n=" << n;
    }
  }
}

}  // namespace
}  // namespace accl
