// Public memory statistics and suspend/resume of a communicator: ncclCommMemStats,
// ncclCommSuspend, ncclCommResume. Argument and state checks here; accounting and release in
// core/comm_memory.
#include "api/api_export.h"
#include "api/api_guard.h"
#include "api/enum_args.h"
#include "core/comm/comm.h"
#include "core/comm/comm_memory.h"
#include "core/engine/enqueue.h"
#include "util/check.h"

namespace accl {
namespace {

// Work that must finish before a suspend: a nonblocking job (init, split, finalize) still
// running, or operations of this comm queued in the calling thread's open group. (Operations
// running on other threads are refused by the suspend gate.)
ncclResult_t checkNothingPending(const char* call, ncclComm* comm) {
  if (comm->asyncResult.load() == ncclInProgress)
    return fail(ncclInvalidUsage, "%s: comm %p has a nonblocking operation in progress; wait until "
                "ncclCommGetAsyncError returns ncclSuccess", call, static_cast<void*>(comm));
  if (hasQueuedTasks(comm))
    return fail(ncclInvalidUsage, "%s: comm %p has operations queued in this thread's open group; call "
                "ncclGroupEnd first", call, static_cast<void*>(comm));
  return ncclSuccess;
}

}  // namespace
}  // namespace accl

using namespace accl;

ACCL_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  return apiGuard("ncclCommMemStats", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclCommMemStats", comm));
    if (value == nullptr) return fail(ncclInvalidArgument, "ncclCommMemStats: value is NULL");
    const int s = enumBits(stat);  // an int read: an out-of-range enum must not be loaded
    if (s < ncclStatGpuMemSuspend || s > ncclStatGpuMemTotal)
      return fail(ncclInvalidArgument, "ncclCommMemStats: stat = %d is not a ncclCommMemStat_t (%d..%d)", s,
                  static_cast<int>(ncclStatGpuMemSuspend), static_cast<int>(ncclStatGpuMemTotal));
    if (comm->state.load() == CommState::Initializing)
      return fail(ncclInvalidArgument, "ncclCommMemStats: comm %p is still initializing; wait until "
                  "ncclCommGetAsyncError returns ncclSuccess", static_cast<void*>(comm));
    CommMemoryUsage usage;
    measureCommMemory(comm, &usage);
    switch (stat) {
      case ncclStatGpuMemSuspend: *value = usage.releasable(); break;
      case ncclStatGpuMemSuspended: *value = usage.suspended ? 1 : 0; break;
      case ncclStatGpuMemPersist: *value = usage.persistent(); break;
      case ncclStatGpuMemTotal: *value = usage.total(); break;
    }
    return ncclSuccess;
  });
}

ACCL_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags) {
  return apiGuard("ncclCommSuspend", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommHandle("ncclCommSuspend", comm));
    if (flags != NCCL_SUSPEND_MEM)
      return fail(ncclInvalidArgument, "ncclCommSuspend: flags = %d (0x%x) is not NCCL_SUSPEND_MEM (0x%x)", flags,
                  static_cast<unsigned>(flags), static_cast<unsigned>(NCCL_SUSPEND_MEM));
    ACCL_CHECK(checkNothingPending("ncclCommSuspend", comm));  // before the state check: init is such a job
    ACCL_CHECK(checkCommReady("ncclCommSuspend", comm));
    return suspendComm(comm);
  });
}

ACCL_API(ncclResult_t, ncclCommResume, ncclComm_t comm) {
  return apiGuard("ncclCommResume", [&]() -> ncclResult_t {
    ACCL_CHECK(checkCommReady("ncclCommResume", comm));
    return resumeComm(comm);
  });
}
