// The host backend's profiler events of one plan item on one channel.
//
// KernelCh: a channel worker (or the launching thread, for
// channel 0) running one plan item is what a kernel's channel is on a GPU. One event per
// operation the item serves — the collective, or each send / receive of a point-to-point batch,
// whose transfers progress together — parented to that operation's Coll / P2p event
// (PlanItem::profEvent / p2pEvents). Start carries the start time (pTimer, ns of
// CLOCK_MONOTONIC), the KernelChStop state the end time, as NCCL reports a kernel's timestamps.
// Handles live in a per-thread buffer that keeps its capacity: no allocation per item once warm.
//
// ProxyOp: for each connection end of the item that a proxy serves (the network's), one ProxyOp
// per operation, started here (the backend knows the operation, its peer and its first step)
// and marked on the end (ConnEnd::profOps) with the steps the item moved, so that the network
// proxy parents its ProxyStep events to it and stops it once it has moved them all.
#pragma once

#include <unistd.h>

#include <vector>

#include "backend/host/host_backend.h"
#include "core/engine/plan.h"
#include "device/common/dtypes.h"
#include "profiler/comm_profiler.h"
#include "util/time.h"

namespace accl {

class ChannelEvents {
 public:
  ChannelEvents(prof::CommProfiler& p, int channel, const PlanItem& item) : p_(p) {
    handles().clear();
    if (!p.wants(prof::kKernelCh)) return;
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

class ProxyOpEvents {
 public:
  ProxyOpEvents(prof::CommProfiler& p, const HostBackend& b, int channel, const PlanItem& item)
      : p_(p), b_(b), channel_(channel) {
    ends().clear();
    if (!p.wants(prof::kProxyOp | prof::kProxyStep | prof::kNetPlugin)) return;
    if (!item.isColl) {
      for (size_t i = 0; i < item.p2p.size() && i < item.p2pEvents.size(); ++i)
        begin(item.p2p[i].peer, item.p2p[i].isSend, item.p2pEvents[i],
              item.p2p[i].chunkElems * dtypeSize(item.p2p[i].type));
      return;
    }
    const size_t chunk = item.coll.chunkElems * dtypeSize(item.coll.type);
    const ChannelPeers& peers = b.view().channel(channel);
    const RingView ring = peers.ringView();
    if (item.oneShot) {
      for (int r = 0; r < ring.nranks; ++r)
        if (r != b.view().facts().rank) begin(r, true, item.profEvent, chunk), begin(r, false, item.profEvent, chunk);
    } else if (item.coll.algo == kAlgoTree) {
      for (int i = -1; i < kMaxTreeChildren; ++i) {  // the parent, then each child
        const int peer = i < 0 ? peers.tree.up : peers.tree.down[i];
        if (peer >= 0) begin(peer, true, item.profEvent, chunk), begin(peer, false, item.profEvent, chunk);
      }
    } else if (ring.nranks > 1) {
      begin(ring.rankAt(ring.index + 1), true, item.profEvent, chunk);
      begin(ring.rankAt(ring.index + ring.nranks - 1), false, item.profEvent, chunk);
    }
  }
  // The item has run: each end's ProxyOp covers the steps up to the end's counter now.
  void finish() {
    for (Connection* c : ends()) c->profOps.finish(c->view.step);
    ends().clear();
  }

 private:
  static std::vector<Connection*>& ends() {
    thread_local std::vector<Connection*> e;
    return e;
  }
  // chunkBytes: the bytes per step of the item (its chunk), the ProxyOp's chunkSize.
  void begin(int peer, bool isSend, void* parent, size_t chunkBytes) {
    Connection* c = b_.view().connection(channel_, peer, isSend);
    if (!parent || !c || !c->transport) return;
    if (!(isSend ? c->transport->send.proxyProgress : c->transport->recv.proxyProgress)) return;
    for (Connection* seen : ends())
      if (seen == c) return;  // a tree peer listed twice
    prof::Event e;
    e.d.type = prof::kProxyOp;
    e.d.parentObj = parent;
    e.d.proxyOp.pid = getpid();
    e.d.proxyOp.channelId = static_cast<uint8_t>(channel_);
    e.d.proxyOp.peer = peer;
    e.d.proxyOp.nSteps = 0;  // not known before the schedule has run (docs/profiler.md)
    e.d.proxyOp.chunkSize = static_cast<int>(chunkBytes);
    e.d.proxyOp.isSend = isSend ? 1 : 0;
    void* h = p_.start(e);
    if (!h) return;
    if (!c->profOps.begin(h, c->view.step)) {
      p_.stop(h);  // the proxy lags too far behind: no ProxyOp for this one
      return;
    }
    ends().push_back(c);
  }
  prof::CommProfiler& p_;
  const HostBackend& b_;
  int channel_;
};

}  // namespace accl
