// The CUDA backend's ProxyOp events: for every operation of a launch that moves FIFO steps over a
// connection end the network proxy serves, one ProxyOp (parent: the operation's Coll / P2p
// event), marked on the end (ConnEnd::profOps, profiler/proxy_op_marks.h) with the steps it
// covers, so that the proxy parents its ProxyStep events to it and stops it once it has moved them
// all -- what the host backend does (backend/host/host_profile.h), with one difference: the steps.
//
// The host backend reads a connection's step counter before and after running an operation. On
// the CUDA backend the counters live on the device (the kernels keep them across launches) and
// the host never reads them back. So the backend counts: at each launch it runs every item's
// schedule as the kernel will (the packed items, algos/coll_dispatch.h and the point-to-point
// step rule, p2pStepCount in device/common/chunk_loop.h) over a Prims that only counts the steps
// each connection moves, and keeps the next step of every network connection end. The count is
// exact (ProxyOp's nSteps is filled in here), and the marks go in at launch, before the kernel
// can publish a step. A launch captured into a CUDA graph moves the device counters at each
// replay, unseen by the host: from the first capture on, a communicator reports no more ProxyOps
// (its ProxySteps then have no parent and are not reported either).
//
// Host code with no CUDA dependency, unit-tested on the host build.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "backend/cuda/work_batch.h"
#include "core/engine/connections.h"
#include "core/engine/engine_view.h"
#include "core/engine/plan.h"
#include "profiler/comm_profiler.h"

namespace accl {

// A connection end an item moves steps on, and how many.
struct ItemSteps {
  int peer;
  bool isSend;
  uint64_t steps;
};

// The steps collective item `item` (packed) moves on each connection end of a channel whose ring
// and tree are `ring` and `tree`: at most 2 * (kMaxTreeChildren + 1) entries written to `out`;
// returns how many.
int collItemSteps(const DevWorkItem& item, const RingView& ring, const TreeView& tree, ItemSteps* out);
// The steps point-to-point item `item` (packed) moves on its peer's connection end.
uint64_t p2pItemSteps(const DevWorkItem& item);

class CudaProxyOps {
 public:
  // Marks `plan`'s operations (packed as `packed`) on the network connection ends they use, each
  // with a ProxyOp of its own; `captured`: the launch goes into a CUDA graph (see above).
  void onLaunch(prof::CommProfiler& p, const EngineView& view, const Plan& plan, const PackedLaunch& packed,
                bool captured);

 private:
  void mark(prof::CommProfiler& p, Connection* c, int channel, void* parent, uint64_t steps);

  std::unordered_map<const Connection*, uint64_t> nextStep_;  // network ends seen so far
  bool stopped_ = false;  // a launch was captured: the counts no longer follow the device
};

}  // namespace accl
