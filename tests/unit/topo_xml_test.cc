// Unit tests for topo/xml: the tree API, the reader's accepted syntax and error messages (with line
// numbers), the writer's layout, round trips of every topology fixture in tests/data, and sanity
// checks that each fixture describes the machine it claims to.
#include "topo/xml.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "topo_test_util.h"
#include "util/last_error.h"

namespace accl {
namespace {

namespace fs = std::filesystem;

using topotest::dataDir;

using topotest::kFixtures;

std::unique_ptr<XmlNode> parseOk(const std::string& text) {
  std::unique_ptr<XmlNode> root;
  EXPECT_EQ(xmlParse(text, "test", &root), ncclSuccess) << lastErrorText();
  return root;
}

std::unique_ptr<XmlNode> loadFixture(const std::string& name) {
  std::unique_ptr<XmlNode> root;
  std::string path = (dataDir() / name).string();
  EXPECT_EQ(xmlLoadFile(path.c_str(), &root), ncclSuccess) << lastErrorText();
  return root;
}

int64_t intAttr(const XmlNode& n, const char* key) {
  int64_t v = -12345;
  EXPECT_EQ(n.getInt(key, &v), ncclSuccess) << n.path() << " " << key << ": " << lastErrorText();
  return v;
}

// ---------------------------------------------------------------- tree API

TEST(TopoXml, ParsesElementsAttributesAndParents) {
  auto root = parseOk(R"(<system version="1">
  <cpu numaid="0" arch="x86_64">
    <pci busid="0000:17:00.0" class="0x060400">
      <gpu dev="0" sm="90"/>
    </pci>
  </cpu>
  <cpu numaid="1"/>
</system>)");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->name(), "system");
  EXPECT_EQ(root->parent(), nullptr);
  ASSERT_EQ(root->childCount(), 2u);
  XmlNode* cpu0 = root->child(0);
  EXPECT_EQ(cpu0->parent(), root.get());
  ASSERT_EQ(cpu0->attrs().size(), 2u);
  EXPECT_EQ(cpu0->attrs()[0].key, "numaid");
  EXPECT_EQ(cpu0->attrs()[1].value, "x86_64");
  XmlNode* gpu = root->findFirst("gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->ancestor("cpu"), cpu0);
  EXPECT_EQ(gpu->ancestor("pci")->attrOr("busid", ""), "0000:17:00.0");
  EXPECT_EQ(gpu->ancestor("nic"), nullptr);
  EXPECT_EQ(gpu->path(), "system[version=1]/cpu[numaid=0]/pci[busid=0000:17:00.0]/gpu[dev=0]");
  EXPECT_EQ(root->findFirst("cpu", "numaid", "1"), root->child(1));
  EXPECT_EQ(root->findFirst("cpu", "numaid", "2"), nullptr);
  EXPECT_EQ(root->firstChild("cpu", "numaid", "1"), root->child(1));
  EXPECT_EQ(root->firstChild("gpu"), nullptr);  // not a direct child
  EXPECT_EQ(root->findAll("cpu").size(), 2u);
  EXPECT_EQ(root->childrenNamed("cpu").size(), 2u);
  EXPECT_EQ(root->findAll("nvlink").size(), 0u);
}

TEST(TopoXml, TypedAttributeGetters) {
  auto root = parseOk(R"(<pci class="0x068000" width="16" neg="-3" speed="2.5" guid="0xfedcba9876543210"
                              bad="12abc" empty="" big="99999999999999999999"/>)");
  ASSERT_TRUE(root);
  int64_t i = 0;
  EXPECT_EQ(root->getInt("class", &i), ncclSuccess);
  EXPECT_EQ(i, 0x068000);
  EXPECT_EQ(root->getInt("width", &i), ncclSuccess);
  EXPECT_EQ(i, 16);
  EXPECT_EQ(root->getInt("neg", &i), ncclSuccess);
  EXPECT_EQ(i, -3);
  uint64_t u = 0;
  EXPECT_EQ(root->getUint("guid", &u), ncclSuccess);
  EXPECT_EQ(u, 0xfedcba9876543210ull);
  EXPECT_EQ(root->getUint("neg", &u), ncclInvalidUsage);
  double d = 0;
  EXPECT_EQ(root->getDouble("speed", &d), ncclSuccess);
  EXPECT_DOUBLE_EQ(d, 2.5);

  EXPECT_EQ(root->getInt("bad", &i), ncclInvalidUsage);
  EXPECT_NE(std::string(lastErrorText()).find("bad=\"12abc\" is not an integer"), std::string::npos)
      << lastErrorText();
  EXPECT_EQ(root->getInt("empty", &i), ncclInvalidUsage);
  EXPECT_EQ(root->getInt("big", &i), ncclInvalidUsage);
  EXPECT_EQ(root->getInt("missing", &i), ncclInvalidUsage);
  EXPECT_NE(std::string(lastErrorText()).find("has no attribute \"missing\""), std::string::npos)
      << lastErrorText();

  EXPECT_EQ(root->getIntOr("missing", 77, &i), ncclSuccess);
  EXPECT_EQ(i, 77);
  EXPECT_EQ(root->getIntOr("width", 77, &i), ncclSuccess);
  EXPECT_EQ(i, 16);
  EXPECT_EQ(root->getIntOr("bad", 77, &i), ncclInvalidUsage);
  EXPECT_EQ(root->getDoubleOr("missing", 1.5, &d), ncclSuccess);
  EXPECT_DOUBLE_EQ(d, 1.5);
  std::string s;
  EXPECT_EQ(root->getStr("empty", &s), ncclSuccess);
  EXPECT_EQ(s, "");
  EXPECT_EQ(root->attrOr("missing", "dflt"), "dflt");
}

TEST(TopoXml, SetAndRemoveAttributesKeepOrder) {
  XmlNode n("net");
  n.setAttr("name", "mlx5_0");
  n.setAttrInt("speed", 400000);
  n.setAttrHex("guid", 0xabcdef);
  n.setAttrInt("port", -1);
  n.setAttr("speed", "200000");  // replaced in place
  ASSERT_EQ(n.attrs().size(), 4u);
  EXPECT_EQ(n.attrs()[1].key, "speed");
  EXPECT_EQ(n.attrs()[1].value, "200000");
  EXPECT_EQ(*n.attr("guid"), "0xabcdef");
  EXPECT_EQ(*n.attr("port"), "-1");
  EXPECT_TRUE(n.removeAttr("speed"));
  EXPECT_FALSE(n.removeAttr("speed"));
  ASSERT_EQ(n.attrs().size(), 3u);
  EXPECT_EQ(n.attrs()[1].key, "guid");
  EXPECT_EQ(xmlToString(n), "<net name=\"mlx5_0\" guid=\"0xabcdef\" port=\"-1\"/>\n");
}

TEST(TopoXml, BuildCloneRemoveAndCompare) {
  XmlNode sys("system");
  sys.setAttr("version", "1");
  XmlNode& cpu = sys.addChild("cpu");
  cpu.setAttr("numaid", "0");
  XmlNode& gpu = cpu.addChild("pci").addChild("gpu");
  gpu.setAttr("dev", "0");
  EXPECT_EQ(gpu.ancestor("system"), &sys);

  auto copy = sys.clone();
  EXPECT_TRUE(xmlEqual(sys, *copy));
  EXPECT_EQ(xmlFirstDifference(sys, *copy), "");
  EXPECT_EQ(copy->findFirst("gpu")->ancestor("system"), copy.get());

  copy->findFirst("gpu")->setAttr("dev", "1");
  EXPECT_FALSE(xmlEqual(sys, *copy));
  EXPECT_NE(xmlFirstDifference(sys, *copy).find("dev=\"0\" vs dev=\"1\""), std::string::npos)
      << xmlFirstDifference(sys, *copy);

  // Attribute order is part of equality (the writer preserves it).
  auto reordered = parseOk(R"(<a x="1" y="2"/>)");
  auto ordered = parseOk(R"(<a y="2" x="1"/>)");
  EXPECT_FALSE(xmlEqual(*reordered, *ordered));

  // Detach and re-attach a subtree.
  XmlNode* pci = cpu.firstChild("pci");
  auto detached = cpu.removeChild(pci);
  ASSERT_TRUE(detached);
  EXPECT_EQ(detached->parent(), nullptr);
  EXPECT_EQ(cpu.childCount(), 0u);
  EXPECT_EQ(cpu.removeChild(detached.get()), nullptr);
  XmlNode& back = cpu.adoptChild(std::move(detached));
  EXPECT_EQ(back.parent(), &cpu);
  EXPECT_EQ(xmlFirstDifference(sys, *parseOk(xmlToString(sys))), "");
}

// ---------------------------------------------------------------- reader: accepted syntax

TEST(TopoXml, AcceptsCommentsDeclarationsQuotesAndEntities) {
  const char* text =
      "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n"
      "<!-- leading comment -->\n"
      "<system version = '1'>\n"
      "\t<!-- a comment with <tags> and -- dashes -->\n"
      "  <net name=\"a&amp;b&lt;c&gt;&quot;&apos;&#65;&#x42;\" single='say \"hi\"'/>\n"
      "  <cpu\n     numaid=\"0\"\n  ></cpu   >\n"
      "</system>\n<!-- trailing -->\n";
  auto root = parseOk(text);
  ASSERT_TRUE(root);
  EXPECT_EQ(root->attrOr("version", ""), "1");
  ASSERT_EQ(root->childCount(), 2u);
  EXPECT_EQ(root->child(0)->attrOr("name", ""), "a&b<c>\"'AB");
  EXPECT_EQ(root->child(0)->attrOr("single", ""), "say \"hi\"");
  EXPECT_EQ(root->child(1)->attrOr("numaid", ""), "0");
  EXPECT_EQ(root->child(1)->childCount(), 0u);
}

TEST(TopoXml, WriterUsesNcclDumpLayoutAndEscapes) {
  auto root = parseOk(R"(<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0"><gpu dev="0"/></pci></cpu>
                         <cpu numaid="1"/></system>)");
  ASSERT_TRUE(root);
  EXPECT_EQ(xmlToString(*root),
            "<system version=\"1\">\n"
            "  <cpu numaid=\"0\">\n"
            "    <pci busid=\"0000:01:00.0\">\n"
            "      <gpu dev=\"0\"/>\n"
            "    </pci>\n"
            "  </cpu>\n"
            "  <cpu numaid=\"1\"/>\n"
            "</system>\n");
  XmlNode n("x");
  n.setAttr("v", "a&b<c\"d'e>f");
  std::string text = xmlToString(n);
  EXPECT_EQ(text, "<x v=\"a&amp;b&lt;c&quot;d'e>f\"/>\n");
  EXPECT_EQ(parseOk(text)->attrOr("v", ""), "a&b<c\"d'e>f");
}

// ---------------------------------------------------------------- reader: errors

struct BadXml {
  const char* what;
  const char* text;
  int line;
  const char* mention;  // substring the message must contain
};

TEST(TopoXml, ParseErrorsNameLineAndExpectation) {
  const BadXml cases[] = {
      {"empty document", "", 1, "no root element"},
      {"only a comment", "<!-- x -->\n\n", 3, "no root element"},
      {"unclosed root", "<system version=\"1\">\n  <cpu numaid=\"0\"/>\n", 3,
       "end of input inside <system> opened at line 1 (missing </system>)"},
      {"unclosed nested tag", "<system>\n  <cpu numaid=\"0\">\n    <pci/>\n</system>\n", 4,
       "</system> does not match the open element <cpu> from line 2"},
      {"mismatched close", "<a>\n<b>\n</c>\n</a>", 3, "</c> does not match the open element <b> from line 2"},
      {"unquoted value", "<system>\n  <gpu dev=0/>\n</system>", 2, "bad attribute dev in <gpu>: expected a quoted"},
      {"missing equals", "<system>\n\n  <gpu dev \"0\"/>\n</system>", 3,
       "bad attribute dev in <gpu>: expected '=' after the attribute name"},
      {"missing closing quote", "<system>\n  <gpu dev=\"0/>\n</system>", 3,
       "bad attribute dev in <gpu>: '<' inside the value"},
      {"quote never closed", "<system a=\"x\n\n", 3, "value opened at line 1 has no closing quote"},
      {"duplicate attribute", "<system>\n<gpu dev=\"0\" dev=\"1\"/></system>", 2, "the attribute appears twice"},
      {"attributes run together", "<gpu dev=\"0\"sm=\"90\"/>", 1, "expected whitespace, '>' or '/>'"},
      {"bad attribute name", "<system>\n<gpu 9dev=\"0\"/></system>", 2, "expected an attribute name"},
      {"unknown entity", "<gpu name=\"a&nbsp;b\"/>", 1, "unknown entity &nbsp;"},
      {"bare ampersand", "<gpu name=\"a & b\"/>", 1, "'&' must start an entity"},
      {"text content", "<system>\n  hello\n</system>", 2, "unexpected text 'h' inside <system>"},
      {"text before root", "junk<system/>", 1, "expected '<' to start the root element"},
      {"two roots", "<system/>\n<system/>", 2, "after the end of the root element <system>"},
      {"unterminated comment", "<system>\n<!-- oops\n</system>", 3, "unterminated comment opened at line 2"},
      {"slash without gt", "<system>\n<gpu/ >\n</system>", 2, "expected '>' after '/' in <gpu>"},
      {"truncated tag", "<system>\n<gpu dev=\"0\"", 2, "end of input inside the tag <gpu> started at line 2"},
      {"empty element name", "<system>\n< gpu/>\n</system>", 2, "expected an element name after '<'"},
      {"doctype", "<!DOCTYPE x>\n<system/>", 1, "not supported"},
  };
  for (const BadXml& c : cases) {
    SCOPED_TRACE(c.what);
    std::unique_ptr<XmlNode> root;
    EXPECT_EQ(xmlParse(c.text, "NCCL_TOPO_FILE=t.xml", &root), ncclInvalidUsage);
    EXPECT_FALSE(root);
    std::string msg = lastErrorText();
    EXPECT_NE(msg.find("in NCCL_TOPO_FILE=t.xml at line " + std::to_string(c.line) + ","), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.mention), std::string::npos) << msg;
  }
}

TEST(TopoXml, RejectsExcessiveNesting) {
  std::string deep;
  for (int i = 0; i < kXmlMaxDepth + 1; ++i) deep += "<a>";
  for (int i = 0; i < kXmlMaxDepth + 1; ++i) deep += "</a>";
  std::unique_ptr<XmlNode> root;
  EXPECT_EQ(xmlParse(deep, "deep", &root), ncclInvalidUsage);
  EXPECT_NE(std::string(lastErrorText()).find("nested deeper"), std::string::npos);

  std::string ok;
  for (int i = 0; i < kXmlMaxDepth; ++i) ok += "<a>";
  for (int i = 0; i < kXmlMaxDepth; ++i) ok += "</a>";
  EXPECT_EQ(xmlParse(ok, "ok", &root), ncclSuccess) << lastErrorText();
}

TEST(TopoXml, FileErrors) {
  std::unique_ptr<XmlNode> root;
  EXPECT_EQ(xmlLoadFile("/nonexistent/accl/topo.xml", &root), ncclInvalidUsage);
  EXPECT_NE(std::string(lastErrorText()).find("/nonexistent/accl/topo.xml"), std::string::npos);
  XmlNode n("system");
  EXPECT_EQ(xmlSaveFile("/nonexistent/accl/out.xml", n), ncclSystemError);
}

// ---------------------------------------------------------------- fixtures: round trip

TEST(TopoXmlFixtures, RoundTripEveryFixture) {
  for (const std::string& name : kFixtures) {
    SCOPED_TRACE(name);
    auto first = loadFixture(name);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->name(), "system");
    EXPECT_EQ(first->attrOr("version", ""), "1");

    // load -> dump -> load gives an equal tree, and dumping again is byte-identical.
    std::string dumped = xmlToString(*first);
    auto second = parseOk(dumped);
    ASSERT_TRUE(second);
    EXPECT_EQ(xmlFirstDifference(*first, *second), "");
    EXPECT_TRUE(xmlEqual(*first, *second));
    EXPECT_EQ(xmlToString(*second), dumped);

    // Through a file as well (the NCCL_TOPO_DUMP_FILE path).
    std::string path = (fs::temp_directory_path() / ("accl_topo_rt_" + std::to_string(getpid()) + "_" + name)).string();
    ASSERT_EQ(xmlSaveFile(path.c_str(), *first), ncclSuccess) << lastErrorText();
    std::unique_ptr<XmlNode> third;
    ASSERT_EQ(xmlLoadFile(path.c_str(), &third), ncclSuccess) << lastErrorText();
    std::remove(path.c_str());
    EXPECT_TRUE(xmlEqual(*first, *third));

    // The fixture files are written in the dump layout: after the leading comment line, the file is
    // exactly what the writer produces.
    std::ifstream in(dataDir() / name);
    std::string fileText((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(fileText.rfind("<!--", 0), 0u);
    EXPECT_EQ(fileText.substr(fileText.find('\n') + 1), dumped);

    EXPECT_TRUE(xmlEqual(*first, *first->clone()));
  }
}

// ---------------------------------------------------------------- fixtures: sanity

// Facts every fixture must satisfy: unique bus ids and NUMA ids, disjoint CPU affinities, each gpu/nic
// inside a pci inside a cpu, nets inside nics, NVLink targets that exist (or NCCL's "not visible"
// marker for NVSwitch), known PCI classes.
void checkConsistent(const XmlNode& sys, const std::string& name) {
  SCOPED_TRACE(name);
  std::set<std::string> busIds;
  for (XmlNode* pci : sys.findAll("pci")) {
    std::string busId = pci->attrOr("busid", "");
    EXPECT_EQ(busId.size(), 12u) << pci->path();  // dddd:bb:dd.f
    EXPECT_TRUE(busIds.insert(busId).second) << "duplicate bus id " << busId;
    std::string cls = pci->attrOr("class", "");
    EXPECT_TRUE(cls == "0x060400" || cls == "0x030200" || cls == "0x030000" || cls == "0x020700" || cls == "0x020000")
        << pci->path() << " class " << cls;
    EXPECT_EQ(intAttr(*pci, "link_width"), 16);
    EXPECT_NE(pci->ancestor("cpu"), nullptr) << pci->path();
    // A bridge holds pci devices; an endpoint holds exactly one gpu or nic.
    if (cls == "0x060400") {
      for (const auto& c : pci->children()) EXPECT_EQ(c->name(), "pci") << pci->path();
    } else {
      ASSERT_EQ(pci->childCount(), 1u) << pci->path();
      EXPECT_EQ(pci->child(0)->name(), cls.rfind("0x03", 0) == 0 ? "gpu" : "nic") << pci->path();
    }
  }
  std::set<int64_t> numaIds;
  std::vector<std::string> affinities;
  for (XmlNode* cpu : sys.childrenNamed("cpu")) {
    EXPECT_TRUE(numaIds.insert(intAttr(*cpu, "numaid")).second);
    affinities.push_back(cpu->attrOr("affinity", ""));
    std::string arch = cpu->attrOr("arch", "");
    EXPECT_TRUE(arch == "x86_64" || arch == "arm64") << arch;
  }
  // Affinity masks: same width, non-empty, pairwise disjoint.
  for (size_t i = 0; i < affinities.size(); ++i) {
    EXPECT_NE(affinities[i].find_first_not_of("0,"), std::string::npos) << "empty affinity";
    for (size_t j = i + 1; j < affinities.size(); ++j) {
      ASSERT_EQ(affinities[i].size(), affinities[j].size());
      for (size_t k = 0; k < affinities[i].size(); ++k) {
        if (affinities[i][k] == ',') continue;
        int a = std::stoi(std::string(1, affinities[i][k]), nullptr, 16);
        int b = std::stoi(std::string(1, affinities[j][k]), nullptr, 16);
        EXPECT_EQ(a & b, 0) << "cpus " << i << " and " << j << " share CPUs";
      }
    }
  }
  for (XmlNode* gpu : sys.findAll("gpu")) {
    EXPECT_EQ(gpu->parent()->name(), "pci");
    for (XmlNode* nvl : gpu->childrenNamed("nvlink")) {
      std::string target = nvl->attrOr("target", "");
      if (target == "fffffff:ffff:ff") {
        EXPECT_EQ(nvl->attrOr("tclass", ""), "0x068000");
      } else {
        XmlNode* peer = sys.findFirst("pci", "busid", target);
        ASSERT_NE(peer, nullptr) << "nvlink target " << target;
        EXPECT_EQ(nvl->attrOr("tclass", ""), peer->attrOr("class", ""));
        EXPECT_NE(target, gpu->parent()->attrOr("busid", "")) << "nvlink to itself";
      }
    }
  }
  std::set<int64_t> netDevs;
  for (XmlNode* net : sys.findAll("net")) {
    EXPECT_EQ(net->parent()->name(), "nic");
    EXPECT_EQ(net->parent()->parent()->name(), "pci");
    EXPECT_TRUE(netDevs.insert(intAttr(*net, "dev")).second);
    uint64_t guid = 0;
    EXPECT_EQ(net->getUint("guid", &guid), ncclSuccess);
    EXPECT_NE(guid, 0u);
  }
  // Net devices are numbered 0..n-1.
  if (!netDevs.empty()) EXPECT_EQ(*netDevs.rbegin(), (int64_t)netDevs.size() - 1);
  // GPU dev and rank are 0..n-1, each once.
  std::set<int64_t> devs, ranks;
  for (XmlNode* gpu : sys.findAll("gpu")) {
    devs.insert(intAttr(*gpu, "dev"));
    ranks.insert(intAttr(*gpu, "rank"));
  }
  size_t nGpus = sys.findAll("gpu").size();
  EXPECT_EQ(devs.size(), nGpus);
  EXPECT_EQ(ranks.size(), nGpus);
  if (nGpus) EXPECT_EQ(*devs.rbegin(), (int64_t)nGpus - 1);
}

TEST(TopoXmlFixtures, AllFixturesAreConsistent) {
  for (const std::string& name : kFixtures) {
    auto sys = loadFixture(name);
    ASSERT_TRUE(sys);
    checkConsistent(*sys, name);
  }
}

TEST(TopoXmlFixtures, DgxH100) {
  auto sys = loadFixture("dgx_h100.xml");
  ASSERT_TRUE(sys);
  auto cpus = sys->childrenNamed("cpu");
  ASSERT_EQ(cpus.size(), 2u);
  for (XmlNode* cpu : cpus) {
    EXPECT_EQ(cpu->attrOr("vendor", ""), "GenuineIntel");
    EXPECT_EQ(intAttr(*cpu, "familyid"), 6);
    EXPECT_EQ(intAttr(*cpu, "modelid"), 143);
    // Two PCIe switches per socket, each with 2 GPUs and 2 NICs.
    auto switches = cpu->childrenNamed("pci");
    ASSERT_EQ(switches.size(), 2u);
    for (XmlNode* sw : switches) {
      EXPECT_EQ(sw->attrOr("class", ""), "0x060400");
      int gpus = 0, nics = 0;
      for (XmlNode* dev : sw->childrenNamed("pci")) {
        gpus += dev->firstChild("gpu") != nullptr;
        nics += dev->firstChild("nic") != nullptr;
      }
      EXPECT_EQ(gpus, 2);
      EXPECT_EQ(nics, 2);
    }
  }
  auto gpus = sys->findAll("gpu");
  ASSERT_EQ(gpus.size(), 8u);
  for (XmlNode* gpu : gpus) {
    EXPECT_EQ(intAttr(*gpu, "sm"), 90);
    EXPECT_EQ(intAttr(*gpu, "gdr"), 1);
    auto links = gpu->childrenNamed("nvlink");
    ASSERT_EQ(links.size(), 1u);
    EXPECT_EQ(intAttr(*links[0], "count"), 18);
    EXPECT_EQ(links[0]->attrOr("tclass", ""), "0x068000");
    EXPECT_EQ(gpu->parent()->attrOr("device", ""), "0x2330");
    EXPECT_EQ(gpu->parent()->attrOr("link_speed", ""), "32.0 GT/s PCIe");
    // The GPU's NIC (net dev == gpu dev) sits under the same PCIe switch.
    int64_t dev = intAttr(*gpu, "dev");
    XmlNode* net = sys->findFirst("net", "dev", std::to_string(dev));
    ASSERT_NE(net, nullptr);
    EXPECT_EQ(net->ancestor("pci")->parent(), gpu->parent()->parent());
  }
  // GPUs 0-3 on socket 0, 4-7 on socket 1.
  EXPECT_EQ(sys->findFirst("gpu", "dev", "3")->ancestor("cpu"), cpus[0]);
  EXPECT_EQ(sys->findFirst("gpu", "dev", "4")->ancestor("cpu"), cpus[1]);
  auto nets = sys->findAll("net");
  ASSERT_EQ(nets.size(), 8u);
  for (XmlNode* net : nets) {
    EXPECT_EQ(intAttr(*net, "speed"), 400000);
    EXPECT_EQ(intAttr(*net, "gdr"), 1);
    EXPECT_EQ(net->attrOr("name", ""), "mlx5_" + net->attrOr("dev", ""));
    EXPECT_EQ(net->ancestor("pci")->attrOr("class", ""), "0x020700");
  }
}

TEST(TopoXmlFixtures, Pcie8Gpu2Socket) {
  auto sys = loadFixture("pcie_8gpu_2socket.xml");
  ASSERT_TRUE(sys);
  auto cpus = sys->childrenNamed("cpu");
  ASSERT_EQ(cpus.size(), 2u);
  for (XmlNode* cpu : cpus) {
    EXPECT_EQ(cpu->attrOr("vendor", ""), "AuthenticAMD");
    int switches = 0;
    for (XmlNode* pci : cpu->childrenNamed("pci")) {
      if (pci->attrOr("class", "") != "0x060400") continue;
      ++switches;
      EXPECT_EQ(pci->findAll("gpu").size(), 2u);
    }
    EXPECT_EQ(switches, 2);
    EXPECT_EQ(cpu->findAll("net").size(), 1u);  // one NIC per socket, on a root port
    EXPECT_EQ(cpu->findFirst("nic")->parent()->parent(), cpu);
  }
  EXPECT_EQ(sys->findAll("gpu").size(), 8u);
  EXPECT_EQ(sys->findAll("nvlink").size(), 0u);
  EXPECT_EQ(sys->findAll("net").size(), 2u);
}

TEST(TopoXmlFixtures, A100FourGpuNvlinkMesh) {
  auto sys = loadFixture("a100_4gpu_nvlink.xml");
  ASSERT_TRUE(sys);
  EXPECT_EQ(sys->childrenNamed("cpu").size(), 1u);
  auto gpus = sys->findAll("gpu");
  ASSERT_EQ(gpus.size(), 4u);
  // links[a][b] = NVLink count from a to b; must be 4 for every pair, symmetric, 12 per GPU.
  std::map<std::string, std::map<std::string, int64_t>> links;
  for (XmlNode* gpu : gpus) {
    EXPECT_EQ(intAttr(*gpu, "sm"), 80);
    std::string self = gpu->parent()->attrOr("busid", "");
    int64_t total = 0;
    for (XmlNode* nvl : gpu->childrenNamed("nvlink")) {
      int64_t count = intAttr(*nvl, "count");
      links[self][nvl->attrOr("target", "")] += count;
      total += count;
    }
    EXPECT_EQ(total, 12);
  }
  for (XmlNode* a : gpus) {
    for (XmlNode* b : gpus) {
      if (a == b) continue;
      std::string ba = a->parent()->attrOr("busid", ""), bb = b->parent()->attrOr("busid", "");
      EXPECT_EQ(links[ba][bb], 4) << ba << " -> " << bb;
      EXPECT_EQ(links[ba][bb], links[bb][ba]);
    }
  }
  EXPECT_EQ(sys->findAll("net").size(), 1u);
}

TEST(TopoXmlFixtures, Gh200) {
  auto sys = loadFixture("gh200.xml");
  ASSERT_TRUE(sys);
  auto cpus = sys->childrenNamed("cpu");
  ASSERT_EQ(cpus.size(), 1u);
  EXPECT_EQ(cpus[0]->attrOr("arch", ""), "arm64");
  EXPECT_FALSE(cpus[0]->hasAttr("vendor"));  // NCCL records vendor/family/model on x86 only
  auto gpus = sys->findAll("gpu");
  ASSERT_EQ(gpus.size(), 1u);
  XmlNode* c2c = gpus[0]->firstChild("c2c");
  ASSERT_NE(c2c, nullptr);
  // Bandwidth in NCCL's units: bw (MB/s per link) x count / 1000 = GB/s.
  EXPECT_EQ(intAttr(*c2c, "bw") * intAttr(*c2c, "count") / 1000, 450);
  EXPECT_EQ(gpus[0]->childrenNamed("nvlink").size(), 0u);
  EXPECT_EQ(sys->findAll("net").size(), 1u);
}

TEST(TopoXmlFixtures, CpuOnly) {
  auto sys = loadFixture("cpu_only.xml");
  ASSERT_TRUE(sys);
  EXPECT_EQ(sys->childrenNamed("cpu").size(), 2u);
  EXPECT_EQ(sys->findAll("gpu").size(), 0u);
  auto nets = sys->findAll("net");
  ASSERT_EQ(nets.size(), 1u);
  EXPECT_EQ(intAttr(*nets[0], "gdr"), 0);
  EXPECT_EQ(nets[0]->ancestor("cpu")->attrOr("numaid", ""), "0");
}

}  // namespace
}  // namespace accl
