// The CUDA backend's KernelCh events from kernel timestamps (see kernel_ch_events.h).
#include "backend/cuda/kernel_ch_events.h"

namespace accl {
namespace {

void emitOne(prof::CommProfiler& p, int channel, void* parent, uint64_t start, uint64_t end) {
  if (!parent || start == 0) return;  // no parent event, or the block never reached the item
  prof::Event e;
  e.d.type = prof::kKernelCh;
  e.d.parentObj = parent;
  e.d.kernelCh.channelId = static_cast<uint8_t>(channel);
  e.d.kernelCh.pTimer = start;
  void* h = p.start(e);
  if (!h) return;
  if (end != 0) {
    prof::ProfStateArgsV5 args{};
    args.kernelCh.pTimer = end;
    p.record(h, prof::kKernelChStop, &args);
  }
  p.stop(h);
}

}  // namespace

void emitKernelChEvents(prof::CommProfiler& p, const Plan& plan, const uint64_t* times) {
  if (!p.wants(prof::kKernelCh)) return;
  size_t n = 0;  // the kernel's item index (packPlan's order)
  for (int c = 0; c < plan.nChannelsUsed; ++c) {
    for (const PlanItem& item : plan.channels[c]) {
      if (item.isColl) {
        emitOne(p, c, item.profEvent, times[2 * n], times[2 * n + 1]);
        ++n;
        continue;
      }
      for (size_t k = 0; k < item.p2p.size(); ++k, ++n)
        emitOne(p, c, k < item.p2pEvents.size() ? item.p2pEvents[k] : nullptr, times[2 * n], times[2 * n + 1]);
    }
  }
}

}  // namespace accl
