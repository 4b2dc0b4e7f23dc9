// Unit tests for topo/system: the graph built from each fixture (nodes, links, NCCL's bandwidth
// constants), the XML round trip, malformed input, and the policy read from the environment.
#include "topo/system.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <string>

#include "topo_test_util.h"

namespace accl {
namespace {

using topotest::build;
using topotest::load;
using topotest::loadXml;
using topotest::nicByBus;

using topotest::kFixtures;

double linkBw(const TopoSystem& s, int from, int to, TopoLinkType type) {
  for (const TopoLink& l : s.nodes[from].links) {
    if (l.remote == to && l.type == type) return l.bw;
  }
  return -1;
}

int nvswitch(const TopoSystem& s) {
  auto v = s.nodesOf(TopoNodeType::Nvs);
  return v.empty() ? -1 : v[0];
}

TEST(TopoSystem, NodeCountsPerFixture) {
  struct Want {
    const char* file;
    int gpu, pci, nvs, cpu, nic, net;
  };
  const Want wants[] = {
      {"dgx_h100.xml", 8, 4, 1, 2, 8, 8},
      {"pcie_8gpu_2socket.xml", 8, 4, 0, 2, 2, 2},
      {"a100_4gpu_nvlink.xml", 4, 0, 0, 1, 1, 1},
      {"gh200.xml", 1, 0, 0, 1, 1, 1},
      {"cpu_only.xml", 0, 0, 0, 2, 1, 1},
  };
  for (const Want& w : wants) {
    auto s = load(w.file);
    ASSERT_TRUE(s) << w.file;
    EXPECT_EQ(s->count(TopoNodeType::Gpu), w.gpu) << w.file;
    EXPECT_EQ(s->count(TopoNodeType::Pci), w.pci) << w.file;
    EXPECT_EQ(s->count(TopoNodeType::Nvs), w.nvs) << w.file;
    EXPECT_EQ(s->count(TopoNodeType::Cpu), w.cpu) << w.file;
    EXPECT_EQ(s->count(TopoNodeType::Nic), w.nic) << w.file;
    EXPECT_EQ(s->count(TopoNodeType::Net), w.net) << w.file;
  }
}

TEST(TopoSystem, DgxH100Bandwidths) {
  auto s = load("dgx_h100.xml");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->maxSm(), 90);
  EXPECT_EQ(s->cpuVendor(), "GenuineIntel");
  const int g0 = s->gpuByDev(0);
  ASSERT_GE(g0, 0);
  EXPECT_EQ(s->nodes[g0].label, "0000:18:00.0");
  EXPECT_EQ(s->nodes[g0].id, 0x18000u);  // the hex digits of 0000:18:00.0
  EXPECT_EQ(s->nodes[g0].rank, 0);
  EXPECT_TRUE(s->nodes[g0].gdr);
  // 18 NVLinks x 20.6 GB/s to the (single) NVSwitch, both ways.
  const int nvs = nvswitch(*s);
  ASSERT_GE(nvs, 0);
  EXPECT_NEAR(linkBw(*s, g0, nvs, TopoLinkType::Nvl), 18 * 20.6, 1e-9);
  EXPECT_NEAR(linkBw(*s, nvs, g0, TopoLinkType::Nvl), 18 * 20.6, 1e-9);
  EXPECT_EQ(s->nodes[nvs].links.size(), 8u);
  // Gen5 x16 = 32 GT/s * 16 lanes: 16 * 240 / 80 = 48 GB/s. Links are sorted widest first.
  ASSERT_EQ(s->nodes[g0].links.size(), 2u);
  EXPECT_EQ(s->nodes[g0].links[0].type, TopoLinkType::Nvl);
  EXPECT_EQ(s->nodes[g0].links[1].type, TopoLinkType::Pci);
  EXPECT_NEAR(s->nodes[g0].links[1].bw, 48.0, 1e-9);
  EXPECT_EQ(s->nodes[s->nodes[g0].links[1].remote].label, "0000:10:00.0");
  // Sapphire Rapids (family 6, model 143): 22 GB/s between sockets.
  auto cpus = s->nodesOf(TopoNodeType::Cpu);
  EXPECT_NEAR(linkBw(*s, cpus[0], cpus[1], TopoLinkType::Sys), 22.0, 1e-9);
  // 400 Gb/s ports: 50 GB/s on the NIC -> NET link.
  const int net3 = s->netByDev(3);
  ASSERT_GE(net3, 0);
  EXPECT_EQ(s->nodes[net3].label, "mlx5_3");
  EXPECT_NEAR(s->nodes[net3].netBw, 50.0, 1e-9);
  EXPECT_EQ(s->nodes[net3].guid, 0x9c63c00300a4003eull);
  EXPECT_EQ(s->nodes[net3].maxConn, 131072);
  const int nic3 = nicByBus(*s, "0000:52:00.0");
  ASSERT_GE(nic3, 0);
  EXPECT_NEAR(linkBw(*s, nic3, net3, TopoLinkType::Net), 50.0, 1e-9);
  EXPECT_NEAR(linkBw(*s, net3, nic3, TopoLinkType::Net), 50.0, 1e-9);
}

TEST(TopoSystem, OtherFixtureBandwidths) {
  {
    auto s = load("a100_4gpu_nvlink.xml");
    ASSERT_TRUE(s);
    // 4 NVLinks x 20 GB/s (sm80) per pair, declared by each side.
    for (int a = 0; a < 4; a++) {
      for (int b = 0; b < 4; b++) {
        if (a != b) {
          EXPECT_NEAR(linkBw(*s, s->gpuByDev(a), s->gpuByDev(b), TopoLinkType::Nvl), 80.0, 1e-9);
        }
      }
    }
    EXPECT_NEAR(s->nodes[s->netByDev(0)].netBw, 25.0, 1e-9);  // 200 Gb/s
  }
  {
    auto s = load("pcie_8gpu_2socket.xml");
    ASSERT_TRUE(s);
    auto cpus = s->nodesOf(TopoNodeType::Cpu);
    EXPECT_NEAR(linkBw(*s, cpus[0], cpus[1], TopoLinkType::Sys), 16.0, 1e-9);  // AMD
    EXPECT_NEAR(s->nodes[s->gpuByDev(5)].links[0].bw, 24.0, 1e-9);            // Gen4 x16
    EXPECT_EQ(s->maxSm(), 89);
    EXPECT_EQ(s->cpuVendor(), "AuthenticAMD");
  }
  {
    auto s = load("gh200.xml");
    ASSERT_TRUE(s);
    const int g = s->gpuByDev(0);
    const int cpu = s->nodesOf(TopoNodeType::Cpu)[0];
    EXPECT_NEAR(linkBw(*s, g, cpu, TopoLinkType::C2c), 45000.0 * 10 / 1000, 1e-9);
    EXPECT_NEAR(linkBw(*s, cpu, g, TopoLinkType::C2c), 450.0, 1e-9);
    EXPECT_NEAR(linkBw(*s, g, cpu, TopoLinkType::Pci), 48.0, 1e-9);
    EXPECT_EQ(s->cpuVendor(), "");
  }
  {
    auto s = load("cpu_only.xml");
    ASSERT_TRUE(s);
    auto cpus = s->nodesOf(TopoNodeType::Cpu);
    EXPECT_NEAR(linkBw(*s, cpus[0], cpus[1], TopoLinkType::Sys), 10.0, 1e-9);  // Ice Lake: Skylake class
    EXPECT_EQ(s->nodes[cpus[1]].hostHash, 0x7b24c9e1d0a35f68ull);
    EXPECT_EQ(s->maxSm(), 0);
    EXPECT_EQ(s->gpuByDev(0), -1);
    EXPECT_EQ(s->netByDev(1), -1);
  }
}

TEST(TopoSystem, XmlRoundTripGivesTheSameGraph) {
  for (const std::string& f : kFixtures) {
    auto s = load(f);
    ASSERT_TRUE(s) << f;
    ASSERT_TRUE(s->xml) << f;
    std::string text = xmlToString(*s->xml);
    std::unique_ptr<XmlNode> again;
    ASSERT_EQ(xmlParse(text, f.c_str(), &again), ncclSuccess) << f;
    auto s2 = build(*again);
    ASSERT_TRUE(s2) << f;
    EXPECT_EQ(TopoSystem::firstDifference(*s, *s2), "") << f;
  }
}

TEST(TopoSystem, FirstDifferenceSeesALinkWidthChange) {
  auto xml = loadXml("dgx_h100.xml");
  ASSERT_TRUE(xml);
  auto s = build(*xml);
  XmlNode* pci = xml->findFirst("pci", "busid", "0000:58:00.0");
  ASSERT_NE(pci, nullptr);
  pci->setAttr("link_width", "8");
  auto s2 = build(*xml);
  ASSERT_TRUE(s && s2);
  std::string d = TopoSystem::firstDifference(*s, *s2);
  EXPECT_NE(d, "");
  EXPECT_NE(d.find("link"), std::string::npos) << d;
  EXPECT_NEAR(s2->nodes[s2->gpuByDev(3)].links[1].bw, 24.0, 1e-9);
}

TEST(TopoSystem, NvlinkToAMissingGpuIsIgnored) {
  auto xml = loadXml("a100_4gpu_nvlink.xml");
  ASSERT_TRUE(xml);
  XmlNode* nv = xml->findFirst("nvlink", "target", "0000:47:00.0");
  ASSERT_NE(nv, nullptr);
  nv->setAttr("target", "0000:99:00.0");
  auto s = build(*xml);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->count(TopoNodeType::Nvs), 0);
  EXPECT_EQ(linkBw(*s, s->gpuByDev(0), s->gpuByDev(1), TopoLinkType::Nvl), -1);
  EXPECT_NEAR(linkBw(*s, s->gpuByDev(1), s->gpuByDev(0), TopoLinkType::Nvl), 80.0, 1e-9);
}

TEST(TopoSystem, MalformedXmlIsInvalidUsage) {
  std::unique_ptr<TopoSystem> s;
  {
    std::unique_ptr<XmlNode> x;
    ASSERT_EQ(xmlParse("<graphs version=\"1\"/>", "t", &x), ncclSuccess);
    EXPECT_EQ(TopoSystem::fromXml(*x, TopoPolicy(), &s), ncclInvalidUsage);
  }
  for (const char* bad : {
           "<system><cpu numaid=\"zero\"/></system>",
           "<system><cpu numaid=\"0\"><pci class=\"0x030200\"><gpu dev=\"0\" sm=\"90\"/></pci></cpu></system>",
           "<system><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu sm=\"90\"/></pci></cpu></system>",
           "<system><cpu numaid=\"0\"><pci busid=\"xyz\" class=\"0x060400\"/></cpu></system>",
           "<system><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"0x020000\"><nic><net speed=\"1\"/></nic></pci></cpu></system>",
       }) {
    std::unique_ptr<XmlNode> x;
    ASSERT_EQ(xmlParse(bad, "t", &x), ncclSuccess) << bad;
    EXPECT_EQ(TopoSystem::fromXml(*x, TopoPolicy(), &s), ncclInvalidUsage) << bad;
  }
  // Unknown elements and attributes are ignored.
  std::unique_ptr<XmlNode> x;
  ASSERT_EQ(xmlParse("<system version=\"1\"><frob/><cpu numaid=\"3\" extra=\"1\"><blah/></cpu></system>", "t", &x),
            ncclSuccess);
  ASSERT_EQ(TopoSystem::fromXml(*x, TopoPolicy(), &s), ncclSuccess);
  EXPECT_EQ(s->count(TopoNodeType::Cpu), 1);
  EXPECT_EQ(s->nodes[0].id, 3u);
}

TEST(TopoSystem, ParsePathLevel) {
  struct Case {
    const char* text;
    int want;  // -1: rejected
  };
  const Case cases[] = {{"LOC", kPathLoc}, {"nvl", kPathNvl}, {"NVB", kPathNvb}, {"c2c", kPathC2c},
                        {"PIX", kPathPix}, {"pxb", kPathPxb}, {"P2C", kPathP2c}, {"PXN", kPathPxn},
                        {" phb ", kPathPhb}, {"SYS", kPathSys}, {"NET", kPathNet}, {"0", kPathLoc},
                        {"1", kPathPix}, {"2", kPathPxb}, {"3", kPathPhb}, {"4", kPathSys},
                        {"5", kPathSys}, {"6", -1}, {"-1", -1}, {"", -1}, {"PCI", -1},
                        {"PXBX", -1}, {"12", -1}};
  for (const Case& c : cases) {
    int v = -7;
    bool ok = topoParsePathLevel(c.text, &v);
    EXPECT_EQ(ok, c.want >= 0) << c.text;
    if (c.want >= 0) {
      EXPECT_EQ(v, c.want) << c.text;
    }
  }
  EXPECT_STREQ(topoPathTypeName(kPathP2c), "P2C");
  EXPECT_STREQ(topoPathTypeName(kPathDis), "DIS");
  EXPECT_STREQ(topoNodeTypeName(TopoNodeType::Nvs), "NVS");
  EXPECT_STREQ(topoLinkTypeName(TopoLinkType::C2c), "C2C");
}

// Sets environment variables for one test and restores them after.
class EnvGuard {
 public:
  ~EnvGuard() {
    for (auto& [k, v] : saved_) {
      if (v.first) setenv(k.c_str(), v.second.c_str(), 1);
      else unsetenv(k.c_str());
    }
  }
  void set(const char* k, const char* v) {
    if (!saved_.count(k)) {
      const char* old = getenv(k);
      saved_[k] = {old != nullptr, old ? old : ""};
    }
    setenv(k, v, 1);
  }

 private:
  std::map<std::string, std::pair<bool, std::string>> saved_;
};

TEST(TopoSystem, PolicyFromEnv) {
  EnvGuard env;
  for (const char* k : {"NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE",
                        "NCCL_NVB_DISABLE", "NCCL_PXN_DISABLE", "NCCL_PXN_C2C", "NCCL_NET_GDR_C2C"}) {
    env.set(k, "");
    unsetenv(k);
  }
  TopoPolicy p;
  ASSERT_EQ(TopoPolicy::fromEnv(&p), ncclSuccess);
  EXPECT_EQ(p.p2pLevel, -1);
  EXPECT_EQ(p.netGdrLevel, -1);
  EXPECT_FALSE(p.p2pDisable || p.shmDisable || p.nvbDisable || p.pxnDisable);
  EXPECT_TRUE(p.pxnC2c && p.gdrC2c);

  env.set("NCCL_P2P_LEVEL", "phb");
  env.set("NCCL_NET_GDR_LEVEL", "4");
  env.set("NCCL_P2P_DISABLE", "1");
  env.set("NCCL_SHM_DISABLE", "1");
  env.set("NCCL_NVB_DISABLE", "1");
  env.set("NCCL_PXN_DISABLE", "1");
  env.set("NCCL_NET_GDR_C2C", "0");
  ASSERT_EQ(TopoPolicy::fromEnv(&p), ncclSuccess);
  EXPECT_EQ(p.p2pLevel, kPathPhb);
  EXPECT_EQ(p.netGdrLevel, kPathSys);
  EXPECT_TRUE(p.p2pDisable && p.shmDisable && p.nvbDisable && p.pxnDisable);
  EXPECT_FALSE(p.gdrC2c);

  env.set("NCCL_P2P_LEVEL", "FAST");
  EXPECT_EQ(TopoPolicy::fromEnv(&p), ncclInvalidUsage);
  env.set("NCCL_P2P_LEVEL", "SYS");
  env.set("NCCL_NET_GDR_LEVEL", "9");
  EXPECT_EQ(TopoPolicy::fromEnv(&p), ncclInvalidUsage);
}

}  // namespace
}  // namespace accl
