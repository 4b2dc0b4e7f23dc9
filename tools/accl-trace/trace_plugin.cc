// accl-trace: an NCCL profiler plugin (ncclProfiler_v7, which accl and NVIDIA's NCCL 2.31+ take,
// and ncclProfiler_v6 for NCCL 2.29-2.30, whose events lack the user's tags) that writes one communicator rank's events as a Chrome / Perfetto trace (the JSON "trace
// event" format: open it in ui.perfetto.dev or chrome://tracing).
//
//   NCCL_PROFILER_PLUGIN=accl-trace   (libnccl-profiler-accl-trace.so, installed beside libnccl)
//   ACCL_TRACE_FILE      where to write; %r = rank, %p = pid, %c = communicator id (hex), %n = the
//                        communicator's ordinal in this process (default accl-trace-%p-%n-r%r.json)
//   ACCL_TRACE_MAX_EVENTS  events kept per communicator (default 100000); later ones are counted
//                        and dropped, so memory stays bounded
//   NCCL_PROFILE_EVENT_MASK  which events (default: every event but ProxyCtrl)
//
// Each event becomes one complete event ("ph":"X") with its start and duration in microseconds
// of CLOCK_MONOTONIC (the clock accl's KernelCh timestamps use, so ranks of one host line up),
// on a track by kind (events of one track nest): GroupApi, API calls, kernel launches,
// operations (Group / Coll / P2p), one track per channel; the network proxy's ProxyOp and
// ProxyStep events overlap, so they are async begin / end pairs ("b" / "e", id = the event's). Its fields, its id and its parent's id are in "args". The file is written when
// the communicator is destroyed (finalize).
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "profiler/profiler_abi.h"

using namespace accl::prof;

namespace {

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// One recorded event; the plugin's handle is its address (the pool never reallocates).
struct TraceEvent {
  uint32_t id = 0;
  uint32_t parentId = 0;  // 0: none (or not one of ours)
  uint64_t type = 0;
  int64_t startNs = 0, stopNs = 0;
  ProfDescrV7 d{};  // strings point at the library's constants, which outlive the trace
  int lastState = -1;
  uint64_t stateValue = 0;  // the last state's argument (step bytes, KernelCh end time)
  int nStates = 0;
};

struct Trace {
  std::mutex mutex;
  std::vector<TraceEvent> pool;  // capacity fixed at init: handles stay valid
  size_t dropped = 0;
  int rank = 0, nRanks = 1, nNodes = 1, ordinal = 0;
  uint64_t commId = 0;
  std::string commName;
};

std::mutex gOrdinalMutex;
int gOrdinal = 0;

const char* typeName(uint64_t t) {
  switch (t) {
    case kGroup: return "Group";
    case kColl: return "Coll";
    case kP2p: return "P2p";
    case kProxyOp: return "ProxyOp";
    case kProxyStep: return "ProxyStep";
    case kProxyCtrl: return "ProxyCtrl";
    case kKernelCh: return "KernelCh";
    case kNetPlugin: return "NetPlugin";
    case kGroupApi: return "GroupApi";
    case kCollApi: return "CollApi";
    case kP2pApi: return "P2pApi";
    case kKernelLaunch: return "KernelLaunch";
    default: return "Event";
  }
}

// The track (Chrome "tid") of an event.
int trackOf(const TraceEvent& e) {
  switch (e.type) {
    case kGroupApi: return 1;
    case kCollApi:
    case kP2pApi: return 4;
    case kKernelLaunch: return 5;
    case kGroup:
    case kColl:
    case kP2p: return 2;
    case kKernelCh: return 100 + e.d.kernelCh.channelId;
    case kProxyOp:
    case kProxyStep:
    case kNetPlugin: return 6;
    default: return 3;
  }
}

// The network proxy's events overlap (several steps in flight, an operation's last steps after
// the next one began): async begin / end pairs, which may, instead of complete events, which nest.
bool isAsync(const TraceEvent& e) { return e.type == kProxyOp || e.type == kProxyStep || e.type == kNetPlugin; }

// A JSON string (the names here are plain ASCII, but a communicator name may not be).
std::string quoted(const char* s) {
  std::string out = "\"";
  for (const char* p = s ? s : ""; *p; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string eventName(const TraceEvent& e) {
  switch (e.type) {
    case kCollApi: return std::string(e.d.collApi.func ? e.d.collApi.func : "Coll") + " (api)";
    case kP2pApi: return std::string(e.d.p2pApi.func ? e.d.p2pApi.func : "P2p") + " (api)";
    case kColl: return e.d.coll.func ? e.d.coll.func : "Coll";
    case kP2p: return std::string(e.d.p2p.func ? e.d.p2p.func : "P2p") + " " + std::to_string(e.d.p2p.peer);
    case kKernelCh: return "ch " + std::to_string(e.d.kernelCh.channelId);
    case kProxyOp: return std::string(e.d.proxyOp.isSend ? "send" : "recv") + " " + std::to_string(e.d.proxyOp.peer);
    case kProxyStep: return "step " + std::to_string(e.d.proxyStep.step);
    default: return typeName(e.type);
  }
}

// The "args" members of an event's descriptor.
std::string argsOf(const TraceEvent& e) {
  char buf[512];
  const ProfDescrV7& d = e.d;
  switch (e.type) {
    case kGroupApi: std::snprintf(buf, sizeof(buf), ",\"groupDepth\":%d", d.groupApi.groupDepth); break;
    case kCollApi:
      std::snprintf(buf, sizeof(buf), ",\"count\":%zu,\"datatype\":%s,\"root\":%d,\"userTag\":%" PRIu64,
                    d.collApi.count, quoted(d.collApi.datatype).c_str(), d.collApi.root, d.collApi.userTag);
      break;
    case kP2pApi:
      std::snprintf(buf, sizeof(buf), ",\"count\":%zu,\"datatype\":%s,\"userTag\":%" PRIu64, d.p2pApi.count,
                    quoted(d.p2pApi.datatype).c_str(), d.p2pApi.userTag);
      break;
    case kColl:
      std::snprintf(buf, sizeof(buf),
                    ",\"seqNumber\":%" PRIu64 ",\"count\":%zu,\"datatype\":%s,\"root\":%d,\"algo\":%s,\"proto\":%s,"
                    "\"nChannels\":%d,\"nWarps\":%d,\"userTag\":%" PRIu64,
                    d.coll.seqNumber, d.coll.count, quoted(d.coll.datatype).c_str(), d.coll.root,
                    quoted(d.coll.algo).c_str(), quoted(d.coll.proto).c_str(), d.coll.nChannels, d.coll.nWarps,
                    d.coll.userTag);
      break;
    case kP2p:
      std::snprintf(buf, sizeof(buf), ",\"peer\":%d,\"count\":%zu,\"datatype\":%s,\"nChannels\":%d,\"userTag\":%" PRIu64,
                    d.p2p.peer, d.p2p.count, quoted(d.p2p.datatype).c_str(), d.p2p.nChannels, d.p2p.userTag);
      break;
    case kKernelCh:
      std::snprintf(buf, sizeof(buf), ",\"channel\":%d,\"startTimer\":%" PRIu64 ",\"stopTimer\":%" PRIu64,
                    d.kernelCh.channelId, d.kernelCh.pTimer, e.lastState == kKernelChStop ? e.stateValue : 0);
      break;
    case kProxyOp:
      std::snprintf(buf, sizeof(buf), ",\"channel\":%d,\"peer\":%d,\"nSteps\":%d,\"chunkSize\":%d,\"isSend\":%d",
                    d.proxyOp.channelId, d.proxyOp.peer, d.proxyOp.nSteps, d.proxyOp.chunkSize, d.proxyOp.isSend);
      break;
    case kProxyStep:
      std::snprintf(buf, sizeof(buf), ",\"step\":%d,\"lastState\":%d,\"bytes\":%" PRIu64, d.proxyStep.step,
                    e.lastState, e.stateValue);
      break;
    default: buf[0] = '\0';
  }
  return buf;
}

std::string outputPath(const Trace& t) {
  const char* pattern = std::getenv("ACCL_TRACE_FILE");
  std::string p = pattern && *pattern ? pattern : "accl-trace-%p-%n-r%r.json";
  std::string out;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '%' || i + 1 == p.size()) {
      out += p[i];
      continue;
    }
    char buf[32];
    switch (p[++i]) {
      case 'r': std::snprintf(buf, sizeof(buf), "%d", t.rank); break;
      case 'p': std::snprintf(buf, sizeof(buf), "%d", static_cast<int>(getpid())); break;
      case 'c': std::snprintf(buf, sizeof(buf), "%" PRIx64, t.commId); break;
      case 'n': std::snprintf(buf, sizeof(buf), "%d", t.ordinal); break;
      default: std::snprintf(buf, sizeof(buf), "%%%c", p[i]);
    }
    out += buf;
  }
  return out;
}

void writeTrace(const Trace& t) {
  const std::string path = outputPath(t);
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "accl-trace: cannot write %s\n", path.c_str());
    return;
  }
  const int pid = t.rank;
  std::fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"commId\":\"%" PRIx64
                  "\",\"commName\":%s,\"rank\":%d,\"nRanks\":%d,\"nNodes\":%d,\"dropped\":%zu},\n\"traceEvents\":[\n",
               t.commId, quoted(t.commName.c_str()).c_str(), t.rank, t.nRanks, t.nNodes, t.dropped);
  std::fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"rank %d\"}}", pid,
               t.rank);
  const struct {
    int tid;
    const char* name;
  } fixedTracks[] = {{1, "groups"},     {4, "api calls"},     {5, "kernel launches"},
                     {2, "operations"}, {3, "proxy control"}, {6, "network proxy"}};
  for (const auto& tr : fixedTracks)
    std::fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}", pid,
                 tr.tid, tr.name);
  bool channelNamed[256] = {};
  for (const TraceEvent& e : t.pool) {
    if (e.type != kKernelCh || channelNamed[e.d.kernelCh.channelId]) continue;
    channelNamed[e.d.kernelCh.channelId] = true;
    std::fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"channel %d\"}}",
                 pid, trackOf(e), e.d.kernelCh.channelId);
  }
  for (const TraceEvent& e : t.pool) {
    const int64_t stop = e.stopNs ? e.stopNs : e.startNs;  // never stopped: an instant
    if (isAsync(e)) {
      const std::string name = quoted(eventName(e).c_str());
      std::fprintf(f,
                   ",\n{\"name\":%s,\"cat\":\"%s\",\"ph\":\"b\",\"id\":%u,\"ts\":%.3f,\"pid\":%d,\"tid\":%d,"
                   "\"args\":{\"id\":%u,\"parent\":%u,\"stopped\":%s%s}}",
                   name.c_str(), typeName(e.type), e.id, e.startNs / 1e3, pid, trackOf(e), e.id, e.parentId,
                   e.stopNs ? "true" : "false", argsOf(e).c_str());
      std::fprintf(f, ",\n{\"name\":%s,\"cat\":\"%s\",\"ph\":\"e\",\"id\":%u,\"ts\":%.3f,\"pid\":%d,\"tid\":%d}",
                   name.c_str(), typeName(e.type), e.id, stop / 1e3, pid, trackOf(e));
      continue;
    }
    std::fprintf(f,
                 ",\n{\"name\":%s,\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,"
                 "\"args\":{\"id\":%u,\"parent\":%u,\"stopped\":%s%s}}",
                 quoted(eventName(e).c_str()).c_str(), typeName(e.type), e.startNs / 1e3, (stop - e.startNs) / 1e3, pid,
                 trackOf(e), e.id, e.parentId, e.stopNs ? "true" : "false", argsOf(e).c_str());
  }
  std::fprintf(f, "\n]}\n");
  std::fclose(f);
}

ncclResult_t traceInit(void** context, uint64_t commId, int* mask, const char* commName, int nNodes, int nRanks,
                       int rank, LogFn) {
  auto* t = new Trace();
  size_t cap = 100000;
  if (const char* m = std::getenv("ACCL_TRACE_MAX_EVENTS")) cap = std::strtoull(m, nullptr, 0);
  t->pool.reserve(cap);
  t->commId = commId;
  t->commName = commName ? commName : "";
  t->nNodes = nNodes;
  t->nRanks = nRanks;
  t->rank = rank;
  {
    std::lock_guard<std::mutex> lock(gOrdinalMutex);
    t->ordinal = gOrdinal++;
  }
  // accl fills *mask from NCCL_PROFILE_EVENT_MASK; NVIDIA's NCCL leaves that to plugins.
  if (const char* m = std::getenv("NCCL_PROFILE_EVENT_MASK"); m && *m) *mask = static_cast<int>(std::strtol(m, nullptr, 0));
  if (*mask == 0) *mask = kAllEventsV5 & ~static_cast<int>(kProxyCtrl);
  *context = t;
  return ncclSuccess;
}

// A v6 descriptor in the v7 shape the trace keeps: the members v7 widened get no tag (0: untagged,
// as v7 says of a call without one), no kernel variant and no symmetric flag.
ProfDescrV7 widen(const ProfDescrV6& s) {
  ProfDescrV7 d{};
  d.type = s.type;
  d.parentObj = s.parentObj;
  d.rank = s.rank;
  switch (s.type) {
    case kGroupApi: d.groupApi = s.groupApi; break;
    case kCollApi:
      d.collApi = {s.collApi.func, s.collApi.count, s.collApi.datatype, s.collApi.root, s.collApi.stream,
                   s.collApi.graphCaptured, 0};
      break;
    case kP2pApi:
      d.p2pApi = {s.p2pApi.func, s.p2pApi.count, s.p2pApi.datatype, s.p2pApi.stream, s.p2pApi.graphCaptured, 0};
      break;
    case kKernelLaunch: d.kernelLaunch = s.kernelLaunch; break;
    case kColl:
      d.coll = {s.coll.seqNumber, s.coll.func,  s.coll.sendBuff, s.coll.recvBuff, s.coll.count,
                s.coll.root,      s.coll.datatype, s.coll.nChannels, s.coll.nWarps, s.coll.algo,
                s.coll.proto,     s.coll.parentGroup, nullptr, false, 0};
      break;
    case kP2p:
      d.p2p = {s.p2p.func, s.p2p.buff, s.p2p.datatype, s.p2p.count, s.p2p.peer, s.p2p.nChannels, s.p2p.parentGroup, 0};
      break;
    case kProxyOp: d.proxyOp = s.proxyOp; break;
    case kProxyStep: d.proxyStep = s.proxyStep; break;
    case kKernelCh: d.kernelCh = s.kernelCh; break;
    case kNetPlugin: d.netPlugin = s.netPlugin; break;
    default: break;  // copy-engine events: type and parent only
  }
  return d;
}

ncclResult_t traceStart(void* context, void** handle, ProfDescrV7* d) {
  auto* t = static_cast<Trace*>(context);
  std::lock_guard<std::mutex> lock(t->mutex);
  *handle = nullptr;
  if (t->pool.size() == t->pool.capacity()) {
    ++t->dropped;
    return ncclSuccess;
  }
  TraceEvent& e = t->pool.emplace_back();
  e.id = static_cast<uint32_t>(t->pool.size());
  e.type = d->type;
  e.d = *d;
  e.startNs = nowNs();
  // The parent is one of this trace's events when it points into the pool.
  const auto* first = t->pool.data();
  const auto* p = static_cast<const TraceEvent*>(d->parentObj);
  if (p >= first && p < first + t->pool.size()) e.parentId = p->id;
  *handle = &e;
  return ncclSuccess;
}

ncclResult_t traceStartV6(void* context, void** handle, ProfDescrV6* d) {
  ProfDescrV7 wide = widen(*d);
  return traceStart(context, handle, &wide);
}

ncclResult_t traceStop(void* handle) {
  // Written once, by the thread that owns the event, before finalize reads it.
  static_cast<TraceEvent*>(handle)->stopNs = nowNs();
  return ncclSuccess;
}

ncclResult_t traceRecord(void* handle, int state, ProfStateArgsV5* args) {
  auto* e = static_cast<TraceEvent*>(handle);
  e->lastState = state;
  ++e->nStates;
  if (args) std::memcpy(&e->stateValue, args, sizeof(e->stateValue));
  return ncclSuccess;
}

ncclResult_t traceFinalize(void* context) {
  auto* t = static_cast<Trace*>(context);
  {
    std::lock_guard<std::mutex> lock(t->mutex);
    writeTrace(*t);
  }
  delete t;
  return ncclSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) ProfilerV7 ncclProfiler_v7 = {"accl-trace", traceInit,   traceStart,
                                                                    traceStop,    traceRecord, traceFinalize};
__attribute__((visibility("default"))) ProfilerV6 ncclProfiler_v6 = {"accl-trace", traceInit,   traceStartV6,
                                                                    traceStop,    traceRecord, traceFinalize};
}
