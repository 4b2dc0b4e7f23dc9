// The steps both launch paths share (see launch_outcome.h).
#include "core/engine/launch_outcome.h"

#include <string>

#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "core/liveness/liveness.h"
#include "device/common/dtypes.h"
#include "util/check.h"
#include "util/last_error.h"
#include "util/log.h"

namespace accl {

bool revokedOrFailed(const ncclComm* comm) {
  const CommState state = comm->state.load();
  return state == CommState::Revoked || state == CommState::Failed;
}

ncclResult_t checkStillRunnable(ncclComm* comm, const char* call) {
  if (revokedOrFailed(comm)) {
    const CommState state = comm->state.load();
    return fail(ncclInvalidUsage, "%s: comm %p was %s before the group ended; its queued operations were dropped",
                call, static_cast<void*>(comm), state == CommState::Revoked ? "revoked" : "failed");
  }
  return ncclSuccess;
}

size_t collBytes(const ncclComm* comm, const CollCall& c) {
  const bool blocks = c.func == kFuncAllGather || c.func == kFuncReduceScatter;
  return c.count * dtypeSize(c.type) * (blocks ? comm->nranks : 1);
}

// The COLL line, e.g.
//   AllReduce: opCount 3 sendbuff 0x.. recvbuff 0x.. count 1024 datatype 7 op 0 root 0 comm 0x..
//   [nranks=4] algo Ring proto Simple nChannels 2 config (per-call algorithm) profilerTag 0x2a
uint64_t noteCollPlanned(ncclComm* comm, const CollCall& c, const TunerChoice& choice, int nChannels,
                         bool configGiven, bool perCallAlgo, uint64_t profilerTag) {
  CommEngine& e = *comm->engine;
  const uint64_t opCount = e.collOpCount++;
  ACCL_INFO(ACCL_LOG_COLL,
            "%s: opCount %llx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p [nranks=%d] algo %s "
            "proto %s nChannels %d%s%s profilerTag 0x%llx",
            funcName(c.func), static_cast<unsigned long long>(opCount), c.sendbuff, c.recvbuff, c.count,
            static_cast<int>(c.type), static_cast<int>(c.op), c.root, static_cast<const void*>(comm), comm->nranks,
            algoName(choice.algo), protoName(choice.proto), nChannels, configGiven ? " config" : "",
            perCallAlgo ? " (per-call algorithm)" : "", static_cast<unsigned long long>(profilerTag));
  return e.collSeqByFunc[c.func]++;
}

CollWork collWorkFor(const CollCall& c, const DevRedOp& op, const TunerChoice& choice, int ch, int nChannels,
                     size_t chunkElems) {
  CollWork w{};
  w.func = c.func;
  w.algo = choice.algo == kAlgoOneShot ? kAlgoRing : static_cast<AlgoId>(choice.algo);
  w.proto = static_cast<ProtoId>(choice.proto);
  w.type = c.type;
  w.op = op;
  w.sendbuff = c.sendbuff;
  w.recvbuff = c.recvbuff;
  w.count = c.count;
  w.root = c.root;
  w.chanOffset = c.count * ch / nChannels;
  w.chanCount = c.count * (ch + 1) / nChannels - w.chanOffset;
  w.chunkElems = chunkElems;
  return w;
}

ncclResult_t settleLaunch(ncclComm* comm, const char* call, ncclResult_t res) {
  if (res == ncclSuccess) return res;
  const int stop = comm->abortFlag.load();
  if (res != ncclInvalidUsage && stop != 0 && stop != kAbortByPeerFailure) {
    // An abort interrupted a wait that reports its own code (a connection handshake): say what
    // happened.
    std::string inner = lastErrorText();
    res = fail(ncclInvalidUsage, "%s: comm %p was aborted (ncclCommAbort, ncclCommDestroy or ncclCommRevoke on another "
               "thread) during the operation (%s)", call, static_cast<void*>(comm), inner.c_str());
  }
  if (res != ncclInvalidArgument && res != ncclInvalidUsage) {
    // The operation stopped half-way (a peer died or stalled): this communicator cannot run
    // another one. Closing the connections makes the peers still waiting on this rank fail now
    // instead of at their timeout; survivors go on with ncclCommShrink.
    comm->asyncResult = res;
    comm->state = CommState::Failed;
    comm->engine->releaseConnections(/*stopRunning=*/true);
  }
  return res;
}

}  // namespace accl
