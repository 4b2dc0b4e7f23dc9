// What both launch paths do around running a communicator's work: the general one (enqueue.cc:
// a group's tasks become a plan) and the lone-collective one (lone_coll.h: one call outside a
// group, run without a plan). Before: refuse a revoked or failed communicator. Around: the work item
// of a collective, its COLL log line and its sequence numbers. After: turn what the run
// returned into the call's result, marking the communicator failed when a peer died or stalled.
#pragma once

#include <cstdint>

#include "core/engine/enqueue.h"
#include "device/common/work.h"
#include "nccl.h"
#include "tuner/tuner.h"

struct ncclComm;

namespace accl {

// Whether `comm` was revoked or failed after its operations were checked (another thread,
// ncclCommRevoke, a shrink with NCCL_SHRINK_ABORT).
bool revokedOrFailed(const ncclComm* comm);
// ncclInvalidUsage, naming `call`, when revokedOrFailed(comm).
ncclResult_t checkStillRunnable(ncclComm* comm, const char* call);

// The whole operation's size as the tuner counts it (x nranks for AllGather / ReduceScatter).
size_t collBytes(const ncclComm* comm, const CollCall& c);

// Logs the COLL line of one collective about to run (NCCL's shape plus accl's choice) and takes
// its sequence numbers; returns its number among the communicator's collectives of its function
// (the profiler's seqNumber). `configGiven` / `perCallAlgo`: the call passed a config / one that
// chose the algorithm.
uint64_t noteCollPlanned(ncclComm* comm, const CollCall& c, const TunerChoice& choice, int nChannels,
                         bool configGiven, bool perCallAlgo, uint64_t profilerTag);

// The work item of channel `ch` of `nChannels` for collective `c` (its operator resolved to `op`)
// as the tuner chose it; `chunkElems` from the backend (CommBackend::chunkElems). A one-round
// all-reduce (kAlgoOneShot) is a ring item the backend runs in one round (PlanItem::oneShot).
CollWork collWorkFor(const CollCall& c, const DevRedOp& op, const TunerChoice& choice, int ch, int nChannels,
                     size_t chunkElems);

// The call's result once its launch returned `res`: an abort from another thread is named as
// such, and an operation stopped half-way (a peer died or stalled) fails the communicator and
// closes its connections, so that peers still waiting on this rank fail now, not at their timeout.
ncclResult_t settleLaunch(ncclComm* comm, const char* call, ncclResult_t res);

}  // namespace accl
