// Host executor: connection setup for a plan, then each channel's items in order.
#include "device/host/host_executor.h"

#include <vector>

#include "algos/ring_all_gather.h"
#include "algos/ring_all_reduce.h"
#include "algos/ring_broadcast.h"
#include "algos/ring_reduce.h"
#include "algos/ring_reduce_scatter.h"
#include "algos/tree_all_reduce.h"
#include "core/comm.h"
#include "core/comm_memory.h"
#include "device/host/host_one_shot.h"
#include "device/host/host_p2p.h"
#include "device/host/host_prims.h"
#include "tuner/algo_proto_filter.h"
#include "util/check.h"

namespace accl {
namespace {

// Everything a plan needs, connected before any channel starts: every rank makes the same
// calls for collectives, and mirror calls for point-to-point.
ncclResult_t connectPlan(CommEngine& e, const Plan& plan) {
  for (int c = 0; c < plan.nChannelsUsed; ++c) {
    bool ring = false, tree = false;
    std::vector<int> sendPeers, recvPeers;
    for (const PlanItem& item : plan.channels[c]) {
      if (item.isColl && item.oneShot) {
        std::vector<int> peers;
        oneShotPeers(e, &peers);
        ACCL_CHECK(e.conns.connect(e.comm, c, e.layout, peers, peers));
        continue;
      }
      if (item.isColl) {
        (item.coll.algo == kAlgoTree ? tree : ring) = true;
        continue;
      }
      for (const P2pWork& w : item.p2p) (w.isSend ? sendPeers : recvPeers).push_back(w.peer);
    }
    if (ring) ACCL_CHECK(e.ensureRing(c));
    if (tree) ACCL_CHECK(e.ensureTree(c));
    if (!sendPeers.empty() || !recvPeers.empty()) ACCL_CHECK(e.conns.connect(e.comm, c, e.layout, sendPeers, recvPeers));
  }
  return ncclSuccess;
}


HostConnEnd connEnd(CommEngine& e, int channel, int peer, bool isSend) {
  Connection* conn = e.conns.find(channel, peer, isSend);
  return HostConnEnd{&conn->view, peer, conn->peerPid};
}

HostPrimsArgs baseArgs(CommEngine& e, const CollWork& w) {
  HostPrimsArgs a;
  a.input = w.sendbuff;
  a.output = w.recvbuff;
  a.type = w.type;
  a.op = w.op;
  a.proto = w.proto;
  a.wait = &e.wait;
  a.what = collApiName(w.func, "ncclSend/ncclRecv");
  return a;
}

ncclResult_t runRing(CommEngine& e, int channel, const CollWork& w) {
  const ChannelPeers& ch = e.channels[channel];
  const RingView ring = ch.ringView();
  HostPrimsArgs a = baseArgs(e, w);
  if (ring.nranks > 1) {
    a.recv[a.nRecv++] = connEnd(e, channel, ring.rankAt(ring.index - 1), false);
    a.send[a.nSend++] = connEnd(e, channel, ring.rankAt(ring.index + 1), true);
  }
  HostPrims prims(a);
  switch (w.func) {
    case kFuncAllReduce: ringAllReduce(prims, ring, w); break;
    case kFuncAllGather: ringAllGather(prims, ring, w); break;
    case kFuncReduceScatter: ringReduceScatter(prims, ring, w); break;
    case kFuncBroadcast: ringBroadcast(prims, ring, w); break;
    case kFuncReduce: ringReduce(prims, ring, w); break;
    default: return fail(ncclInternalError, "ring: function %d has no ring schedule", static_cast<int>(w.func));
  }
  return prims.status();
}

ncclResult_t runTree(CommEngine& e, int channel, const CollWork& w) {
  const TreeView& tree = e.channels[channel].tree;
  HostPrimsArgs up = baseArgs(e, w);
  HostPrimsArgs down = baseArgs(e, w);
  down.input = w.recvbuff;  // the broadcast phase forwards the result, not a contribution
  down.inputIsContribution = false;
  for (int d : tree.down) {
    if (d < 0) continue;
    up.recv[up.nRecv++] = connEnd(e, channel, d, false);
    down.send[down.nSend++] = connEnd(e, channel, d, true);
  }
  if (tree.up >= 0) {
    up.send[up.nSend++] = connEnd(e, channel, tree.up, true);
    down.recv[down.nRecv++] = connEnd(e, channel, tree.up, false);
  }
  HostPrims upPrims(up), downPrims(down);
  if (w.func != kFuncAllReduce)
    return fail(ncclInternalError, "tree: function %d has no tree schedule", static_cast<int>(w.func));
  treeAllReduce(upPrims, downPrims, tree, w);
  ACCL_CHECK(upPrims.status());
  return downPrims.status();
}

ncclResult_t runChannel(CommEngine& e, int channel, const std::vector<PlanItem>& items) {
  for (const PlanItem& item : items) {
    if (!item.isColl) {
      ACCL_CHECK(hostRunP2pBatch(e, channel, item.p2p));
    } else if (item.oneShot) {
      ACCL_CHECK(hostOneShotAllReduce(e, channel, item.coll));
    } else if (item.coll.algo == kAlgoTree) {
      ACCL_CHECK(runTree(e, channel, item.coll));
    } else {
      ACCL_CHECK(runRing(e, channel, item.coll));
    }
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t hostExecutePlan(CommEngine& engine, const Plan& plan) {
  engine.planBytes.store(planStorageBytes(plan), std::memory_order_relaxed);
  // A peer failure interrupts connection setup through the abort flag: report the failure itself.
  const PlanItem* first = plan.channels.empty() || plan.channels[0].empty() ? nullptr : &plan.channels[0][0];
  const char* what = collApiName(first && first->isColl ? first->coll.func : kFuncSendRecv, "ncclSend/ncclRecv");
  // A failure recorded before the communicator was Ready did not raise the abort flag: check first.
  if (engine.wait.health && engine.wait.health->failed()) return peerFailureOr(engine.wait, what, ncclRemoteError);
  ACCL_CHECK(peerFailureOr(engine.wait, what, connectPlan(engine, plan)));
  return engine.workers.runAll(plan.nChannelsUsed,
                               [&](int c) { return runChannel(engine, c, plan.channels[c]); });
}

}  // namespace accl
