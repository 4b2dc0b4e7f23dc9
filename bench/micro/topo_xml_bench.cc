// Micro benchmark: topology XML handling (src/topo) on the fixtures in tests/data — parsing
// the text into an XmlNode tree (xmlParse, the file already in memory), and parsing plus
// building the TopoSystem with its paths (TopoSystem::fromXml), which is what a communicator
// pays when NCCL_TOPO_FILE is set. Bytes/s counts the XML text.
//   accl-micro-topo-xml --benchmark_format=json
#include <benchmark/benchmark.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "topo/system.h"
#include "topo/xml.h"

#ifndef ACCL_MICRO_DATA_DIR
#define ACCL_MICRO_DATA_DIR "tests/data"
#endif

namespace accl {
namespace {

constexpr const char* kFixtures[] = {"dgx_h100", "pcie_8gpu_2socket", "a100_4gpu_nvlink", "gh200", "cpu_only"};

bool readFixture(const char* name, std::string* text, std::string* path) {
  *path = std::string(ACCL_MICRO_DATA_DIR) + "/" + name + ".xml";
  std::ifstream in(*path);
  std::stringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  return in.good() || !text->empty();
}

void BM_Parse(benchmark::State& state, const char* fixture) {
  std::string text, path;
  if (!readFixture(fixture, &text, &path)) {
    state.SkipWithError("cannot read the fixture");
    return;
  }
  for (auto _ : state) {
    std::unique_ptr<XmlNode> root;
    if (xmlParse(text, path.c_str(), &root) != ncclSuccess) {
      state.SkipWithError("xmlParse failed");
      break;
    }
    benchmark::DoNotOptimize(root.get());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
}

void BM_ParseAndBuild(benchmark::State& state, const char* fixture) {
  std::string text, path;
  TopoPolicy policy;
  if (!readFixture(fixture, &text, &path) || TopoPolicy::fromEnv(&policy) != ncclSuccess) {
    state.SkipWithError("cannot read the fixture");
    return;
  }
  for (auto _ : state) {
    std::unique_ptr<XmlNode> root;
    std::unique_ptr<TopoSystem> system;
    if (xmlParse(text, path.c_str(), &root) != ncclSuccess ||
        TopoSystem::fromXml(*root, policy, &system) != ncclSuccess) {
      state.SkipWithError("parse or TopoSystem::fromXml failed");
      break;
    }
    benchmark::DoNotOptimize(system.get());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
}

void registerAll() {
  for (const char* f : kFixtures) {
    benchmark::RegisterBenchmark((std::string("topo_xml/parse/") + f).c_str(), BM_Parse, f);
    benchmark::RegisterBenchmark((std::string("topo_xml/parse_and_build/") + f).c_str(), BM_ParseAndBuild, f);
  }
}

}  // namespace
}  // namespace accl

int main(int argc, char** argv) {
  accl::registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
