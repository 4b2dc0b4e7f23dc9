// Communicator handle and state checks, and the release of a communicator's resources (when that
// happens is decided by core/comm/comm_lifetime.cc).
#include "core/comm/comm.h"

#include "activity/ras_comms.h"
#include "core/comm/buffer_registry.h"
#include "core/engine/engine.h"
#include "core/liveness/liveness.h"
#include "core/comm/window_registry.h"
#include "util/check.h"

namespace accl {


ncclResult_t checkCommHandle(const char* call, ncclComm* comm) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "%s: comm is NULL", call);
  ACCL_CHECK(lookupAndHold(call, comm));
  if (comm->startMagic != ncclComm::kMagic || comm->endMagic != ncclComm::kMagic)
    return fail(ncclInvalidArgument, "%s: comm %p is corrupted (magic 0x%lx/0x%lx)", call, static_cast<void*>(comm),
                (unsigned long)comm->startMagic, (unsigned long)comm->endMagic);
  return ncclSuccess;
}

namespace {

ncclResult_t stateError(const char* call, ncclComm* comm, CommState state) {
  switch (state) {
    case CommState::Ready:
      return ncclSuccess;
    case CommState::Initializing:
      return fail(ncclInvalidArgument,
                  "%s: comm %p is still initializing; wait until ncclCommGetAsyncError returns ncclSuccess", call,
                  static_cast<void*>(comm));
    case CommState::Finalized:
      return fail(ncclInvalidUsage, "%s: comm %p was finalized", call, static_cast<void*>(comm));
    case CommState::Revoked:
      return fail(ncclInvalidUsage, "%s: comm %p was revoked", call, static_cast<void*>(comm));
    case CommState::Failed:
      return fail(ncclInvalidUsage,
                  "%s: comm %p failed earlier with error %d; shrink, destroy or abort it", call,
                  static_cast<void*>(comm), (int)comm->asyncResult.load());
  }
  return ncclInternalError;
}

}  // namespace

ncclResult_t checkCommReady(const char* call, ncclComm* comm) {
  ACCL_CHECK(checkCommHandle(call, comm));
  return stateError(call, comm, comm->state.load());
}

ncclResult_t checkCommParent(const char* call, ncclComm* comm) {
  ACCL_CHECK(checkCommHandle(call, comm));
  CommState s = comm->state.load();
  // A failed communicator is only a valid parent when its init completed (it has an engine).
  if (s == CommState::Revoked || (s == CommState::Failed && comm->engine)) return ncclSuccess;
  return stateError(call, comm, s);
}

void joinCommJob(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(comm->jobMutex);
  if (!comm->job.joinable()) return;
  if (comm->job.get_id() == std::this_thread::get_id())
    comm->job.detach();  // the job itself ends the communicator's last use
  else
    comm->job.join();
}

void releaseCommResources(ncclComm* comm) {
  rasRemoveComm(comm);   // accl-ras stops listing it (activity/ras_comms.h)
  joinCommJob(comm);
  // Over the network an operation is complete for its sender once its last step is staged:
  // hand the staged steps over before the peers hear that this rank left.
  if (comm->engine) comm->engine->conns.drainTransports();
  livenessLeave(comm);   // tells the other member processes this rank left on purpose
  comm->engine.reset();  // stops channel workers, closes and unmaps connections
  comm->bootstrap.reset();
  releaseWindowsOf(comm);  // windows the user never deregistered die with their communicator
  releaseBuffersOf(comm);  // so do ncclCommRegister handles (core/comm/buffer_registry.h)
}

}  // namespace accl
