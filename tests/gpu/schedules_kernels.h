// Host-callable launcher for the schedule check kernels (tests/gpu/schedules_kernels.cu): runs
// one schedule with CountingPrims on the device and returns the counts.
#pragma once

#include "algos/topology_view.h"
#include "device/common/work.h"
#include "support/counting_prims.h"

namespace accl {

enum class ScheduleKind { RingAllReduce, RingAllGather, RingReduceScatter, RingBroadcast, RingReduce, TreeAllReduce };

// Returns false when no device is available or a CUDA call failed.
bool runScheduleOnDevice(ScheduleKind kind, int nranks, int index, const TreeView& tree, const CollWork& work,
                         PrimsCounts* out);

}  // namespace accl
