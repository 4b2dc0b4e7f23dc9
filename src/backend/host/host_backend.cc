// HostBackend: set-up, chunk sizing, connect / launch, errors and scratch (see host_backend.h).
#include "backend/host/host_backend.h"

#include "backend/host/host_executor.h"
#include "core/comm.h"
#include "core/engine.h"
#include "backend/host/host_p2p.h"
#include "backend/host/host_prims.h"
#include "util/params.h"

namespace accl {

HostBackend::HostBackend(ncclComm* comm, CommEngine* engine) : comm_(comm), engine_(engine) {}

int HostBackend::channelCount(const ncclComm& comm) const {
  // Channels are threads, so one is the default (ranks often outnumber cores);
  // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS and the config's CTA bounds move it.
  int64_t minCh = paramInt("NCCL_MIN_NCHANNELS");
  int64_t maxCh = paramInt("NCCL_MAX_NCHANNELS");
  int n = 1;
  if (minCh > n) n = static_cast<int>(minCh);
  if (comm.config.base.minCTAs > n) n = comm.config.base.minCTAs;
  if (maxCh > 0 && n > maxCh) n = static_cast<int>(maxCh);
  if (n > comm.config.base.maxCTAs) n = comm.config.base.maxCTAs;
  if (n > kMaxChannels) n = kMaxChannels;
  if (n < 1) n = 1;
  return n;
}

FifoLayout HostBackend::fifoLayout() const { return ConnectionTable::hostLayout(); }

ncclResult_t HostBackend::start() {
  // Every local rank runs one thread per channel: that many busy threads share the node's cores.
  // Across nodes, each local rank also has a network proxy thread and the network's own helper
  // threads (about two per channel: transports/net).
  const int local = comm_->layout.localRanks;
  const int helpers = comm_->layout.nNodes > 1 ? local * (1 + 2 * engine_->nChannels) : 0;
  wait_ = hostWaitPolicy(&comm_->abortFlag, local * engine_->nChannels, helpers);
  return ncclSuccess;
}

void HostBackend::attachHealth(std::shared_ptr<const CommHealth> health, const uint64_t* opCount, int rank) {
  wait_.health = std::move(health);
  wait_.opCount = opCount;
  wait_.rank = rank;
}

size_t HostBackend::chunkElems(ProtoId proto, size_t elemSize) const {
  return HostPrims::chunkCapacity(engine_->layout, proto, elemSize);
}

ncclResult_t HostBackend::connect(const Plan& plan) {
  // A peer failure interrupts connection setup through the abort flag: report the failure itself.
  const PlanItem* first = plan.channels.empty() || plan.channels[0].empty() ? nullptr : &plan.channels[0][0];
  const char* what = collApiName(first && first->isColl ? first->coll.func : kFuncSendRecv, "ncclSend/ncclRecv");
  // A failure recorded before the communicator was Ready did not raise the abort flag: check first.
  if (wait_.health && wait_.health->failed()) return ::accl::peerFailureOr(wait_, what, ncclRemoteError);
  return ::accl::peerFailureOr(wait_, what, hostConnectPlan(*this, plan));
}

ncclResult_t HostBackend::launch(std::unique_ptr<Plan> plan) {
  // Synchronous: the plan has run when this returns, and goes straight back to the pool.
  ncclResult_t res = workers_.runAll(plan->nChannelsUsed, [&](int c) { return hostRunChannel(*this, c, *plan); });
  engine_->plans.recycle(std::move(plan));
  return res;
}

ncclResult_t HostBackend::peerFailureOr(const char* what, ncclResult_t res) const {
  return ::accl::peerFailureOr(wait_, what, res);
}

void HostBackend::releaseScratch() {
  std::vector<char>().swap(oneShotScratch_);
  std::vector<P2pWork>().swap(oneShotWorks_);
  scratchBytes_.store(0, std::memory_order_relaxed);
}

HostP2pContext HostBackend::p2pContext() { return HostP2pContext{&engine_->conns, &wait_}; }

ncclResult_t HostBackend::runP2pBatch(int channel, const std::vector<P2pWork>& works) {
  return hostRunP2pBatch(p2pContext(), channel, works);
}

ncclResult_t createHostBackend(ncclComm* comm, CommEngine* engine, std::unique_ptr<CommBackend>* out) {
  *out = std::make_unique<HostBackend>(comm, engine);
  return ncclSuccess;
}

}  // namespace accl
