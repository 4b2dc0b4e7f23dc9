// The tuner's inputs and its per-size cost table: what a cost model must predict (the time, in
// microseconds, of one collective of a given size for every algorithm x protocol), the summary of
// the topology it predicts from, and the choice the tuner hands the engine.
//
// Two models implement CostModel: GpuCostModel (tuner/gpu_model.h: NCCL's latency + bandwidth
// model over the searched rings/trees, with NCCL's default constants) and HostCostModel
// (tuner/host_model.h: the host backend, from `accl-tune calibrate` measurements or built-in
// defaults). A tuner plugin (NCCL_TUNER_PLUGIN) may then edit the table.
#pragma once

#include <string>

#include "device/common/ids.h"
#include "nccl.h"
#include "topo/search.h"

namespace accl {

struct TunerConstantsV5;  // tuner/tuner_plugin_abi.h

// Algorithms the tuner ranks: NCCL's seven plus accl's host-only kAlgoOneShot (device/common/ids.h).

// The machine and communicator shape a model predicts for.
struct TunerTopo {
  int nRanks = 1;
  int nNodes = 1;
  int ppn = 1;              // ranks per node (the largest node)
  bool host = true;         // host backend (CPU memory, threads) rather than CUDA
  // Whether the communicator's backend runs the one-round all-reduce (kAlgoOneShot): the host
  // backend does; the CUDA backend has no kernel for it (it is priced by the host model only
  // when topology discovery found no GPU, createEngineTuner).
  bool oneShotRuns = true;
  int sm = 0;               // compute capability x10 of the GPUs (0 on the host backend)
  std::string cpuVendor;    // "GenuineIntel", "AuthenticAMD", ... (llMaxBw row across nodes)
  bool ll128Supported = false;  // NCCL's LL128 conditions (typeIntra ≤ NVB, ...) hold
  TopoGraph ring;           // searched ring graph (nChannels, bwIntra, bwInter, types)
  TopoGraph tree;           // searched tree graph
  // The network between nodes (tuner/tuner_net.h), used only when nNodes > 1; 0 = unknown (the
  // models keep their constants): the chosen NIC's GB/s per node and its latency.
  double netGBps = 0;
  double netLatencyUs = 0;
};

// Builds the summary for `nRanks` ranks over `nNodes` nodes from a node's topology: runs the
// ring and tree searches (multi-node when nNodes > 1) and derives ppn, sm, LL128 support.
ncclResult_t tunerTopoFromSystem(const TopoSystem& system, int nRanks, int nNodes, bool host, TunerTopo* out);

// Predicted microseconds per algorithm x protocol; a negative entry means "not available".
struct CostTable {
  float us[kNumTunerAlgos][kNumProtos];
  void clear() {
    for (auto& row : us)
      for (float& v : row) v = -1.0f;
  }
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // A short name for logs and tables ("nccl-gpu", "host-calibrated", "host-default").
  virtual const char* name() const = 0;
  // Fills `table` for one collective of `bytes` (the whole operation's size: count x type size,
  // x nRanks for AllGather / ReduceScatter). Entries for unavailable combinations stay negative.
  virtual void predict(FuncId func, size_t bytes, CostTable* table) const = 0;
  // Channels and threads per channel to run the chosen combination with (threads: 0 on host).
  virtual void shape(FuncId func, int algo, int proto, size_t bytes, int* nChannels, int* nThreads) const = 0;
  // NCCL's tuning constants, which a v5 tuner plugin may edit at init before any prediction;
  // nullptr when the model has none (the plugin then edits a scratch copy nothing reads).
  virtual TunerConstantsV5* pluginConstants() { return nullptr; }
};

// What the tuner hands the engine for one collective.
struct TunerChoice {
  int algo = kAlgoRing;     // AlgoId, or kAlgoOneShot
  int proto = kProtoSimple;
  int nChannels = 1;
  int nThreads = 0;
  float predictedUs = 0;
};

}  // namespace accl
