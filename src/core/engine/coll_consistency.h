// Opt-in collective consistency checking (ACCL_CHECK_COLLECTIVES=1, read when a communicator is
// created; off by default). Beyond NCCL, like PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL: before a
// launch runs, every rank publishes the signature of each collective in it — function, count,
// datatype, reduction op, root and the collective's sequence number on the communicator — with
// one all-gather over the bootstrap's messages, and every rank compares them all. All ranks see the same
// records, so they reach the same verdict: on a mismatch every rank fails the call with
// ncclInvalidUsage and the same message naming the rank(s) that differ and the fields, e.g.
//   "rank 2 called ncclAllReduce count 100 but ranks 0, 1, 3 called count 128"
// instead of returning wrong data or hanging; the launch is not run, and the communicator stays
// usable. The ranks most of the communicator agrees with are the reference (ties: the group of the
// lowest rank).
//
// Scope and cost: the five NCCL collectives (and their *Config variants, grouped or not); launches
// of sends and receives only (including AlltoAll / Gather / Scatter, which are built from them) are
// not checked, since not every rank takes part. Fields a function ignores (op of a broadcast or
// all-gather, root of an all-reduce) are not compared, nor buffers; ops made with
// ncclRedOpCreatePreMulSum compare as "custom" (their handles and scalars are per rank). One all-gather
// over the bootstrap per launch (ceil(log2 n) rounds of messages): a debug mode, not free.
// A rank that never reaches the check (it failed a local argument check, or skipped the call)
// leaves the others waiting in the all-gather until ACCL_BOOTSTRAP_TIMEOUT_MS.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/enqueue.h"
#include "nccl.h"

struct ncclComm;

namespace accl {

// What ranks compare for one collective. Fixed layout: it travels between ranks as bytes.
struct CollSignature {
  int32_t func;   // FuncId
  int32_t type;   // ncclDataType_t
  int32_t op;     // ncclRedOp_t (ncclNumOps for any custom op), -1 for functions that do not reduce
  int32_t root;   // -1 for functions without a root
  uint64_t count;
  uint64_t seq;   // 1 = the communicator's first collective
  bool operator==(const CollSignature&) const = default;
};
static_assert(sizeof(CollSignature) == 32, "CollSignature travels between ranks as 32 bytes");

CollSignature collSignature(const CollCall& call, uint64_t seq);

// Runs the exchange and the comparison for this rank's collectives of one launch (`call` names
// the API function in the error). ncclSuccess when every rank launched the same collectives.
ncclResult_t checkCollConsistency(ncclComm* comm, const char* call, const std::vector<CollSignature>& mine);

// The comparison alone: `all[r]` is rank r's list. "" when all agree, else the description of
// every difference (the text after "...: " in the error).
std::string describeCollMismatch(const std::vector<std::vector<CollSignature>>& all);

}  // namespace accl
