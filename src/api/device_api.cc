// Host entry points of NCCL 2.28's device API (nccl_device.h): device communicators, barrier and
// LL all-to-all resource requirements, and teams. accl does not implement device-initiated
// communication yet, so the resource calls fail with ncclInvalidUsage; the team helpers answer
// for a single node (the whole communicator is one LSA team, so world == LSA).
//
// The types below mirror nccl_device/core.h only as far as these signatures need: handles and
// requirement structs are opaque here (we never touch them), and ncclTeam is passed by value with
// NVIDIA's layout {nRanks, rank, stride}.
#include <climits>

#include "nccl.h"

#include "api/api_export.h"
#include "util/check.h"

struct ncclDevComm;
struct ncclDevCommRequirements;
struct ncclDevResourceRequirements;
struct ncclLsaBarrierHandle;
struct ncclGinBarrierHandle;
struct ncclLLA2AHandle;
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;

// A team is a strided subset of the world: member i (0 <= i < nRanks) is world rank
// base + i*stride, and `rank` is the caller's index in it.
struct ncclTeam {
  int nRanks, rank, stride;
};
typedef struct ncclTeam ncclTeam_t;

namespace accl {
namespace {

// The caller's team when every rank of `comm` is in it with stride 1; {0, 0, 1} if comm is bad.
ncclTeam wholeCommTeam(ncclComm_t comm) {
  int n = 0, r = 0;
  if (pncclCommCount(comm, &n) != ncclSuccess || pncclCommUserRank(comm, &r) != ncclSuccess) {
    return ncclTeam{0, 0, 1};
  }
  return ncclTeam{n, r, 1};
}

// Member `rank` of `team` expressed in the numbering whose own index for the caller is `self`:
// members are evenly spaced by team.stride around the caller.
int teamRankTo(int self, ncclTeam team, int rank) { return self + (rank - team.rank) * team.stride; }

}  // namespace
}  // namespace accl

ACCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
         ncclDevComm_t* outDevComm) {
  (void)comm;
  (void)reqs;
  (void)outDevComm;
  return accl::fail(ncclInvalidUsage, "%s is not supported by accl yet", "ncclDevCommCreate");
}

ACCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t* devComm) {
  (void)comm;
  (void)devComm;
  return accl::fail(ncclInvalidUsage, "%s is not supported by accl yet", "ncclDevCommDestroy");
}

ACCL_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
         ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  (void)team;
  (void)nBarriers;
  (void)outHandle;
  (void)outReq;
  return accl::fail(ncclInvalidUsage, "%s is not supported by accl yet", "ncclLsaBarrierCreateRequirement");
}

ACCL_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team, int nBarriers,
         ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  (void)comm;
  (void)team;
  (void)nBarriers;
  (void)outHandle;
  (void)outReq;
  return accl::fail(ncclInvalidUsage, "%s is not supported by accl yet", "ncclGinBarrierCreateRequirement");
}

// Slots an LL all-to-all needs for maxElts elements of up to maxEltSize bytes. Each LL slot
// carries 8 bytes of payload, so an element takes ceil(maxEltSize / 8) slots; this is the same
// count NVIDIA's library reports, so callers size their buffers identically. Non-positive
// arguments give 0; a result too large for int saturates at INT_MAX.
ACCL_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize) {
  if (maxElts <= 0 || maxEltSize <= 0) return 0;
  long long slots = static_cast<long long>(maxElts) * ((static_cast<long long>(maxEltSize) + 7) / 8);
  return slots > INT_MAX ? INT_MAX : static_cast<int>(slots);
}

ACCL_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
         ncclDevResourceRequirements_t* outReq) {
  (void)nBlocks;
  (void)nSlots;
  (void)outHandle;
  (void)outReq;
  return accl::fail(ncclInvalidUsage, "%s is not supported by accl yet", "ncclLLA2ACreateRequirement");
}

// World team: everyone, stride 1.
ACCL_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm) { return accl::wholeCommTeam(comm); }

// LSA team (ranks that can load/store each other's memory): accl assumes one node, so it is the
// whole communicator.
ACCL_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm) { return accl::wholeCommTeam(comm); }

// Rail team (the same local rank on every node): with one node it holds only the caller, and its
// stride is the node size. {0, 0, 1} if comm is bad.
ACCL_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm) {
  ncclTeam world = accl::wholeCommTeam(comm);
  if (world.nRanks == 0) return world;
  return ncclTeam{1, 0, world.nRanks};
}

// World rank of member `rank` of `team`: my world rank + (rank - team.rank) * team.stride.
ACCL_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank) {
  return accl::teamRankTo(accl::wholeCommTeam(comm).rank, team, rank);
}

// LSA rank of member `rank` of `team`; with one node the LSA numbering is the world numbering.
ACCL_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank) {
  return accl::teamRankTo(accl::wholeCommTeam(comm).rank, team, rank);
}
