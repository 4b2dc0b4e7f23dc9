// ncclCommGetUniqueId and ncclCommGrow: a running communicator admits new ranks.
//
// The calling convention (NCCL 2.32):
//   1. one existing rank, the root, calls ncclCommGetUniqueId(comm, &id) and hands id to the
//      joining processes out of band;
//   2. every existing rank calls ncclCommGrow(comm, nRanks, id-or-NULL, -1, &newcomm, config):
//      the root passes &id, the others NULL; every joining rank calls
//      ncclCommGrow(NULL, nRanks, &id, newRank, &newcomm, config) with newRank in [old, nRanks).
// Existing ranks keep their rank numbers; the old communicator stays usable.
//
// How: the grow id is a fresh bootstrap id owned by the root's process, with the old size in its
// grow field (unique_id.h), so joiners can check their arguments alone. Existing ranks find the
// root and its id with one all-gather over the old communicator's bootstrap (which also checks
// that they agree on nRanks and that exactly one of them passed an id); then all nRanks ranks
// run the ordinary init job (comm_init.h) on that id.
//
// Id rules: a rank holds at most one grow id at a time (a second ncclCommGetUniqueId before the
// grow that uses the first has ended is ncclInvalidUsage); an id is spent once a grow has run
// with it, whatever the outcome (reuse is ncclInvalidUsage where this process can tell: the
// root's process and joiners in it; elsewhere the spent root is gone and the bootstrap times
// out). A NULL config inherits the old communicator's on existing ranks, the defaults on joiners;
// a nonblocking one returns ncclInProgress and grows in the background, like ncclCommSplit.
#pragma once

#include "core/comm/comm.h"
#include "nccl.h"

namespace accl {

// The id ncclCommGetUniqueId made on one rank, held by that rank's communicator.
struct GrowTicket {
  ncclUniqueId id;
  bool launched = false;  // an ncclCommGrow with this id is running
};

// ncclCommGetUniqueId on a ready communicator.
ncclResult_t makeGrowId(ncclComm* comm, ncclUniqueId* out);

// ncclCommGrow: `comm` is ready (existing rank) or null (joining rank); newcomm is not null.
ncclResult_t growComm(ncclComm* comm, int nRanks, const ncclUniqueId* id, int rank, ncclComm_t* newcomm,
                      const ncclConfig_t* config);

}  // namespace accl
