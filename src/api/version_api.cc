// Version, error strings, last error and debug re-initialization.
#include "api/api_export.h"
#include "api/api_guard.h"
#include "util/last_error.h"
#include "util/log.h"

using namespace accl;

ACCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ACCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  // The same texts NCCL prints, since users and tools match on them.
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclTimeout: return "timeout";
    default: return "unknown result code";
  }
}

ACCL_API(const char*, ncclGetLastError, ncclComm_t comm) {
  (void)comm;  // the message is process-wide, as in NCCL
  return lastErrorText();
}

ACCL_API(void, ncclResetDebugInit) { resetLogSettings(); }

// Exported without a p-twin, like NVIDIA's library.
extern "C" ACCL_EXPORT void ncclResetDebugInitInternal() { resetLogSettings(); }
