// The algorithm/protocol choice used until the cost-model tuner lands: simple size thresholds,
// restricted by NCCL_ALGO / NCCL_PROTO. It explains itself at INFO level (TUNING subsystem).
#pragma once

#include <cstddef>

#include "device/common/ids.h"
#include "nccl.h"
#include "tuner/algo_proto_filter.h"

namespace accl {

struct AlgoChoice {
  AlgoId algo;
  ProtoId proto;
  // All-reduce only: run the one-round exchange instead of `algo` (small messages, 3+ ranks,
  // NCCL_ALGO not set). It trades (n-1)x the bytes for one step of latency instead of 2(n-1).
  bool oneShot = false;
};

// Picks for `func` on `bytes` (the whole operation's size) with `nranks` ranks on `nNodes` nodes.
// Only Ring and Tree (all-reduce) and LL / Simple exist on the host backend: a filter that
// allows nothing available fails with ncclInvalidUsage naming the collective.
ncclResult_t chooseBySize(const AlgoProtoFilter& filter, FuncId func, size_t bytes, int nranks, int nNodes,
                          AlgoChoice* out);

}  // namespace accl
