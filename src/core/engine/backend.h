// CommBackend: the seam between core (enqueue, group, plans, tuner, connections) and what runs a
// plan on some execution resource. core decides *what* runs — per channel, the work items with
// algorithm, protocol and chunk size — and connects the peers a plan uses; a backend decides
// *how*: it sizes chunks for its FIFO layout, prices its work for the tuner, launches the plan on
// the user's stream and reports completion and errors. One backend object per communicator,
// chosen at init from comm->backend (ACCL_BACKEND and the device probe). A backend sees its
// communicator only through an EngineView (core/engine/engine_view.h), never ncclComm or CommEngine.
//
// Backends (src/backend, created by src/backend/backend_factory.cc):
//   - host (src/backend/host): runs a plan synchronously on the calling thread and the
//     communicator's channel worker threads; launch() returns when the plan is done, streams are
//     ignored, query() and wait() have nothing left to do.
//   - cuda (src/backend/cuda): launch() enqueues the communicator kernel on the stream and
//     returns; query()/wait() follow the launches in flight; asyncError() reports kernel-side
//     errors.
// Both run the schedules through the one dispatch and wiring of algos/coll_dispatch.h.
// See docs/backend.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine/engine_view.h"
#include "core/engine/plan.h"
#include "device/backend_kind.h"
#include "device/common/fifo.h"
#include "device/common/ids.h"
#include "nccl.h"

namespace accl {

class CommHealth;
class CostModel;
struct TunerTopo;

// Which peers of one channel a plan uses, once core has connected them (CommEngine::connectPlan).
struct ChannelLinks {
  bool ring = false;  // the ring's previous and next ranks
  bool tree = false;  // the tree's parent and children
  // Point-to-point peers of the plan's transfers on this channel (in plan order, repeats kept).
  std::vector<int> sendPeers, recvPeers;
};

class CommBackend {
 public:
  virtual ~CommBackend() = default;

  // "host" or "cuda", for logs.
  virtual const char* name() const = 0;

  // --- Set-up, during CommEngine::create ---
  // How many channels the communicator gets (NCCL_MIN/MAX_NCHANNELS and the config's CTA bounds
  // applied to the backend's own default), at most kMaxChannels (a backend may cap lower).
  virtual int channelCount(const CommFacts& facts) const = 0;
  // The slot layout of the FIFOs this rank receives on (NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE).
  virtual FifoLayout fifoLayout() const = 0;
  // Called once the engine's channels exist (the backend may size per-channel state).
  virtual ncclResult_t start() = 0;
  // The communicator's failure record (core/liveness/liveness.h) and collective counter, for error
  // messages and long-wait logs; set after start(), before the first launch.
  virtual void attachHealth(std::shared_ptr<const CommHealth> health, const uint64_t* opCount, int rank) = 0;

  // --- Planning (enqueue) ---
  // Elements of `elemSize` bytes per FIFO step of `proto` (at most a slot's): the chunk of a
  // work item whose channel moves `rankBytes` per rank (a collective: its bytes / channels /
  // ranks; a transfer: its bytes / channels). A backend may step below its slots for an item too
  // small to fill them (host: across hosts); every rank gets the same answer for the same item.
  virtual size_t chunkElems(ProtoId proto, size_t elemSize, size_t rankBytes) const = 0;
  // Whether launch() blocks until the plan has run. A group over several communicators driven
  // by one thread then needs a thread per communicator (their plans wait on each other).
  virtual bool launchBlocks() const = 0;
  // Whether `stream` is capturing a CUDA graph now (the profiler's graphCaptured); false for a
  // backend without streams.
  virtual bool streamCapturing(cudaStream_t /*stream*/) const { return false; }

  // The cost model that prices this backend's work for the tuner (tuner/cost_model.h), for the
  // communicator shape `topo` (which the backend may mark as host-run) with `cpus` CPUs free to
  // this process.
  virtual std::unique_ptr<CostModel> costModel(TunerTopo* topo, int nChannels, int cpus) const = 0;

  // --- Launch ---
  // core has connected the peers `links` names on `channel` for a plan about to launch (every
  // rank does so for the same channels in the same order): make them reachable to what runs the
  // plan. Called for every channel the plan uses, before launch().
  virtual ncclResult_t publishConnections(int channel, const ChannelLinks& links) = 0;
  // Brackets the host-side preparation of one launch on the calling thread: core's lazy connects
  // and publishConnections/launch's own allocations. A capture may be running on the user's
  // stream meanwhile; the CUDA backend relaxes the thread's stream-capture mode in between, so
  // that those set-up calls (allocations, registrations, copies on private streams) neither fail
  // nor invalidate the capture, as NCCL does. endPrepare gets what beginPrepare returned.
  virtual int beginPrepare() { return 0; }
  virtual void endPrepare(int /*saved*/) {}
  // Runs `plan` on its streams (plan.streams[0] first). Takes the plan and gives it back to the
  // engine's PlanPool once the launch completes — at once when the backend is synchronous, on
  // completion otherwise. An error returned here means the launch did not (fully) run.
  virtual ncclResult_t launch(std::unique_ptr<Plan> plan) = 0;
  // Whether the backend can run a lone collective's one work item at once, on the calling
  // thread, without a plan (core/engine/lone_coll.h): a synchronous backend whose channel 0 runs
  // on the caller. Then core may call runLoneColl instead of launch for a call outside a group.
  virtual bool runsLoneColls() const { return false; }
  // Runs `work` on channel 0 and returns when it is done; core has connected the peers it needs
  // (channel 0's ring or tree, or every other rank for a one-round all-reduce, `oneShot`).
  virtual ncclResult_t runLoneColl(const CollWork& /*work*/, bool /*oneShot*/) { return ncclInternalError; }

  // --- Completion and errors ---
  // ncclSuccess when every launch has completed, ncclInProgress while some run, or the first
  // error a completed launch met.
  virtual ncclResult_t query() = 0;
  // Waits until every launch has completed (or the abort flag is raised); returns as query().
  virtual ncclResult_t wait() = 0;
  // An error raised by a launch after launch() returned (ncclCommGetAsyncError), ncclSuccess if
  // none. Synchronous backends return every error from launch() and report none here.
  virtual ncclResult_t asyncError() = 0;
  // For a failure met outside the backend's own waits (connection setup over the bootstrap, the
  // consistency check): the communicator's recorded peer failure naming the failed rank when
  // there is one (ncclRemoteError), otherwise `res` unchanged. `what` names the operation.
  virtual ncclResult_t peerFailureOr(const char* what, ncclResult_t res) const = 0;

  // --- Memory (ncclCommMemStats, ncclCommSuspend) ---
  // Bytes of the backend object and its fixed tables (persistent).
  virtual uint64_t objectBytes() const = 0;
  // Bytes of scratch the backend keeps between launches (releasable).
  virtual uint64_t scratchBytes() const = 0;
  // Frees that scratch; runs under the suspend gate (no launch inside, none in flight).
  virtual void releaseScratch() = 0;
  // core is about to free every connection (CommEngine::releaseConnections: ncclCommSuspend, a
  // revoke or shrink, a failed operation). Launches still running are first stopped when
  // `stopRunning` (they may wait for peers that will never come), otherwise waited for (an abort
  // meanwhile stops them); then the backend forgets every pointer into the connections, so that
  // the next launch publishes the new ones and no kernel touches freed FIFOs.
  virtual void releaseConnections(bool stopRunning) = 0;
};

// Creates the backend of kind `kind` over `view`. Defined above core, by the backends' own
// factory (src/backend/backend_factory.cc): a kind this build has no backend for runs on the host
// backend, saying so once.
ncclResult_t createBackend(Backend kind, EngineView view, std::unique_ptr<CommBackend>* out);

}  // namespace accl
