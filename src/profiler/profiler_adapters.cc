// The version adapters of ProfilerPlugin: each call arrives in v7 terms (Event, v5 state args)
// and leaves in the layout of the plugin's version. What an older version cannot express is
// dropped there, as NCCL does for old plugins: v6 and older never see KernelPhase events, the
// user's tags, the kernel variant or the symmetric-kernel flag; v4 and older never see the API events
// (GroupApi, CollApi, P2pApi, KernelLaunch) and parent a Coll / P2p to its launch's Group event;
// v1 and v2 never see KernelCh or NetPlugin events; v1-v3 get no state updates NCCL added after
// them (NetPlugin, KernelCh and GroupApi states), v6 and older no KernelPhaseStop.
#include <cstring>

#include "profiler/profiler_plugin.h"

namespace accl::prof {
namespace {

constexpr uint64_t kKnownV2 = kGroup | kColl | kP2p | kProxyOp | kProxyStep | kProxyCtrl;
constexpr uint64_t kKnownV4 = kKnownV2 | kKernelCh | kNetPlugin;
constexpr uint64_t kKnownV5 = kKnownV4 | kGroupApi | kCollApi | kP2pApi | kKernelLaunch;
constexpr uint64_t kKnownV7 = kKnownV5 | kKernelPhase;

// The members every old descriptor shares: type, parent (a Coll / P2p's Group for v4 and older),
// rank, and the proxy events' payloads.
template <class Old>
void fillCommon(const Event& e, Old* o) {
  const ProfDescrV7& d = e.d;
  o->type = static_cast<uint8_t>(d.type);
  o->parentObj = d.type == kColl ? d.coll.parentGroup : d.type == kP2p ? d.p2p.parentGroup : d.parentObj;
  o->rank = d.rank;
  if (d.type == kProxyOp) o->proxyOp = d.proxyOp;
  if (d.type == kProxyStep) o->proxyStep = d.proxyStep;
}

// The coll / p2p members v2 - v6 share with v7 (names, counts, buffers, the choice).
template <class Coll>
void copyColl(const ProfDescrV7& d, Coll* o) {
  o->seqNumber = d.coll.seqNumber;
  o->func = d.coll.func;
  o->sendBuff = d.coll.sendBuff;
  o->recvBuff = d.coll.recvBuff;
  o->count = d.coll.count;
  o->root = d.coll.root;
  o->datatype = d.coll.datatype;
  o->nWarps = d.coll.nWarps;
  o->algo = d.coll.algo;
  o->proto = d.coll.proto;
}
template <class P2p>
void copyP2p(const ProfDescrV7& d, P2p* o) {
  o->func = d.p2p.func;
  o->buff = d.p2p.buff;
  o->datatype = d.p2p.datatype;
  o->count = d.p2p.count;
  o->peer = d.p2p.peer;
}

// v7 without what it added: every member v6 has, less the tags, the kernel variant and the
// symmetric flag (accl never emits the copy-engine events, so they are not converted).
ProfDescrV6 toV6(const Event& e) {
  const ProfDescrV7& d = e.d;
  ProfDescrV6 o{};
  o.type = d.type;
  o.parentObj = d.parentObj;
  o.rank = d.rank;
  switch (d.type) {
    case kGroupApi: o.groupApi = d.groupApi; break;
    case kCollApi:
      o.collApi.func = d.collApi.func;
      o.collApi.count = d.collApi.count;
      o.collApi.datatype = d.collApi.datatype;
      o.collApi.root = d.collApi.root;
      o.collApi.stream = d.collApi.stream;
      o.collApi.graphCaptured = d.collApi.graphCaptured;
      break;
    case kP2pApi:
      o.p2pApi.func = d.p2pApi.func;
      o.p2pApi.count = d.p2pApi.count;
      o.p2pApi.datatype = d.p2pApi.datatype;
      o.p2pApi.stream = d.p2pApi.stream;
      o.p2pApi.graphCaptured = d.p2pApi.graphCaptured;
      break;
    case kKernelLaunch: o.kernelLaunch = d.kernelLaunch; break;
    case kColl:
      copyColl(d, &o.coll);
      o.coll.nChannels = d.coll.nChannels;
      o.coll.parentGroup = d.coll.parentGroup;
      break;
    case kP2p:
      copyP2p(d, &o.p2p);
      o.p2p.nChannels = d.p2p.nChannels;
      o.p2p.parentGroup = d.p2p.parentGroup;
      break;
    case kProxyOp: o.proxyOp = d.proxyOp; break;
    case kProxyStep: o.proxyStep = d.proxyStep; break;
    case kKernelCh: o.kernelCh = d.kernelCh; break;
    case kNetPlugin: o.netPlugin = d.netPlugin; break;
    default: break;
  }
  return o;
}

ProfDescrV4 toV4(const Event& e) {
  ProfDescrV4 o{};
  fillCommon(e, &o);
  const ProfDescrV7& d = e.d;
  if (d.type == kColl) {
    copyColl(d, &o.coll);
    o.coll.nChannels = d.coll.nChannels;
  } else if (d.type == kP2p) {
    copyP2p(d, &o.p2p);
    o.p2p.nChannels = d.p2p.nChannels;
  } else if (d.type == kKernelCh) {
    o.kernelCh = d.kernelCh;
  } else if (d.type == kNetPlugin) {
    o.netPlugin = d.netPlugin;
  }
  return o;
}

// v2 and v3 share their coll / p2p members but v2's trafficBytes.
template <class Old>
void fillNamedCollP2p(const Event& e, const PluginCommInfo& c, Old* o) {
  const ProfDescrV7& d = e.d;
  if (d.type == kColl) {
    o->coll.name = c.commName;
    o->coll.commHash = c.commId;
    copyColl(d, &o->coll);
    o->coll.nMaxChannels = d.coll.nChannels;
  } else if (d.type == kP2p) {
    o->p2p.name = c.commName;
    o->p2p.commHash = c.commId;
    copyP2p(d, &o->p2p);
  }
}

ProfDescrV3 toV3(const Event& e, const PluginCommInfo& c) {
  ProfDescrV3 o{};
  fillCommon(e, &o);
  fillNamedCollP2p(e, c, &o);
  if (e.d.type == kKernelCh) o.kernelCh.channelId = e.d.kernelCh.channelId;
  if (e.d.type == kNetPlugin) o.netPlugin = e.d.netPlugin;
  return o;
}

ProfDescrV2 toV2(const Event& e, const PluginCommInfo& c) {
  ProfDescrV2 o{};
  fillCommon(e, &o);
  fillNamedCollP2p(e, c, &o);
  if (e.d.type == kColl) o.coll.trafficBytes = e.trafficBytes;
  return o;
}

ProfDescrV1 toV1(const Event& e, const PluginCommInfo& c) {
  ProfDescrV1 o{};
  fillCommon(e, &o);
  const ProfDescrV7& d = e.d;
  if (d.type == kColl) {
    o.coll.name = c.commName;
    o.coll.commHash = c.commId;
    o.coll.seqNumber = d.coll.seqNumber;
    o.coll.func = e.funcIndex;
    o.coll.sendBuff = d.coll.sendBuff;
    o.coll.recvBuff = d.coll.recvBuff;
    o.coll.count = d.coll.count;
    o.coll.root = d.coll.root;
    o.coll.datatype = e.typeIndex;
    o.coll.op = e.op;
    o.coll.trafficBytes = e.trafficBytes;
    o.coll.nMaxChannels = d.coll.nChannels;
    o.coll.nWarps = d.coll.nWarps;
    o.coll.algo = e.algoIndex;
    o.coll.proto = e.protoIndex;
  } else if (d.type == kP2p) {
    o.p2p.name = c.commName;
    o.p2p.commHash = c.commId;
    o.p2p.func = e.funcIndex;
    o.p2p.buff = d.p2p.buff;
    o.p2p.datatype = e.typeIndex;
    o.p2p.count = d.p2p.count;
    o.p2p.peer = d.p2p.peer;
  }
  return o;
}

// v1-v3 state arguments from v5's: the bytes of a step, the proxy ops appended.
ProfStateArgsV1 toV1Args(EventState state, const ProfStateArgsV5* a) {
  ProfStateArgsV1 o{};
  if (!a) return o;
  if (state >= kProxyCtrlIdle && state <= kProxyCtrlAppendEnd)
    o.proxyCtrl.appendedProxyOps = a->proxyCtrl.appendedProxyOps;
  else
    o.proxyOp.transSize = a->proxyStep.transSize;
  return o;
}

}  // namespace

uint64_t eventsKnownTo(int version) {
  if (version >= 7) return kKnownV7;
  if (version >= 5) return kKnownV5;
  if (version >= 3) return kKnownV4;
  return kKnownV2;
}

uint64_t effectiveMask(int version, int maskFromInit) {
  uint64_t mask = static_cast<uint64_t>(static_cast<uint32_t>(maskFromInit)) & eventsKnownTo(version);
  if (mask & kKernelPhase) mask |= kKernelCh;
  return mask;
}

ncclResult_t ProfilerPlugin::init(void** ctx, const PluginCommInfo& c, int* mask) const {
  switch (version_) {
    case 7: return static_cast<const ProfilerV7*>(table_)->init(ctx, c.commId, mask, c.commName, c.nNodes, c.nRanks,
                                                                c.rank, logFn());
    case 6: return static_cast<const ProfilerV6*>(table_)->init(ctx, c.commId, mask, c.commName, c.nNodes, c.nRanks,
                                                                c.rank, logFn());
    case 5: return static_cast<const ProfilerV5*>(table_)->init(ctx, c.commId, mask, c.commName, c.nNodes, c.nRanks,
                                                                c.rank, logFn());
    case 4: return static_cast<const ProfilerV4*>(table_)->init(ctx, mask, c.commName, c.commId, c.nNodes, c.nRanks,
                                                                c.rank, logFn());
    case 3: return static_cast<const ProfilerV3*>(table_)->init(ctx, mask);
    case 2: return static_cast<const ProfilerV2*>(table_)->init(ctx, mask);
    default: return static_cast<const ProfilerV1*>(table_)->init(ctx, mask);
  }
}

ncclResult_t ProfilerPlugin::start(void* ctx, void** handle, const Event& e, const PluginCommInfo& c) const {
  *handle = nullptr;
  if (!(e.d.type & eventsKnownTo(version_))) return ncclSuccess;
  switch (version_) {
    case 7: {
      ProfDescrV7 d = e.d;
      return static_cast<const ProfilerV7*>(table_)->startEvent(ctx, handle, &d);
    }
    case 6: {
      ProfDescrV6 d = toV6(e);
      return static_cast<const ProfilerV6*>(table_)->startEvent(ctx, handle, &d);
    }
    case 5: {
      const ProfDescrV6 v6 = toV6(e);
      ProfDescrV5 d;
      static_assert(sizeof(d) <= sizeof(v6), "v5 is a prefix of v6");
      std::memcpy(&d, &v6, sizeof(d));
      return static_cast<const ProfilerV5*>(table_)->startEvent(ctx, handle, &d);
    }
    case 4: {
      ProfDescrV4 d = toV4(e);
      return static_cast<const ProfilerV4*>(table_)->startEvent(ctx, handle, &d);
    }
    case 3: {
      ProfDescrV3 d = toV3(e, c);
      return static_cast<const ProfilerV3*>(table_)->startEvent(ctx, handle, &d);
    }
    case 2: {
      ProfDescrV2 d = toV2(e, c);
      return static_cast<const ProfilerV2*>(table_)->startEvent(ctx, handle, &d);
    }
    default: {
      ProfDescrV1 d = toV1(e, c);
      return static_cast<const ProfilerV1*>(table_)->startEvent(ctx, handle, &d);
    }
  }
}

ncclResult_t ProfilerPlugin::stop(void* handle) const {
  // stopEvent has the same place and signature in every version.
  return static_cast<const ProfilerV7*>(table_)->stopEvent(handle);
}

ncclResult_t ProfilerPlugin::record(void* handle, EventState state, const ProfStateArgsV5* args) const {
  if (version_ >= 4) {
    if (state == kKernelPhaseStop && version_ < 7) return ncclSuccess;  // (no KernelPhase event reaches them)
    ProfStateArgsV5 a = args ? *args : ProfStateArgsV5{};
    // Same place and signature in v4 - v7.
    return static_cast<const ProfilerV7*>(table_)->recordEventState(handle, state, &a);
  }
  if (state >= kNetPluginUpdate) return ncclSuccess;  // states v1-v3 never had
  ProfStateArgsV1 a = toV1Args(state, args);
  return static_cast<const ProfilerV1*>(table_)->recordEventState(handle, state, &a);
}

ncclResult_t ProfilerPlugin::finalize(void* ctx) const {
  return static_cast<const ProfilerV7*>(table_)->finalize(ctx);
}

}  // namespace accl::prof
