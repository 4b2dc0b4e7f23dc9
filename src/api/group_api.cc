// ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd.
#include "api/api_export.h"
#include "api/api_guard.h"
#include "core/group.h"

using namespace accl;

ACCL_API(ncclResult_t, ncclGroupStart) {
  return apiGuard("ncclGroupStart", [&] {
    groupStart();
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclGroupEnd) {
  return apiGuard("ncclGroupEnd", [&] { return groupEnd("ncclGroupEnd"); });
}

ACCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  return apiGuard("ncclGroupSimulateEnd", [&]() -> ncclResult_t {
    constexpr unsigned kSimInfoMagic = 0x74685283;
    if (simInfo == nullptr) return fail(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo is NULL");
    if (simInfo->magic != kSimInfoMagic)
      return fail(ncclInvalidArgument,
                  "ncclGroupSimulateEnd: simInfo magic 0x%x is not 0x%x (initialize it with NCCL_SIM_INFO_INITIALIZER)",
                  simInfo->magic, kSimInfoMagic);
    // The group holds no collectives until the collective engine lands, so the estimate is 0 us;
    // communicator jobs queued in the group still run, since only collectives are simulated.
    simInfo->estimatedTime = 0.0f;
    return groupEnd("ncclGroupSimulateEnd");
  });
}
