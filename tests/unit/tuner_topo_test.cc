// tunerTopoFromSystem on the topology fixtures: ranks per node, compute capability, CPU vendor,
// the searched graphs, LL128 support, and the host fallback for a machine without GPUs; plus
// the GPU model's end-to-end choices on the searched DGX H100 graphs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "topo/system.h"
#include "topo/xml.h"
#include "tuner/gpu_model.h"
#include "tuner/tuner.h"
#include "topo_test_util.h"
#include "util/last_error.h"

namespace accl {
namespace {

namespace fs = std::filesystem;

using topotest::dataDir;

std::unique_ptr<TopoSystem> loadSystem(const char* name) {
  std::unique_ptr<XmlNode> root;
  std::string path = (dataDir() / name).string();
  EXPECT_EQ(xmlLoadFile(path.c_str(), &root), ncclSuccess) << lastErrorText();
  std::unique_ptr<TopoSystem> s;
  if (root) EXPECT_EQ(TopoSystem::fromXml(*root, TopoPolicy(), &s), ncclSuccess) << lastErrorText();
  return s;
}

TEST(TunerTopo, DgxH100OneAndTwoNodes) {
  auto s = loadSystem("dgx_h100.xml");
  ASSERT_TRUE(s);
  TunerTopo one;
  ASSERT_EQ(tunerTopoFromSystem(*s, 8, 1, false, &one), ncclSuccess);
  EXPECT_FALSE(one.host);
  EXPECT_EQ(one.nRanks, 8);
  EXPECT_EQ(one.ppn, 8);
  EXPECT_EQ(one.sm, 90);
  EXPECT_EQ(one.cpuVendor, "GenuineIntel");
  EXPECT_TRUE(one.ll128Supported);
  EXPECT_GT(one.ring.nChannels, 0);
  EXPECT_GT(one.tree.nChannels, 0);
  EXPECT_EQ(one.ring.typeIntra, kPathNvl);
  EXPECT_EQ(one.ring.typeInter, kPathLoc);
  EXPECT_EQ(one.ring.pattern, GraphPattern::Ring);
  EXPECT_NE(one.tree.pattern, GraphPattern::Ring);

  TunerTopo two;
  ASSERT_EQ(tunerTopoFromSystem(*s, 16, 2, false, &two), ncclSuccess);
  EXPECT_EQ(two.ppn, 8);
  EXPECT_GT(two.ring.bwInter, 0);
  EXPECT_LE(two.ring.typeInter, kPathPxb);
  EXPECT_TRUE(two.ll128Supported);

  // Uneven shapes: the largest node counts.
  TunerTopo odd;
  ASSERT_EQ(tunerTopoFromSystem(*s, 12, 2, false, &odd), ncclSuccess);
  EXPECT_EQ(odd.ppn, 6);
  TunerTopo odd3;
  ASSERT_EQ(tunerTopoFromSystem(*s, 7, 3, false, &odd3), ncclSuccess);
  EXPECT_EQ(odd3.ppn, 3);
  EXPECT_EQ(tunerTopoFromSystem(*s, 2, 3, false, &odd3), ncclInvalidArgument);
}

TEST(TunerTopo, HostWhenAskedOrWithoutGpus) {
  auto cpu = loadSystem("cpu_only.xml");
  ASSERT_TRUE(cpu);
  TunerTopo t;
  ASSERT_EQ(tunerTopoFromSystem(*cpu, 4, 1, false, &t), ncclSuccess);
  EXPECT_TRUE(t.host);
  EXPECT_EQ(t.sm, 0);
  EXPECT_FALSE(t.ll128Supported);
  auto dgx = loadSystem("dgx_h100.xml");
  ASSERT_TRUE(dgx);
  ASSERT_EQ(tunerTopoFromSystem(*dgx, 8, 1, true, &t), ncclSuccess);
  EXPECT_TRUE(t.host);
  EXPECT_FALSE(t.ll128Supported);
}

TEST(TunerTopo, PcieMachineHasNoLL128ByDefault) {
  // 8 PCIe GPUs on two sockets: rings cross the CPUs (typeIntra > NVB).
  auto s = loadSystem("pcie_8gpu_2socket.xml");
  ASSERT_TRUE(s);
  TunerTopo t;
  ASSERT_EQ(tunerTopoFromSystem(*s, 8, 1, false, &t), ncclSuccess);
  EXPECT_GT(t.ring.typeIntra, kPathNvb);
  EXPECT_FALSE(t.ll128Supported);
}

TEST(TunerTopo, SearchedDgxChoicesArePlausible) {
  setenv("NCCL_TUNER_PLUGIN", "none", 1);
  auto s = loadSystem("dgx_h100.xml");
  ASSERT_TRUE(s);
  for (int nodes : {1, 2}) {
    TunerTopo topo;
    ASSERT_EQ(tunerTopoFromSystem(*s, 8 * nodes, nodes, false, &topo), ncclSuccess);
    std::unique_ptr<Tuner> tuner;
    ASSERT_EQ(Tuner::create(topo, std::make_unique<GpuCostModel>(topo), defaultAlgoProtoFilter(), 7, &tuner),
              ncclSuccess);
    TunerChoice c;
    ASSERT_EQ(tuner->choose(kFuncAllReduce, 8, &c), ncclSuccess);
    EXPECT_EQ(c.proto, kProtoLL);
    ASSERT_EQ(tuner->choose(kFuncAllReduce, size_t(1) << 30, &c), ncclSuccess);
    EXPECT_NE(c.proto, kProtoLL);
    EXPECT_EQ(c.algo, kAlgoRing);
    if (nodes == 2) {
      // The tree wins in the middle sizes across nodes, without LL128 (issue 18 fault 3: the
      // network carries no LL128), from 2 MiB on Simple.
      ASSERT_EQ(tuner->choose(kFuncAllReduce, 2 << 20, &c), ncclSuccess);
      EXPECT_EQ(c.algo, kAlgoTree);
      for (size_t bytes = 8; bytes <= (size_t(1) << 30); bytes *= 2) {
        ASSERT_EQ(tuner->choose(kFuncAllReduce, bytes, &c), ncclSuccess);
        EXPECT_NE(c.proto, kProtoLL128) << bytes;
      }
    }
  }
  unsetenv("NCCL_TUNER_PLUGIN");
}

}  // namespace
}  // namespace accl
