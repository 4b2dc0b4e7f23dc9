// Stream capture and graphs. A capture collects the work handed to its streams (the origin and
// every stream that joined it by waiting for an event recorded inside it) as the nodes of a graph,
// in the order the calls were made — one valid order of the graph's dependencies, which is the
// order a replay runs them in. The capture modes decide which calls the capture forbids
// (checkCaptureForbidden): such a call fails and invalidates the capture, whose end then fails.
#include <algorithm>
#include <atomic>
#include <map>

#include "vgpu/api.h"
#include "vgpu/stream_impl.h"

namespace accl::vgpu {
namespace {

std::mutex gCapMu;  // guards every Capture, StreamImpl::capture and the list below
std::vector<std::shared_ptr<Capture>>& activeCaptures() {
  static auto* v = new std::vector<std::shared_ptr<Capture>>;
  return *v;
}
std::atomic<unsigned long long> gNextCaptureId{1};
thread_local cudaStreamCaptureMode tMode = cudaStreamCaptureModeGlobal;

void invalidateLocked(Capture& c, const char* by) {
  if (!c.invalidated) {
    c.invalidated = true;
    c.invalidatedBy = by;
  }
}

std::pair<StreamImpl*, bool>* joinedEntry(Capture& c, StreamImpl* s) {
  for (auto& j : c.joined)
    if (j.first == s) return &j;
  return nullptr;
}

void endLocked(const std::shared_ptr<Capture>& c) {
  for (auto& j : c->joined) j.first->capture.reset();
  auto& v = activeCaptures();
  v.erase(std::remove(v.begin(), v.end(), c), v.end());
}

// Per joined stream: how many nodes the capture had after that stream's last node.
std::map<const Capture*, std::map<StreamImpl*, size_t>>& lastNodes() {
  static auto* m = new std::map<const Capture*, std::map<StreamImpl*, size_t>>;
  return *m;
}

}  // namespace

// The graph a capture produced (or cudaGraphCreate's empty one).
struct GraphImpl {
  std::vector<Work> nodes;
};
struct GraphExecImpl {
  std::shared_ptr<const std::vector<Work>> nodes;
};

cudaError_t checkCaptureForbidden(const char* call) {
  if (tMode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  std::lock_guard<std::mutex> lock(gCapMu);
  const auto self = std::this_thread::get_id();
  bool forbidden = false;
  for (auto& c : activeCaptures()) {
    const bool mine = c->thread == self && c->mode != cudaStreamCaptureModeRelaxed;
    const bool global = c->mode == cudaStreamCaptureModeGlobal && tMode == cudaStreamCaptureModeGlobal;
    if (mine || global) {
      invalidateLocked(*c, call);
      forbidden = true;
    }
  }
  if (!forbidden) return cudaSuccess;
  return failCall(call, cudaErrorStreamCaptureUnsupported,
                  "not permitted while a stream capture runs (the capture is invalidated; "
                  "cudaThreadExchangeStreamCaptureMode(relaxed) allows it)");
}

bool captureAppend(StreamImpl* s, Work& work, cudaError_t* err) {
  std::lock_guard<std::mutex> lock(gCapMu);
  if (!s->capture) return false;
  Capture& c = *s->capture;
  *err = c.invalidated ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
  if (!c.invalidated) {
    c.nodes.push_back(std::move(work));
    lastNodes()[&c][s] = c.nodes.size();
    if (s != c.origin)
      if (auto* j = joinedEntry(c, s)) j->second = false;
  }
  return true;
}

bool captureRecordEvent(StreamImpl* s, EventImpl* e) {
  std::lock_guard<std::mutex> lock(gCapMu);
  if (!s->capture) return false;
  std::lock_guard<std::mutex> elock(e->mu);
  e->capture = s->capture;
  e->captureNode = s->capture->nodes.size();
  e->captureStream = s;
  e->stream.reset();
  return true;
}

cudaError_t captureWaitEvent(StreamImpl* s, EventImpl* e, const char* call) {
  std::lock_guard<std::mutex> lock(gCapMu);
  std::shared_ptr<Capture> c;
  size_t node = 0;
  StreamImpl* from = nullptr;
  {
    std::lock_guard<std::mutex> elock(e->mu);
    c = e->capture;
    node = e->captureNode;
    from = e->captureStream;
  }
  if (std::find(activeCaptures().begin(), activeCaptures().end(), c) == activeCaptures().end())
    return failCall(call, cudaErrorStreamCaptureIsolation, "the event was recorded in a capture that has ended");
  if (s->capture && s->capture != c) {
    invalidateLocked(*c, call);
    return failCall(call, cudaErrorStreamCaptureMerge, "the stream belongs to another capture");
  }
  if (!s->capture) {  // the stream joins the capture
    s->capture = c;
    c->joined.emplace_back(s, true);
    return cudaSuccess;
  }
  // A wait of the origin on another joined stream's last node joins that stream back.
  if (s == c->origin && from != s)
    if (auto* j = joinedEntry(*c, from); j && node >= lastNodes()[c.get()][from]) j->second = true;
  return cudaSuccess;
}

bool streamCapturing(StreamImpl* s, const char* invalidateBy) {
  std::lock_guard<std::mutex> lock(gCapMu);
  if (!s->capture) return false;
  if (invalidateBy) invalidateLocked(*s->capture, invalidateBy);
  return true;
}

bool deviceHasBlockingCapture(int device, const char* invalidateBy) {
  std::lock_guard<std::mutex> lock(gCapMu);
  bool any = false;
  for (auto& c : activeCaptures())
    for (auto& j : c->joined)
      if (j.first->device == device && j.first->blocking()) {
        if (invalidateBy) invalidateLocked(*c, invalidateBy);
        any = true;
      }
  return any;
}

}  // namespace accl::vgpu

using namespace accl::vgpu;

VGPU_API cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return setError(cudaErrorInvalidValue);
  if (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
      *mode != cudaStreamCaptureModeRelaxed)
    return setError(cudaErrorInvalidValue);
  std::swap(*mode, tMode);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  StreamPtr s = resolveStream(stream);
  if (!s) return failCall("cudaStreamBeginCapture", cudaErrorInvalidResourceHandle, "stream %p", (void*)stream);
  if (s->legacy)
    return failCall("cudaStreamBeginCapture", cudaErrorStreamCaptureUnsupported, "the legacy stream cannot be captured");
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return failCall("cudaStreamBeginCapture", cudaErrorInvalidValue, "mode %d", int(mode));
  std::lock_guard<std::mutex> lock(gCapMu);
  if (s->capture) return failCall("cudaStreamBeginCapture", cudaErrorIllegalState, "the stream is already capturing");
  auto c = std::make_shared<Capture>();
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->origin = s.get();
  c->id = gNextCaptureId++;
  c->joined.emplace_back(s.get(), true);
  s->capture = c;
  activeCaptures().push_back(c);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  if (graph == nullptr) return setError(cudaErrorInvalidValue);
  StreamPtr s = resolveStream(stream);
  if (!s) return failCall("cudaStreamEndCapture", cudaErrorInvalidResourceHandle, "stream %p", (void*)stream);
  std::lock_guard<std::mutex> lock(gCapMu);
  std::shared_ptr<Capture> c = s->capture;
  *graph = nullptr;
  if (!c || c->origin != s.get())
    return failCall("cudaStreamEndCapture", cudaErrorStreamCaptureUnmatched, "the stream did not begin a capture");
  if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id())
    return failCall("cudaStreamEndCapture", cudaErrorStreamCaptureWrongThread, "the capture began in another thread");
  bool unjoined = false;
  for (auto& j : c->joined) unjoined = unjoined || !j.second;
  endLocked(c);
  lastNodes().erase(c.get());
  if (c->invalidated)
    return failCall("cudaStreamEndCapture", cudaErrorStreamCaptureInvalidated, "the capture was invalidated by %s",
                    c->invalidatedBy ? c->invalidatedBy : "an earlier error");
  if (unjoined)
    return failCall("cudaStreamEndCapture", cudaErrorStreamCaptureUnjoined,
                    "a stream that joined the capture was not joined back into the origin stream");
  auto* g = new GraphImpl;
  g->nodes = std::move(c->nodes);
  *graph = reinterpret_cast<cudaGraph_t>(g);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  if (status == nullptr) return setError(cudaErrorInvalidValue);
  StreamPtr s = resolveStream(stream);
  if (!s) return failCall("cudaStreamIsCapturing", cudaErrorInvalidResourceHandle, "stream %p", (void*)stream);
  if (s->legacy && deviceHasBlockingCapture(s->device, nullptr))
    return failCall("cudaStreamIsCapturing", cudaErrorStreamCaptureImplicit, "a blocking stream of the device is capturing");
  std::lock_guard<std::mutex> lock(gCapMu);
  *status = !s->capture ? cudaStreamCaptureStatusNone
            : s->capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                      : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                              unsigned long long* id, cudaGraph_t* graph,
                                              const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                              size_t* numDeps) {
  cudaError_t e = cudaStreamIsCapturing(stream, status);
  if (e != cudaSuccess) return e;
  if (graph || deps || edges) return refuse("cudaStreamGetCaptureInfo (graph, dependencies or edges)");
  if (numDeps) *numDeps = 0;
  if (id) {
    std::lock_guard<std::mutex> lock(gCapMu);
    StreamPtr s = resolveStream(stream);
    *id = s && s->capture ? s->capture->id : 0;
  }
  return cudaSuccess;
}

VGPU_API cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned int flags) {
  if (graph == nullptr || flags != 0) return setError(cudaErrorInvalidValue);
  *graph = reinterpret_cast<cudaGraph_t>(new GraphImpl);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (graph == nullptr) return setError(cudaErrorInvalidValue);
  delete reinterpret_cast<GraphImpl*>(graph);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  if (graph == nullptr || numNodes == nullptr) return setError(cudaErrorInvalidValue);
  auto* g = reinterpret_cast<GraphImpl*>(graph);
  size_t n = 0;
  for (const Work& w : g->nodes) n += w.run != nullptr;  // empty waits are edges, not nodes
  if (nodes != nullptr) return refuse("cudaGraphGetNodes (node handles)");
  *numNodes = n;
  return cudaSuccess;
}

VGPU_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (exec == nullptr || graph == nullptr) return setError(cudaErrorInvalidValue);
  if (flags != 0 && flags != cudaGraphInstantiateFlagAutoFreeOnLaunch)
    return refuse("cudaGraphInstantiate (flags other than 0 and AutoFreeOnLaunch)");
  auto* g = reinterpret_cast<GraphImpl*>(graph);
  auto* x = new GraphExecImpl;
  x->nodes = std::make_shared<const std::vector<Work>>(g->nodes);
  *exec = reinterpret_cast<cudaGraphExec_t>(x);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  return cudaGraphInstantiate(exec, graph, flags);
}

VGPU_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (exec == nullptr) return setError(cudaErrorInvalidValue);
  delete reinterpret_cast<GraphExecImpl*>(exec);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return failCall("cudaGraphLaunch", cudaErrorInvalidValue, "null graph");
  auto nodes = reinterpret_cast<GraphExecImpl*>(exec)->nodes;  // the replay keeps them alive
  return submit(stream, "cudaGraphLaunch", Work{"cudaGraphLaunch", [nodes] {
                                                  for (const Work& w : *nodes)
                                                    if (w.run)
                                                      if (cudaError_t e = w.run()) return e;
                                                  return cudaSuccess;
                                                }});
}
