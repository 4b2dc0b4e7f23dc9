// The public face of liveness (see liveness.h); the service itself is in liveness_service.h.
#include "core/liveness.h"

#include "core/comm.h"
#include "core/engine.h"
#include "core/liveness_service.h"
#include "util/params.h"

namespace accl {

using liveness::Service;

ncclResult_t livenessJoin(ncclComm* comm) {
  auto health = std::make_shared<CommHealth>(comm->rank);
  comm->engine->wait.health = health;
  comm->engine->wait.opCount = &comm->engine->collOpCount;
  comm->engine->wait.rank = comm->rank;
  if (comm->nranks <= 1 || paramInt("ACCL_HEARTBEAT_INTERVAL_MS") <= 0) return ncclSuccess;
  return Service::get().join(comm, health);
}

void livenessLeave(ncclComm* comm) { Service::get().leave(comm); }

void livenessReportClosed(const CommHealth* health, int rank) {
  if (health) Service::get().reportClosed(health, rank);
}

void livenessReportExited(const CommHealth* health, int rank) {
  if (health) Service::get().reportExited(health, rank);
}

std::string livenessPeerStatus(const CommHealth* health, int rank) {
  return health ? Service::get().peerStatus(health, rank) : std::string();
}

}  // namespace accl
