// Host executor: connection setup for a plan, then each channel's items in order.
#include "backend/host/host_executor.h"

#include <vector>

#include "algos/ring_all_gather.h"
#include "algos/ring_all_reduce.h"
#include "algos/ring_broadcast.h"
#include "algos/ring_reduce.h"
#include "algos/ring_reduce_scatter.h"
#include "algos/tree_all_reduce.h"
#include "backend/host/host_backend.h"
#include "backend/host/host_one_shot.h"
#include "core/comm.h"
#include "core/engine.h"
#include "backend/host/host_prims.h"
#include "tuner/algo_proto_filter.h"
#include "util/check.h"

namespace accl {
namespace {

HostConnEnd connEnd(CommEngine& e, int channel, int peer, bool isSend) {
  Connection* conn = e.conns.find(channel, peer, isSend);
  return HostConnEnd{&conn->view, peer, conn->peerPid};
}

HostPrimsArgs baseArgs(const HostBackend& b, const CollWork& w) {
  HostPrimsArgs a;
  a.input = w.sendbuff;
  a.output = w.recvbuff;
  a.type = w.type;
  a.op = w.op;
  a.proto = w.proto;
  a.wait = &b.waitPolicy();
  a.what = collApiName(w.func, "ncclSend/ncclRecv");
  return a;
}

ncclResult_t runRing(HostBackend& b, int channel, const CollWork& w) {
  CommEngine& e = b.engine();
  const ChannelPeers& ch = e.channels[channel];
  const RingView ring = ch.ringView();
  HostPrimsArgs a = baseArgs(b, w);
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

ncclResult_t runTree(HostBackend& b, int channel, const CollWork& w) {
  CommEngine& e = b.engine();
  const TreeView& tree = e.channels[channel].tree;
  HostPrimsArgs up = baseArgs(b, w);
  HostPrimsArgs down = baseArgs(b, w);
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

}  // namespace

ncclResult_t hostConnectPlan(HostBackend& b, const Plan& plan) {
  CommEngine& e = b.engine();
  for (int c = 0; c < plan.nChannelsUsed; ++c) {
    bool ring = false, tree = false;
    std::vector<int> sendPeers, recvPeers;
    for (const PlanItem& item : plan.channels[c]) {
      if (item.isColl && item.oneShot) {
        std::vector<int> peers;
        oneShotPeers(b.comm(), &peers);
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
    if (!sendPeers.empty() || !recvPeers.empty())
      ACCL_CHECK(e.conns.connect(e.comm, c, e.layout, sendPeers, recvPeers));
  }
  return ncclSuccess;
}

ncclResult_t hostRunChannel(HostBackend& b, int channel, const Plan& plan) {
  for (const PlanItem& item : plan.channels[channel]) {
    if (!item.isColl) {
      ACCL_CHECK(b.runP2pBatch(channel, item.p2p));
    } else if (item.oneShot) {
      ACCL_CHECK(hostOneShotAllReduce(b, channel, item.coll));
    } else if (item.coll.algo == kAlgoTree) {
      ACCL_CHECK(runTree(b, channel, item.coll));
    } else {
      ACCL_CHECK(runRing(b, channel, item.coll));
    }
  }
  return ncclSuccess;
}

}  // namespace accl
