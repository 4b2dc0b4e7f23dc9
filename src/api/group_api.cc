// ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd.
#include "api/api_export.h"
#include "api/api_guard.h"
#include "core/engine/enqueue.h"
#include "core/engine/group.h"
#include "util/check.h"

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
    // The tuner's estimate of the operations queued in the group. They are simulated, not run:
    // at the outermost level they are dropped. Communicator jobs (init, split) queued in the
    // group still run, since only operations are simulated.
    float us = 0;
    ACCL_CHECK(estimateGroupTasksUs(&us));
    if (groupDepth() == 1) discardGroupTasks();
    simInfo->estimatedTime = us;
    return groupEnd("ncclGroupSimulateEnd");
  });
}
