// Communicator handle checks, the live-handle registry, and teardown.
#include "core/comm.h"

#include <unordered_set>

#include "core/engine.h"
#include "core/window_registry.h"
#include "util/check.h"

namespace accl {
namespace {

std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}

std::unordered_set<const ncclComm*>& registry() {
  static std::unordered_set<const ncclComm*> live;
  return live;
}

bool isLive(const ncclComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex());
  return registry().count(comm) != 0;
}

}  // namespace

const char* backendName(Backend b) { return b == Backend::Cuda ? "cuda" : "host"; }

void registerComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().insert(comm);
}

void unregisterComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().erase(comm);
}

ncclResult_t checkCommHandle(const char* call, ncclComm* comm) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "%s: comm is NULL", call);
  if (!isLive(comm))
    return fail(ncclInvalidArgument, "%s: comm %p is not a live communicator (already destroyed, or never created)",
                call, static_cast<void*>(comm));
  if (comm->startMagic != ncclComm::kMagic || comm->endMagic != ncclComm::kMagic)
    return fail(ncclInvalidArgument, "%s: comm %p is corrupted (magic 0x%lx/0x%lx)", call, static_cast<void*>(comm),
                (unsigned long)comm->startMagic, (unsigned long)comm->endMagic);
  return ncclSuccess;
}

ncclResult_t checkCommReady(const char* call, ncclComm* comm) {
  ACCL_CHECK(checkCommHandle(call, comm));
  switch (comm->state.load()) {
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
      return fail(ncclInvalidUsage, "%s: comm %p failed earlier with error %d; destroy or abort it", call,
                  static_cast<void*>(comm), (int)comm->asyncResult.load());
  }
  return ncclInternalError;
}

void joinCommJob(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(comm->jobMutex);
  if (comm->job.joinable()) comm->job.join();
}

void freeComm(ncclComm* comm) {
  unregisterComm(comm);
  joinCommJob(comm);
  comm->engine.reset();  // stops channel workers, unmaps connections
  comm->bootstrap.reset();
  releaseWindowsOf(comm);  // windows the user never deregistered die with their communicator
  comm->startMagic = comm->endMagic = 0;
  delete comm;
}

}  // namespace accl
