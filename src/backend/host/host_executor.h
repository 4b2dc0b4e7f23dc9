// The host backend's executor: connects what a plan needs, then runs each channel's items —
// collective schedules from src/algos through HostPrims, point-to-point batches through the
// transfer progress loop, one-round all-reduces (host_one_shot.h). HostBackend::launch runs
// channel 0 on the calling thread and the others on its channel workers, each with
// hostRunChannel; everything is done when they return (the host backend is synchronous).
#pragma once

#include "core/plan.h"
#include "nccl.h"

namespace accl {

class HostBackend;

// Connects every peer `plan` uses, channel by channel: every rank makes the same calls for
// collectives, and mirror calls for point-to-point.
ncclResult_t hostConnectPlan(HostBackend& backend, const Plan& plan);

// Runs channel `channel`'s items of `plan` in order; returns the first error.
ncclResult_t hostRunChannel(HostBackend& backend, int channel, const Plan& plan);

}  // namespace accl
