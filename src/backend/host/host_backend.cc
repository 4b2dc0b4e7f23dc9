// HostBackend: set-up, chunk sizing, connect / launch, errors and scratch (see host_backend.h).
#include "backend/host/host_backend.h"

#include <algorithm>
#include <cstring>

#include "backend/host/host_executor.h"
#include "backend/host/host_one_shot.h"
#include "backend/host/p2p_batch_loop.h"
#include "backend/host/host_prims.h"
#include "core/engine/connections.h"
#include "device/common/fifo.h"
#include "tuner/host_model.h"
#include "util/log.h"
#include "util/params.h"

namespace accl {
namespace {

// Channels are threads: beyond 16 per rank they only contend for the cores (the host backend
// kept this cap when kMaxChannels rose to 32 for the CUDA backend, so its choices do not change).
constexpr int kHostMaxChannels = 16;
static_assert(kHostMaxChannels <= kMaxChannels, "the engine sizes channel tables by kMaxChannels");

}  // namespace

HostBackend::HostBackend(EngineView view) : view_(view) {}

int HostBackend::channelCount(const CommFacts& facts) const {
  // Channels are threads, so one is the default (ranks often outnumber cores);
  // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS and the config's CTA bounds move it.
  int64_t minCh = paramInt("NCCL_MIN_NCHANNELS");
  int64_t maxCh = paramInt("NCCL_MAX_NCHANNELS");
  int n = 1;
  if (minCh > n) n = static_cast<int>(minCh);
  if (facts.minCTAs > n) n = facts.minCTAs;
  if (maxCh > 0 && n > maxCh) n = static_cast<int>(maxCh);
  if (n > facts.maxCTAs) n = facts.maxCTAs;
  if (n > kHostMaxChannels) n = kHostMaxChannels;
  if (n < 1) n = 1;
  return n;
}

FifoLayout HostBackend::fifoLayout() const { return ConnectionTable::hostLayout(view_.facts().nNodes > 1); }

ncclResult_t HostBackend::start() {
  // Every local rank runs one thread per channel: that many busy threads share the node's cores.
  // Across nodes, each local rank also has a network proxy thread and the network's own helper
  // threads (about two per channel: transports/net).
  const CommFacts& f = view_.facts();
  const int local = f.localRanks;
  const int helpers = f.nNodes > 1 ? local * (1 + 2 * view_.nChannels()) : 0;
  wait_ = hostWaitPolicy(f.abortFlag, local * view_.nChannels(), helpers);
  fitSteps_ = paramInt("NCCL_BUFFSIZE") <= 0;  // a FIFO size the user set: whole slots, as before
  const size_t slot = view_.layout().simpleSlotBytes;
  if (f.rank == 0)
    ACCL_INFO(ACCL_LOG_INIT, "host backend: Simple FIFO of %zu KiB per connection (%d steps of %zu KiB%s)",
              slot * kFifoSteps >> 10, kFifoSteps, slot >> 10,
              !fitSteps_     ? ", NCCL_BUFFSIZE"
              : f.nNodes > 1 ? ", the communicator spans hosts"
                             : "");
  return ncclSuccess;
}

void HostBackend::attachHealth(std::shared_ptr<const CommHealth> health, const uint64_t* opCount, int rank) {
  wait_.health = std::move(health);
  wait_.opCount = opCount;
  wait_.rank = rank;
}

size_t hostSimpleStepBytes(size_t slotBytes, size_t rankBytes, bool fitToItem) {
  if (!fitToItem) return slotBytes;
  // Steps as large as the slots (512 KiB across hosts) only once a rank's share fills the FIFO
  // with them; a smaller item keeps the one-host step (128 KiB) and so its pipelining (2 hosts,
  // 512 KiB all-reduce: 0.29-0.33 ms in 128 KiB steps, 0.42-0.48 ms in 512 KiB ones).
  const size_t floor = kHostSimpleBuffBytes / kFifoSteps;
  const size_t fill = rankBytes / kFifoSteps / 4096 * 4096;
  return std::min(slotBytes, std::max(floor, fill));
}

size_t HostBackend::chunkElems(ProtoId proto, size_t elemSize, size_t rankBytes) const {
  const size_t slot = HostPrims::chunkCapacity(view_.layout(), proto, elemSize);
  if (proto == kProtoLL) return slot;
  const size_t elems = hostSimpleStepBytes(slot * elemSize, rankBytes, fitSteps_) / elemSize;
  return elems > 0 ? elems : 1;  // every rank computes the same
}

std::unique_ptr<CostModel> HostBackend::costModel(TunerTopo* topo, int nChannels, int cpus) const {
  // Host algorithms, calibrated on this machine when `accl-tune calibrate` has run.
  return hostCostModelFor(topo, nChannels, cpus);
}

ncclResult_t HostBackend::launch(std::unique_ptr<Plan> plan) {
  // Synchronous: the plan has run when this returns, and goes straight back to the pool.
  for (const LocalCopy& c : plan->selfCopies) std::memmove(c.dst, c.src, c.bytes);
  ncclResult_t res = workers_.runAll(plan->nChannelsUsed, [&](int c) { return hostRunChannel(*this, c, *plan); });
  view_.recycle(std::move(plan));
  return res;
}

ncclResult_t HostBackend::runLoneColl(const CollWork& work, bool oneShot) {
  // Channel 0 runs on the calling thread in launch() too: the same work, minus the plan.
  return oneShot ? hostOneShotAllReduce(*this, 0, work) : hostRunColl(*this, 0, work);
}

ncclResult_t HostBackend::peerFailureOr(const char* what, ncclResult_t res) const {
  return ::accl::peerFailureOr(wait_, what, res);
}

void HostBackend::releaseScratch() {
  std::vector<char>().swap(oneShotScratch_);
  std::vector<P2pWork>().swap(oneShotWorks_);
  scratchBytes_.store(0, std::memory_order_relaxed);
}

HostP2pContext HostBackend::p2pContext() { return HostP2pContext{view_, &wait_}; }

ncclResult_t HostBackend::runP2pBatch(int channel, const std::vector<P2pWork>& works, const char* what) {
  HostP2pContext ctx = p2pContext();
  ctx.what = what;
  return hostRunP2pBatch(ctx, channel, works);
}

}  // namespace accl
