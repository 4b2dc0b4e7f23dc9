// The CUDA backend's ProxyOp events and the step counting behind them (see proxy_op_events.h).
#include "backend/cuda/proxy_op_events.h"

#include <unistd.h>

#include "algos/coll_dispatch.h"
#include "backend/cuda/work_codec.h"
#include "device/common/chunk_loop.h"

namespace accl {
namespace {

// An Exec (algos/coll_dispatch.h) whose Prims count steps per connection end instead of moving
// data: every primitive is one step on each of its receive peers (when it receives) and each of
// its send peers (when it sends), as in the CUDA Prims.
class StepCountExec {
 public:
  struct Args {
    const void* input = nullptr;
    bool inputIsContribution = true;
    int recv[kMaxTreeChildren] = {};
    int nRecv = 0;
    int send[kMaxTreeChildren] = {};
    int nSend = 0;
  };
  class Prims {
   public:
    Prims(const Args& a, StepCountExec* x) : a_(a), x_(x) {}
    void send(size_t, size_t) { step(false, true); }
    void recv(size_t, size_t) { step(true, false); }
    void recvReduceSend(size_t, size_t) { step(true, true); }
    void recvReduceCopySend(size_t, size_t, size_t, bool) { step(true, true); }
    void recvCopySend(size_t, size_t) { step(true, true); }
    void copySend(size_t, size_t, size_t, bool) { step(false, true); }
    void recvReduceCopy(size_t, size_t, size_t, bool) { step(true, false); }
    void localCopy(size_t, size_t, size_t, bool) {}

   private:
    void step(bool recv, bool send) {
      if (recv)
        for (int i = 0; i < a_.nRecv; ++i) x_->add(a_.recv[i], false);
      if (send)
        for (int i = 0; i < a_.nSend; ++i) x_->add(a_.send[i], true);
    }
    Args a_;
    StepCountExec* x_;
  };

  explicit StepCountExec(ItemSteps* out) : out_(out) {}
  Args baseArgs() const { return Args{}; }
  bool addRecv(Args& a, PeerRole, int, int peer) { return a.recv[a.nRecv++] = peer, true; }
  bool addSend(Args& a, PeerRole, int, int peer) { return a.send[a.nSend++] = peer, true; }
  template <int kMaxRecv, int kMaxSend>
  Prims prims(const Args& a) {
    return Prims(a, this);
  }
  template <class P>
  bool finish(P&) {
    return true;
  }
  bool unsupported(const CollWork&) { return false; }
  int count() const { return n_; }

 private:
  void add(int peer, bool isSend) {
    for (int i = 0; i < n_; ++i)
      if (out_[i].peer == peer && out_[i].isSend == isSend) return void(++out_[i].steps);
    out_[n_++] = ItemSteps{peer, isSend, 1};
  }
  ItemSteps* out_;
  int n_ = 0;
};

}  // namespace

int collItemSteps(const DevWorkItem& item, const RingView& ring, const TreeView& tree, ItemSteps* out) {
  StepCountExec x(out);
  runCollWork(x, decodeCollItem(item), ring, tree);  // the kernel's units (bytes for copy collectives)
  return x.count();
}

uint64_t p2pItemSteps(const DevWorkItem& item) {
  return p2pStepCount(item.chanCount, item.chunkElems > 0 ? item.chunkElems : 1);
}

void CudaProxyOps::mark(prof::CommProfiler& p, Connection* c, int channel, void* parent, uint64_t steps) {
  const bool isSend = c && c->side == ConnSide::kSend;
  if (!c || !c->transport || !(isSend ? c->transport->send : c->transport->recv).proxyProgress) return;
  auto it = nextStep_.try_emplace(c, c->view.step).first;  // the device counter starts where the view does
  const uint64_t first = it->second;
  it->second += steps;
  if (!parent) return;
  prof::Event e;
  e.d.type = prof::kProxyOp;
  e.d.parentObj = parent;
  e.d.proxyOp.pid = getpid();
  e.d.proxyOp.channelId = static_cast<uint8_t>(channel);
  e.d.proxyOp.peer = c->peer;
  e.d.proxyOp.nSteps = static_cast<int>(steps);
  e.d.proxyOp.chunkSize = static_cast<int>(c->view.layout.simpleSlotBytes);
  e.d.proxyOp.isSend = isSend ? 1 : 0;
  void* h = p.start(e);
  if (!h) return;
  if (!c->profOps.begin(h, first)) {
    p.stop(h);  // the proxy lags too far behind: no ProxyOp for this one
    return;
  }
  c->profOps.finish(first + steps);
}

void CudaProxyOps::onLaunch(prof::CommProfiler& p, const EngineView& view, const Plan& plan,
                            const PackedLaunch& packed, bool captured) {
  if (stopped_ || !p.wants(prof::kProxyOp | prof::kProxyStep | prof::kNetPlugin)) return;
  if (captured) {
    stopped_ = true;
    return;
  }
  const DevWorkItem* items = packed.items();
  for (int c = 0; c < plan.nChannelsUsed; ++c) {
    const ChannelPeers& peers = view.channel(c);
    const RingView ring = peers.ringView();
    int k = packed.args.header.channels[c].first;
    for (const PlanItem& pi : plan.channels[c]) {
      if (pi.isColl) {
        ItemSteps steps[2 * (kMaxTreeChildren + 1)];
        const int n = collItemSteps(items[k++], ring, peers.tree, steps);
        for (int i = 0; i < n; ++i)
          mark(p, view.connection(c, steps[i].peer, steps[i].isSend), c, pi.profEvent, steps[i].steps);
        continue;
      }
      for (size_t i = 0; i < pi.p2p.size(); ++i, ++k) {
        const P2pWork& w = pi.p2p[i];
        void* parent = i < pi.p2pEvents.size() ? pi.p2pEvents[i] : nullptr;
        mark(p, view.connection(c, w.peer, w.isSend), c, parent, p2pItemSteps(items[k]));
      }
    }
  }
}

}  // namespace accl
