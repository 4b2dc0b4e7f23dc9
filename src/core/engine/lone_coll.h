// The lone-collective path: a collective called outside any group, on a backend that runs work
// on the calling thread (CommBackend::runsLoneColls: the host backend), goes straight from its
// checks to the backend as one work item on channel 0 — no task in the thread's group, no plan
// from the pool, no group end — when the tuner's cached choice is one channel and the peers it
// needs are connected already. It keeps everything a launch owes the rest of the library: the
// suspend gate, the accl-ras record and sequence numbers, the COLL log line, the error handling
// of the general path (launch_outcome.h). What it skips is bookkeeping a single synchronous call
// does not need, about a third of a small call's CPU time (docs/latency.md).
//
// Anything else — inside a group, a per-call config, a profiler plugin, ACCL_CHECK_COLLECTIVES,
// several channels, a first call that still connects, zero elements, a revoked, failed or
// suspended communicator — takes the general path (enqueue.h), which behaves and reports as before.
#pragma once

#include "core/engine/enqueue.h"
#include "device/common/work.h"
#include "nccl.h"

struct ncclComm;

namespace accl {

// Runs `call` (checked: its operator resolved to `op`) on the lone-collective path when it
// qualifies, storing its result in *res and returning true; returns false, having changed
// nothing, when the call must take the general path.
bool runLoneColl(ncclComm* comm, const CollCall& call, const DevRedOp& op, ncclResult_t* res);

}  // namespace accl
