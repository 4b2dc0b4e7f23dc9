// The communicator's tuner: built at the end of init from the node layout (host backend) or the
// searched topology (CUDA backend), and consulted per collective through a small choice cache.
#include <sched.h>

#include <algorithm>

#include "core/comm.h"
#include "core/engine.h"
#include "topo/discover.h"
#include "tuner/host_model.h"
#include "tuner/tuner.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {
namespace {

int cpusAvailable() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

int largestNode(const NodeLayout& l) {
  std::vector<int> perNode(std::max(1, l.nNodes), 0);
  for (int node : l.nodeOfRank) ++perNode[node];
  return *std::max_element(perNode.begin(), perNode.end());
}

}  // namespace

ncclResult_t createEngineTuner(ncclComm* comm, CommEngine* e) {
  std::unique_ptr<TopoSystem> system;
  // Discovery (and NCCL_TOPO_FILE's validation, NCCL_TOPO_DUMP_FILE) runs for the CUDA backend,
  // and on the host only when the user asks for a dump (probing costs milliseconds per
  // communicator). Until the CUDA kernels land collectives run on the host executor, so the host
  // model decides for both backends; the GPU model (tunerTopoFromSystem + GpuCostModel) is wired
  // in with those kernels.
  if (comm->backend == Backend::Cuda || !paramStr("NCCL_TOPO_DUMP_FILE").empty())
    ACCL_CHECK(topoGetSystem(comm->rank, &system));
  TunerTopo topo;
  std::unique_ptr<CostModel> model;
  topo.nRanks = comm->nranks;
  topo.nNodes = comm->layout.nNodes;
  topo.ppn = largestNode(comm->layout);
  topo.host = true;
  topo.ring.nChannels = e->nChannels;
  topo.tree.nChannels = e->nChannels;
  model = std::make_unique<HostCostModel>(topo, e->nChannels, cpusAvailable(), loadHostCalibration());
  ACCL_CHECK(Tuner::create(topo, std::move(model), e->filter, comm->commHash, &e->tuner));
  if (comm->rank == 0)
    ACCL_INFO(ACCL_LOG_TUNING, "comm %p tuner: model %s%s%s", (void*)comm, e->tuner->model().name(),
              e->tuner->pluginName() ? ", plugin " : "", e->tuner->pluginName() ? e->tuner->pluginName() : "");
  return ncclSuccess;
}

ncclResult_t CommEngine::choose(FuncId func, size_t bytes, TunerChoice* out) {
  CachedChoice& slot = choiceCache[(bytes * 31 + func) % (sizeof(choiceCache) / sizeof(choiceCache[0]))];
  if (slot.func == func && slot.bytes == bytes) {
    *out = slot.choice;
    return ncclSuccess;
  }
  ACCL_CHECK(tuner->choose(func, bytes, out));
  slot.func = func;
  slot.bytes = bytes;
  slot.choice = *out;
  return ncclSuccess;
}

}  // namespace accl
