// The lone-collective path (see lone_coll.h).
#include "core/engine/lone_coll.h"

#include "core/comm/comm.h"
#include "core/engine/coll_config.h"
#include "core/engine/engine.h"
#include "core/engine/group.h"
#include "core/engine/launch_outcome.h"
#include "core/engine/launch_record.h"
#include "core/liveness/peer_failure.h"
#include "device/common/dtypes.h"

namespace accl {
namespace {

// Whether the connections `choice` runs over on channel 0 exist already: the general path's
// connect walk (CommEngine::connectPlan) would have nothing to do. A communicator of one rank has
// no peer to connect.
bool connectedFor(const CommEngine& e, const TunerChoice& choice) {
  const ChannelPeers& ch = e.channels[0];
  if (e.comm->nranks == 1) return choice.algo != kAlgoOneShot;
  switch (choice.algo) {
    case kAlgoOneShot: return ch.allConnected;
    case kAlgoRing: return ch.ringConnected;
    case kAlgoTree: return ch.treeConnected;
    default: return false;  // what the host backend does not run takes the general path's errors
  }
}

}  // namespace

bool runLoneColl(ncclComm* comm, const CollCall& c, const DevRedOp& op, ncclResult_t* res) {
  CommEngine& e = *comm->engine;
  if (inGroup() || c.config != nullptr || c.count == 0 || e.profiler || !e.backend->runsLoneColls()) return false;
  if (e.activity && e.activity->checkCollectives) return false;
  if (revokedOrFailed(comm)) return false;  // the general path says why
  // From here to the end no suspend can release the connections or the scratch.
  GateScope gate(e.gate, c.name);
  if (gate.result() != ncclSuccess) return false;
  const size_t bytes = collBytes(comm, c);
  TunerChoice choice;
  if (e.choose(c.func, bytes, &choice) != ncclSuccess) return false;
  const bool oneShot = choice.algo == kAlgoOneShot;
  const int nCh = oneShot ? 1 : boundChannels(choice.nChannels, CollCallConfig{}, e.nChannels);
  if (nCh != 1 || !connectedFor(e, choice)) return false;
  // A failure recorded before the communicator was Ready did not raise the abort flag: the
  // general path's connect walk reports it.
  if (e.health && e.health->failed()) return false;

  LaunchRecord record(comm);  // accl-ras's current operation and sequence numbers
  record.addColl(c);
  *res = record.start();
  if (*res != ncclSuccess) return true;
  noteCollPlanned(comm, c, choice, 1, /*configGiven=*/false, /*perCallAlgo=*/false, /*profilerTag=*/0);
  const size_t chunk =
      e.backend->chunkElems(static_cast<ProtoId>(choice.proto), dtypeSize(c.type), bytes / comm->nranks);
  const CollWork w = collWorkFor(c, op, choice, 0, 1, chunk);
  *res = settleLaunch(comm, c.name, e.backend->runLoneColl(w, oneShot));
  return true;
}

}  // namespace accl
