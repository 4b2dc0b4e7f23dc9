// Host entry points of NCCL's device API (nccl_device/host.h, 2.28-2.32): device communicators,
// barrier, LL all-to-all and GIN scratch resource requirements, and teams. accl does not
// implement device-initiated communication yet, so the resource calls check their arguments
// (ncclInvalidArgument) and then fail with ncclInvalidUsage naming the call; the team helpers answer for a single node
// (the whole communicator is one LSA team, so world == LSA) with no CFT fabric (a CFT team holds only the caller). The
// types come from api/device_api_types.h (NVIDIA's layouts where they cross the ABI). ncclCommQueryProperties is in
// comm_properties_api.cc, window queries in device_window_api.cc.
#include <climits>

#include "api/api_export.h"
#include "api/api_guard.h"
#include "api/device_api_types.h"
#include "api/gpu_only.h"
#include "nccl.h"
#include "util/check.h"

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

namespace accl {
namespace {

// The versioned header every device-API struct starts with (ncclDevCommRequirements_t ...).
struct VersionedHeader {
  size_t size;
  unsigned int magic;
  unsigned int version;
};

// Arguments shared by the barrier and LL all-to-all requirements: a positive count and both outputs.
ncclResult_t checkRequirementArgs(const char* call, const char* countName, int count, const void* outHandle,
                                  const void* outReq) {
  if (count <= 0) return fail(ncclInvalidArgument, "%s: %s %d must be positive", call, countName, count);
  if (outHandle == nullptr) return fail(ncclInvalidArgument, "%s: outHandle is NULL", call);
  if (outReq == nullptr) return fail(ncclInvalidArgument, "%s: outReq is NULL", call);
  return ncclSuccess;
}

ncclResult_t checkTeam(const char* call, ncclTeam team) {
  if (team.nRanks <= 0 || team.rank < 0 || team.rank >= team.nRanks)
    return fail(ncclInvalidArgument, "%s: team {nRanks %d, rank %d, stride %d} is not a team", call, team.nRanks,
                team.rank, team.stride);
  return ncclSuccess;
}

constexpr const char* kDevCommNeed = "device communicators (kernels that communicate by themselves) need";

}  // namespace
}  // namespace accl

ACCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
         ncclDevComm_t* outDevComm) {
  return accl::apiGuard("ncclDevCommCreate", [&]() -> ncclResult_t {
    ACCL_CHECK(accl::checkCommReady("ncclDevCommCreate", comm));
    if (reqs == nullptr) return accl::fail(ncclInvalidArgument, "ncclDevCommCreate: reqs is NULL");
    if (outDevComm == nullptr) return accl::fail(ncclInvalidArgument, "ncclDevCommCreate: outDevComm is NULL");
    // As NCCL: requirements not made by NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER are a usage error.
    unsigned magic = reinterpret_cast<const accl::VersionedHeader*>(reqs)->magic;
    if (magic != NCCL_API_MAGIC)
      return accl::fail(ncclInvalidUsage,
                        "ncclDevCommCreate: reqs->magic 0x%x is not NCCL_API_MAGIC; start from "
                        "NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER",
                        magic);
    return accl::refuseGpuOnly("ncclDevCommCreate", accl::kDevCommNeed, comm);
  });
}

ACCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const ncclDevComm_t* devComm) {
  return accl::apiGuard("ncclDevCommDestroy", [&]() -> ncclResult_t {
    ACCL_CHECK(accl::checkCommHandle("ncclDevCommDestroy", comm));
    if (devComm == nullptr) return accl::fail(ncclInvalidArgument, "ncclDevCommDestroy: devComm is NULL");
    return accl::refuseGpuOnly("ncclDevCommDestroy", accl::kDevCommNeed, comm);
  });
}

ACCL_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
         ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  return accl::apiGuard("ncclLsaBarrierCreateRequirement", [&]() -> ncclResult_t {
    ACCL_CHECK(accl::checkTeam("ncclLsaBarrierCreateRequirement", team));
    ACCL_CHECK(
        accl::checkRequirementArgs("ncclLsaBarrierCreateRequirement", "nBarriers", nBarriers, outHandle, outReq));
    return accl::refuseGpuOnly("ncclLsaBarrierCreateRequirement", "device-side barriers need", nullptr);
  });
}

ACCL_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team, int nBarriers,
         ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq) {
  return accl::apiGuard("ncclGinBarrierCreateRequirement", [&]() -> ncclResult_t {
    ACCL_CHECK(accl::checkCommReady("ncclGinBarrierCreateRequirement", comm));
    ACCL_CHECK(accl::checkTeam("ncclGinBarrierCreateRequirement", team));
    ACCL_CHECK(
        accl::checkRequirementArgs("ncclGinBarrierCreateRequirement", "nBarriers", nBarriers, outHandle, outReq));
    return accl::refuseGpuOnly("ncclGinBarrierCreateRequirement", "GIN (GPU-initiated networking) barriers need", comm);
  });
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
  return accl::apiGuard("ncclLLA2ACreateRequirement", [&]() -> ncclResult_t {
    if (nSlots <= 0)
      return accl::fail(ncclInvalidArgument, "ncclLLA2ACreateRequirement: nSlots %d must be positive", nSlots);
    ACCL_CHECK(accl::checkRequirementArgs("ncclLLA2ACreateRequirement", "nBlocks", nBlocks, outHandle, outReq));
    return accl::refuseGpuOnly("ncclLLA2ACreateRequirement", "device-side LL all-to-all buffers need", nullptr);
  });
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

// CFT team (ranks reachable through the CFT fabric): accl has no CFT, so only the caller, in
// every mode. {0, 0, 1} if comm is bad or mode is not an ncclCftTeamMode_t (with a last error).
ACCL_API(ncclTeam_t, ncclTeamCft, ncclComm_t comm, ncclCftTeamMode_t mode) {
  ncclTeam world = accl::wholeCommTeam(comm);
  if (world.nRanks == 0) return world;
  if (mode != NCCL_CFT_TEAM_FLAT && mode != NCCL_CFT_TEAM_HIER_MULTIMEM && mode != NCCL_CFT_TEAM_HIER_LSA) {
    accl::fail(ncclInvalidArgument, "ncclTeamCft: mode %d is not an ncclCftTeamMode_t", (int)mode);
    return ncclTeam{0, 0, 1};
  }
  return ncclTeam{1, 0, 1};
}

// CFT multicast team: likewise only the caller.
ACCL_API(ncclTeam_t, ncclTeamCftMultimem, ncclComm_t comm) {
  ncclTeam world = accl::wholeCommTeam(comm);
  if (world.nRanks == 0) return world;
  return ncclTeam{1, 0, 1};
}

namespace accl {
namespace {

// Arguments shared by the GIN scratch requirements: a positive block count, a buffer size of
// 2^size_log2 bytes that fits in 64 bits, and both outputs.
ncclResult_t checkGinScratchArgs(const char* call, int nBlocks, int sizeLog2, const void* outHandle,
                                 const void* outReq) {
  if (nBlocks <= 0) return fail(ncclInvalidArgument, "%s: nBlocks %d must be positive", call, nBlocks);
  if (sizeLog2 < 0 || sizeLog2 > 63)
    return fail(ncclInvalidArgument, "%s: size_log2 %d is outside [0, 63]", call, sizeLog2);
  if (outHandle == nullptr) return fail(ncclInvalidArgument, "%s: outHandle is NULL", call);
  if (outReq == nullptr) return fail(ncclInvalidArgument, "%s: outReq is NULL", call);
  return ncclSuccess;
}

constexpr const char* kGinNeed = "GIN (GPU-initiated networking) buffers need";

}  // namespace
}  // namespace accl

ACCL_API(ncclResult_t, ncclGinOutboxCreateRequirement, int nBlocks, int size_log2, ncclGinOutboxHandle* outHandle,
         ncclDevResourceRequirements* outReq) {
  return accl::apiGuard("ncclGinOutboxCreateRequirement", [&]() -> ncclResult_t {
    ACCL_CHECK(accl::checkGinScratchArgs("ncclGinOutboxCreateRequirement", nBlocks, size_log2, outHandle, outReq));
    return accl::refuseGpuOnly("ncclGinOutboxCreateRequirement", accl::kGinNeed, nullptr);
  });
}

ACCL_API(ncclResult_t, ncclGinInboxA2ACreateRequirement, ncclTeam peers, int nBlocks, int size_log2,
         ncclGinInboxA2AHandle* outHandle, ncclDevResourceRequirements* outReq) {
  return accl::apiGuard("ncclGinInboxA2ACreateRequirement", [&]() -> ncclResult_t {
    if (peers.nRanks <= 0 || peers.rank < 0 || peers.rank >= peers.nRanks)
      return accl::fail(ncclInvalidArgument,
                        "ncclGinInboxA2ACreateRequirement: peers {nRanks %d, rank %d, stride %d} is not a team",
                        peers.nRanks, peers.rank, peers.stride);
    ACCL_CHECK(accl::checkGinScratchArgs("ncclGinInboxA2ACreateRequirement", nBlocks, size_log2, outHandle, outReq));
    return accl::refuseGpuOnly("ncclGinInboxA2ACreateRequirement", accl::kGinNeed, nullptr);
  });
}
