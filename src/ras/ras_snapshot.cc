// Copies the activity records and the words of their communicators for a report (see ras_snapshot.h).
#include "ras/ras_snapshot.h"

#include "core/comm/comm.h"
#include "core/engine/engine.h"

namespace accl {

std::vector<RasCommSnapshot> rasSnapshot() {
  // The communicators' own words are read only in the callback, while removal (which precedes
  // any free) is locked out.
  std::vector<RasCommSnapshot> out;
  std::vector<std::shared_ptr<RasComm>> recs = rasListComms([&out](const RasComm& rec) {
    const ncclComm* comm = rec.comm;
    RasCommSnapshot& s = out.emplace_back();
    s.asyncResult = static_cast<int>(comm->asyncResult.load());
    s.state = static_cast<int>(comm->state.load());
    s.abortFlag = comm->abortFlag.load();
    if (comm->engine) s.health = comm->engine->health;
  });
  for (size_t i = 0; i < recs.size(); ++i) {
    RasComm& r = *recs[i];
    RasCommSnapshot& s = out[i];
    static_cast<RasIdentity&>(s) = r;
    static_cast<RasActivity&>(s) = r.activity();
    s.waits = rasWaitsOf(r.waitKey);
  }
  return out;
}

}  // namespace accl
