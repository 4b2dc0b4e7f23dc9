// Per-call configuration of the nccl*Config collectives: a user's ncclCollConfig_t read by its
// size / magic / version (a versioned, append-only struct: fields beyond a smaller caller's size
// count as unset), validated, and turned into the CollCallConfig that travels with the task.
//
// What each field means here:
//   algSelection       NCCL_ALGO's syntax ("ring", "^tree", "allreduce:tree;broadcast:ring", ...),
//                      parsed by tuner/algo_proto_filter.h and applied on top of the communicator's
//                      NCCL_ALGO / NCCL_PROTO for this call only. NULL or "" = automatic. An entry
//                      for another function leaves this call automatic.
//   forceAlgSelection  1 (default): a selection that does not parse, or that no algorithm the
//                      backend implements satisfies (e.g. "nvls" on the host backend, "tree" for a
//                      broadcast), fails the call (ncclInvalidUsage); 0: the call runs with the
//                      automatic choice and an INFO line (TUNING) says so.
//   minCTAs / maxCTAs  bounds on the channels this call uses: 1 <= min <= max <= the
//                      communicator's maxCTAs, else ncclInvalidArgument. The host backend has
//                      only the channels the communicator was built with (NCCL_MIN_NCHANNELS, the
//                      communicator's minCTAs), so bounds above that are capped to it. The
//                      one-round host all-reduce (OneShot) always runs on one channel.
//   size / version     a caller's struct must reach at least past `ext`; a field that does not
//                      fit in its size keeps the initializer's value (unset).
//   nvlsCTAs, cgaClusterSize, CTAPolicy
//                      validated like the communicator's fields (ranges of config.cc) and
//                      accepted; the host backend has no NVLS, clusters or CTA policies.
//   userProfilerTag    handed to profiler plugins (v7 userTag of the CollApi / Coll events, and of
//                      the P2pApi / P2p events of an AlltoAll / Gather / Scatter's parts), carried
//                      into the plan (PlanItem::profilerTag), and shown in the call's COLL INFO line.
//   launchCompletionEvent
//                      must be NULL: accl launches no kernel whose completion could be recorded
//                      (host backend: there is no CUDA stream at all) -> ncclInvalidUsage.
//   ext                walked up to kMaxCollConfigExt entries (a longer list, or a cycle, is
//                      ncclInvalidArgument); every vendor's options are ignored (accl has none).
// AlltoAll, Gather and Scatter are groups of send/recv: NCCL_ALGO's syntax names no point-to-point
// algorithm, so their algSelection is only checked for syntax; channel bounds apply to them.
// Like NCCL, the configuration must be the same on every rank and is only validated locally.
#pragma once

#include <cstdint>

#include "device/common/ids.h"
#include "nccl.h"
#include "tuner/algo_proto_filter.h"
#include "tuner/cost_model.h"

struct ncclComm;

namespace accl {

inline constexpr int kMaxCollConfigExt = 1024;

struct CollCallConfig {
  bool given = false;                 // the call passed a non-NULL config
  bool restrictsAlgo = false;         // algSelection narrows this call's algorithms to algoMask
  uint32_t algoMask = kAllAlgosMask;  // bits of AlgoId (OneShot included)
  int minChannels = 0;                // 0: unset
  int maxChannels = 0;                // 0: unset
  uint64_t profilerTag = 0;
  // restrictsAlgo: the tuner's pick within algoMask, made when the call was queued (per-call
  // picks bypass the engine's choice cache, which serves the plain calls).
  TunerChoice choice;
};

// Reads and validates `user` (non-NULL) for a call of `func` over `bytes` (the whole operation's
// size, as the tuner counts it; func = kFuncSendRecv for the send/recv compositions) on `comm`,
// which must be ready, and resolves its algorithm selection. Queues nothing: a bad config is an
// error whatever the group state.
ncclResult_t resolveCollConfig(const char* call, FuncId func, size_t bytes, const ncclCollConfig_t* user,
                               const ncclComm* comm, CollCallConfig* out);

// The channels a collective runs on: the tuner's count clamped to the call's bounds, then to the
// `available` channels of the communicator.
int boundChannels(int tunerChannels, const CollCallConfig& cfg, int available);

}  // namespace accl
