// The host backend's KernelCh profiler events: a channel worker (or the launching thread, for
// channel 0) running one plan item is what a kernel's channel is on a GPU. One event per
// operation the item serves — the collective, or each send / receive of a point-to-point batch,
// whose transfers progress together — parented to that operation's Coll / P2p event
// (PlanItem::profEvent / p2pEvents). Start carries the start time (pTimer, ns of
// CLOCK_MONOTONIC), the KernelChStop state the end time, as NCCL reports a kernel's timestamps.
// Handles live in a per-thread buffer that keeps its capacity: no allocation per item once warm.
#pragma once

#include <vector>

#include "core/engine/plan.h"
#include "profiler/comm_profiler.h"
#include "util/time.h"

namespace accl {

class ChannelEvents {
 public:
  ChannelEvents(prof::CommProfiler& p, int channel, const PlanItem& item) : p_(p) {
    handles().clear();
    if (item.isColl) {
      begin(channel, item.profEvent);
    } else {
      for (void* parent : item.p2pEvents) begin(channel, parent);
    }
  }
  // Records KernelChStop with the end time and stops every event.
  void stop() {
    prof::ProfStateArgsV5 args{};
    args.kernelCh.pTimer = static_cast<uint64_t>(nowNs());
    for (void* h : handles()) {
      p_.record(h, prof::kKernelChStop, &args);
      p_.stop(h);
    }
    handles().clear();
  }

 private:
  static std::vector<void*>& handles() {
    thread_local std::vector<void*> h;
    return h;
  }
  void begin(int channel, void* parent) {
    if (!parent) return;
    prof::Event e;
    e.d.type = prof::kKernelCh;
    e.d.parentObj = parent;
    e.d.kernelCh.channelId = static_cast<uint8_t>(channel);
    e.d.kernelCh.pTimer = static_cast<uint64_t>(nowNs());
    if (void* h = p_.start(e)) handles().push_back(h);
  }
  prof::CommProfiler& p_;
};

}  // namespace accl
