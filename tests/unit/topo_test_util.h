// Shared by the topology and tuner unit tests: finds tests/data, names its fixtures, and builds a
// TopoSystem from one.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "topo/system.h"
#include "topo/xml.h"

namespace accl::topotest {

inline std::filesystem::path dataDir() {
  if (const char* env = std::getenv("ACCL_TEST_DATA_DIR")) return env;
#ifdef ACCL_TEST_DATA_DIR_DEFAULT
  return ACCL_TEST_DATA_DIR_DEFAULT;
#else
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "data";
#endif
}

// Every machine description in tests/data.
inline const std::vector<std::string> kFixtures = {"dgx_h100.xml", "pcie_8gpu_2socket.xml", "a100_4gpu_nvlink.xml",
                                                   "gh200.xml", "cpu_only.xml"};

inline std::unique_ptr<XmlNode> loadXml(const std::string& fixture) {
  std::unique_ptr<XmlNode> root;
  EXPECT_EQ(xmlLoadFile((dataDir() / fixture).c_str(), &root), ncclSuccess) << fixture;
  return root;
}

inline std::unique_ptr<TopoSystem> build(const XmlNode& xml, const TopoPolicy& policy = TopoPolicy()) {
  std::unique_ptr<TopoSystem> sys;
  EXPECT_EQ(TopoSystem::fromXml(xml, policy, &sys), ncclSuccess);
  return sys;
}

inline std::unique_ptr<TopoSystem> load(const std::string& fixture, const TopoPolicy& policy = TopoPolicy()) {
  auto xml = loadXml(fixture);
  if (!xml) return nullptr;
  return build(*xml, policy);
}

// Node index of the NIC whose PCI bus id is `busId`.
inline int nicByBus(const TopoSystem& s, const std::string& busId) {
  for (int i = 0; i < static_cast<int>(s.nodes.size()); i++) {
    if (s.nodes[i].type == TopoNodeType::Nic && s.nodes[i].label == busId) return i;
  }
  return -1;
}

}  // namespace accl::topotest
