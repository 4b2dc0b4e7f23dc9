// Events: a recorded event marks a position of a stream; queries, synchronisation, cross-stream
// waits and elapsed time read that position. An event last recorded inside a capture marks a node
// of the capture instead (capture.cc), and the host may not query or wait for it.
#include <chrono>
#include <map>

#include "vgpu/api.h"
#include "vgpu/stream_impl.h"

namespace accl::vgpu {
namespace {

std::mutex gEventsMu;
std::map<EventImpl*, std::shared_ptr<EventImpl>>& liveEvents() {
  static auto* m = new std::map<EventImpl*, std::shared_ptr<EventImpl>>;
  return *m;
}

std::shared_ptr<EventImpl> resolveEvent(cudaEvent_t e) {
  std::lock_guard<std::mutex> lock(gEventsMu);
  auto it = liveEvents().find(reinterpret_cast<EventImpl*>(e));
  return it == liveEvents().end() ? nullptr : it->second;
}

double nowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Where the event stands: its stream and position, or why the host cannot look at it.
cudaError_t recordedPosition(const std::shared_ptr<EventImpl>& ev, StreamPtr* s, uint64_t* position) {
  std::lock_guard<std::mutex> lock(ev->mu);
  if (ev->capture) return cudaErrorCapturedEvent;
  *s = ev->stream;
  *position = ev->position;
  return cudaSuccess;
}

cudaError_t createEvent(cudaEvent_t* out, unsigned flags, const char* call) {
  constexpr unsigned kKnown = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (out == nullptr) return failCall(call, cudaErrorInvalidValue, "null event pointer");
  if ((flags & ~kKnown) != 0) return failCall(call, cudaErrorInvalidValue, "flags 0x%x", flags);
  if (flags & cudaEventInterprocess) return refuse("cudaEventCreateWithFlags(cudaEventInterprocess)");
  auto ev = std::make_shared<EventImpl>();
  ev->flags = flags;
  std::lock_guard<std::mutex> lock(gEventsMu);
  liveEvents()[ev.get()] = ev;
  *out = reinterpret_cast<cudaEvent_t>(ev.get());
  return cudaSuccess;
}

cudaError_t recordEvent(cudaEvent_t event, cudaStream_t stream, const char* call) {
  auto ev = resolveEvent(event);
  if (!ev) return failCall(call, cudaErrorInvalidResourceHandle, "event %p is not a live event", (void*)event);
  StreamPtr s = resolveStream(stream);
  if (!s) return failCall(call, cudaErrorInvalidResourceHandle, "stream %p is not a live stream", (void*)stream);
  if (captureRecordEvent(s.get(), ev.get())) return cudaSuccess;
  const bool timing = (ev->flags & cudaEventDisableTiming) == 0;
  std::weak_ptr<EventImpl> weak = ev;
  Work mark{call, [weak, timing] {
              if (auto e = weak.lock(); e && timing) {
                std::lock_guard<std::mutex> lock(e->mu);
                e->timeMs = nowMs();
              }
              return cudaSuccess;
            }};
  const cudaError_t err = submitTo(s, call, std::move(mark), {});
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(ev->mu);
  ev->capture.reset();
  ev->stream = s;
  ev->position = s->enqueuedNow();
  return cudaSuccess;
}

}  // namespace
}  // namespace accl::vgpu

using namespace accl::vgpu;

VGPU_API cudaError_t cudaEventCreate(cudaEvent_t* e) { return createEvent(e, 0, "cudaEventCreate"); }
VGPU_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  return createEvent(e, flags, "cudaEventCreateWithFlags");
}

VGPU_API cudaError_t cudaEventDestroy(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(gEventsMu);
  if (liveEvents().erase(reinterpret_cast<EventImpl*>(event)) == 0)
    return failCall("cudaEventDestroy", cudaErrorInvalidResourceHandle, "event %p is not a live event", (void*)event);
  return cudaSuccess;
}

VGPU_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return recordEvent(event, stream, "cudaEventRecord");
}
VGPU_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  if (flags != 0 && flags != cudaEventRecordExternal)
    return failCall("cudaEventRecordWithFlags", cudaErrorInvalidValue, "flags 0x%x", flags);
  return recordEvent(event, stream, "cudaEventRecordWithFlags");
}

VGPU_API cudaError_t cudaEventQuery(cudaEvent_t event) {
  auto ev = resolveEvent(event);
  if (!ev) return failCall("cudaEventQuery", cudaErrorInvalidResourceHandle, "event %p", (void*)event);
  StreamPtr s;
  uint64_t position = 0;
  if (cudaError_t e = recordedPosition(ev, &s, &position))
    return failCall("cudaEventQuery", e, "the event was last recorded in a capturing stream");
  if (!s) return cudaSuccess;
  if (const cudaError_t sticky = deviceStickyError(s->device)) return setError(sticky);
  std::lock_guard<std::mutex> lock(s->mu);
  return s->completed >= position ? cudaSuccess : cudaErrorNotReady;
}

VGPU_API cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  auto ev = resolveEvent(event);
  if (!ev) return failCall("cudaEventSynchronize", cudaErrorInvalidResourceHandle, "event %p", (void*)event);
  StreamPtr s;
  uint64_t position = 0;
  if (cudaError_t e = recordedPosition(ev, &s, &position))
    return failCall("cudaEventSynchronize", e, "the event was last recorded in a capturing stream");
  if (!s) return cudaSuccess;
  s->waitFor(position);
  return setError(deviceStickyError(s->device));
}

VGPU_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (flags != 0 && flags != cudaEventWaitExternal)
    return failCall("cudaStreamWaitEvent", cudaErrorInvalidValue, "flags 0x%x", flags);
  auto ev = resolveEvent(event);
  if (!ev) return failCall("cudaStreamWaitEvent", cudaErrorInvalidResourceHandle, "event %p", (void*)event);
  StreamPtr s = resolveStream(stream);
  if (!s) return failCall("cudaStreamWaitEvent", cudaErrorInvalidResourceHandle, "stream %p", (void*)stream);
  StreamPtr from;
  uint64_t position = 0;
  if (recordedPosition(ev, &from, &position) == cudaErrorCapturedEvent)
    return captureWaitEvent(s.get(), ev.get(), "cudaStreamWaitEvent");
  std::vector<std::pair<StreamPtr, uint64_t>> waits;
  if (from && from != s) waits.emplace_back(from, position);
  // In a capture a wait on work outside it adds nothing to the graph (CUDA treats that work as
  // already done when the graph runs).
  return submitTo(s, "cudaStreamWaitEvent", Work{"cudaStreamWaitEvent", nullptr}, std::move(waits));
}

VGPU_API cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return setError(cudaErrorInvalidValue);
  auto a = resolveEvent(start), b = resolveEvent(end);
  if (!a || !b) return setError(cudaErrorInvalidResourceHandle);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return setError(cudaErrorInvalidResourceHandle);
  for (const auto& ev : {a, b}) {
    StreamPtr s;
    uint64_t position = 0;
    if (cudaError_t e = recordedPosition(ev, &s, &position)) return setError(e);
    if (!s) return setError(cudaErrorInvalidResourceHandle);
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->completed < position) return cudaErrorNotReady;
  }
  std::lock_guard<std::mutex> la(a->mu);
  std::lock_guard<std::mutex> lb(b->mu);
  *ms = float(b->timeMs - a->timeMs);
  return cudaSuccess;
}
