// Unit tests for topo/paths: the path type between GPUs, NICs and CPUs of each fixture, worked out
// by hand from the fixture files, and how the P2P / GDR / PXN / NVB policy changes them.
#include <gtest/gtest.h>

#include <string>

#include "topo/system.h"
#include "topo_test_util.h"

namespace accl {
namespace {

using topotest::build;
using topotest::load;
using topotest::loadXml;
using topotest::nicByBus;

int gpuNet(const TopoSystem& s, int gpu, int net) { return s.path(s.gpuByDev(gpu), s.netByDev(net)).type; }
int gpuGpu(const TopoSystem& s, int a, int b) { return s.path(s.gpuByDev(a), s.gpuByDev(b)).type; }
std::string name(int t) { return topoPathTypeName(t); }

TopoPolicy policyWith(void (*edit)(TopoPolicy*)) {
  TopoPolicy p;
  edit(&p);
  return p;
}

// DGX H100: every GPU pair meets on the NVSwitch; NIC k shares PCIe switch k/2 with GPUs 2(k/2) and
// 2(k/2)+1. Other NICs would be PHB (same socket) or SYS, but PXN reaches them through the GPU
// beside them.
TEST(TopoPaths, DgxH100) {
  auto s = load("dgx_h100.xml");
  ASSERT_TRUE(s);
  for (int a = 0; a < 8; a++) {
    EXPECT_EQ(name(gpuGpu(*s, a, a)), "LOC");
    for (int b = 0; b < 8; b++) {
      if (a == b) continue;
      EXPECT_EQ(name(gpuGpu(*s, a, b)), "NVL") << a << "->" << b;
      EXPECT_NEAR(s->path(s->gpuByDev(a), s->gpuByDev(b)).bw, 18 * 20.6, 1e-9);
      EXPECT_TRUE(s->p2pAllowed(s->gpuByDev(a), s->gpuByDev(b)));
    }
    for (int n = 0; n < 8; n++) {
      const bool sameSwitch = a / 2 == n / 2;
      EXPECT_EQ(name(gpuNet(*s, a, n)), sameSwitch ? "PIX" : "PXN") << "GPU" << a << "->NET" << n;
      EXPECT_TRUE(s->gdrAllowed(s->gpuByDev(a), s->netByDev(n))) << a << " " << n;
    }
  }
  // The PXN path goes through the NIC's switch neighbour: GPU0 -> NVS -> GPU4 -> switch -> NIC -> NET4.
  const TopoPath& p = s->path(s->gpuByDev(0), s->netByDev(4));
  ASSERT_EQ(p.hops.size(), 5u);
  EXPECT_EQ(p.hops[1], s->gpuByDev(4));
  EXPECT_EQ(p.hops.back(), s->netByDev(4));
  EXPECT_NEAR(p.bw, 48.0, 1e-9);
  // The reverse direction is not relayed: NET4 -> GPU0 crosses the sockets.
  EXPECT_EQ(name(s->path(s->netByDev(4), s->gpuByDev(0)).type), "SYS");
  EXPECT_EQ(name(s->path(s->netByDev(2), s->gpuByDev(0)).type), "PHB");
  // GPU -> NIC (the PCI device) is typed like GPU -> NET.
  EXPECT_EQ(name(s->path(s->gpuByDev(0), nicByBus(*s, "0000:12:00.0")).type), "PIX");
  EXPECT_EQ(name(s->path(s->gpuByDev(0), nicByBus(*s, "0000:c2:00.0")).type), "PXN");
  // CPUs.
  auto cpus = s->nodesOf(TopoNodeType::Cpu);
  EXPECT_EQ(name(s->path(s->gpuByDev(0), cpus[0]).type), "PHB");
  EXPECT_EQ(name(s->path(s->gpuByDev(0), cpus[1]).type), "SYS");
  EXPECT_EQ(s->localCpu(s->gpuByDev(6)), cpus[1]);
  EXPECT_EQ(name(s->path(cpus[0], cpus[1]).type), "SYS");
}

TEST(TopoPaths, DgxH100WithoutPxnOrP2p) {
  auto xml = loadXml("dgx_h100.xml");
  ASSERT_TRUE(xml);
  auto s = build(*xml, policyWith([](TopoPolicy* p) { p->pxnDisable = true; }));
  ASSERT_TRUE(s);
  EXPECT_EQ(name(gpuNet(*s, 0, 1)), "PIX");
  EXPECT_EQ(name(gpuNet(*s, 0, 2)), "PHB");
  EXPECT_EQ(name(gpuNet(*s, 0, 4)), "SYS");
  EXPECT_FALSE(s->gdrAllowed(s->gpuByDev(0), s->netByDev(2)));
  EXPECT_TRUE(s->gdrAllowed(s->gpuByDev(0), s->netByDev(1)));

  // NCCL_P2P_DISABLE: GPU pairs are routed through the destination's CPU, and PXN (which needs an
  // NVLink peer) disappears.
  s = build(*xml, policyWith([](TopoPolicy* p) { p->p2pDisable = true; }));
  ASSERT_TRUE(s);
  EXPECT_EQ(name(gpuGpu(*s, 0, 1)), "PHB");
  EXPECT_EQ(name(gpuGpu(*s, 0, 4)), "SYS");
  EXPECT_FALSE(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(1)));
  EXPECT_EQ(name(gpuNet(*s, 0, 4)), "SYS");
  const TopoPath& p = s->path(s->gpuByDev(0), s->gpuByDev(1));
  EXPECT_EQ(s->nodes[p.hops[1]].type, TopoNodeType::Cpu);

  // P2P off and SHM off: GPUs can only talk through the network.
  s = build(*xml, policyWith([](TopoPolicy* p) {
              p->p2pDisable = true;
              p->shmDisable = true;
            }));
  EXPECT_EQ(name(gpuGpu(*s, 0, 1)), "NET");

  // NCCL_NET_GDR_LEVEL=LOC: no GPU may use GDR, so GPU -> NIC paths bounce through the CPU.
  s = build(*xml, policyWith([](TopoPolicy* p) { p->netGdrLevel = kPathLoc; }));
  EXPECT_FALSE(s->gdrAllowed(s->gpuByDev(0), s->netByDev(0)));
  EXPECT_EQ(name(gpuNet(*s, 0, 0)), "PHB");
  EXPECT_EQ(name(s->path(s->netByDev(0), s->gpuByDev(0)).type), "PHB");
}

// PCIe box: GPUs in pairs under four switches (two per socket), NICs straight under each CPU.
TEST(TopoPaths, Pcie8Gpu2Socket) {
  auto s = load("pcie_8gpu_2socket.xml");
  ASSERT_TRUE(s);
  EXPECT_EQ(name(gpuGpu(*s, 0, 1)), "PIX");
  EXPECT_EQ(name(gpuGpu(*s, 6, 7)), "PIX");
  EXPECT_EQ(name(gpuGpu(*s, 0, 2)), "PHB");
  EXPECT_EQ(name(gpuGpu(*s, 5, 7)), "PHB");
  EXPECT_EQ(name(gpuGpu(*s, 0, 4)), "SYS");
  EXPECT_EQ(name(gpuGpu(*s, 7, 1)), "SYS");
  EXPECT_NEAR(s->path(s->gpuByDev(0), s->gpuByDev(1)).bw, 24.0, 1e-9);
  EXPECT_NEAR(s->path(s->gpuByDev(0), s->gpuByDev(4)).bw, 16.0, 1e-9);  // the AMD socket link
  EXPECT_EQ(name(gpuNet(*s, 0, 0)), "PHB");
  EXPECT_EQ(name(gpuNet(*s, 3, 0)), "PHB");
  EXPECT_EQ(name(gpuNet(*s, 0, 1)), "SYS");
  EXPECT_EQ(name(gpuNet(*s, 6, 1)), "PHB");
  EXPECT_NEAR(s->path(s->gpuByDev(0), s->netByDev(0)).bw, 12.5, 1e-9);  // 100 Gb/s port
  // Default P2P level PXB (AMD with more than 2 GPUs): only switch neighbours; no GDR through a CPU.
  EXPECT_EQ(s->effectiveP2pLevel(), kPathPxb);
  EXPECT_TRUE(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(1)));
  EXPECT_FALSE(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(2)));
  EXPECT_FALSE(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(4)));
  EXPECT_FALSE(s->gdrAllowed(s->gpuByDev(0), s->netByDev(0)));
  EXPECT_FALSE(s->p2pAllowed(s->gpuByDev(0), s->netByDev(0)));  // not two GPUs
}

TEST(TopoPaths, P2pLevelPolicy) {
  auto xml = loadXml("pcie_8gpu_2socket.xml");
  ASSERT_TRUE(xml);
  struct Case {
    const char* level;
    bool pix, phb, sys;  // GPU0-1, GPU0-2, GPU0-4
  };
  const Case cases[] = {{"LOC", false, false, false}, {"PIX", true, false, false}, {"PXB", true, false, false},
                        {"PHB", true, true, false},   {"SYS", true, true, true},     {"0", false, false, false},
                        {"1", true, false, false},    {"3", true, true, false},      {"5", true, true, true}};
  for (const Case& c : cases) {
    TopoPolicy p;
    ASSERT_TRUE(topoParsePathLevel(c.level, &p.p2pLevel));
    auto s = build(*xml, p);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(1)), c.pix) << c.level;
    EXPECT_EQ(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(2)), c.phb) << c.level;
    EXPECT_EQ(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(4)), c.sys) << c.level;
    // P2P_DISABLE wins over any level.
    p.p2pDisable = true;
    s = build(*xml, p);
    EXPECT_FALSE(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(1))) << c.level;
    EXPECT_TRUE(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(0))) << c.level;
  }
  // AMD x86 with at most two GPUs: P2P across sockets by default.
  XmlNode* cpu1 = xml->child(1);
  ASSERT_EQ(cpu1->name(), "cpu");
  for (XmlNode* pci : xml->child(0)->childrenNamed("pci")) {
    if (pci->attrOr("busid", "") == "0000:21:00.0") xml->child(0)->removeChild(pci);
  }
  for (XmlNode* pci : cpu1->childrenNamed("pci")) {
    if (pci->attrOr("busid", "") != "0000:81:00.0") cpu1->removeChild(pci);
  }
  for (XmlNode* pci : xml->child(0)->childrenNamed("pci")) {
    if (pci->attrOr("busid", "") == "0000:01:00.0") pci->removeChild(pci->child(1));
  }
  for (XmlNode* pci : cpu1->childrenNamed("pci")) pci->removeChild(pci->child(1));
  auto s = build(*xml);
  ASSERT_EQ(s->count(TopoNodeType::Gpu), 2);
  EXPECT_EQ(s->effectiveP2pLevel(), kPathSys);
  EXPECT_EQ(name(gpuGpu(*s, 0, 4)), "SYS");
  EXPECT_TRUE(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(4)));
}

TEST(TopoPaths, NetGdrLevelPolicy) {
  auto xml = loadXml("pcie_8gpu_2socket.xml");
  ASSERT_TRUE(xml);
  struct Case {
    int level;
    bool phb, sys;  // GPU0-NET0, GPU0-NET1
  };
  for (Case c : {Case{-1, false, false}, Case{kPathPxb, false, false}, Case{kPathPhb, true, false},
                 Case{kPathSys, true, true}}) {
    TopoPolicy p;
    p.netGdrLevel = c.level;
    auto s = build(*xml, p);
    EXPECT_EQ(s->gdrAllowed(s->gpuByDev(0), s->netByDev(0)), c.phb) << c.level;
    EXPECT_EQ(s->gdrAllowed(s->gpuByDev(0), s->netByDev(1)), c.sys) << c.level;
  }
  // A NIC without GDR support never gets it.
  XmlNode* net = xml->findFirst("net", "name", "mlx5_0");
  ASSERT_NE(net, nullptr);
  net->setAttr("gdr", "0");
  TopoPolicy p;
  p.netGdrLevel = kPathSys;
  auto s = build(*xml, p);
  EXPECT_FALSE(s->gdrAllowed(s->gpuByDev(0), s->netByDev(0)));
  EXPECT_TRUE(s->gdrAllowed(s->gpuByDev(0), s->netByDev(1)));
}

// 4x A100, every pair linked by 4 NVLinks; the NIC sits directly under the CPU.
TEST(TopoPaths, A100NvlinkAndNvb) {
  auto xml = loadXml("a100_4gpu_nvlink.xml");
  ASSERT_TRUE(xml);
  auto s = build(*xml);
  for (int a = 0; a < 4; a++) {
    for (int b = 0; b < 4; b++) {
      if (a != b) {
        EXPECT_EQ(name(gpuGpu(*s, a, b)), "NVL") << a << "->" << b;
      }
    }
    EXPECT_EQ(name(gpuNet(*s, a, 0)), "PHB");
    EXPECT_FALSE(s->gdrAllowed(s->gpuByDev(a), s->netByDev(0)));
  }
  EXPECT_NEAR(s->path(s->gpuByDev(0), s->gpuByDev(3)).bw, 80.0, 1e-9);

  // Remove the 0 <-> 2 links: the pair now relays through GPU 1 (NVB), still P2P.
  XmlNode* g0 = xml->findFirst("gpu", "dev", "0");
  XmlNode* g2 = xml->findFirst("gpu", "dev", "2");
  g0->removeChild(g0->firstChild("nvlink", "target", "0000:81:00.0"));
  g2->removeChild(g2->firstChild("nvlink", "target", "0000:01:00.0"));
  s = build(*xml);
  EXPECT_EQ(name(gpuGpu(*s, 0, 2)), "NVB");
  EXPECT_EQ(name(gpuGpu(*s, 2, 0)), "NVB");
  EXPECT_EQ(name(gpuGpu(*s, 0, 1)), "NVL");
  EXPECT_NEAR(s->path(s->gpuByDev(0), s->gpuByDev(2)).bw, 80.0, 1e-9);
  EXPECT_EQ(s->nodes[s->path(s->gpuByDev(0), s->gpuByDev(2)).hops[0]].type, TopoNodeType::Gpu);
  EXPECT_TRUE(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(2)));
  // NCCL_NVB_DISABLE: through the CPU instead, and no P2P.
  s = build(*xml, policyWith([](TopoPolicy* p) { p->nvbDisable = true; }));
  EXPECT_EQ(name(gpuGpu(*s, 0, 2)), "PHB");
  EXPECT_FALSE(s->p2pAllowed(s->gpuByDev(0), s->gpuByDev(2)));
}

// GH200: the GPU reaches Grace over C2C and the NIC over C2C + PCIe (P2C), which counts as C2C
// for GDR unless NCCL_NET_GDR_C2C=0.
TEST(TopoPaths, Gh200C2c) {
  auto xml = loadXml("gh200.xml");
  ASSERT_TRUE(xml);
  auto s = build(*xml);
  const int g = s->gpuByDev(0), net = s->netByDev(0);
  const int cpu = s->nodesOf(TopoNodeType::Cpu)[0];
  EXPECT_EQ(name(s->path(g, cpu).type), "C2C");
  EXPECT_NEAR(s->path(g, cpu).bw, 450.0, 1e-9);
  EXPECT_EQ(s->localCpu(g), cpu);
  EXPECT_EQ(name(s->path(g, net).type), "P2C");
  EXPECT_EQ(name(s->path(net, g).type), "P2C");
  EXPECT_NEAR(s->path(g, net).bw, 48.0, 1e-9);
  EXPECT_EQ(name(s->path(g, nicByBus(*s, "0000:01:00.0")).type), "P2C");
  EXPECT_EQ(name(s->path(cpu, net).type), "PHB");
  EXPECT_TRUE(s->gdrAllowed(g, net));

  s = build(*xml, policyWith([](TopoPolicy* p) { p->gdrC2c = false; }));
  EXPECT_FALSE(s->gdrAllowed(g, net));
  EXPECT_EQ(name(s->path(g, net).type), "PHB");
}

TEST(TopoPaths, CpuOnly) {
  auto s = load("cpu_only.xml");
  ASSERT_TRUE(s);
  auto cpus = s->nodesOf(TopoNodeType::Cpu);
  const int net = s->netByDev(0);
  EXPECT_EQ(name(s->path(cpus[0], net).type), "PHB");
  EXPECT_EQ(name(s->path(cpus[1], net).type), "SYS");
  EXPECT_NEAR(s->path(cpus[1], net).bw, 10.0, 1e-9);
  EXPECT_NEAR(s->path(cpus[0], net).bw, 12.5, 1e-9);
  EXPECT_EQ(s->localCpu(net), cpus[0]);
  EXPECT_EQ(name(s->path(-1, net).type), "DIS");
}

}  // namespace
}  // namespace accl
