// Tuner: picks algorithm, protocol, channels and threads for one collective. It asks the cost
// model for the predicted time of every combination, lets an NCCL tuner plugin (NCCL_TUNER_PLUGIN,
// v2-v6 ABI) edit the table, drops what NCCL_ALGO / NCCL_PROTO or the backend rule out, and takes
// the minimum. Every choice can be explained (TUNING subsystem at TRACE, accl-tune table).
#pragma once

#include <memory>
#include <string>

#include "nccl.h"
#include "tuner/algo_proto_filter.h"
#include "tuner/cost_model.h"

namespace accl {

class TunerPlugin;  // tuner/tuner_plugin.h

// Whether the backend has an implementation of func x algo x proto. Host: Ring for every
// collective, Tree and OneShot for AllReduce; LL and Simple (LL128 requests run as Simple).
// CUDA: NCCL's availability rules (Ring/Tree/PAT/NVLS/CollNet as the topology allows).
bool backendImplements(const TunerTopo& topo, FuncId func, int algo, int proto);

class Tuner {
 public:
  ~Tuner();
  // `model` is owned by the tuner. Loads the plugin named by NCCL_TUNER_PLUGIN (none by default
  // unless libnccl-tuner.so is found); a plugin that fails to load or init is logged and ignored,
  // as NCCL does. `commId` is passed to v5 and v6 plugins.
  static ncclResult_t create(const TunerTopo& topo, std::unique_ptr<CostModel> model, const AlgoProtoFilter& filter,
                             uint64_t commId, std::unique_ptr<Tuner>* out);

  // The choice for one collective of `bytes` (see CostModel::predict). Fails with
  // ncclInvalidUsage when NCCL_ALGO / NCCL_PROTO leave nothing this backend implements (naming
  // the function and the variables), ncclInternalError when nothing is available at all.
  ncclResult_t choose(FuncId func, size_t bytes, TunerChoice* out) const;
  // The same choice restricted further to the algorithms in `callAlgos` (bit per AlgoId, OneShot
  // included): a per-call selection (ncclCollConfig_t.algSelection) on top of NCCL_ALGO /
  // NCCL_PROTO. Returns false, and logs nothing, when nothing is left: the caller decides whether
  // that is an error (forceAlgSelection) or falls back to choose().
  bool chooseWithin(FuncId func, size_t bytes, uint32_t callAlgos, TunerChoice* out) const;

  // The cost table after the plugin and the filters (unavailable entries negative).
  void table(FuncId func, size_t bytes, CostTable* out) const;

  const TunerTopo& topo() const { return topo_; }
  const CostModel& model() const { return *model_; }
  const char* pluginName() const;  // nullptr without a plugin

 private:
  Tuner() = default;
  // NCCL_ALGO / NCCL_PROTO (and LL128 left to the topology) allow func x algo x proto.
  bool allowed(FuncId func, int algo, int proto) const;
  // Model -> plugin -> filter and backend masks into *out; *pluginChannels is the plugin's channel
  // count (0: none). `beforeMasks` (may be null) receives the table before the masks. Algorithms
  // outside `callAlgos` are masked too.
  void evaluate(FuncId func, size_t bytes, CostTable* out, int* pluginChannels, CostTable* beforeMasks,
                uint32_t callAlgos = kAllAlgosMask) const;
  // choose() and chooseWithin(): false when nothing is left.
  bool pick(FuncId func, size_t bytes, uint32_t callAlgos, TunerChoice* out) const;
  TunerTopo topo_;
  std::unique_ptr<CostModel> model_;
  AlgoProtoFilter filter_;
  std::unique_ptr<TunerPlugin> plugin_;
};

}  // namespace accl
