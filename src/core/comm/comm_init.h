// Communicator creation: the init job that every creation path ends in (InitRank, InitAll,
// Scalable, Split, Shrink, Grow), plus the split and shrink rendezvous on the parent.
#pragma once

#include <vector>

#include "core/comm/comm.h"
#include "nccl.h"

namespace accl {

// Allocates a communicator for `rank` of `nranks`, registers it, and schedules its init job
// (bootstrap through `ids`, peer exchange). `*newcomm` is set before the job runs, as NCCL does,
// so a nonblocking caller can poll it.
ncclResult_t createComm(const char* call, ncclComm_t* newcomm, int nranks, int rank, int cudaDev,
                        const std::vector<ncclUniqueId>& ids, const CommConfig& config);

// The two halves of createComm, for creation paths with a step of their own before the init job
// (ncclCommGrow learns its id over the parent first). newComm allocates and registers a
// communicator; initJob is the job (bootstrap through `ids`, peer exchange, engine); errors are
// re-raised with `call` and the rank in front.
ncclComm* newComm(int nranks, int rank, int cudaDev, Backend backend, const CommConfig& config);
ncclResult_t initJob(const char* call, ncclComm* comm, const std::vector<ncclUniqueId>& ids);

// Re-raises the failure `res` (already recorded by fail()) as "<call>: rank <rank>: <its text>".
ncclResult_t blame(const char* call, int rank, ncclResult_t res);

// ncclCommSplit: collective over `parent`.
ncclResult_t splitComm(ncclComm* parent, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* config);

// ncclCommShrink: called by the surviving ranks of `parent` only.
ncclResult_t shrinkComm(ncclComm* parent, const int* exclude, int excludeCount, ncclComm_t* newcomm,
                        const ncclConfig_t* config, int flags);

}  // namespace accl
