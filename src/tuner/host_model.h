// HostCostModel: predicted times of the host backend's algorithms (Ring for every collective;
// Tree and the one-round OneShot for AllReduce) with its two protocols (LL, Simple).
//
// With a calibration (tuner/calibration.h) that covers the function and node count, the
// prediction is the measured curve of that algorithm x protocol at the nearest measured rank
// count. Otherwise it is a step model with constants measured on a 2-core x86 VM:
//   time = steps x stepLatency + bytesMoved / bandwidth
// where a step costs 0.35 us while every rank thread has a core and ~2 us x (threads / cores)
// once they outnumber the cores (each step then waits for a peer to be scheduled), and the copy
// + reduce bandwidth is 3.3 GB/s per core shared by the ranks that run on it. LL moves 8-byte
// flag+data words: 4x less payload bandwidth, slightly longer steps. Neither model has LL128
// (the host runs LL128 requests as Simple). Across hosts (TunerTopo::netGBps set) the step model
// also charges the bytes through one host's NIC at the NIC's speed, overlapped with the copies,
// and the NIC's latency per step that crosses hosts (docs/tuner.md, "The network term").
#pragma once

#include <memory>

#include "tuner/calibration.h"
#include "tuner/cost_model.h"

namespace accl {

// OneShot keeps every peer's vector in scratch (nranks x bytes per rank), so it is only a
// candidate up to this size.
inline constexpr size_t kHostOneShotMaxBytes = 1 << 20;
// Without a calibration, up to this size: beyond it the vectors of every peer outgrow the caches
// and the ring's halves win even at two ranks (2 ranks, 1 MiB: 61 us ring, 82 us OneShot; 128 KiB:
// 9.8 against 9.3-9.9).
inline constexpr size_t kHostOneShotDefaultMaxBytes = 128 << 10;

class HostCostModel : public CostModel {
 public:
  // `maxChannels`: the communicator's channel count (worker threads per rank); `cpus`: cores
  // available to the node's ranks; `calibration` may be null.
  HostCostModel(const TunerTopo& topo, int maxChannels, int cpus, std::shared_ptr<const Calibration> calibration);

  const char* name() const override;
  void predict(FuncId func, size_t bytes, CostTable* table) const override;
  void shape(FuncId func, int algo, int proto, size_t bytes, int* nChannels, int* nThreads) const override;

 private:
  double stepModelUs(FuncId func, int algo, int proto, size_t bytes) const;

  TunerTopo topo_;
  int maxChannels_;
  int cpus_;
  std::shared_ptr<const Calibration> cal_;
};

// Loads the calibration named by calibrationPath() if that file exists (ACCL_TUNER_FILE=none:
// never). A file that exists but does not parse is a warning and no calibration, so a stale
// file never stops a job. Returns null when there is none.
std::shared_ptr<const Calibration> loadHostCalibration();

// The model that prices work run by host threads, for a communicator of shape `topo`: marks the
// shape host-run and loads this machine's calibration. What the host backend answers to
// CommBackend::costModel (and the CUDA backend too, until the GPU model is wired for it).
std::unique_ptr<CostModel> hostCostModelFor(TunerTopo* topo, int maxChannels, int cpus);

}  // namespace accl
