// Public communicator lifecycle: creation (InitRank*, InitAll, Split, Shrink), teardown
// (Finalize, Destroy, Abort, Revoke) and queries. Each entry validates its arguments, then
// hands over to src/core.
#include <vector>

#include "api/api_export.h"
#include "api/api_guard.h"
#include "core/comm/comm.h"
#include "core/comm/comm_init.h"
#include "core/engine/engine.h"
#include "core/engine/group.h"
#include "core/bootstrap/unique_id.h"
#include "device/device_probe.h"
#include "ras/ras_server.h"
#include "util/check.h"

namespace accl {
namespace {

ncclResult_t checkRankArgs(const char* call, const void* newcomm, int nranks, int rank) {
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "%s: newcomm (the ncclComm_t* output) is NULL", call);
  if (nranks < 1) return fail(ncclInvalidArgument, "%s: nranks %d is invalid (must be >= 1)", call, nranks);
  if (nranks > kMaxRanks)
    return fail(ncclInvalidArgument, "%s: nranks %d exceeds the maximum of %d ranks accl supports", call, nranks, kMaxRanks);
  if (rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "%s: rank %d is out of range [0, %d)", call, rank, nranks);
  return ncclSuccess;
}

ncclResult_t initRank(const char* call, ncclComm_t* newcomm, int nranks, const ncclUniqueId* ids, int nIds, int rank,
                      const ncclConfig_t* userConfig, int cudaDev) {
  ACCL_CHECK(checkRankArgs(call, newcomm, nranks, rank));
  *newcomm = nullptr;
  if (nIds < 1 || nIds > nranks)
    return fail(ncclInvalidArgument, "%s: nId %d is invalid (must be in [1, nranks=%d])", call, nIds, nranks);
  if (ids == nullptr) return fail(ncclInvalidArgument, "%s: commId is NULL", call);
  CommConfig config;
  ACCL_CHECK(resolveConfig(call, userConfig, nullptr, &config));
  std::vector<ncclUniqueId> idList(ids, ids + nIds);
  rasServerFollowComms();  // the status server runs while communicators exist (ras/ras_server.h)
  return createComm(call, newcomm, nranks, rank, cudaDev < 0 ? cudaCurrentDevice() : cudaDev, idList, config);
}

// Entry points inside a group latch their error for the group end, as NCCL does.
ncclResult_t latch(ncclResult_t res) {
  recordGroupError(res);
  return res;
}

}  // namespace
}  // namespace accl

using namespace accl;

ACCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  return apiGuard("ncclGetUniqueId", [&] {
    if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    return createUniqueId(uniqueId);
  });
}

ACCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* newcomm, int nranks, ncclUniqueId commId, int rank) {
  return apiGuard("ncclCommInitRank", [&] {
    return latch(initRank("ncclCommInitRank", newcomm, nranks, &commId, 1, rank, nullptr, -1));
  });
}

ACCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* newcomm, int nranks, ncclUniqueId commId, int rank,
         ncclConfig_t* config) {
  return apiGuard("ncclCommInitRankConfig", [&] {
    return latch(initRank("ncclCommInitRankConfig", newcomm, nranks, &commId, 1, rank, config, -1));
  });
}

ACCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
         ncclUniqueId* commIds, ncclConfig_t* config) {
  return apiGuard("ncclCommInitRankScalable", [&] {
    return latch(initRank("ncclCommInitRankScalable", newcomm, nranks, commIds, nId, myrank, config, -1));
  });
}

ACCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  return apiGuard("ncclCommInitAll", [&]() -> ncclResult_t {
    if (comms == nullptr) return fail(ncclInvalidArgument, "ncclCommInitAll: comms is NULL");
    if (ndev < 1) return fail(ncclInvalidArgument, "ncclCommInitAll: ndev %d is invalid (must be >= 1)", ndev);
    if (ndev > kMaxRanks)
      return fail(ncclInvalidArgument, "ncclCommInitAll: ndev %d exceeds the maximum of %d ranks accl supports", ndev, kMaxRanks);
    if (devlist) {
      // Unlike NCCL, a device may repeat: several ranks per GPU are allowed.
      for (int i = 0; i < ndev; ++i)
        if (devlist[i] < 0)
          return fail(ncclInvalidArgument, "ncclCommInitAll: devlist[%d] = %d is not a device", i, devlist[i]);
    }
    ncclUniqueId id;
    ACCL_CHECK(createUniqueId(&id));
    for (int i = 0; i < ndev; ++i) comms[i] = nullptr;
    groupStart();
    ncclResult_t res = ncclSuccess;
    for (int i = 0; i < ndev && res == ncclSuccess; ++i)
      res = latch(initRank("ncclCommInitAll", comms + i, ndev, &id, 1, i, nullptr, devlist ? devlist[i] : i));
    ncclResult_t endRes = groupEnd("ncclCommInitAll");
    return res != ncclSuccess ? res : endRes;
  });
}

ACCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  return apiGuard("ncclCommSplit", [&]() -> ncclResult_t {
    ACCL_CHECK(latch(checkCommParent("ncclCommSplit", comm)));
    if (newcomm == nullptr) return latch(fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL"));
    return latch(splitComm(comm, color, key, newcomm, config));
  });
}

ACCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
         ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return apiGuard("ncclCommShrink", [&]() -> ncclResult_t {
    ACCL_CHECK(latch(checkCommParent("ncclCommShrink", comm)));
    if (newcomm == nullptr) return latch(fail(ncclInvalidArgument, "ncclCommShrink: newcomm is NULL"));
    return latch(shrinkComm(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags));
  });
}

ACCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  return apiGuard("ncclCommFinalize", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommReady("ncclCommFinalize", comm));
    // Nothing is queued on a communicator between calls yet (every call completes before it
    // returns), so finalizing means: no more work is accepted.
    comm->state = CommState::Finalized;
    comm->asyncResult = ncclSuccess;
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  return apiGuard("ncclCommDestroy", [&]() -> ncclResult_t {
    if (comm == nullptr) return ncclSuccess;
    // Calls still running on other threads (or a nonblocking job) are aborted and waited for;
    // see core/comm/comm_lifetime.h.
    return closeComm("ncclCommDestroy", comm, /*abort=*/false);
  });
}

ACCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  return apiGuard("ncclCommAbort", [&]() -> ncclResult_t {
    if (comm == nullptr) return ncclSuccess;
    return closeComm("ncclCommAbort", comm, /*abort=*/true);
  });
}

ACCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  return apiGuard("ncclCommRevoke", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclCommRevoke", comm));
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
      return fail(ncclInvalidArgument, "ncclCommRevoke: revokeFlags %d is not NCCL_REVOKE_DEFAULT (0)", revokeFlags);
    CommState s = comm->state.load();
    if (s != CommState::Ready && s != CommState::Failed)
      return fail(ncclInvalidUsage, "ncclCommRevoke: comm %p is not in a usable state", (void*)comm);
    // No new work from here on; what other threads run now stops with an error.
    comm->state = CommState::Revoked;
    ACCL_CHECK(quiesceComm("ncclCommRevoke", comm));
    comm->asyncResult = ncclSuccess;
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  return apiGuard("ncclCommGetAsyncError", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclCommGetAsyncError", comm));
    if (asyncError == nullptr) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
    ncclResult_t res = comm->asyncResult.load();
    if (res != ncclInProgress) joinCommJob(comm);
    // A ready communicator: an asynchronous backend may hold an error raised after its launch
    // returned (core/engine/backend.h; the host backend reports every error from the launch itself).
    if (res == ncclSuccess && comm->engine) res = comm->engine->backend->asyncError();
    *asyncError = res;
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  return apiGuard("ncclCommCount", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclCommCount", comm));
    if (count == nullptr) return fail(ncclInvalidArgument, "ncclCommCount: count is NULL");
    *count = comm->nranks;
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  return apiGuard("ncclCommUserRank", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclCommUserRank", comm));
    if (rank == nullptr) return fail(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
    *rank = comm->rank;
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  return apiGuard("ncclCommCuDevice", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclCommCuDevice", comm));
    if (device == nullptr) return fail(ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
    *device = comm->cudaDev;
    return ncclSuccess;
  });
}
