// Unit tests for topology discovery: probing this machine, NCCL_TOPO_FILE (fixtures come back
// unchanged but for host_hash; missing / malformed files are ncclInvalidUsage naming the path),
// NCCL_TOPO_DUMP_FILE on the matching rank only, bus id spelling, and how a PCI device's
// switches are collapsed into the XML chain.
#include "topo/discover.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "device/device_probe.h"
#include "support/scoped_env.h"
#include "topo/discover_internal.h"
#include "topo_test_util.h"
#include "util/last_error.h"

namespace accl {
namespace {

namespace fs = std::filesystem;

using topotest::dataDir;

using topotest::kFixtures;

fs::path tempPath(const std::string& stem) {
  return fs::temp_directory_path() / (stem + "." + std::to_string(getpid()) + ".xml");
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Every <pci> in the tree leads to a GPU or NIC.
bool allPciKept(const XmlNode& n) {
  for (const auto& c : n.children()) {
    if (c->name() == "pci" && c->findFirst("gpu") == nullptr && c->findFirst("nic") == nullptr) return false;
    if (!allPciKept(*c)) return false;
  }
  return true;
}

TEST(TopoDiscover, ProbesThisMachine) {
  test::ScopedEnvVar file("NCCL_TOPO_FILE", nullptr);
  test::ScopedEnvVar host("NCCL_HOSTID", "accl-discover-test");
  DiscoverOptions opts;
  std::unique_ptr<XmlNode> xml;
  ASSERT_EQ(topoDiscoverXml(&opts, &xml), ncclSuccess) << lastErrorText();
  ASSERT_NE(xml, nullptr);
  EXPECT_EQ(xml->name(), "system");
  EXPECT_EQ(xml->attrOr("version", ""), "1");
  std::vector<XmlNode*> cpus = xml->childrenNamed("cpu");
  ASSERT_GE(cpus.size(), 1u);
  for (XmlNode* cpu : cpus) {
    EXPECT_TRUE(cpu->hasAttr("numaid")) << cpu->path();
    EXPECT_EQ(cpu->attrOr("host_hash", ""), hex(fnv1a("accl-discover-test"))) << cpu->path();
    EXPECT_FALSE(cpu->attrOr("arch", "").empty()) << cpu->path();
  }
  EXPECT_TRUE(allPciKept(*xml)) << xmlToString(*xml);
  // Every NET has the attributes the graph needs, and dev numbers are 0..n-1.
  std::vector<XmlNode*> nets = xml->findAll("net");
  for (size_t i = 0; i < nets.size(); ++i) {
    EXPECT_EQ(nets[i]->attrOr("dev", ""), std::to_string(i));
    int64_t speed = 0;
    EXPECT_EQ(nets[i]->getInt("speed", &speed), ncclSuccess);
    EXPECT_GT(speed, 0);
    EXPECT_EQ(nets[i]->ancestor("nic") != nullptr, true);
  }
  if (cudaDeviceCount() == 0) {
    EXPECT_EQ(xml->findFirst("gpu"), nullptr);
    bool gpuNote = false;
    for (const std::string& n : opts.notes) gpuNote |= n.find("GPU") != std::string::npos;
    EXPECT_TRUE(gpuNote) << "discovery without GPUs should say why";
  }
  // The result is valid input for the reader (round trip through text).
  std::unique_ptr<XmlNode> again;
  ASSERT_EQ(xmlParse(xmlToString(*xml), "probe", &again), ncclSuccess) << lastErrorText();
  EXPECT_TRUE(xmlEqual(*xml, *again));
}

TEST(TopoDiscover, DisabledProbesAreNoted) {
  test::ScopedEnvVar file("NCCL_TOPO_FILE", nullptr);
  DiscoverOptions opts;
  opts.probeGpus = false;
  opts.probeNics = false;
  std::unique_ptr<XmlNode> xml;
  ASSERT_EQ(topoDiscoverXml(&opts, &xml), ncclSuccess) << lastErrorText();
  EXPECT_EQ(xml->findFirst("pci"), nullptr) << xmlToString(*xml);
  EXPECT_GE(xml->childrenNamed("cpu").size(), 1u);
  int disabled = 0;
  for (const std::string& n : opts.notes) disabled += n.find("disabled") != std::string::npos;
  EXPECT_EQ(disabled, 2);
}

TEST(TopoDiscover, TopoFileReturnsFixtureWithHostHash) {
  test::ScopedEnvVar host("NCCL_HOSTID", "node-17");
  const std::string expectHash = hex(fnv1a("node-17"));
  for (const std::string& name : kFixtures) {
    SCOPED_TRACE(name);
    std::string path = (dataDir() / name).string();
    test::ScopedEnvVar file("NCCL_TOPO_FILE", path.c_str());
    DiscoverOptions opts;
    std::unique_ptr<XmlNode> xml;
    ASSERT_EQ(topoDiscoverXml(&opts, &xml), ncclSuccess) << lastErrorText();
    std::unique_ptr<XmlNode> fixture;
    ASSERT_EQ(xmlLoadFile(path.c_str(), &fixture), ncclSuccess);
    std::vector<XmlNode*> cpus = xml->childrenNamed("cpu");
    ASSERT_FALSE(cpus.empty());
    for (XmlNode* cpu : cpus) EXPECT_EQ(cpu->attrOr("host_hash", ""), expectHash);
    // Apart from host_hash (rewritten in place), the tree is the fixture's.
    for (XmlNode* cpu : fixture->childrenNamed("cpu")) cpu->setAttr("host_hash", expectHash);
    EXPECT_EQ(xmlFirstDifference(*fixture, *xml), "");
    // A different host identity gives a different hash.
    test::ScopedEnvVar other("NCCL_HOSTID", "node-18");
    ASSERT_EQ(topoDiscoverXml(&opts, &xml), ncclSuccess);
    EXPECT_EQ(xml->firstChild("cpu")->attrOr("host_hash", ""), hex(fnv1a("node-18")));
  }
}

TEST(TopoDiscover, MissingTopoFileIsInvalidUsageNamingIt) {
  std::string path = tempPath("accl-no-such-topology").string();
  std::remove(path.c_str());
  test::ScopedEnvVar file("NCCL_TOPO_FILE", path.c_str());
  std::unique_ptr<XmlNode> xml;
  EXPECT_EQ(topoDiscoverXml(nullptr, &xml), ncclInvalidUsage);
  EXPECT_NE(std::string(lastErrorText()).find(path), std::string::npos) << lastErrorText();
  EXPECT_EQ(xml, nullptr);
}

TEST(TopoDiscover, MalformedTopoFileIsInvalidUsageNamingIt) {
  struct Case {
    const char* text;
    const char* expect;  // also in the message
  };
  const Case cases[] = {
      {"<system version=\"1\">\n  <cpu numaid=\"0\">\n</system>\n", "line"},
      {"<graphs version=\"1\"/>\n", "<graphs>"},
      {"", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    fs::path path = tempPath("accl-bad-topology");
    {
      std::ofstream out(path);
      out << c.text;
    }
    test::ScopedEnvVar file("NCCL_TOPO_FILE", path.c_str());
    std::unique_ptr<XmlNode> xml;
    EXPECT_EQ(topoDiscoverXml(nullptr, &xml), ncclInvalidUsage);
    std::string err = lastErrorText();
    EXPECT_NE(err.find(path.string()), std::string::npos) << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
    fs::remove(path);
  }
}

TEST(TopoDiscover, DumpFileWrittenByMatchingRankOnly) {
  std::string fixture = (dataDir() / "pcie_8gpu_2socket.xml").string();
  fs::path dump = tempPath("accl-topo-dump");
  fs::remove(dump);
  test::ScopedEnvVar file("NCCL_TOPO_FILE", fixture.c_str());
  test::ScopedEnvVar dumpFile("NCCL_TOPO_DUMP_FILE", dump.c_str());
  test::ScopedEnvVar dumpRank("NCCL_TOPO_DUMP_FILE_RANK", "2");
  std::unique_ptr<TopoSystem> system;
  for (int rank : {-1, 0, 1, 3}) {
    ASSERT_EQ(topoGetSystem(rank, &system), ncclSuccess) << lastErrorText();
    EXPECT_FALSE(fs::exists(dump)) << "rank " << rank << " must not dump";
  }
  ASSERT_EQ(topoGetSystem(2, &system), ncclSuccess) << lastErrorText();
  ASSERT_TRUE(fs::exists(dump));
  std::unique_ptr<XmlNode> dumped, expected;
  ASSERT_EQ(xmlLoadFile(dump.c_str(), &dumped), ncclSuccess) << lastErrorText();
  ASSERT_EQ(topoDiscoverXml(nullptr, &expected), ncclSuccess);
  EXPECT_EQ(xmlFirstDifference(*expected, *dumped), "");
  ASSERT_NE(system->xml, nullptr);
  EXPECT_EQ(xmlFirstDifference(*expected, *system->xml), "");
  EXPECT_EQ(system->count(TopoNodeType::Gpu), 8);
  fs::remove(dump);

  // The default dump rank is 0.
  test::ScopedEnvVar defaultRank("NCCL_TOPO_DUMP_FILE_RANK", nullptr);
  ASSERT_EQ(topoGetSystem(0, &system), ncclSuccess) << lastErrorText();
  EXPECT_TRUE(fs::exists(dump));
  fs::remove(dump);
}

TEST(TopoDiscover, NormalizesBusIds) {
  EXPECT_EQ(normalizeBusId("00000000:C4:00.0"), "0000:c4:00.0");
  EXPECT_EQ(normalizeBusId("0000:1A:00.1"), "0000:1a:00.1");
  EXPECT_EQ(normalizeBusId("17:00.0"), "0000:17:00.0");
  EXPECT_EQ(normalizeBusId("0001:02:1f.7"), "0001:02:1f.7");
  EXPECT_EQ(normalizeBusId("virtio2"), "");
  EXPECT_EQ(normalizeBusId("0000:00:20.0"), "");  // device number > 31
  EXPECT_EQ(normalizeBusId("0000:17:00.0x"), "");
  EXPECT_EQ(normalizeBusId("0000:17:0x0.0"), "");
  EXPECT_EQ(normalizeBusId("fffffff:ffff:ff"), "");  // NCCL's placeholder NVSwitch target
  EXPECT_EQ(normalizeBusId("10000:e1:00.0"), "10000:e1:00.0");  // VMD domains are wider than 16 bits
  EXPECT_TRUE(isSysfsBusId("0000:00:03.0"));
  EXPECT_FALSE(isSysfsBusId("pci0000:00"));
  EXPECT_FALSE(isSysfsBusId("virtio2"));
  EXPECT_FALSE(isSysfsBusId("17:00.0"));
}

HostPciDevice pciDev(const std::string& bus, const std::string& parent, uint32_t cls, int numa = -1) {
  HostPciDevice d;
  d.busId = bus;
  d.parent = parent;
  d.classCode = cls;
  d.numaId = numa;
  d.vendor = 0x10de;
  d.linkSpeed = "32.0 GT/s PCIe";
  d.linkWidth = 16;
  return d;
}

TEST(TopoDiscover, PciChainCollapsesSwitchPortsAndPicksTheCpu) {
  HostTopology host;
  host.cpus.resize(2);
  host.cpus[0].numaId = 0;
  host.cpus[1].numaId = 1;
  // numa 1: root port 80:01.0 > switch upstream 81:00.0 > downstream 82:00.0 / 82:01.0 > GPU, NIC
  for (const HostPciDevice& d :
       {pciDev("0000:80:01.0", "", 0x060400, 1), pciDev("0000:81:00.0", "0000:80:01.0", 0x060400, 1),
        pciDev("0000:82:00.0", "0000:81:00.0", 0x060400, 1), pciDev("0000:82:01.0", "0000:81:00.0", 0x060400, 1),
        pciDev("0000:83:00.0", "0000:82:00.0", 0x030200, 1), pciDev("0000:84:00.0", "0000:82:01.0", 0x020700, 1),
        // numa unknown, straight on the root bus (a VM)
        pciDev("0000:00:03.0", "", 0x020000, -1)})
    host.pci[d.busId] = d;

  XmlNode system("system");
  for (int n : {0, 1}) system.addChild("cpu").setAttrInt("numaid", n);
  XmlNode* gpu = pciNodeFor(&system, host, "0000:83:00.0", 0);
  XmlNode* nic = pciNodeFor(&system, host, "0000:84:00.0", 0);
  XmlNode* vnic = pciNodeFor(&system, host, "0000:00:03.0", 0);
  XmlNode* unknown = pciNodeFor(&system, host, "0000:99:00.0", 0x030000);
  ASSERT_NE(gpu->parent(), nullptr);
  EXPECT_EQ(gpu->parent(), nic->parent());
  XmlNode* sw = gpu->parent();
  EXPECT_EQ(sw->attrOr("busid", ""), "0000:81:00.0");
  EXPECT_EQ(sw->attrOr("class", ""), "0x060400");
  EXPECT_EQ(sw->parent()->attrOr("numaid", ""), "1");
  EXPECT_EQ(gpu->attrOr("class", ""), "0x030200");
  EXPECT_EQ(gpu->attrOr("vendor", ""), "0x10de");
  EXPECT_EQ(gpu->attrOr("link_speed", ""), "32.0 GT/s PCIe");
  EXPECT_EQ(gpu->attrOr("link_width", ""), "16");
  EXPECT_EQ(vnic->parent()->attrOr("numaid", ""), "0");
  EXPECT_EQ(unknown->parent()->attrOr("numaid", ""), "0");
  EXPECT_EQ(unknown->attrOr("class", ""), "0x030000");
  // Asking again returns the same node.
  EXPECT_EQ(pciNodeFor(&system, host, "0000:83:00.0", 0), gpu);

  // Trim keeps only branches with devices: give the GPU one, leave the others empty.
  gpu->addChild("gpu");
  trimPciWithoutDevices(&system);
  EXPECT_EQ(system.findAll("pci").size(), 2u) << xmlToString(system);
  EXPECT_EQ(system.childrenNamed("cpu").size(), 2u);
}

}  // namespace
}  // namespace accl
