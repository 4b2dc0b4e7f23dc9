// GpuCostModel: NCCL's analytical cost model for the CUDA backend. For every algorithm x protocol
// it derives a bus bandwidth from the searched graph (channels x per-channel bandwidth, capped
// by per-protocol limits), turns it into an algorithm bandwidth, adds up a latency from per-hop
// hardware latencies, and predicts  time = latency + bytes / bandwidth.
//
// What is modelled (all in gpu_model.cc, with the numbers of NCCL 2.28's defaults):
//   * Ring for every collective; Tree for AllReduce; PAT for AllGather / ReduceScatter when each
//     node has one rank (Simple only); LL, LL128 (when the topology supports it) and Simple.
//   * NVLS, NVLSTree, CollNetDirect and CollNetChain stay unavailable (negative): TunerTopo
//     carries no NVLink-SHARP or in-network-reduction capability yet, and without one NCCL
//     does not offer them either.
//   * The tree correction factor (NCCL's measured shortfall of the tree in the middle sizes) is
//     an approximation of NCCL's table: a piecewise-linear curve per protocol over the 23
//     power-of-two buckets 64 B .. 256 MiB (see treeCorrection() in gpu_model.cc).
//   * Ring Simple AllReduce across nodes pays 1.4x latency (1.9x before sm80) once each channel
//     moves at least 64 B per rank.
//   * Channels: the searched graph's count is NCCL's search result (already duplicated when its
//     per-channel bandwidth allowed); the communicator runs twice that (NCCL's postset) and twice
//     again on sm90+ multi-node rings faster than 45 GB/s with fewer than 16 channels, clamped by
//     NCCL_MIN/MAX_NCHANNELS and 64. shape() then drops channels, then halves threads, while the
//     message is below NCCL's per-thread thresholds.
// numPipeOps (aggregated operations) is 1: every prediction is for one collective.
#pragma once

#include "tuner/cost_model.h"
#include "tuner/tuner_plugin_abi.h"

namespace accl {

// NCCL's constants (rows {LL, LL128, Simple}); a v5 tuner plugin's init may edit them in place.
using GpuModelConstants = TunerConstantsV5;

// NCCL 2.28's default values.
GpuModelConstants defaultGpuModelConstants();

class GpuCostModel : public CostModel {
 public:
  explicit GpuCostModel(const TunerTopo& topo);
  GpuCostModel(const TunerTopo& topo, const GpuModelConstants& constants);

  const char* name() const override { return "nccl-gpu"; }
  void predict(FuncId func, size_t bytes, CostTable* table) const override;
  void shape(FuncId func, int algo, int proto, size_t bytes, int* nChannels, int* nThreads) const override;
  TunerConstantsV5* pluginConstants() override { return &c_; }

  const GpuModelConstants& constants() const { return c_; }

  // The two halves of a prediction, before the size-dependent corrections: algorithm bandwidth
  // (GB/s) and latency (µs). False when func x algo x proto is unavailable on this topology.
  bool bandwidthAndLatency(FuncId func, int algo, int proto, double* algBw, double* latUs) const;
  // Channels the communicator runs for `algo` (after NCCL's duplication and clamps) and the
  // largest thread count per channel for algo x proto.
  int runChannels(int algo) const;
  int maxThreads(int algo, int proto) const;
  // Compute-capability row (Volta 0 .. Blackwell 3) and node-scale column (1, 2, 4+ nodes).
  int compCapIndex() const;
  int scaleIndex() const;

 private:
  const TopoGraph& graphFor(int algo) const;
  double netOverheadUs() const;

  TunerTopo topo_;
  GpuModelConstants c_;
  int minChannels_ = 0, maxChannels_ = 0;  // NCCL_MIN/MAX_NCHANNELS (0: unset)
  int nThreadsEnv_ = -2, ll128ThreadsEnv_ = -2;
  int netOverheadNs_ = -2;
};

}  // namespace accl
