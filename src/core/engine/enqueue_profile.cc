// The enqueue path's profiler events: descriptors filled from calls, choices and launches
// (see enqueue_profile.h).
#include "core/engine/enqueue_profile.h"

#include "tuner/algo_proto_filter.h"

namespace accl {
namespace {

using prof::Event;

// ncclFunc_t's Send and Recv (v1 plugins get the index).
constexpr uint8_t kNcclFuncSend = 6;
constexpr uint8_t kNcclFuncRecv = 7;

const char* p2pFuncName(const P2pCall& c) { return c.isSend ? "Send" : "Recv"; }

}  // namespace

const char* profTypeName(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: return "ncclInt8";
    case ncclUint8: return "ncclUint8";
    case ncclInt32: return "ncclInt32";
    case ncclUint32: return "ncclUint32";
    case ncclInt64: return "ncclInt64";
    case ncclUint64: return "ncclUint64";
    case ncclFloat16: return "ncclFloat16";
    case ncclFloat32: return "ncclFloat32";
    case ncclFloat64: return "ncclFloat64";
    case ncclBfloat16: return "ncclBfloat16";
    case ncclFloat8e4m3: return "ncclFloat8e4m3";
    case ncclFloat8e5m2: return "ncclFloat8e5m2";
    default: return "unknown";
  }
}

void* profStartGroupApi(prof::CommProfiler& p, int groupDepth) {
  if (!p.wants(prof::kTreeGroupApi)) return nullptr;
  Event e;
  e.d.type = prof::kGroupApi;
  e.d.groupApi.graphCaptured = false;
  e.d.groupApi.groupDepth = groupDepth;
  void* h = p.start(e);
  p.record(h, prof::kGroupStartApiStop);
  return h;
}

void* profStartCollApi(prof::CommProfiler& p, void* groupApi, const CollCall& c, bool captured, uint64_t userTag) {
  if (!p.wants(prof::kTreeCollApi)) return nullptr;
  Event e;
  e.d.type = prof::kCollApi;
  e.d.parentObj = groupApi;
  e.d.collApi.func = funcName(c.func);
  e.d.collApi.count = c.count;
  e.d.collApi.datatype = profTypeName(c.type);
  e.d.collApi.root = c.root;
  e.d.collApi.stream = c.stream;
  e.d.collApi.graphCaptured = captured;
  e.d.collApi.userTag = userTag;
  return p.start(e);
}

void* profStartP2pApi(prof::CommProfiler& p, void* groupApi, const P2pCall& c, bool captured) {
  if (!p.wants(prof::kTreeP2pApi)) return nullptr;
  Event e;
  e.d.type = prof::kP2pApi;
  e.d.parentObj = groupApi;
  e.d.p2pApi.func = p2pFuncName(c);
  e.d.p2pApi.count = c.count;
  e.d.p2pApi.datatype = profTypeName(c.type);
  e.d.p2pApi.stream = c.stream;
  e.d.p2pApi.graphCaptured = captured;
  e.d.p2pApi.userTag = c.profilerTag;
  return p.start(e);
}

void* profStartGroup(prof::CommProfiler& p) {
  if (!p.wants(prof::kTreeGroup)) return nullptr;
  Event e;
  e.d.type = prof::kGroup;
  return p.start(e);
}

void* profStartColl(const LaunchEvents& l, void* api, const CollCall& c, uint32_t op, const TunerChoice& choice,
                    int nChannels, uint64_t seq, size_t trafficBytes, uint64_t userTag) {
  if (!l.prof || !l.prof->wants(prof::kTreeColl)) return nullptr;
  Event e;
  e.d.type = prof::kColl;
  e.d.parentObj = api;
  e.d.coll.seqNumber = seq;
  e.d.coll.func = funcName(c.func);
  e.d.coll.sendBuff = c.sendbuff;
  e.d.coll.recvBuff = c.recvbuff;
  e.d.coll.count = c.count;
  e.d.coll.root = c.root;
  e.d.coll.datatype = profTypeName(c.type);
  e.d.coll.nChannels = static_cast<uint8_t>(nChannels);
  e.d.coll.nWarps = static_cast<uint8_t>(choice.nThreads / 32);
  e.d.coll.algo = algoName(choice.algo);
  e.d.coll.proto = protoName(choice.proto);
  e.d.coll.parentGroup = l.group;
  // NCCL names only its symmetric kernels here; accl runs none (algo / proto say what ran).
  e.d.coll.kernelVariant = nullptr;
  e.d.coll.isSymColl = false;
  e.d.coll.userTag = userTag;
  e.funcIndex = static_cast<uint8_t>(c.func);
  e.typeIndex = static_cast<uint8_t>(c.type);
  e.algoIndex = static_cast<uint8_t>(choice.algo);
  e.protoIndex = static_cast<uint8_t>(choice.proto);
  e.op = op;
  e.trafficBytes = trafficBytes;
  return l.prof->start(e);
}

void* profStartP2p(const LaunchEvents& l, void* api, const P2pCall& c, int nChannels) {
  if (!l.prof || !l.prof->wants(prof::kTreeP2p)) return nullptr;
  Event e;
  e.d.type = prof::kP2p;
  e.d.parentObj = api;
  e.d.p2p.func = p2pFuncName(c);
  e.d.p2p.buff = c.isSend ? const_cast<void*>(c.sendbuff) : c.recvbuff;
  e.d.p2p.datatype = profTypeName(c.type);
  e.d.p2p.count = c.count;
  e.d.p2p.peer = c.peer;
  e.d.p2p.nChannels = static_cast<uint8_t>(nChannels);
  e.d.p2p.parentGroup = l.group;
  e.d.p2p.userTag = c.profilerTag;
  e.funcIndex = c.isSend ? kNcclFuncSend : kNcclFuncRecv;
  e.typeIndex = static_cast<uint8_t>(c.type);
  return l.prof->start(e);
}

void* profStartKernelLaunch(prof::CommProfiler& p, void* groupApi, cudaStream_t stream) {
  if (!p.wants(prof::kKernelLaunch)) return nullptr;
  Event e;
  e.d.type = prof::kKernelLaunch;
  e.d.parentObj = groupApi;
  e.d.kernelLaunch.stream = stream;
  return p.start(e);
}

}  // namespace accl
