// Host-callable launcher for the schedule check kernels (tests/gpu/schedules_kernels.cu): runs
// one schedule with CountingPrims on the device and returns the counts.
#pragma once

#include "algos/ring_all_gather.h"
#include "algos/ring_all_reduce.h"
#include "algos/ring_broadcast.h"
#include "algos/ring_reduce.h"
#include "algos/ring_reduce_scatter.h"
#include "device/common/topology_view.h"
#include "algos/tree_all_reduce.h"
#include "device/common/work.h"
#include "support/counting_prims.h"

namespace accl {

enum class ScheduleKind { RingAllReduce, RingAllGather, RingReduceScatter, RingBroadcast, RingReduce, TreeAllReduce };

// Runs one schedule over CountingPrims (the same code on host and device) and returns the
// counts of both tree phases added together.
ACCL_HOST_DEVICE inline PrimsCounts countSchedule(ScheduleKind kind, const RingView& ring, const TreeView& tree,
                                                  const CollWork& work) {
  CountingPrims p, down;
  switch (kind) {
    case ScheduleKind::RingAllReduce: ringAllReduce(p, ring, work); break;
    case ScheduleKind::RingAllGather: ringAllGather(p, ring, work); break;
    case ScheduleKind::RingReduceScatter: ringReduceScatter(p, ring, work); break;
    case ScheduleKind::RingBroadcast: ringBroadcast(p, ring, work); break;
    case ScheduleKind::RingReduce: ringReduce(p, ring, work); break;
    case ScheduleKind::TreeAllReduce: treeAllReduce(p, down, tree, work); break;
  }
  PrimsCounts c = p.c;
  c.sends += down.c.sends;
  c.recvs += down.c.recvs;
  c.reduces += down.c.reduces;
  c.outputs += down.c.outputs;
  c.postOps += down.c.postOps;
  c.elemsSent += down.c.elemsSent;
  c.elemsOut += down.c.elemsOut;
  return c;
}

// Returns false when no device is available or a CUDA call failed.
bool runScheduleOnDevice(ScheduleKind kind, int nranks, int index, const TreeView& tree, const CollWork& work,
                         PrimsCounts* out);

}  // namespace accl
