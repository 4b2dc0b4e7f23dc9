// The public face of liveness (see liveness.h); the service itself is in liveness_service.h.
#include "core/liveness/liveness.h"

#include <unistd.h>

#include "core/comm/comm.h"
#include "core/engine/engine.h"
#include "core/liveness/liveness_service.h"
#include "util/params.h"
#include "util/time.h"

namespace accl {

using liveness::Service;

ncclResult_t livenessJoin(ncclComm* comm) {
  auto health = std::make_shared<CommHealth>(comm->rank);
  comm->engine->attachHealth(health);  // every wait of the backend reports a recorded failure
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

void livenessReportLinkLost(const CommHealth* health, int rank, const std::string& detail) {
  if (!health) return;
  constexpr int64_t kVerdictGraceMs = 500;  // a killed peer's heartbeat connection closes as fast
  const int64_t end = nowMs() + kVerdictGraceMs;
  while (!health->failed() && nowMs() < end) usleep(1000);
  if (!health->failed()) Service::get().reportLinkLost(health, rank, detail);
}

std::string livenessPeerStatus(const CommHealth* health, int rank) {
  return health ? Service::get().peerStatus(health, rank) : std::string();
}

}  // namespace accl
