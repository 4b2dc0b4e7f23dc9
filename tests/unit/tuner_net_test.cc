// The tuner's network term (tuner/tuner_net.h): the chosen NIC's speed and latency in the GPU and
// host models' multi-node predictions, worked out in closed form; one node is unaffected.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tuner/gpu_model.h"
#include "tuner/host_model.h"
#include "tuner/tuner_net.h"

namespace accl {
namespace {

constexpr size_t kMiB = 1 << 20;

TEST(TunerNet, SpeedToGBpsCappedByTheTopology) {
  EXPECT_DOUBLE_EQ(tunerNetGBps(400000, 0), 50.0);
  EXPECT_DOUBLE_EQ(tunerNetGBps(400000, 25.0), 25.0);  // the topology's NET is slower
  EXPECT_DOUBLE_EQ(tunerNetGBps(100000, 50.0), 12.5);  // the device is slower
  EXPECT_DOUBLE_EQ(tunerNetGBps(0, 12.5), 12.5);
  EXPECT_DOUBLE_EQ(tunerNetGBps(0, 0), 0.0);
}

TEST(TunerNet, RanksAgreeOnTheSlowestSpeedAndLargestLatency) {
  TunerNetInfo a{100000, 1.0f}, unknown{0, 0.0f}, b{50000, 2.5f};
  TunerNetInfo agreed = tunerNetAgreed({a, unknown, b});
  EXPECT_EQ(agreed.speedMbps, 50000);
  EXPECT_FLOAT_EQ(agreed.latencyUs, 2.5f);
  EXPECT_EQ(tunerNetAgreed({unknown, unknown}).speedMbps, 0);

  TunerTopo one;
  one.nNodes = 1;
  tunerTopoSetNet(agreed, &one);
  EXPECT_EQ(one.netGBps, 0.0);  // one node: nothing changes
  EXPECT_EQ(one.netLatencyUs, 0.0);
  TunerTopo two;
  two.nNodes = 2;
  tunerTopoSetNet(agreed, &two);
  EXPECT_DOUBLE_EQ(two.netGBps, 6.25);
  EXPECT_DOUBLE_EQ(two.netLatencyUs, 2.5);
}

// 4 ranks on 2 hosts, 1 channel, 4 cores: no oversubscription, so a step is 0.35 us and copies
// run at 3.3 GB/s (host_model.cc).
TunerTopo hostTopo(int nNodes, double netGBps, double netLatencyUs) {
  TunerTopo t;
  t.nRanks = 4;
  t.nNodes = nNodes;
  t.ppn = 4 / nNodes;
  t.netGBps = netGBps;
  t.netLatencyUs = netLatencyUs;
  return t;
}

double hostUs(const TunerTopo& t, int algo, size_t bytes) {
  HostCostModel m(t, 1, 4, nullptr);
  CostTable table;
  m.predict(kFuncAllReduce, bytes, &table);
  return table.us[algo][kProtoSimple];
}

TEST(TunerNet, HostRingAllReduceBandwidthTermFollowsTheNicSpeed) {
  const size_t b = 64 * kMiB;
  const double moved = 2.0 * 3 / 4 * double(b);  // 2(n-1)/n x bytes through each host's NIC
  const double steps = 6 * 0.35;
  // Unknown speed: the copy term alone.
  EXPECT_NEAR(hostUs(hostTopo(2, 0, 0), kAlgoRing, b), steps + moved / 3300.0, 1e-3 * steps + 1);
  // 1 GB/s and 2 GB/s NICs: slower than the copies, so the NIC term counts and halves.
  double slow = hostUs(hostTopo(2, 1.0, 0), kAlgoRing, b);
  double fast = hostUs(hostTopo(2, 2.0, 0), kAlgoRing, b);
  EXPECT_NEAR(slow, steps + moved / 1000.0, slow * 1e-5);
  EXPECT_NEAR(fast, steps + moved / 2000.0, fast * 1e-5);
  EXPECT_NEAR((slow - steps) / (fast - steps), 2.0, 1e-4);
  // A NIC faster than the copies changes nothing.
  EXPECT_FLOAT_EQ(static_cast<float>(hostUs(hostTopo(2, 50.0, 0), kAlgoRing, b)),
                  static_cast<float>(hostUs(hostTopo(2, 0, 0), kAlgoRing, b)));
  // Latency: 2(nNodes - 1) = 2 crossing steps of 5 us.
  EXPECT_NEAR(hostUs(hostTopo(2, 1.0, 5.0), kAlgoRing, b) - slow, 10.0, 0.01);
}

TEST(TunerNet, HostTreeBetweenTwoHostsMovesTheVectorOnceEachWay) {
  const size_t b = 64 * kMiB;
  const double steps = 2.0 * (1 + 1) * 0.35;  // depth = (ppn - 1) + log2(2 nodes)
  EXPECT_NEAR(hostUs(hostTopo(2, 0.5, 0), kAlgoTree, b), steps + double(b) / 500.0, 1.0);
  EXPECT_NEAR(hostUs(hostTopo(2, 0.5, 3.0), kAlgoTree, b) - hostUs(hostTopo(2, 0.5, 0), kAlgoTree, b), 6.0, 0.01);
}

TEST(TunerNet, OneHostIgnoresTheNetwork) {
  for (int algo : {int(kAlgoRing), int(kAlgoTree), kAlgoOneShot})
    for (size_t bytes : {size_t(0), size_t(1), size_t(4099), 1 * kMiB})
      EXPECT_FLOAT_EQ(static_cast<float>(hostUs(hostTopo(1, 0.1, 100.0), algo, bytes)),
                      static_cast<float>(hostUs(hostTopo(1, 0, 0), algo, bytes)))
          << algo << " " << bytes;
}

// DGX H100 across 2 nodes as tuner_gpu_model_test.cc builds it: 16 channels at 24 GB/s.
TunerTopo dgx2(double netGBps, double netLatencyUs) {
  TunerTopo t;
  t.nNodes = 2;
  t.ppn = 8;
  t.nRanks = 16;
  t.host = false;
  t.sm = 90;
  t.cpuVendor = "GenuineIntel";
  t.ll128Supported = true;
  TopoGraph g;
  g.nChannels = 16;
  g.bwIntra = g.bwInter = 24;
  g.typeIntra = kPathNvl;
  g.typeInter = kPathPxb;
  g.pattern = GraphPattern::Ring;
  t.ring = g;
  g.pattern = GraphPattern::BalancedTree;
  t.tree = g;
  t.netGBps = netGBps;
  t.netLatencyUs = netLatencyUs;
  return t;
}

class TunerNetGpu : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("NCCL_NET_OVERHEAD"); }
};

TEST_F(TunerNetGpu, RingBandwidthFollowsASlowNicAndLatencyAddsPerCrossing) {
  double bw0, lat0, bwSlow, latSlow, bwFast, latFast, bwLat, latLat;
  ASSERT_TRUE(GpuCostModel(dgx2(0, 0)).bandwidthAndLatency(kFuncAllReduce, kAlgoRing, kProtoSimple, &bw0, &lat0));
  ASSERT_TRUE(
      GpuCostModel(dgx2(6.25, 0)).bandwidthAndLatency(kFuncAllReduce, kAlgoRing, kProtoSimple, &bwSlow, &latSlow));
  ASSERT_TRUE(
      GpuCostModel(dgx2(12.5, 0)).bandwidthAndLatency(kFuncAllReduce, kAlgoRing, kProtoSimple, &bwFast, &latFast));
  // 16 channels x min(24, NIC) GB/s, times n / nsteps = 16 / 30.
  EXPECT_NEAR(bw0, 16 * 24.0 * 16 / 30, 1e-9);
  EXPECT_NEAR(bwSlow, 16 * 6.25 * 16 / 30, 1e-9);
  EXPECT_NEAR(bwFast / bwSlow, 2.0, 1e-12);  // the bandwidth term halves when the speed doubles
  EXPECT_DOUBLE_EQ(latSlow, lat0);
  // A 400G NIC (50 GB/s) is faster than the searched 24 GB/s channels: nothing changes.
  double bw50, lat50;
  ASSERT_TRUE(GpuCostModel(dgx2(50, 0)).bandwidthAndLatency(kFuncAllReduce, kAlgoRing, kProtoSimple, &bw50, &lat50));
  EXPECT_DOUBLE_EQ(bw50, bw0);
  // NIC latency 3 us: Simple pays it twice per crossing (send + receive flush), 2 crossings.
  ASSERT_TRUE(GpuCostModel(dgx2(0, 3.0)).bandwidthAndLatency(kFuncAllReduce, kAlgoRing, kProtoSimple, &bwLat, &latLat));
  EXPECT_NEAR(latLat - lat0, 2 * 2 * 3.0, 1e-9);
  ASSERT_TRUE(GpuCostModel(dgx2(0, 3.0)).bandwidthAndLatency(kFuncAllReduce, kAlgoRing, kProtoLL, &bwLat, &latLat));
  ASSERT_TRUE(GpuCostModel(dgx2(0, 0)).bandwidthAndLatency(kFuncAllReduce, kAlgoRing, kProtoLL, &bw0, &lat0));
  EXPECT_NEAR(latLat - lat0, 2 * 3.0, 1e-9);

  // The whole prediction at 1 GiB moves with it: the bandwidth part doubles on the slower NIC.
  CostTable slowT, fastT;
  GpuCostModel(dgx2(6.25, 0)).predict(kFuncAllReduce, 1024 * kMiB, &slowT);
  GpuCostModel(dgx2(12.5, 0)).predict(kFuncAllReduce, 1024 * kMiB, &fastT);
  EXPECT_GT(slowT.us[kAlgoRing][kProtoSimple], fastT.us[kAlgoRing][kProtoSimple] * 1.9);
}

TEST_F(TunerNetGpu, OneNodeIgnoresTheNetwork) {
  TunerTopo t = dgx2(1.0, 50.0);
  t.nNodes = 1;
  t.nRanks = 8;
  TunerTopo base = t;
  base.netGBps = base.netLatencyUs = 0;
  CostTable a, b;
  GpuCostModel(t).predict(kFuncAllReduce, 64 * kMiB, &a);
  GpuCostModel(base).predict(kFuncAllReduce, 64 * kMiB, &b);
  for (int al = 0; al < kNumTunerAlgos; ++al)
    for (int p = 0; p < kNumProtos; ++p) EXPECT_EQ(a.us[al][p], b.us[al][p]) << al << " " << p;
}

}  // namespace
}  // namespace accl
