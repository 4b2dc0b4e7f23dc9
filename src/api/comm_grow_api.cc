// Public entry points for growing a communicator: ncclCommGetUniqueId and ncclCommGrow. They
// check the handles and outputs, then hand over to core/comm/comm_grow.h.
#include "api/api_export.h"
#include "api/api_guard.h"
#include "core/comm/comm.h"
#include "core/comm/comm_grow.h"
#include "core/engine/group.h"
#include "ras/ras_server.h"
#include "util/check.h"

namespace accl {
namespace {

// Entry points inside a group latch their error for the group end, as ncclCommSplit does.
ncclResult_t latchGrow(ncclResult_t res) {
  recordGroupError(res);
  return res;
}

}  // namespace
}  // namespace accl

using namespace accl;

ACCL_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId) {
  return apiGuard("ncclCommGetUniqueId", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommReady("ncclCommGetUniqueId", comm));
    if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclCommGetUniqueId: uniqueId is NULL");
    return makeGrowId(comm, uniqueId);
  });
}

ACCL_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
         ncclComm_t* newcomm, ncclConfig_t* config) {
  return apiGuard("ncclCommGrow", [&]() -> ncclResult_t {
    if (newcomm == nullptr) return latchGrow(fail(ncclInvalidArgument, "ncclCommGrow: newcomm is NULL"));
    if (comm != nullptr) ACCL_CHECK(latchGrow(checkCommReady("ncclCommGrow", comm)));
    rasServerFollowComms();  // a joining rank's first communicator may be this one (ras/ras_server.h)
    return latchGrow(growComm(comm, nRanks, uniqueId, rank, newcomm, config));
  });
}
