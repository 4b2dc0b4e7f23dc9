// Unit tests for topo/search: rings and trees on every fixture, on one node and across nodes.
// Expected channel counts and speeds are derived in the comments from the fixture's links and
// NCCL's speed tables; every channel must visit every GPU exactly once and respect the graph's
// path types, and multi-node channels must enter and leave by a NET near their end GPUs.
#include "topo/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "topo_test_util.h"

namespace accl {
namespace {

using topotest::load;

TopoGraph search(const TopoSystem& s, GraphPattern pattern, bool multi, int maxChannels = 32, int crossNic = 2,
                 int minChannels = 1) {
  SearchRequest req;
  req.pattern = pattern;
  req.multiNode = multi;
  req.maxChannels = maxChannels;
  req.minChannels = minChannels;
  req.crossNic = crossNic;
  TopoGraph g;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(searchGraph(s, req, &g), ncclSuccess);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(ms, 250.0) << "search too slow";  // typically < 15 ms
  return g;
}

// Structural checks every searched graph must pass.
void checkGraph(const TopoSystem& s, const TopoGraph& g, bool multi) {
  SCOPED_TRACE(describeGraph(g));
  ASSERT_EQ(g.nChannels, static_cast<int>(g.channels.size()));
  ASSERT_GE(g.nChannels, 1);
  std::vector<int> ranks;
  for (int n : s.nodesOf(TopoNodeType::Gpu)) ranks.push_back(s.nodes[n].rank);
  std::sort(ranks.begin(), ranks.end());
  auto gpuOf = [&](int rank) {
    for (int n : s.nodesOf(TopoNodeType::Gpu)) {
      if (s.nodes[n].rank == rank) return n;
    }
    return -1;
  };
  const bool ring = g.pattern == GraphPattern::Ring;
  for (const TopoGraphChannel& c : g.channels) {
    std::vector<int> sorted = c.gpuRanks;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, ranks) << "a channel must visit every GPU exactly once";
    int worst = kPathLoc;
    for (size_t i = 0; i + 1 < c.gpuRanks.size(); i++) {
      worst = std::max(worst, s.path(gpuOf(c.gpuRanks[i]), gpuOf(c.gpuRanks[i + 1])).type);
    }
    if (ring && !multi && c.gpuRanks.size() > 1) {
      worst = std::max(worst, s.path(gpuOf(c.gpuRanks.back()), gpuOf(c.gpuRanks.front())).type);
    }
    EXPECT_LE(worst, g.typeIntra);
    if (multi && !c.gpuRanks.empty()) {
      const int in = s.netByDev(c.netIn), out = s.netByDev(c.netOut);
      ASSERT_GE(in, 0);
      ASSERT_GE(out, 0);
      const int first = gpuOf(c.gpuRanks.front());
      const int exitGpu = ring ? gpuOf(c.gpuRanks.back()) : first;
      EXPECT_LE(s.path(in, first).type, g.typeInter);
      EXPECT_LE(s.path(exitGpu, out).type, g.typeInter);
      if (!g.crossNic) {
        EXPECT_EQ(c.netIn, c.netOut);
      }
    } else if (!multi) {
      EXPECT_EQ(c.netIn, -1);
      EXPECT_EQ(c.netOut, -1);
    }
  }
  if (!multi) {
    EXPECT_EQ(g.bwInter, 0);
    EXPECT_EQ(g.typeInter, kPathLoc);
  }
}

TEST(TopoSearch, DgxH100SingleNode) {
  auto s = load("dgx_h100.xml");
  ASSERT_TRUE(s);
  // Each ring hop crosses the NVSwitch: 18 x 20.6 = 370.8 GB/s per GPU and direction carries 6
  // rings at 60 (the top sm90 speed); NCCL then doubles them at half the speed.
  for (GraphPattern p : {GraphPattern::Ring, GraphPattern::BalancedTree}) {
    TopoGraph g = search(*s, p, false);
    checkGraph(*s, g, false);
    EXPECT_EQ(g.nChannels, 12);
    EXPECT_DOUBLE_EQ(g.bwIntra, 30.0);
    EXPECT_EQ(g.typeIntra, kPathNvl);
    EXPECT_TRUE(g.sameChannels);
    EXPECT_EQ(g.channels[0].gpuRanks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  }
  // Capped at 4 channels: 4 rings at 60, doubling is capped too.
  TopoGraph g = search(*s, GraphPattern::Ring, false, 4);
  checkGraph(*s, g, false);
  EXPECT_EQ(g.nChannels, 4);
  EXPECT_DOUBLE_EQ(g.bwIntra, 60.0);
}

TEST(TopoSearch, DgxH100MultiNode) {
  auto s = load("dgx_h100.xml");
  ASSERT_TRUE(s);
  // Top inter speed 48 = the Gen5 x16 GPU/NIC links. A ring enters at the GPU beside its NIC and
  // leaves from that GPU's switch neighbour: one channel per NIC (50 GB/s each), 8 channels; the
  // NVSwitch carries 7 x 48 per GPU. Doubling is skipped (sm90, < 50 GB/s, > 4 channels).
  TopoGraph g = search(*s, GraphPattern::Ring, true);
  checkGraph(*s, g, true);
  EXPECT_EQ(g.nChannels, 8);
  EXPECT_DOUBLE_EQ(g.bwIntra, 48.0);
  EXPECT_DOUBLE_EQ(g.bwInter, 48.0);
  EXPECT_EQ(g.typeIntra, kPathNvl);
  EXPECT_EQ(g.typeInter, kPathPix);
  EXPECT_EQ(g.latencyInter, 0.0);
  std::set<int> nets;
  for (const auto& c : g.channels) nets.insert(c.netIn);
  EXPECT_EQ(nets.size(), 8u) << "channels spread over all NICs";

  TopoGraph t = search(*s, GraphPattern::BalancedTree, true);
  checkGraph(*s, t, true);
  EXPECT_EQ(t.nChannels, 8);
  EXPECT_DOUBLE_EQ(t.bwInter, 48.0);
  EXPECT_EQ(t.typeInter, kPathPix);

  // Trees searched the way NCCL does after the ring: exactly the ring's channel count.
  TopoGraph t2 = search(*s, GraphPattern::BalancedTree, true, g.nChannels, 2, g.nChannels);
  checkGraph(*s, t2, true);
  EXPECT_EQ(t2.nChannels, g.nChannels);
}

TEST(TopoSearch, Pcie8Gpu2Socket) {
  auto s = load("pcie_8gpu_2socket.xml");
  ASSERT_TRUE(s);
  // One node: the ring must cross the 16 GB/s AMD socket link each way; the largest sm<90 speed
  // under 16 is 15, and a second ring does not fit.
  TopoGraph g = search(*s, GraphPattern::Ring, false);
  checkGraph(*s, g, false);
  EXPECT_EQ(g.nChannels, 1);
  EXPECT_DOUBLE_EQ(g.bwIntra, 15.0);
  EXPECT_EQ(g.typeIntra, kPathSys);
  // Switch neighbours stay adjacent in the ring.
  const auto& r = g.channels[0].gpuRanks;
  for (size_t i = 0; i < r.size(); i++) {
    if (r[i] % 2 == 0) {
      EXPECT_EQ(r[(i + 1) % r.size()], r[i] + 1);
    }
  }
  // Across nodes: NICs are 12.5 GB/s, so 12. With crossed NICs each ring crosses the socket link
  // once (NET0 -> GPUs 0-3 -> GPUs 4-7 -> NET1 and back), so two rings fit.
  TopoGraph m = search(*s, GraphPattern::Ring, true);
  checkGraph(*s, m, true);
  EXPECT_EQ(m.nChannels, 2);
  EXPECT_DOUBLE_EQ(m.bwInter, 12.0);
  EXPECT_EQ(m.typeIntra, kPathSys);
  EXPECT_EQ(m.typeInter, kPathPhb);
  EXPECT_EQ(m.crossNic, 1);
  EXPECT_NE(m.channels[0].netIn, m.channels[0].netOut);
  // NCCL_CROSS_NIC=0: a ring returns to its own NIC, so it crosses the 16 GB/s socket link once
  // in each direction. One ring at 12 totals 12; lowering the speed (NCCL stops at half the best)
  // reaches 4 rings at 4 = 16, the socket link's full capacity.
  TopoGraph m0 = search(*s, GraphPattern::Ring, true, 32, 0);
  checkGraph(*s, m0, true);
  EXPECT_EQ(m0.crossNic, 0);
  EXPECT_EQ(m0.nChannels, 4);
  EXPECT_DOUBLE_EQ(m0.bwInter, 4.0);
  EXPECT_EQ(m0.typeInter, kPathSys);

  TopoGraph t = search(*s, GraphPattern::BalancedTree, true);
  checkGraph(*s, t, true);
  EXPECT_GE(t.nChannels, 1);
  EXPECT_LE(t.typeInter, kPathPhb);
}

TEST(TopoSearch, A100Nvlink) {
  auto s = load("a100_4gpu_nvlink.xml");
  ASSERT_TRUE(s);
  // Every directed pair has 80 GB/s; at 40 each link carries 2 rings and the 12 directed links
  // hold 6 four-hop rings (different orders, so sameChannels is off); doubled (sm80): 12 at 20.
  TopoGraph g = search(*s, GraphPattern::Ring, false);
  checkGraph(*s, g, false);
  EXPECT_EQ(g.nChannels, 12);
  EXPECT_DOUBLE_EQ(g.bwIntra, 20.0);
  EXPECT_EQ(g.typeIntra, kPathNvl);
  EXPECT_FALSE(g.sameChannels);
  // Across nodes the single 200 Gb/s NIC behind a Gen4 x16 link (24 GB/s) limits to one ring.
  TopoGraph m = search(*s, GraphPattern::Ring, true);
  checkGraph(*s, m, true);
  EXPECT_EQ(m.nChannels, 1);
  EXPECT_DOUBLE_EQ(m.bwInter, 24.0);
  EXPECT_EQ(m.typeIntra, kPathNvl);
  EXPECT_EQ(m.typeInter, kPathPhb);
  TopoGraph t = search(*s, GraphPattern::Tree, true);
  checkGraph(*s, t, true);
  EXPECT_EQ(t.pattern, GraphPattern::Tree);
  EXPECT_EQ(t.channels[0].netIn, t.channels[0].netOut);
}

TEST(TopoSearch, Gh200) {
  auto s = load("gh200.xml");
  ASSERT_TRUE(s);
  // One GPU: rings of one, as many channels as allowed, at the top sm90 speed.
  TopoGraph g = search(*s, GraphPattern::Ring, false);
  checkGraph(*s, g, false);
  EXPECT_EQ(g.nChannels, 32);
  EXPECT_DOUBLE_EQ(g.bwIntra, 60.0);
  EXPECT_EQ(g.typeIntra, kPathLoc);
  // Across nodes: NET -> C2C -> GPU at 48 (the NIC's Gen5 link), one channel, doubled to 2 x 24.
  TopoGraph m = search(*s, GraphPattern::Ring, true);
  checkGraph(*s, m, true);
  EXPECT_EQ(m.nChannels, 2);
  EXPECT_DOUBLE_EQ(m.bwInter, 24.0);
  EXPECT_EQ(m.typeInter, kPathP2c);
}

TEST(TopoSearch, CpuOnly) {
  auto s = load("cpu_only.xml");
  ASSERT_TRUE(s);
  TopoGraph g = search(*s, GraphPattern::Ring, false);
  EXPECT_EQ(g.nChannels, 1);
  EXPECT_DOUBLE_EQ(g.bwIntra, 20.0);
  EXPECT_EQ(g.bwInter, 0.0);
  EXPECT_TRUE(g.channels[0].gpuRanks.empty());
  TopoGraph m = search(*s, GraphPattern::BalancedTree, true);
  EXPECT_EQ(m.nChannels, 1);
  EXPECT_DOUBLE_EQ(m.bwInter, 12.5);  // 100 Gb/s
  EXPECT_EQ(m.channels[0].netIn, 0);
  EXPECT_EQ(m.channels[0].netOut, 0);
  EXPECT_EQ(m.typeInter, kPathPhb);
}

TEST(TopoSearch, DescribeAndLl128) {
  auto s = load("dgx_h100.xml");
  ASSERT_TRUE(s);
  TopoGraph g = search(*s, GraphPattern::Ring, true);
  std::string d = describeGraph(g);
  EXPECT_NE(d.find("Pattern RING"), std::string::npos) << d;
  EXPECT_NE(d.find("nChannels 8"), std::string::npos) << d;
  EXPECT_NE(d.find("type NVL/PIX"), std::string::npos) << d;
  EXPECT_NE(d.find("RING 0 : NET/0 GPU/0 "), std::string::npos) << d;
  EXPECT_TRUE(graphSupportsLl128(g, 90));
  auto p = load("pcie_8gpu_2socket.xml");
  EXPECT_FALSE(graphSupportsLl128(search(*p, GraphPattern::Ring, false), 89));
  TopoGraph pxn;
  pxn.typeIntra = kPathNvl;
  pxn.typeInter = kPathPxn;
  EXPECT_TRUE(graphSupportsLl128(pxn, 90, true));
  EXPECT_FALSE(graphSupportsLl128(pxn, 90, false));
  EXPECT_FALSE(graphSupportsLl128(pxn, 80, true));
  EXPECT_STREQ(graphPatternName(GraphPattern::SplitTree), "SPLIT_TREE");
}

}  // namespace
}  // namespace accl
