// Host executor: each channel's items in order; collectives through the shared skeleton.
#include "backend/host/host_executor.h"

#include "algos/coll_dispatch.h"
#include "backend/host/host_backend.h"
#include "backend/host/host_one_shot.h"
#include "backend/host/host_prims.h"
#include "backend/host/host_profile.h"
#include "util/check.h"

namespace accl {
namespace {

// The host side of the skeleton's Exec contract (algos/coll_dispatch.h): connections found by
// peer rank in the communicator's table, one HostPrims per phase, the first error kept.
class HostCollExec {
 public:
  using Args = HostPrimsArgs;

  HostCollExec(const HostBackend& b, int channel, const CollWork& w) : b_(b), channel_(channel), w_(w) {}

  Args baseArgs() {
    Args a;
    a.input = w_.sendbuff;
    a.output = w_.recvbuff;
    a.type = w_.type;
    a.op = w_.op;
    a.proto = w_.proto;
    a.wait = &b_.waitPolicy();
    a.what = collApiName(w_.func, "ncclSend/ncclRecv");
    a.userSends = &userSends_;
    a.registrations = &b_.view();
    return a;
  }
  bool addRecv(Args& a, PeerRole, int, int peer) { return add(a.recv, &a.nRecv, peer, false); }
  bool addSend(Args& a, PeerRole, int, int peer) { return add(a.send, &a.nSend, peer, true); }
  template <int kMaxRecv, int kMaxSend>
  HostPrims prims(const Args& a) const {
    return HostPrims(a);
  }
  // After a phase: its status, and once every step of the item was published without error the
  // zero-copy sends the network still reads from the user's buffers (user_sends.h) are waited for.
  bool finish(HostPrims& p) {
    if (result_ == ncclSuccess) result_ = p.status();
    if (result_ == ncclSuccess) result_ = userSends_.waitAll(b_.waitPolicy(), collApiName(w_.func, "collective"));
    if (result_ != ncclSuccess) userSends_.abandon();
    return result_ == ncclSuccess;
  }
  bool unsupported(const CollWork& w) {
    result_ = fail(ncclInternalError, "%s: function %d has no %s schedule", w.algo == kAlgoTree ? "tree" : "ring",
                   static_cast<int>(w.func), w.algo == kAlgoTree ? "tree" : "ring");
    return false;
  }
  ncclResult_t result() const { return result_; }

 private:
  bool add(HostConnEnd* ends, int* n, int peer, bool isSend) {
    Connection* conn = b_.view().connection(channel_, peer, isSend);
    if (!conn) {
      result_ = fail(ncclInternalError, "%s: channel %d has no %s connection with rank %d",
                     collApiName(w_.func, "collective"), channel_, isSend ? "send" : "receive", peer);
      return false;
    }
    ends[(*n)++] = hostConnEnd(*conn, isSend);
    return true;
  }

  const HostBackend& b_;
  int channel_;
  const CollWork& w_;
  ncclResult_t result_ = ncclSuccess;
  UserSends userSends_;
};

ncclResult_t runItem(HostBackend& b, int channel, const PlanItem& item) {
  if (!item.isColl) return b.runP2pBatch(channel, item.p2p);
  if (item.oneShot) return hostOneShotAllReduce(b, channel, item.coll);
  return hostRunColl(b, channel, item.coll);
}

}  // namespace

ncclResult_t hostRunColl(HostBackend& b, int channel, const CollWork& w) {
  const ChannelPeers& peers = b.view().channel(channel);
  HostCollExec exec(b, channel, w);
  runCollWork(exec, w, peers.ringView(), peers.tree);
  return exec.result();
}

ncclResult_t hostRunChannel(HostBackend& b, int channel, const Plan& plan) {
  prof::CommProfiler* profiler = b.view().facts().profiler;
  for (const PlanItem& item : plan.channels[channel]) {
    if (profiler && profiler->wants(prof::kTreeBelowTask)) {
      ChannelEvents channelEvents(*profiler, channel, item);
      ProxyOpEvents proxyOps(*profiler, b, channel, item);
      ncclResult_t res = runItem(b, channel, item);
      proxyOps.finish();
      channelEvents.stop();
      ACCL_CHECK(res);
    } else {
      ACCL_CHECK(runItem(b, channel, item));
    }
  }
  return ncclSuccess;
}

}  // namespace accl
