// Tuner: cost model -> tuner plugin -> NCCL_ALGO / NCCL_PROTO and backend masks -> the cheapest
// entry, then the model's channel / thread shape (see tuner.h).
#include "tuner/tuner.h"

#include <algorithm>

#include "tuner/gpu_model.h"
#include "tuner/tuner_plugin.h"
#include "util/check.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {
namespace {

constexpr int kMaxPluginChannels = 64;  // NCCL's MAXCHANNELS

struct Pick {
  int algo = -1;
  int proto = -1;
  float us = 0;
};

// The cheapest non-negative entry, and the second cheapest.
void cheapest(const CostTable& t, Pick* best, Pick* second) {
  for (int a = 0; a < kNumTunerAlgos; ++a) {
    for (int p = 0; p < kNumProtos; ++p) {
      float us = t.us[a][p];
      if (us < 0) continue;
      if (best->algo < 0 || us < best->us) {
        *second = *best;
        *best = {a, p, us};
      } else if (second->algo < 0 || us < second->us) {
        *second = {a, p, us};
      }
    }
  }
}

}  // namespace

bool backendImplements(const TunerTopo& topo, FuncId func, int algo, int proto) {
  const bool allReduce = func == kFuncAllReduce;
  if (topo.host) {
    // Host: LL and Simple (LL128 requests run as Simple, decided in Tuner::choose).
    if (proto == kProtoLL128) return false;
    if (algo == kAlgoRing) return true;
    if (algo == kAlgoTree) return allReduce;
    if (algo == kAlgoOneShot) return allReduce && proto == kProtoSimple && topo.oneShotRuns;
    return false;
  }
  // CUDA: the algorithms with a schedule in src/algos and kernels behind it. The GPU model still
  // prices NVLS, NVLSTree, CollNet and PAT with NCCL's formulas (where the topology offers them);
  // the backend has no kernels for them, so the tuner never hands them out (a forced
  // NCCL_ALGO=PAT fails naming the backend, in Tuner::choose).
  // LL128 only inside a node: the network proxy forwards Simple and LL steps, and has no LL128
  // landing on the receiving side (issue 18 fault 3); NCCL enables it there, accl does not yet.
  if (proto == kProtoLL128 && topo.nNodes > 1) return false;
  switch (algo) {
    case kAlgoRing: return true;
    case kAlgoTree: return allReduce;
    default: return false;  // OneShot is host-only; NVLS / CollNet / PAT have no schedule yet
  }
}

Tuner::~Tuner() = default;

ncclResult_t Tuner::create(const TunerTopo& topo, std::unique_ptr<CostModel> model, const AlgoProtoFilter& filter,
                           uint64_t commId, std::unique_ptr<Tuner>* out) {
  if (!model) return fail(ncclInternalError, "Tuner::create: no cost model");
  std::unique_ptr<Tuner> t(new Tuner());
  t->topo_ = topo;
  t->model_ = std::move(model);
  t->filter_ = filter;

  // A v5 plugin may edit the model's constants; a model without NCCL's constants lends it a
  // scratch copy instead.
  TunerConstantsV5 scratch = defaultGpuModelConstants();
  TunerPluginArgs args;
  args.nRanks = static_cast<size_t>(std::max(1, topo.nRanks));
  args.nNodes = static_cast<size_t>(std::max(1, topo.nNodes));
  args.commId = commId;
  args.nvlDomains = {std::max(1, topo.nNodes), std::max(1, topo.ppn), std::max(1, topo.ppn)};
  args.constants = t->model_->pluginConstants() ? t->model_->pluginConstants() : &scratch;
  TunerPlugin::load(args, &t->plugin_);
  ACCL_INFO(ACCL_LOG_TUNING, "tuner: model %s, plugin %s, %d ranks on %d nodes (%d per node), %s backend%s",
            t->model_->name(), t->plugin_ ? t->plugin_->name() : "none", topo.nRanks, topo.nNodes, topo.ppn,
            topo.host ? "host" : "CUDA", topo.ll128Supported ? ", LL128 supported" : "");
  *out = std::move(t);
  return ncclSuccess;
}

const char* Tuner::pluginName() const { return plugin_ ? plugin_->name() : nullptr; }

void Tuner::table(FuncId func, size_t bytes, CostTable* out) const {
  int pluginChannels;
  evaluate(func, bytes, out, &pluginChannels, nullptr);
}

bool Tuner::allowed(FuncId func, int algo, int proto) const {
  if (!filter_.allowsAlgo(func, algo) || !filter_.allowsProto(func, proto)) return false;
  // LL128 left to the topology (the user did not ask for it by name).
  if (proto == kProtoLL128 && filter_.protoIsAuto(func, proto) && !topo_.ll128Supported) return false;
  return true;
}

void Tuner::evaluate(FuncId func, size_t bytes, CostTable* out, int* pluginChannels, CostTable* beforeMasks,
                     uint32_t callAlgos) const {
  model_->predict(func, bytes, out);
  *pluginChannels = 0;
  if (plugin_ && func != kFuncSendRecv) {
    float nccl[kPluginAlgos][kPluginProtos];
    for (int a = 0; a < kPluginAlgos; ++a)
      for (int p = 0; p < kPluginProtos; ++p) nccl[a][p] = out->us[a][p];
    plugin_->getCollInfo(func, bytes, /*numPipeOps=*/1, nccl, pluginChannels);
    // The plugin may re-price or drop (negative) what the model offers, not conjure what this
    // topology lacks.
    for (int a = 0; a < kPluginAlgos; ++a)
      for (int p = 0; p < kPluginProtos; ++p)
        if (out->us[a][p] >= 0) out->us[a][p] = nccl[a][p] < 0 ? -1.0f : nccl[a][p];
  }
  if (beforeMasks) *beforeMasks = *out;
  for (int a = 0; a < kNumTunerAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p)
      if (out->us[a][p] >= 0 &&
          !(((callAlgos >> a) & 1u) && allowed(func, a, p) && backendImplements(topo_, func, a, p)))
        out->us[a][p] = -1.0f;
}

ncclResult_t Tuner::choose(FuncId func, size_t bytes, TunerChoice* out) const {
  if (pick(func, bytes, kAllAlgosMask, out)) return ncclSuccess;
  if (filter_.algoSet || filter_.protoSet) {
    std::string algoVar = paramStr("NCCL_ALGO"), protoVar = paramStr("NCCL_PROTO");
    return fail(ncclInvalidUsage,
                "%s: NCCL_ALGO=\"%s\" / NCCL_PROTO=\"%s\" leave no algorithm x protocol the %s backend implements "
                "for %zu bytes on %d ranks (%d nodes)",
                funcName(func), algoVar.c_str(), protoVar.c_str(), topo_.host ? "host" : "CUDA", bytes, topo_.nRanks,
                topo_.nNodes);
  }
  return fail(ncclInternalError, "%s: the %s cost model offers no algorithm x protocol for %zu bytes on %d ranks",
              funcName(func), model_->name(), bytes, topo_.nRanks);
}

bool Tuner::chooseWithin(FuncId func, size_t bytes, uint32_t callAlgos, TunerChoice* out) const {
  return pick(func, bytes, callAlgos & kAllAlgosMask, out);
}

bool Tuner::pick(FuncId func, size_t bytes, uint32_t callAlgos, TunerChoice* out) const {
  CostTable t, raw;
  int pluginChannels = 0;
  evaluate(func, bytes, &t, &pluginChannels, &raw, callAlgos);
  Pick best, second;
  cheapest(t, &best, &second);
  bool ll128AsSimple = false;
  if (best.algo < 0 && topo_.host) {
    // The host runs LL128 requests as Simple: when the filters leave only LL128, rank the Simple
    // entries of the algorithms they allow with LL128.
    CostTable asSimple;
    asSimple.clear();
    for (int a = 0; a < kNumTunerAlgos; ++a)
      if (((callAlgos >> a) & 1u) && filter_.allowsAlgo(func, a) && filter_.allowsProto(func, kProtoLL128) &&
          backendImplements(topo_, func, a, kProtoSimple))
        asSimple.us[a][kProtoSimple] = raw.us[a][kProtoSimple];
    cheapest(asSimple, &best, &second);
    ll128AsSimple = best.algo >= 0;
  }
  if (best.algo < 0) return false;
  const char* perCall = callAlgos != kAllAlgosMask ? " (per-call selection)" : "";
  int nChannels = 1, nThreads = 0;
  model_->shape(func, best.algo, best.proto, bytes, &nChannels, &nThreads);
  if (pluginChannels > 0) nChannels = std::min(pluginChannels, kMaxPluginChannels);
  out->algo = best.algo;
  out->proto = best.proto;
  out->nChannels = nChannels;
  out->nThreads = nThreads;
  out->predictedUs = best.us;
  if (second.algo >= 0) {
    ACCL_TRACE(ACCL_LOG_TUNING, "%s %zu B: %s/%s %.2f us, %d ch x %d thr%s%s%s (runner-up %s/%s %.2f us; model %s%s%s)",
               funcName(func), bytes, algoName(best.algo), protoName(best.proto), best.us, nChannels, nThreads, perCall,
               ll128AsSimple ? " (LL128 requested, run as Simple)" : "",
               pluginChannels > 0 ? " (channels from plugin)" : "", algoName(second.algo),
               protoName(second.proto), second.us, model_->name(), plugin_ ? ", plugin " : "",
               plugin_ ? plugin_->name() : "");
  } else {
    ACCL_TRACE(ACCL_LOG_TUNING, "%s %zu B: %s/%s %.2f us, %d ch x %d thr%s%s%s (the only candidate; model %s%s%s)",
               funcName(func), bytes, algoName(best.algo), protoName(best.proto), best.us, nChannels, nThreads, perCall,
               ll128AsSimple ? " (LL128 requested, run as Simple)" : "",
               pluginChannels > 0 ? " (channels from plugin)" : "", model_->name(), plugin_ ? ", plugin " : "",
               plugin_ ? plugin_->name() : "");
  }
  return true;
}

}  // namespace accl
