// Work batching for the CUDA backend: a Plan (core/engine/plan.h) becomes one kernel launch — the
// items of every channel packed into KernelArgs (kernel_args.h), or into a spill array when they
// do not fit inline — and, for tests and diagnostics, back again. Host code with no CUDA
// dependency, so it is unit-tested in the host build.
//
// Per item: the function id (dev_func.h) is checked against the kernels this library was built
// with; a call outside the set fails with ncclInvalidUsage naming the collective, type and op.
// Copy collectives and point-to-point transfers are carried in bytes (their canonical uint8 id);
// the item keeps the user's type so decoding restores the plan exactly.
#pragma once

#include <vector>

#include "backend/cuda/dev_func.h"
#include "backend/cuda/kernel_args.h"
#include "core/engine/plan.h"
#include "nccl.h"

namespace accl {

struct PackOptions {
  // Items that fit in the arguments before the launch spills (tests lower it).
  int inlineCapacity = kArgInlineItems;
  // Check ids against the ACCL_KERNEL_SUBSET set instead of the full one (defaults to this build).
  bool subset = kDevKernelSubset;
};

struct PackedLaunch {
  KernelArgs args{};                // header.spill stays null; the backend sets it for a spill
  std::vector<DevWorkItem> spill;   // every item, when they did not fit inline; empty otherwise
  bool spilled() const { return !spill.empty(); }
  // The items as the kernel will index them (inline array or spill array).
  const DevWorkItem* items() const { return spilled() ? spill.data() : args.items; }
};

// Packs `plan` (channels 0..nChannelsUsed-1). Errors: ncclInvalidUsage for an item with no
// kernel (algorithm without a CUDA schedule, one-round all-reduce) or outside the built set;
// ncclInternalError for more channels than kArgMaxChannels or more than 65535 items.
ncclResult_t packPlan(const Plan& plan, const PackOptions& options, PackedLaunch* out);

// The plan a packed launch carries, rebuilt from its items (`items` = PackedLaunch::items()):
// the inverse of packPlan for every plan it accepts. Fails with ncclInternalError on an
// inconsistent header.
ncclResult_t unpackPlan(const KernelArgsHeader& header, const DevWorkItem* items, Plan* out);

// One work item <-> one CollWork / P2pWork (exposed for tests).
ncclResult_t packColl(const CollWork& w, bool subset, DevWorkItem* out);
ncclResult_t packP2p(const P2pWork& w, bool batchEnd, DevWorkItem* out);
CollWork unpackColl(const DevWorkItem& item);
P2pWork unpackP2p(const DevWorkItem& item);

}  // namespace accl
