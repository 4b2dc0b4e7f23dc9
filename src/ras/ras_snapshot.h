// The copy of this process's communicators that the accl-ras report is made from: each record of
// the activity registry (activity/ras_comms.h) with its sleeping waits (activity/ras_waits.h), plus
// the few words of the communicator itself that the report shows (async error, state, abort flag,
// liveness's failure record). Those words are read while the registry's table lock keeps every
// listed communicator from being removed, and so from being freed; the rest is formatted unlocked.
#pragma once

#include <memory>
#include <vector>

#include "activity/ras_comms.h"
#include "activity/ras_waits.h"
#include "core/liveness/peer_failure.h"

namespace accl {

// A copy of one record plus the volatile words of its communicator, taken for a report.
struct RasCommSnapshot : RasIdentity, RasActivity {
  std::vector<RasWait> waits;
  std::shared_ptr<const CommHealth> health;  // liveness's failure record (core/liveness/liveness.h); may be null
  int asyncResult = 0;  // ncclResult_t; ncclInProgress while nothing went wrong
  int state = 0;        // CommState
  int abortFlag = 0;  // 1: ncclCommAbort; kAbortByPeerFailure: liveness stopped it
};
std::vector<RasCommSnapshot> rasSnapshot();

}  // namespace accl
