// The recording profiler plugin (see recording_profiler.h): exports ncclProfiler_v<FIXTURE_VERSION>
// only, and records every call it gets.
#include "recording_profiler.h"

#include <time.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "profiler/profiler_abi.h"

#ifndef FIXTURE_VERSION
#error "build with -DFIXTURE_VERSION=1..7"
#endif

using namespace accl::prof;
using accl::test::RecordedContext;
using accl::test::RecordedEvent;
using accl::test::RecordingLog;

namespace {

RecordingLog gLog;
uint64_t gSeq = 0;

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// v1 names by index, as later versions send them.
const char* funcName(int f) {
  static const char* names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
                                "Send",      "Recv"};
  return f >= 0 && f < 8 ? names[f] : "?";
}
const char* typeName(int t) {
  static const char* names[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",    "ncclUint32",
                                "ncclInt64",   "ncclUint64",  "ncclFloat16",  "ncclFloat32",
                                "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return t >= 0 && t < 12 ? names[t] : "?";
}
const char* algoName(int a) {
  static const char* names[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT", "OneShot"};
  return a >= 0 && a < 8 ? names[a] : "?";
}
const char* protoName(int p) {
  static const char* names[] = {"LL", "LL128", "Simple"};
  return p >= 0 && p < 3 ? names[p] : "?";
}
std::string str(const char* s) { return s ? s : "(null)"; }

// "start:3" -> the 3rd start fails.
bool failsNow(const char* what, int n) {
  const char* f = std::getenv("ACCL_TEST_PROFILER_FAIL");
  if (!f) return false;
  size_t len = std::strlen(what);
  return std::strncmp(f, what, len) == 0 && f[len] == ':' && std::atoi(f + len + 1) == n;
}

ncclResult_t initCommon(void** context, int* mask, uint64_t commId, const char* name, int nNodes, int nranks,
                        int rank) {
  const char* f = std::getenv("ACCL_TEST_PROFILER_FAIL");
  if (f && std::strcmp(f, "init") == 0) return ncclInternalError;
  if (f && std::strcmp(f, "nullcontext") == 0) {
    // As NVIDIA's Inspector does when it cannot start: success, no context, and a finalize that
    // would dereference it.
    std::lock_guard<std::mutex> lock(gLog.mutex);
    ++gLog.declinedInits;
    *context = nullptr;
    return ncclSuccess;
  }
  auto* c = new RecordedContext();
  c->version = FIXTURE_VERSION;
  c->commId = commId;
  c->commName = name ? name : "";
  c->nNodes = nNodes;
  c->nRanks = nranks;
  c->rank = rank;
  c->maskGiven = *mask;
  if (const char* m = std::getenv("ACCL_TEST_PROFILER_MASK"))
    *mask = static_cast<int>(std::strtol(m, nullptr, 0));
  else if (*mask == 0)
    *mask = kAllEventsV5;
  c->maskReturned = *mask;
  std::lock_guard<std::mutex> lock(gLog.mutex);
  gLog.contexts.push_back(c);
  *context = c;
  return ncclSuccess;
}

// Fields every version shares.
template <class D>
RecordedEvent* common(RecordedContext* c, const D* d) {
  auto* e = new RecordedEvent();
  e->type = d->type;
  e->parent = d->parentObj;
  e->rank = d->rank;
  if (c->rank < 0) c->rank = d->rank;
  if (d->type == kProxyOp) {
    e->peer = d->proxyOp.peer;
    e->channelId = d->proxyOp.channelId;
    e->count = static_cast<size_t>(d->proxyOp.nSteps);
    e->trafficBytes = static_cast<size_t>(d->proxyOp.chunkSize);
    e->op = d->proxyOp.isSend;
  } else if (d->type == kProxyStep) {
    e->seqNumber = static_cast<uint64_t>(d->proxyStep.step);
  }
  if constexpr (requires { d->netPlugin; }) {
    if (d->type == kNetPlugin) {
      e->pluginId = d->netPlugin.id;
      e->pluginData = d->netPlugin.data;
    }
  }
  return e;
}

// Collective / p2p fields of v2 and later (strings).
template <class Coll>
void collFields(RecordedEvent* e, const Coll& c) {
  e->seqNumber = c.seqNumber;
  e->func = str(c.func);
  e->sendBuff = c.sendBuff;
  e->recvBuff = c.recvBuff;
  e->count = c.count;
  e->root = c.root;
  e->datatype = str(c.datatype);
  e->nWarps = c.nWarps;
  e->algo = str(c.algo);
  e->proto = str(c.proto);
}
template <class P2p>
void p2pFields(RecordedEvent* e, const P2p& p) {
  e->func = str(p.func);
  e->sendBuff = p.buff;
  e->datatype = str(p.datatype);
  e->count = p.count;
  e->peer = p.peer;
}

#if FIXTURE_VERSION >= 5
using Descr = std::conditional_t<FIXTURE_VERSION == 7, ProfDescrV7,
                                 std::conditional_t<FIXTURE_VERSION == 6, ProfDescrV6, ProfDescrV5>>;

// What v7 added: the user's tags, the kernel variant and symmetric flag, KernelPhase events.
void v7Fields(RecordedEvent* e, const Descr* d) {
#if FIXTURE_VERSION >= 7
  switch (d->type) {
    case kCollApi: e->userTag = d->collApi.userTag; break;
    case kP2pApi: e->userTag = d->p2pApi.userTag; break;
    case kColl:
      e->userTag = d->coll.userTag;
      e->kernelVariant = d->coll.kernelVariant ? d->coll.kernelVariant : "";
      e->kernelVariantNull = d->coll.kernelVariant == nullptr;
      e->isSymColl = d->coll.isSymColl;
      break;
    case kP2p: e->userTag = d->p2p.userTag; break;
    case kKernelPhase:
      e->channelId = d->kernelPhase.channelId;
      e->pTimer = d->kernelPhase.pTimer;
      e->func = str(d->kernelPhase.phaseName);
      break;
    default: break;
  }
#else
  (void)e, (void)d;
#endif
}

RecordedEvent* convert(RecordedContext* c, const Descr* d) {
  RecordedEvent* e = common(c, d);
  switch (d->type) {
    case kGroupApi: e->groupDepth = d->groupApi.groupDepth; break;
    case kCollApi:
      e->func = str(d->collApi.func);
      e->count = d->collApi.count;
      e->datatype = str(d->collApi.datatype);
      e->root = d->collApi.root;
      e->graphCaptured = d->collApi.graphCaptured;
      break;
    case kP2pApi:
      e->func = str(d->p2pApi.func);
      e->count = d->p2pApi.count;
      e->datatype = str(d->p2pApi.datatype);
      e->graphCaptured = d->p2pApi.graphCaptured;
      break;
    case kColl:
      collFields(e, d->coll);
      e->nChannels = d->coll.nChannels;
      e->parentGroup = d->coll.parentGroup;
      break;
    case kP2p:
      p2pFields(e, d->p2p);
      e->nChannels = d->p2p.nChannels;
      e->parentGroup = d->p2p.parentGroup;
      break;
    case kKernelCh:
      e->channelId = d->kernelCh.channelId;
      e->pTimer = d->kernelCh.pTimer;
      break;
    default: break;
  }
  v7Fields(e, d);
  return e;
}
#elif FIXTURE_VERSION == 4
using Descr = ProfDescrV4;
RecordedEvent* convert(RecordedContext* c, const Descr* d) {
  RecordedEvent* e = common(c, d);
  if (d->type == kColl) {
    collFields(e, d->coll);
    e->nChannels = d->coll.nChannels;
  } else if (d->type == kP2p) {
    p2pFields(e, d->p2p);
    e->nChannels = d->p2p.nChannels;
  } else if (d->type == kKernelCh) {
    e->channelId = d->kernelCh.channelId;
    e->pTimer = d->kernelCh.pTimer;
  }
  return e;
}
#elif FIXTURE_VERSION >= 2
using Descr = std::conditional_t<FIXTURE_VERSION == 3, ProfDescrV3, ProfDescrV2>;
RecordedEvent* convert(RecordedContext* c, const Descr* d) {
  RecordedEvent* e = common(c, d);
  if (d->type == kColl) {
    collFields(e, d->coll);
    e->nChannels = d->coll.nMaxChannels;
    e->commName = str(d->coll.name);
    e->commHash = d->coll.commHash;
#if FIXTURE_VERSION == 2
    e->trafficBytes = d->coll.trafficBytes;
#endif
  } else if (d->type == kP2p) {
    p2pFields(e, d->p2p);
    e->commName = str(d->p2p.name);
    e->commHash = d->p2p.commHash;
  }
#if FIXTURE_VERSION == 3
  if (d->type == kKernelCh) e->channelId = d->kernelCh.channelId;
#endif
  return e;
}
#else
using Descr = ProfDescrV1;
RecordedEvent* convert(RecordedContext* c, const Descr* d) {
  RecordedEvent* e = common(c, d);
  if (d->type == kColl) {
    e->commName = str(d->coll.name);
    e->commHash = d->coll.commHash;
    e->seqNumber = d->coll.seqNumber;
    e->func = funcName(d->coll.func);
    e->sendBuff = d->coll.sendBuff;
    e->recvBuff = d->coll.recvBuff;
    e->count = d->coll.count;
    e->root = d->coll.root;
    e->datatype = typeName(d->coll.datatype);
    e->op = static_cast<int>(d->coll.op);
    e->trafficBytes = d->coll.trafficBytes;
    e->nChannels = d->coll.nMaxChannels;
    e->nWarps = d->coll.nWarps;
    e->algo = algoName(d->coll.algo);
    e->proto = protoName(d->coll.proto);
  } else if (d->type == kP2p) {
    e->commName = str(d->p2p.name);
    e->commHash = d->p2p.commHash;
    e->func = funcName(d->p2p.func);
    e->sendBuff = d->p2p.buff;
    e->datatype = typeName(d->p2p.datatype);
    e->count = d->p2p.count;
    e->peer = d->p2p.peer;
  }
  return e;
}
#endif

ncclResult_t startEvent(void* context, void** handle, Descr* d) {
  auto* c = static_cast<RecordedContext*>(context);
  std::lock_guard<std::mutex> lock(gLog.mutex);
  if (failsNow("start", ++c->starts)) return ncclInternalError;
  RecordedEvent* e = convert(c, d);
  e->seq = ++gSeq;
  e->owner = c;
  e->startNs = nowNs();
  c->events.push_back(e);
  *handle = e;
  return ncclSuccess;
}

RecordedContext* ownerOf(const RecordedEvent* e) { return static_cast<RecordedContext*>(e->owner); }

ncclResult_t stopEvent(void* handle) {
  auto* e = static_cast<RecordedEvent*>(handle);
  std::lock_guard<std::mutex> lock(gLog.mutex);
  RecordedContext* c = ownerOf(e);
  if (c && failsNow("stop", ++c->stops)) return ncclInternalError;
  e->stopNs = nowNs();
  e->stopped = true;
  return ncclSuccess;
}

template <class Args>
ncclResult_t recordEventState(void* handle, int state, Args* args) {
  auto* e = static_cast<RecordedEvent*>(handle);
  std::lock_guard<std::mutex> lock(gLog.mutex);
  RecordedContext* c = ownerOf(e);
  if (c && failsNow("record", ++c->records)) return ncclInternalError;
  uint64_t value = 0;
  if (args) std::memcpy(&value, args, sizeof(value));
  e->states.push_back(state);
  e->stateValues.push_back(value);
  return ncclSuccess;
}

ncclResult_t finalize(void* context) {
  std::lock_guard<std::mutex> lock(gLog.mutex);
  static_cast<RecordedContext*>(context)->finalized = true;
  return ncclSuccess;
}

#if FIXTURE_VERSION >= 5
ncclResult_t init(void** context, uint64_t commId, int* mask, const char* name, int nNodes, int nranks, int rank,
                  LogFn) {
  return initCommon(context, mask, commId, name, nNodes, nranks, rank);
}
#elif FIXTURE_VERSION == 4
ncclResult_t init(void** context, int* mask, const char* name, uint64_t commHash, int nNodes, int nranks, int rank,
                  LogFn) {
  return initCommon(context, mask, commHash, name, nNodes, nranks, rank);
}
#else
ncclResult_t init(void** context, int* mask) { return initCommon(context, mask, 0, nullptr, 0, 0, -1); }
#endif

#if FIXTURE_VERSION == 7
// The v6 table the v7 fixture exports too (below): refuses everything.
ncclResult_t refusingInit(void**, uint64_t, int*, const char*, int, int, int, LogFn) { return ncclInternalError; }
ncclResult_t unusedStart(void*, void**, ProfDescrV6*) { return ncclInternalError; }
ncclResult_t unusedStop(void*) { return ncclInternalError; }
ncclResult_t unusedRecord(void*, int, ProfStateArgsV5*) { return ncclInternalError; }
ncclResult_t unusedFinalize(void*) { return ncclInternalError; }
#endif

}  // namespace

extern "C" {

__attribute__((visibility("default"))) accl::test::RecordingLog* acclTestProfilerLog() { return &gLog; }

__attribute__((visibility("default"))) void acclTestProfilerReset() {
  std::lock_guard<std::mutex> lock(gLog.mutex);
  gLog.clear();
}

#define ACCL_CAT2(a, b) a##b
#define ACCL_CAT(a, b) ACCL_CAT2(a, b)
#define ACCL_TABLE_TYPE ACCL_CAT(ProfilerV, FIXTURE_VERSION)
#define ACCL_SYMBOL ACCL_CAT(ncclProfiler_v, FIXTURE_VERSION)

#if FIXTURE_VERSION == 7
// Plugins export several versions; NCCL takes the newest. This v6 table fails its init, so a
// loader that picked it would leave the communicator without a profiler.
__attribute__((visibility("default"))) ProfilerV6 ncclProfiler_v6 = {"acclTestRefusingV6", refusingInit, unusedStart,
                                                                    unusedStop, unusedRecord, unusedFinalize};
#endif

__attribute__((visibility("default"))) ACCL_TABLE_TYPE ACCL_SYMBOL = {
    "acclTestRecorder", init, startEvent, stopEvent,
    recordEventState<std::conditional_t<(FIXTURE_VERSION >= 4), ProfStateArgsV5, ProfStateArgsV1>>, finalize};
}
