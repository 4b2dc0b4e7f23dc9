// NetPlugin events: what a net plugin (NCCL's net API v10 and later) reports to the profiler
// plugin through the callback it is handed at init. The plugin calls back with
//   type 0  start an event under `pHandle` (the request's profiler handle, below) with its
//           plugin id and opaque data: a NetPlugin event parented to the request's ProxyStep;
//   type 1  stop it;   type 2  record a NetPluginUpdate state carrying new data;
//   type 3  both (an update, then the stop)
// and keeps the event handle the start wrote into *eHandle for the later calls.
//
// The profiler handle is a NetStepParent: one per FIFO step slot of a network connection end,
// made with the end only when its communicator's profiler plugin asked for NetPlugin events (the
// proxy passes null otherwise, and a null handle records nothing). The proxy opens it with the
// step's ProxyStep before posting the step's requests and closes it once the step is done; a
// start under a closed or null parent records nothing and leaves *eHandle null, and stop / update
// of a null handle do nothing. The event handles a plugin holds are slots of the parent (at most
// kEventsPerStep open at once per step; a start beyond that records nothing): nothing is
// allocated per event. The callback is a plain function (plugins may call it from any thread).
#pragma once

#include <atomic>
#include <cstdint>

#include "nccl.h"
#include "profiler/comm_profiler.h"

namespace accl::prof {

class NetStepParent {
 public:
  static constexpr int kEventsPerStep = 8;

  // Proxy: the step's ProxyStep `stepEvent` is started (null: no step event, so no NetPlugin
  // events either) and its requests are about to be posted.
  void open(CommProfiler* prof, void* stepEvent) {
    prof_ = prof;
    step_.store(stepEvent, std::memory_order_release);
  }
  // Proxy: the step is done; later starts under it record nothing.
  void close() { step_.store(nullptr, std::memory_order_release); }
  // Teardown: stops the events the plugin left open (the plugin makes no calls any more).
  void stopLeftovers();

  // The callback's three actions (see the top of this file).
  void* startEvent(int64_t pluginId, void* data);
  static void stopEvent(void* eHandle);
  static void updateEvent(void* eHandle, void* data);

 private:
  struct Slot {
    std::atomic<bool> busy{false};
    CommProfiler* prof = nullptr;
    void* handle = nullptr;  // the profiler plugin's NetPlugin event
  };
  CommProfiler* prof_ = nullptr;
  std::atomic<void*> step_{nullptr};
  Slot slots_[kEventsPerStep];
};

// The profiler callback accl gives v10+ net plugins (NCCL's ncclProfilerCallback_t).
ncclResult_t netPluginProfilerCallback(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData);

}  // namespace accl::prof
