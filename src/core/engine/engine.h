// CommEngine: what a communicator needs to run collectives, created at the end of init —
// per-channel peers (ring order, tree), the connection table, user reduction ops, the tuner, the
// communicator's plans (one per launch, core/engine/plan_pool.h) and its backend (core/engine/backend.h), which
// runs those plans. Everything here is backend-neutral; what only one backend needs (the host
// backend's wait policy, channel threads and scratch) is that backend's state.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine/backend.h"
#include "core/engine/channel_peers.h"
#include "core/engine/connections.h"
#include "core/engine/engine_view.h"
#include "core/liveness/peer_failure.h"
#include "core/engine/plan.h"
#include "core/engine/plan_pool.h"
#include "core/engine/red_op_registry.h"
#include "core/comm/suspend_gate.h"
#include "nccl.h"
#include "profiler/comm_profiler.h"
#include "tuner/algo_proto_filter.h"
#include "tuner/tuner.h"

struct ncclComm;

namespace accl {

class RasComm;  // activity/ras_comms.h

class CommEngine {
 public:
  explicit CommEngine(ncclComm* comm);

  // Creates the backend, builds the channels from the node layout and the tuner; connections
  // are made on first use.
  static ncclResult_t create(ncclComm* comm, std::unique_ptr<CommEngine>* out);

  // Connects the ring / tree of `channel` if that has not happened yet (collective: every rank
  // of the communicator calls it for the same channels in the same order).
  ncclResult_t ensureRing(int channel);
  ncclResult_t ensureTree(int channel);

  // The one plan-connect walk, for every backend: connects every peer the plan uses, channel by
  // channel (rings, trees, one-round exchanges, point-to-point peers) and tells the backend
  // which links of each channel are ready (CommBackend::publishConnections). Collective over the
  // communicator: every rank calls it for the same channels in the same order (point-to-point:
  // mirror calls). A failure names the recorded peer failure when there is one.
  ncclResult_t connectPlan(const Plan& plan);

  // Frees every connection (ncclCommSuspend, revoke, shrink, a failed operation) after the
  // backend has stopped (`stopRunning`) or waited for its running launches and forgotten them;
  // rings and trees connect again on their next use. No launch may be inside.
  void releaseConnections(bool stopRunning);

  // Hands the communicator's failure record to the engine and its backend (core/liveness/liveness.cc).
  void attachHealth(std::shared_ptr<const CommHealth> h);

  ncclComm* comm;
  // The profiler plugin's context for this communicator (null: no plugin, the usual case).
  // Declared first: finalized after the backend and the connections that report to it stop.
  std::unique_ptr<prof::CommProfiler> profiler;
  CommFacts facts;  // what the backend may know of the communicator (filled before it is created)
  int nChannels = 1;
  std::vector<ChannelPeers> channels;
  ConnectionTable conns;
  FifoLayout layout;  // of the connections this rank receives on (the backend's, at init)
  RedOpRegistry redOps;
  AlgoProtoFilter filter;  // NCCL_ALGO / NCCL_PROTO, read once at init like NCCL
  std::unique_ptr<Tuner> tuner;  // picks algorithm / protocol / channels per collective
  // The last choices made, by (function, bytes): applications repeat the same sizes, and the
  // small-message path should not rebuild a cost table on every call.
  struct CachedChoice {
    int func = -1;
    size_t bytes = 0;
    TunerChoice choice;
  };
  CachedChoice choiceCache[64];
  ncclResult_t choose(FuncId func, size_t bytes, TunerChoice* out);
  uint64_t collOpCount = 0;  // collectives planned so far (the COLL log line's opCount)
  uint64_t collSeqByFunc[kNumFilterFuncs] = {};  // collectives planned so far per function (profiler seqNumber)
  std::shared_ptr<const CommHealth> health;  // liveness' failure record (null until attached)
  // The plans of this communicator's launches; declared before the backend, which returns
  // in-flight plans to it until it is destroyed.
  PlanPool plans;
  // Runs the plans. Destroyed before the connections it uses (declared after them).
  std::unique_ptr<CommBackend> backend;
  SuspendGate gate;  // ncclCommSuspend / ncclCommResume, and the launches running now
  // The communicator's accl-ras record (activity/ras_comms.h), set once its init completed and
  // before it is Ready: every launch updates it (core/engine/launch_record.h) without looking it up.
  std::shared_ptr<RasComm> activity;
};

}  // namespace accl
