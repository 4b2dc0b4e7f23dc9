// The launch path's activity record and consistency check (see launch_record.h).
#include "core/engine/launch_record.h"

#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "core/engine/red_op_registry.h"
#include "util/time.h"

namespace accl {

LaunchRecord::LaunchRecord(ncclComm* comm) : comm_(comm), rec_(comm->engine->activity.get()) {}

void LaunchRecord::addColl(const CollCall& call) {
  if (!rec_) return;
  if (op_.nColl == 0) {
    op_.func = call.func;
    op_.count = call.count;
    op_.type = static_cast<int>(call.type);
    CollSignature s = collSignature(call, 0);
    op_.redOp = s.op >= 0 ? builtinRedOpName(s.op, "custom") : nullptr;
    op_.root = s.root;
    firstName_ = call.name;
  }
  ++op_.nColl;
  if (rec_->checkCollectives) sigs_.push_back(collSignature(call, 0));
}

void LaunchRecord::addP2p(const P2pCall& call) {
  if (!rec_) return;
  if (op_.nP2p == 0) {
    op_.firstPeer = call.peer;
    op_.firstIsSend = call.isSend;
  }
  ++op_.nP2p;
}

ncclResult_t LaunchRecord::start() {
  if (!rec_) return ncclSuccess;
  // The timestamps are shown in seconds: the coarse clock is exact enough and cheap on this
  // per-operation path (docs/latency.md).
  RasLaunchState& st = rec_->state;
  if (sigs_.empty()) {
    // No consistency check: mark the launch running and use up its sequence numbers at once.
    markRunning();
    if (op_.nColl > 0)
      st.collSeq += static_cast<uint64_t>(op_.nColl);
    else
      ++st.p2pBatches;
    rec_->publishStart();
    running_ = true;
    return ncclSuccess;
  }
  const uint64_t firstSeq = markRunning();
  rec_->publishStart();
  running_ = true;
  for (size_t i = 0; i < sigs_.size(); ++i) sigs_[i].seq = firstSeq + i;
  ncclResult_t res = checkCollConsistency(comm_, firstName_, sigs_);
  if (res != ncclSuccess) {
    rec_->setLastNote(res == ncclInvalidUsage ? "not run: ranks disagreed (ACCL_CHECK_COLLECTIVES)"
                                              : "not run: the ACCL_CHECK_COLLECTIVES exchange failed");
    st.busy = false;
    st.hasLast = true;
    st.last = op_;
    st.lastEndNs = nowCoarseNs();
    rec_->publishEnd();
    running_ = false;
    return res;
  }
  st.collSeq += static_cast<uint64_t>(op_.nColl);
  rec_->publishStart();
  return ncclSuccess;
}

uint64_t LaunchRecord::markRunning() {
  RasLaunchState& st = rec_->state;
  const uint64_t firstSeq = st.collSeq + 1;
  op_.seq = op_.nColl > 0 ? firstSeq : st.p2pBatches + 1;
  st.busy = true;
  st.current = op_;
  st.currentSinceNs = nowCoarseNs();
  return firstSeq;
}

LaunchRecord::~LaunchRecord() {
  if (!running_) return;
  RasLaunchState& st = rec_->state;
  st.busy = false;
  st.hasLast = true;
  st.last = st.current;
  st.lastEndNs = nowCoarseNs();
  rec_->publishEnd();
  if (rec_->hasLastNote()) rec_->setLastNote("");
}

}  // namespace accl
