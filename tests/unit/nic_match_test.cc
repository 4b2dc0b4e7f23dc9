// topoClosestNic (topo/nic_match.h): which of a network's devices a rank uses, on the DGX H100
// fixture (4 PCIe switches, each with 2 GPUs and 2 400G NICs: GPUs 2k and 2k+1 with mlx5_2k and
// mlx5_2k+1; switches 0-1 on NUMA node 0, 2-3 on node 1). The network lists its devices in an
// order of its own: the choice must follow the topology, not the list.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topo/nic_match.h"
#include "topo_test_util.h"
#include "transports/net/net_device.h"

namespace accl {
namespace {

using topotest::load;

const char* const kNicBus[8] = {"0000:12:00.0", "0000:22:00.0", "0000:42:00.0", "0000:52:00.0",
                                "0000:92:00.0", "0000:a2:00.0", "0000:c2:00.0", "0000:d2:00.0"};
const char* const kSwitchBus[8] = {"0000:10:00.0", "0000:10:00.0", "0000:40:00.0", "0000:40:00.0",
                                   "0000:90:00.0", "0000:90:00.0", "0000:c0:00.0", "0000:c0:00.0"};

// Fake properties of the fixture's NICs as a network would report them, listed in `order`.
std::vector<NetProperties> fakeDevices(const std::vector<int>& order) {
  std::vector<NetProperties> out;
  for (int i : order) {
    NetProperties p;
    p.name = "mlx5_" + std::to_string(i) + ":1";
    p.pciPath = std::string("/sys/devices/pci") + std::string(kSwitchBus[i]).substr(0, 7) + "/" + kSwitchBus[i] +
                "/" + kNicBus[i];
    p.speedMbps = 400000;
    out.push_back(p);
  }
  return out;
}

std::vector<NicCandidate> candidates(const std::vector<NetProperties>& props) {
  std::vector<NicCandidate> out;
  for (const NetProperties& p : props) out.push_back({p.name, p.pciPath});
  return out;
}

TEST(NicMatch, BusIdOfSysfsPath) {
  EXPECT_EQ(pciBusIdOfPath("/sys/devices/pci0000:10/0000:10:00.0/0000:12:00.0"), "0000:12:00.0");
  EXPECT_EQ(pciBusIdOfPath("/sys/devices/pci0000:a0/0000:A2:00.1/"), "0000:a2:00.1");
  EXPECT_EQ(pciBusIdOfPath("0000:12:00.0"), "0000:12:00.0");
  EXPECT_EQ(pciBusIdOfPath(""), "");
  EXPECT_EQ(pciBusIdOfPath("/sys/devices/virtual/net/veth0"), "");
}

TEST(NicMatch, GpusOfOneSwitchShareItsTwoNicsWhateverTheListOrder) {
  auto sys = load("dgx_h100.xml");
  ASSERT_TRUE(sys);
  const std::vector<std::vector<int>> orders = {
      {0, 1, 2, 3, 4, 5, 6, 7}, {7, 6, 5, 4, 3, 2, 1, 0}, {3, 7, 0, 5, 1, 6, 2, 4}};
  for (const auto& order : orders) {
    std::vector<NetProperties> devs = fakeDevices(order);
    for (int gpu = 0; gpu < 8; ++gpu) {
      NicMatch m = topoClosestNic(*sys, gpu, -1, gpu, candidates(devs));
      ASSERT_GE(m.device, 0) << "gpu " << gpu;
      EXPECT_EQ(devs[m.device].name, "mlx5_" + std::to_string(gpu) + ":1") << "gpu " << gpu;
      EXPECT_EQ(m.pathType, kPathPix) << "gpu " << gpu;
      EXPECT_DOUBLE_EQ(m.topoGBps, 50.0);  // 400000 Mb/s / 8000
    }
  }
}

TEST(NicMatch, WithoutAGpuTheFirstNicOfTheRanksNumaNodeWins) {
  auto sys = load("dgx_h100.xml");
  ASSERT_TRUE(sys);
  std::vector<NetProperties> devs = fakeDevices({6, 5, 4, 7, 1, 0, 3, 2});
  NicMatch m = topoClosestNic(*sys, -1, 1, 0, candidates(devs));
  ASSERT_GE(m.device, 0);
  EXPECT_EQ(devs[m.device].name, "mlx5_4:1");  // NICs 4-7 all PHB from CPU 1: the first for rank 0
  EXPECT_EQ(m.pathType, kPathPhb);
  m = topoClosestNic(*sys, -1, 1, 5, candidates(devs));  // local rank 5 of a node: 5 % 4 = 1
  ASSERT_GE(m.device, 0);
  EXPECT_EQ(devs[m.device].name, "mlx5_5:1");
  m = topoClosestNic(*sys, -1, 0, 0, candidates(devs));
  ASSERT_GE(m.device, 0);
  EXPECT_EQ(devs[m.device].name, "mlx5_0:1");
  // A GPU the topology does not have: its NUMA node decides.
  m = topoClosestNic(*sys, 42, 1, 0, candidates(devs));
  ASSERT_GE(m.device, 0);
  EXPECT_EQ(devs[m.device].name, "mlx5_4:1");
}

TEST(NicMatch, OnlyFarNicsListedGivesTheNearestOfThose) {
  auto sys = load("dgx_h100.xml");
  ASSERT_TRUE(sys);
  std::vector<NetProperties> devs = fakeDevices({7, 4});  // GPU 0's own switch has none offered
  NicMatch m = topoClosestNic(*sys, 0, -1, 0, candidates(devs));
  ASSERT_GE(m.device, 0);
  EXPECT_EQ(devs[m.device].name, "mlx5_4:1");  // same path type to both: lower NET dev
  EXPECT_GT(m.pathType, kPathPxb);
}

TEST(NicMatch, NoDeviceOnATopologyNicMeansNoMatch) {
  auto sys = load("dgx_h100.xml");
  ASSERT_TRUE(sys);
  std::vector<NetProperties> devs = fakeDevices({0, 1});
  devs[0].pciPath = "";                                                   // virtual interface
  devs[1].pciPath = "/sys/devices/pci0000:00/0000:00:1f.6";               // not in the topology
  EXPECT_EQ(topoClosestNic(*sys, 0, -1, 0, candidates(devs)).device, -1);
  EXPECT_EQ(topoClosestNic(*sys, 0, -1, 0, {}).device, -1);
  auto cpuOnly = load("cpu_only.xml");
  ASSERT_TRUE(cpuOnly);
  EXPECT_EQ(topoClosestNic(*cpuOnly, -1, 0, 0, candidates(fakeDevices({0}))).device, -1);
}

TEST(NicMatch, CpuOnlyHostFindsItsOneNicFromEitherSocket) {
  auto sys = load("cpu_only.xml");
  ASSERT_TRUE(sys);
  std::vector<NicCandidate> devs = {{"lo", ""}, {"eth0", "/sys/devices/pci0000:30/0000:30:02.0/0000:31:00.0"}};
  NicMatch m = topoClosestNic(*sys, -1, 0, 0, devs);
  EXPECT_EQ(m.device, 1);
  EXPECT_EQ(m.pathType, kPathPhb);
  EXPECT_DOUBLE_EQ(m.topoGBps, 12.5);  // 100000 Mb/s
  m = topoClosestNic(*sys, -1, 1, 1, devs);
  EXPECT_EQ(m.device, 1);
  EXPECT_EQ(m.pathType, kPathSys);
}

TEST(NicMatch, PortsOfOneNicArePickedByName) {
  auto sys = load("dgx_h100.xml");
  ASSERT_TRUE(sys);
  std::vector<NicCandidate> devs = {{"other", "/sys/devices/pci0000:10/0000:10:00.0/0000:12:00.0"},
                                    {"mlx5_0:1", "/sys/devices/pci0000:10/0000:10:00.0/0000:12:00.0"}};
  EXPECT_EQ(topoClosestNic(*sys, 0, -1, 0, devs).device, 1);
  devs[1].name = "eth2";  // no name matches: the first device on that NIC
  EXPECT_EQ(topoClosestNic(*sys, 0, -1, 0, devs).device, 0);
}

}  // namespace
}  // namespace accl
