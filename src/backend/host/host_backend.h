// HostBackend: the CommBackend (core/engine/backend.h) that runs plans on CPU threads with no GPU —
// channel 0 on the launching thread, channels 1..n-1 on the communicator's channel workers —
// through the host Prims and the host point-to-point loop. It is synchronous: launch() returns
// when the plan is done, so query(), wait() and asyncError() never have anything pending, and the
// user's streams are ignored (there is nothing to order on them: the work is already finished
// when the call returns, which is what a stream's later work may assume).
//
// Its state: the wait policy every host wait follows (spin / yield / futex sleep, abort flag,
// timeout, the liveness record), the channel worker threads, and the one-round all-reduce's
// scratch (host_one_shot.h), which suspend releases.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/host/channel_workers.h"
#include "backend/host/p2p_batch_context.h"
#include "core/engine/backend.h"
#include "device/common/work.h"
#include "backend/host/host_wait.h"

namespace accl {

// The Simple step, in bytes, of a host work item whose channel moves `rankBytes` per rank, over
// slots of `slotBytes`: whole slots, or with `fitToItem` (NCCL_BUFFSIZE unset: across hosts the
// slots are 512 KiB) an eighth of the share when that is less, in 4 KiB multiples, never under the
// one-host step (kHostSimpleBuffBytes / kFifoSteps, 128 KiB) nor over a slot.
size_t hostSimpleStepBytes(size_t slotBytes, size_t rankBytes, bool fitToItem);

class HostBackend final : public CommBackend {
 public:
  explicit HostBackend(EngineView view);

  const char* name() const override { return "host"; }
  int channelCount(const CommFacts& facts) const override;
  FifoLayout fifoLayout() const override;
  ncclResult_t start() override;
  void attachHealth(std::shared_ptr<const CommHealth> health, const uint64_t* opCount, int rank) override;
  size_t chunkElems(ProtoId proto, size_t elemSize, size_t rankBytes) const override;
  bool launchBlocks() const override { return true; }
  std::unique_ptr<CostModel> costModel(TunerTopo* topo, int nChannels, int cpus) const override;
  ncclResult_t publishConnections(int, const ChannelLinks&) override { return ncclSuccess; }
  ncclResult_t launch(std::unique_ptr<Plan> plan) override;
  bool runsLoneColls() const override { return true; }
  ncclResult_t runLoneColl(const CollWork& work, bool oneShot) override;
  ncclResult_t query() override { return ncclSuccess; }
  ncclResult_t wait() override { return ncclSuccess; }
  ncclResult_t asyncError() override { return ncclSuccess; }
  ncclResult_t peerFailureOr(const char* what, ncclResult_t res) const override;
  uint64_t objectBytes() const override { return sizeof(HostBackend); }
  uint64_t scratchBytes() const override { return scratchBytes_.load(std::memory_order_relaxed); }
  void releaseScratch() override;
  // launch() returns when the plan has run and nothing keeps a connection's pointers.
  void releaseConnections(bool) override {}

  // For the executor and the one-round all-reduce (this folder).
  const EngineView& view() const { return view_; }
  const WaitPolicy& waitPolicy() const { return wait_; }
  HostP2pContext p2pContext();
  // Runs one batch of transfers on `channel` through the host point-to-point loop; `what` names
  // the call they serve in wait logs and errors (null: each transfer's direction).
  ncclResult_t runP2pBatch(int channel, const std::vector<P2pWork>& works, const char* what = nullptr);
  // The one-round all-reduce's buffers (peers' vectors + accumulator) and transfer list; grown by
  // a launch, kept for the next, freed by releaseScratch().
  std::vector<char>& oneShotScratch() { return oneShotScratch_; }
  std::vector<P2pWork>& oneShotWorks() { return oneShotWorks_; }
  void noteScratchBytes() {
    scratchBytes_.store(oneShotScratch_.capacity() + oneShotWorks_.capacity() * sizeof(P2pWork),
                        std::memory_order_relaxed);
  }

 private:
  EngineView view_;
  WaitPolicy wait_;
  bool fitSteps_ = true;  // hostSimpleStepBytes' fitToItem: NCCL_BUFFSIZE unset
  ChannelWorkers workers_;
  std::vector<char> oneShotScratch_;
  std::vector<P2pWork> oneShotWorks_;
  std::atomic<uint64_t> scratchBytes_{0};
};

}  // namespace accl
