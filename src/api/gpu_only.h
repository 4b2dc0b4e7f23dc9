// How a GPU-only entry point refuses to run where it cannot (one-sided signals, device pointers
// into windows, CFT/GIN resources): after its arguments were validated, it returns
// ncclInvalidUsage and leaves a ncclGetLastError() message that names the call, what the call
// needs and why this communicator (or accl) cannot provide it.
#pragma once

#include "core/comm/comm.h"
#include "nccl.h"
#include "util/check.h"

namespace accl {

// `need` completes "<call>: <need> ...", e.g. "one-sided signals need". `comm` may be NULL for
// calls that only receive a window.
inline ncclResult_t refuseGpuOnly(const char* call, const char* need, const ncclComm* comm) {
  if (comm == nullptr)
    return fail(ncclInvalidUsage,
                "%s: %s the CUDA backend; accl's windows are host-backend registrations with no device mapping", call,
                need);
  if (comm->backend == Backend::Host)
    return fail(ncclInvalidUsage, "%s: %s the CUDA backend; this communicator runs on the host backend", call, need);
  return fail(ncclInvalidUsage, "%s: %s device-side support that accl's CUDA backend does not implement yet", call,
              need);
}

}  // namespace accl
