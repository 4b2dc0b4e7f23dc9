// The CUDA backend's KernelCh profiler events: one per operation a channel's block ran, from the
// timestamps the kernel wrote for each work item (KernelArgsHeader::itemTimes, globaltimer ns).
//
// A launch asks its kernel for timestamps only when the communicator's profiler plugin wants
// KernelCh events; the backend emits them when it reaps the completed launch, so they arrive after
// their Coll / P2p event has stopped, as NCCL's proxy-reported KernelCh events do (the plugin
// keeps the parent while it has children). Start carries the item's start time (`pTimer`), the
// KernelChStop state its end time; an item that did not end (error, abort) gets no KernelChStop.
// Host code with no CUDA dependency; the item order is packPlan's (work_batch.h).
#pragma once

#include <cstdint>

#include "core/engine/plan.h"
#include "profiler/comm_profiler.h"

namespace accl {

// Emits the KernelCh events of `plan`'s items, whose timestamps the kernel left in `times`
// ([2 * items]: start, end per item, in packPlan's order). Items without a parent event (a
// transfer to itself, an event the plugin did not record) get none.
void emitKernelChEvents(prof::CommProfiler& p, const Plan& plan, const uint64_t* times);

}  // namespace accl
