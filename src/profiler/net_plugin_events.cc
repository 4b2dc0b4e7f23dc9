// NetPlugin events from a net plugin's profiler callback (see net_plugin_events.h).
#include "profiler/net_plugin_events.h"

namespace accl::prof {
namespace {

// The callback's types (NCCL's ncclProfilerNetEvent* values).
enum NetEventCall : int { kNetEventStart = 0, kNetEventStop = 1, kNetEventUpdate = 2, kNetEventUpdateAndStop = 3 };

}  // namespace

void* NetStepParent::startEvent(int64_t pluginId, void* data) {
  void* step = step_.load(std::memory_order_acquire);
  if (!step || !prof_ || !prof_->wants(kNetPlugin)) return nullptr;
  for (Slot& s : slots_) {
    bool idle = false;
    if (!s.busy.compare_exchange_strong(idle, true, std::memory_order_acquire)) continue;
    Event e;
    e.d.type = kNetPlugin;
    e.d.parentObj = step;
    e.d.netPlugin.id = pluginId;
    e.d.netPlugin.data = data;
    s.prof = prof_;
    s.handle = prof_->start(e);
    if (!s.handle) {
      s.busy.store(false, std::memory_order_release);
      return nullptr;
    }
    return &s;
  }
  return nullptr;  // kEventsPerStep events of this step are open
}

void NetStepParent::stopEvent(void* eHandle) {
  auto* s = static_cast<Slot*>(eHandle);
  if (!s || !s->busy.load(std::memory_order_acquire)) return;
  // The slot is ours until released: one of two racing stops (the plugin's, teardown's) wins.
  CommProfiler* prof = s->prof;
  void* handle = s->handle;
  bool busy = true;
  if (!s->busy.compare_exchange_strong(busy, false, std::memory_order_acq_rel)) return;
  prof->stop(handle);
}

void NetStepParent::updateEvent(void* eHandle, void* data) {
  auto* s = static_cast<Slot*>(eHandle);
  if (!s || !s->busy.load(std::memory_order_acquire)) return;
  ProfStateArgsV5 args{};
  args.netPlugin.data = data;
  s->prof->record(s->handle, kNetPluginUpdate, &args);
}

void NetStepParent::stopLeftovers() {
  close();
  for (Slot& s : slots_) stopEvent(&s);
}

ncclResult_t netPluginProfilerCallback(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData) {
  if (!eHandle) return ncclSuccess;
  switch (type) {
    case kNetEventStart:
      *eHandle = pHandle ? static_cast<NetStepParent*>(pHandle)->startEvent(pluginId, extData) : nullptr;
      break;
    case kNetEventStop:
      NetStepParent::stopEvent(*eHandle);
      *eHandle = nullptr;
      break;
    case kNetEventUpdate:
      NetStepParent::updateEvent(*eHandle, extData);
      break;
    case kNetEventUpdateAndStop:
      NetStepParent::updateEvent(*eHandle, extData);
      NetStepParent::stopEvent(*eHandle);
      *eHandle = nullptr;
      break;
    default:
      break;  // a call this version does not know: nothing recorded
  }
  return ncclSuccess;
}

}  // namespace accl::prof
