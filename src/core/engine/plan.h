// A plan: what one communicator runs for one launch (one group), per channel, in call order. A
// channel's list holds collective work items and batches of point-to-point transfers (the
// transfers of consecutive send/recv calls, progressed together so that any pattern of sends
// and receives inside a group completes). Every launch gets its own Plan from the
// communicator's PlanPool (core/engine/plan_pool.h) and hands it to the backend, which returns it to the
// pool when the launch has completed: an asynchronous backend may hold several at once.
#pragma once

#include <cstdint>
#include <vector>

#include "device/common/work.h"
#include "nccl.h"

namespace accl {

struct PlanItem {
  bool isColl = true;
  // isColl only: a small all-reduce done in one round, every rank sending its whole vector to
  // every other and reducing locally in rank order (host backend; see backend/host/host_one_shot.h).
  bool oneShot = false;
  CollWork coll{};
  // isColl only: ncclCollConfig_t.userProfilerTag of the call (0: untagged), for a profiler.
  uint64_t profilerTag = 0;
  std::vector<P2pWork> p2p;  // when !isColl
  // With a profiler plugin (profiler/comm_profiler.h): the Coll event this item belongs to, or
  // per entry of p2p its P2p event, parents of the backend's KernelCh events. Null / empty
  // without a plugin.
  void* profEvent = nullptr;
  std::vector<void*> p2pEvents;
};

// A send to this rank itself matched with its receive: a copy on the launch's stream (CUDA) or
// at its run (host), in call order with the launch's other work.
struct LocalCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
};

struct Plan {
  std::vector<std::vector<PlanItem>> channels;  // channels[c] = items of channel c, in order
  int nChannelsUsed = 0;
  // The user's streams of the launch's calls, distinct, in call order: streams[0] is where the
  // launch runs; a backend with streams makes it wait for the others first and makes them wait
  // for its end (NCCL's semantics for a group over several streams). The host backend runs
  // synchronously on the calling thread and ignores them.
  std::vector<cudaStream_t> streams;
  std::vector<LocalCopy> selfCopies;  // run before the channels' work
  // Storage bytes of this plan last counted into the pool's total (PlanPool bookkeeping).
  uint64_t countedBytes = 0;

  bool empty() const { return nChannelsUsed == 0 && selfCopies.empty(); }
  // Empties the plan for its next launch, keeping its storage (no allocation on the
  // small-message path).
  void reset(int nChannels) {
    channels.resize(nChannels);
    for (auto& ch : channels) ch.clear();
    nChannelsUsed = 0;
    streams.clear();
    selfCopies.clear();
  }
  // Records `stream` if the plan does not have it yet.
  void addStream(cudaStream_t stream) {
    for (cudaStream_t s : streams)
      if (s == stream) return;
    streams.push_back(stream);
  }
};

}  // namespace accl
