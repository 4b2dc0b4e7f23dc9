// The host backend's executor: connects what a plan needs, then runs each channel's items —
// collective schedules from src/algos through HostPrims, point-to-point batches through the
// transfer progress loop — channel 0 on the calling thread, the others on the communicator's
// channel workers. Returns when everything is done (the host backend is synchronous).
#pragma once

#include "core/engine.h"
#include "core/plan.h"
#include "nccl.h"

namespace accl {

ncclResult_t hostExecutePlan(CommEngine& engine, const Plan& plan);

}  // namespace accl
