// Micro benchmark: the tuner's decision time per collective call (tuner/tuner.h Tuner::choose:
// the cost model's table for every algorithm x protocol, the filters, the minimum), as a
// communicator built on a topology fixture would make it: the GPU model on a DGX H100 (one node
// of 8 ranks, two nodes of 16) and the host model. Each iteration decides one call; the sizes
// cycle through 8 B .. 1 GiB (x4) and the functions through all five collectives, so neither
// branch prediction nor a single cached answer flatters the figure.
//   accl-micro-tuner --benchmark_format=json
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "topo/system.h"
#include "topo/xml.h"
#include "tuner/cost_model.h"
#include "tuner/gpu_model.h"
#include "tuner/host_model.h"
#include "tuner/tuner.h"

#ifndef ACCL_MICRO_DATA_DIR
#define ACCL_MICRO_DATA_DIR "tests/data"
#endif

namespace accl {
namespace {

// The tuner a communicator of `ranks` over `nodes` nodes of the fixture would build; null (and
// *error) on failure.
std::unique_ptr<Tuner> makeTuner(const char* fixture, int ranks, int nodes, bool host, std::string* error) {
  std::string path = std::string(ACCL_MICRO_DATA_DIR) + "/" + fixture;
  std::unique_ptr<XmlNode> root;
  std::unique_ptr<TopoSystem> system;
  TopoPolicy policy;
  TunerTopo topo;
  AlgoProtoFilter filter;
  std::unique_ptr<Tuner> tuner;
  if (xmlLoadFile(path.c_str(), &root) != ncclSuccess || TopoPolicy::fromEnv(&policy) != ncclSuccess ||
      TopoSystem::fromXml(*root, policy, &system) != ncclSuccess ||
      tunerTopoFromSystem(*system, ranks, nodes, host, &topo) != ncclSuccess ||
      algoProtoFilterFromEnv(&filter) != ncclSuccess) {
    *error = "cannot build the topology from " + path;
    return nullptr;
  }
  std::unique_ptr<CostModel> model;
  if (host) topo.ring.nChannels = topo.tree.nChannels = 1;  // as a host communicator: one worker per rank
  if (host)
    model = std::make_unique<HostCostModel>(topo, /*maxChannels=*/1, /*cpus=*/8, /*calibration=*/nullptr);
  else
    model = std::make_unique<GpuCostModel>(topo);
  if (Tuner::create(topo, std::move(model), filter, /*commId=*/0, &tuner) != ncclSuccess) {
    *error = "Tuner::create failed";
    return nullptr;
  }
  return tuner;
}

void BM_Choose(benchmark::State& state, const char* fixture, int ranks, int nodes, bool host) {
  std::string error;
  std::unique_ptr<Tuner> tuner = makeTuner(fixture, ranks, nodes, host, &error);
  if (!tuner) {
    state.SkipWithError(error.c_str());
    return;
  }
  std::vector<size_t> sizes;
  for (size_t s = 8; s <= (size_t(1) << 30); s *= 4) sizes.push_back(s);
  size_t i = 0;
  int f = 0;
  for (auto _ : state) {
    TunerChoice choice;
    if (tuner->choose(static_cast<FuncId>(f), sizes[i], &choice) != ncclSuccess) {
      state.SkipWithError("Tuner::choose failed");
      break;
    }
    benchmark::DoNotOptimize(choice);
    if (++i == sizes.size()) i = 0;
    if (++f == kNumCollFuncs) f = 0;
  }
  state.SetItemsProcessed(state.iterations());  // items/s = decisions per second
}

void registerAll() {
  benchmark::RegisterBenchmark("tuner_choose/gpu/dgx_h100/8ranks_1node", BM_Choose, "dgx_h100.xml", 8, 1, false);
  benchmark::RegisterBenchmark("tuner_choose/gpu/dgx_h100/16ranks_2nodes", BM_Choose, "dgx_h100.xml", 16, 2, false);
  benchmark::RegisterBenchmark("tuner_choose/host/cpu_only/4ranks", BM_Choose, "cpu_only.xml", 4, 1, true);
}

}  // namespace
}  // namespace accl

int main(int argc, char** argv) {
  // The built-in models only: no plugin from the machine, no calibration file from the home dir.
  setenv("NCCL_TUNER_PLUGIN", "none", 0);
  setenv("ACCL_TUNER_FILE", "none", 0);
  accl::registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
