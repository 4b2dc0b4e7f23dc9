// The host backend's executor: runs each channel's items of a plan — collective schedules
// through the shared dispatch and wiring (algos/coll_dispatch.h) over HostPrims, point-to-point
// batches through the transfer progress loop, one-round all-reduces (host_one_shot.h).
// HostBackend::launch runs channel 0 on the calling thread and the others on its channel
// workers, each with hostRunChannel; everything is done when they return (the host backend is
// synchronous). Core has connected the plan's peers before (CommEngine::connectPlan).
#pragma once

#include "core/engine/plan.h"
#include "nccl.h"

namespace accl {

class HostBackend;

// Runs channel `channel`'s items of `plan` in order; returns the first error.
ncclResult_t hostRunChannel(HostBackend& backend, int channel, const Plan& plan);

// Runs one collective work item (ring or tree schedule, not a one-round all-reduce) on
// `channel` with no plan around it: a lone collective (HostBackend::runLoneColl). No profiler
// events (core sends a call to a profiled communicator the general way).
ncclResult_t hostRunColl(HostBackend& backend, int channel, const CollWork& work);

}  // namespace accl
