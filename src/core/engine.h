// CommEngine: what a communicator needs to run collectives, created at the end of init —
// per-channel peers (ring order, tree), the connection table, user reduction ops, the wait
// policy, and the worker threads that run channels 1..n-1 (channel 0 runs on the caller).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "algos/topology_view.h"
#include "core/channel_workers.h"
#include "core/connections.h"
#include "core/plan.h"
#include "core/red_op_registry.h"
#include "core/suspend_gate.h"
#include "device/host/host_wait.h"
#include "nccl.h"
#include "tuner/algo_proto_filter.h"
#include "tuner/tuner.h"

struct ncclComm;

namespace accl {

constexpr int kMaxHostChannels = 16;

struct ChannelPeers {
  std::vector<int> ringRanks;  // rank at each ring position
  int ringIndex = 0;           // this rank's position
  TreeView tree{};             // this channel's tree (double binary tree: channel parity picks one)
  bool ringConnected = false;
  bool treeConnected = false;

  RingView ringView() const { return RingView{static_cast<int>(ringRanks.size()), ringIndex, ringRanks.data()}; }
};

class CommEngine {
 public:
  explicit CommEngine(ncclComm* comm);

  // Builds the channels from the node layout; connections are made on first use.
  static ncclResult_t create(ncclComm* comm, std::unique_ptr<CommEngine>* out);

  // Connects the ring / tree of `channel` if that has not happened yet (collective: every rank
  // of the communicator calls it for the same channels in the same order).
  ncclResult_t ensureRing(int channel);
  ncclResult_t ensureTree(int channel);

  ncclComm* comm;
  int nChannels = 1;
  std::vector<ChannelPeers> channels;
  ConnectionTable conns;
  FifoLayout layout;  // of the connections this rank receives on (NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE at init)
  RedOpRegistry redOps;
  WaitPolicy wait;
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
  ChannelWorkers workers;
  Plan plan;  // reused by every launch of this communicator (one launch at a time)
  std::vector<char> oneShotScratch;   // host one-round all-reduce: peers' vectors + accumulator
  std::vector<P2pWork> oneShotWorks;  // its transfers
  // Memory accounting (ncclCommMemStats, see core/comm_memory.h): bytes of the one-shot scratch
  // and of the plan's storage, published by the launch that grew them.
  std::atomic<uint64_t> scratchBytes{0};
  std::atomic<uint64_t> planBytes{0};
  SuspendGate gate;  // ncclCommSuspend / ncclCommResume, and the launches running now
};

}  // namespace accl
